"""
The task: every pair [a, b, '='] of an operation mod p, its label, and the seeded train/test
split (random, balanced, or with a square or strip dug out).

    from data import make_data
    x_train, y_train, x_test, y_test = make_data(Config())

Also the run files: atomic writes and checkpoint loading (train.py and analyze.py share them).
"""
import json
import os

import numpy as np
import torch


class Stop(ValueError):
    """Bad input or an unusable run: the scripts print it as one line and go on or exit."""


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
    """Every pair [a, b, '='] (row a*p + b), its label, and whether it exists (div: b != 0)."""
    p = cfg.p
    a, b = (t.flatten() for t in torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij"))
    valid = b != 0 if cfg.op == "div" else torch.ones(p * p, dtype=torch.bool)
    y = torch.zeros(p * p, dtype=torch.long)
    y[valid] = OPS[cfg.op](a[valid], b[valid], p)
    return torch.stack([a, b, torch.full_like(a, p)], 1), y, valid


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
    n_train = int(cfg.frac * int(valid.sum()))
    g = torch.Generator().manual_seed(cfg.seed if cfg.data_seed is None else cfg.data_seed)
    if cfg.split == "balanced":
        # Frequency-aware sampling (AlQuabeh et al.): pairs (a, pi(a + s)) for a random relabelling
        # pi and distinct shifts s. Each shift is a perfect matching, so whole shifts give every
        # operand the same count at both positions and the last, partial one adds at most 1.
        pi, shifts, order = (torch.randperm(p, generator=g) for _ in range(3))
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


def save_atomic(obj, path):
    """Write to a temp file and rename, so a crash never leaves a half-written file."""
    tmp = f"{path}.tmp"
    if path.endswith(".npz"):
        with open(tmp, "wb") as f:
            np.savez(f, **obj)
    elif path.endswith(".json"):
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1)
    else:
        torch.save(obj, tmp)
    os.replace(tmp, path)


def load_checkpoint(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise Stop(f"missing checkpoint {path}")
    except Exception as e:
        raise Stop(f"corrupt checkpoint {path}: {type(e).__name__}: "
                   f"{str(e).splitlines()[0][:120]}")
