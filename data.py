"""
The task: every pair [a, b, '='] of an operation mod p, its label, and the seeded train/test
split (random, balanced, or with a square or strip dug out).

    from config import Config
    from data import make_data
    x_train, y_train, x_test, y_test = make_data(Config())
"""
import random

import numpy as np
import torch


OPS = {  # name -> label of (a, b) mod p
    "add": lambda a, b, p: (a + b) % p,
    "sub": lambda a, b, p: (a - b) % p,
    "mul": lambda a, b, p: (a * b) % p,
    "div": lambda a, b, p: (a * torch.tensor([pow(int(x), p - 2, p) for x in b])) % p,  # b != 0
    "a2+b2": lambda a, b, p: (a * a + b * b) % p,
    "a2+ab+b2": lambda a, b, p: (a * a + a * b + b * b) % p,
    "a3+ab+b3": lambda a, b, p: (a ** 3 + a * b + b ** 3) % p,
}
SPLITS = ("random", "balanced", "square", "strip")


def all_pairs(cfg):
    """Every pair [a, b, '='] as tokens (row a*p + b), its label, and whether it exists
    (div: b != 0). b's token is b + b_offset; '=' is the last token."""
    p = cfg.p
    a_grid, b_grid = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    a, b = a_grid.flatten(), b_grid.flatten()
    if cfg.op == "div":
        valid = b != 0
    else:
        valid = torch.ones(p * p, dtype=torch.bool)
    y = torch.zeros(p * p, dtype=torch.long)
    y[valid] = OPS[cfg.op](a[valid], b[valid], p)
    return torch.stack([a, b + cfg.b_offset, torch.full_like(a, cfg.n_vocab - 1)], 1), y, valid


def hole_mask(cfg):
    """The dug-out pairs (row a*p + b) that are never trained on (Gu et al.); none unless a
    square or strip split."""
    a, b = torch.arange(cfg.p ** 2) // cfg.p, torch.arange(cfg.p ** 2) % cfg.p
    if cfg.split == "square":
        return (a <= cfg.hole) & (b <= cfg.hole)
    if cfg.split == "strip":
        return a <= cfg.hole
    return torch.zeros(cfg.p ** 2, dtype=torch.bool)


def train_mask(cfg, valid):
    """Which pairs are trained on: a seeded split of the valid pairs."""
    p = cfg.p
    seed = cfg.seed if cfg.data_seed is None else cfg.data_seed
    n_train = int(cfg.frac * int(valid.sum()))
    g = torch.Generator().manual_seed(seed)
    if cfg.split_rng != "torch":
        # the released code of Singh et al. / Nanda et al.: random.seed(seed), a shuffle of the
        # a-major pairs, the first ones train (Singh's count: N - int((1 - frac) N), one more)
        cand = list(range(p * p))
        random.Random(seed).shuffle(cand)
        cand = torch.tensor(cand)
        if cfg.split_rng == "singh":
            n_train = p * p - int((1 - cfg.frac) * p * p)
    elif cfg.split == "balanced":
        # Frequency-aware sampling (AlQuabeh et al.): pairs (a, pi(a + s)) for a random relabelling
        # pi and distinct shifts s. Each shift is a perfect matching, so whole shifts give every
        # operand the same count at both positions and the last, partial one adds at most 1.
        pi = torch.randperm(p, generator=g)
        shifts = torch.randperm(p, generator=g)
        order = torch.randperm(p, generator=g)
        cand = torch.cat([order * p + pi[(order + s) % p] for s in shifts])
        cand = cand[valid[cand]]
    else:
        cand = torch.nonzero(valid & ~hole_mask(cfg)).flatten()
        cand = cand[torch.randperm(len(cand), generator=g)]
    train = torch.zeros(p * p, dtype=torch.bool)
    train[cand[:n_train]] = True
    return train


def make_data(cfg):
    """(x_train, y_train, x_test, y_test); x rows are [a, b, '=']."""
    x, y, valid = all_pairs(cfg)
    train = train_mask(cfg, valid)
    test = valid & ~train
    return x[train], y[train], x[test], y[test]


class Batches:
    """A run's mini-batches of B = --batch-size examples: without replacement within an epoch
    (floor(N/B) steps; the N mod B examples an epoch's order leaves last wait for the next one),
    in a fresh seeded order each epoch. The batch of step t is a function of the seed and t
    alone, so --resume continues exactly with no sampler state to save, and analysis can
    recount which tokens each step saw.

    random: a uniform shuffle. balanced: the order is a chain of matchings, sets of examples
    in which no operand token occurs twice at one position, most-frequent tokens first, so a
    token recurs at even intervals instead of random ones: every batch of B <= ~p/2 holds a
    token at most once per position (twice where two matchings meet), and is absent from fewer
    steps (p 113, B 64: a token is in 81% of the steps, against 69% in random order; AlQuabeh et
    al.'s rare-token stagnation comes from such absences)."""

    def __init__(self, cfg, x_train):
        self.cfg, self.x = cfg, x_train.cpu().numpy()
        self.per_epoch = len(self.x) // cfg.batch_size
        self.epoch, self.order = None, None

    def __call__(self, step):
        """Indices into the training set of step `step`'s batch, (B,) int64."""
        epoch, i = divmod(step, self.per_epoch)
        if epoch != self.epoch:
            rng = np.random.default_rng([self.cfg.seed, 1, epoch])  # a stream per run and epoch
            self.epoch = epoch
            if self.cfg.sampling == "random":
                self.order = rng.permutation(len(self.x))
            else:
                self.order = balanced_order(self.x, self.cfg.batch_size, rng)
        B = self.cfg.batch_size
        return self.order[i * B:(i + 1) * B]


def balanced_order(x, batch_size, rng):
    """An order of the rows of x (N, 3), built batch by batch: a batch takes rows whose a and
    b it does not hold yet (a matching; when none is left, a second one on top), preferring
    rows whose operands have the most rows still to place (random among equals), so that no
    token is left to crowd the last batches."""
    V = int(x.max()) + 1
    left, out = np.arange(len(x)), []
    while len(left):
        batch = []
        used_a, used_b = np.zeros(V, bool), np.zeros(V, bool)  # tokens the batch holds as a, b
        while len(batch) < batch_size and len(left):
            a, b = x[left, 0], x[left, 1]
            ok = ~used_a[a] & ~used_b[b]
            if not ok.any():  # every remaining row repeats a token: start a second matching
                used_a[:], used_b[:] = False, False
                continue
            todo = (np.bincount(a, minlength=V)[a] + np.bincount(b, minlength=V)[b])[ok]
            cand = left[ok][np.lexsort((rng.random(len(todo)), -todo))]   # most to place first
            cand = cand[np.sort(np.unique(x[cand, 0], return_index=True)[1])]  # one row per a
            cand = cand[np.sort(np.unique(x[cand, 1], return_index=True)[1])]  # ... and per b
            cand = cand[:batch_size - len(batch)]
            used_a[x[cand, 0]], used_b[x[cand, 1]] = True, True
            batch.extend(cand)
            left = np.setdiff1d(left, cand, assume_unique=True)
        out.append(rng.permutation(batch))
    return np.concatenate(out)


def token_shares(cfg, x_train):
    """Per operand token of the training set (in token order): the fraction of the first
    epoch's steps whose batch holds it (how often its embedding row is updated)."""
    batches, x = Batches(cfg, x_train), x_train.cpu()
    seen = torch.zeros(batches.per_epoch, int(x.max()) + 1, dtype=torch.bool)
    for t in range(batches.per_epoch):
        seen[t, x[batches(t), :2].flatten()] = True
    return seen[:, x[:, :2].unique()].double().mean(0)


def token_frequency(cfg, x_train):
    """The mean of token_shares: f_E of AlQuabeh et al.'s rule (1 with full batches)."""
    if cfg.batch_size is None:
        return 1.0
    return float(token_shares(cfg, x_train).mean())

