"""
What is measured: the progress measures of the four papers, each defined on plain arrays or on
the model (and tested on hand-made inputs), and the registries that name them in analysis.npz,
which analyze.py runs over a run's checkpoints. A measure is one function plus one entry in a
registry, MEASURES (every checkpoint) or FINAL (the last), reading the checkpoint's context c.
A MEASURES entry also says how summary.md and the cross-run figures show it:

    def embed_max(E):                                # the definition, tested on a made-up input
        return float(E.abs().max())
    MEASURES = {..., "embed_max": Measure(lambda c: embed_max(c.E), "max |W_E|", ("at",),
                                          figure="largest embedding entry")}

A change of a measure, of a function or constant it calls or of the model code it runs (not of
Config or of how the outputs show it) makes analyze.py recompute runs (analyze.stamp).
"""
import copy
import math
import types
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap

import fast
from data import all_pairs, hole_mask, train_mask
from fourier import (ONE_FREQ, ce, component_norms, cos_fit_r2, cos_template_r2, excluded_loss,
                     fourier_basis, frequency_norms, key_frequencies, neuron_frequencies,
                     restricted_loss)
from model import get_param, param_name
from runfiles import Stop

N_NTK = 256       # fixed train pairs for the NTK; None: all, Singh et al.'s K (3831^2 x 0.2M MACs)
N_ATTN = 1024     # fixed pairs for attention entropy (full forward over all positions)
N_NEURONS = 4     # MLP neurons drawn as (a, b) heatmaps
N_GRAD_SYM = 100  # fixed (a, b, c) triples for gradient symmetricity (Zhong et al.'s notebook: 100)
# The local learning coefficient (sgld_llc): SGLD around the checkpoint on the training set,
# n beta = n / log n over its n pairs (Lau et al.; devinterp's default_nbeta is batch / log batch),
# mini-batches of LLC_BATCH drawn afresh each step, in float32 (llc_problem); every LLC checkpoint's
# chains run as one stacked model (run_llc). Calibrated on the default run (--ln pre --seed 0;
# python experiments/llc_calibration.py RUN --step S ...): n beta is 464, and with the weights of a
# grokked LN model at rms ~0.01 (embeddings, W_O), a chain wandering more than ~1e-3 per weight
# leaves the basin for chance-level loss, so gamma pins it there (the stationary spread
# 1 / sqrt(gamma)); at gamma 1e5 or below the grokked checkpoints' chains diverged. Relaxation
# takes ~2 / (eps gamma) = 40 steps. What these settings measure: a direction of the loss with
# curvature h moves the estimate by ~(1/2) n beta h / (n beta h + gamma), so the estimate counts
# the directions stiffer than gamma / n beta ~ 2000; a memorising checkpoint (train loss ~1e-4,
# a flat cross-entropy) has almost none, and reads ~0.07 (BENCHMARKS.md, "The LLC").
# Mini-batch against full batch, step 2500 of that run (grokked): 12.72 against 12.95; step 1000
# (memorising): 0.07 both; devinterp 1.3.2's own SGLD (experiments/llc_devinterp.py): 13.15 and
# 0.078. One SGLD step of one chain: ~5x less than full batch.
LLC_POINTS = 10   # checkpoints a run takes the LLC at, evenly over its budget (llc_every): a fixed
# count, not a fixed period, keeps a 40k-step run's analysis as cheap as a 10k-step one's
LLC_CHAINS = 2    # independent chains, chain i seeded i
LLC_BURNIN = 50   # steps of each chain before its draws
LLC_DRAWS = 100   # losses drawn per chain, one per step
LLC_EPS = 5e-8    # SGLD step epsilon
LLC_GAMMA = 1e6   # localisation gamma: the pull back to the checkpoint's weights
LLC_BATCH = 512   # examples a step's loss and gradient read (mini-batch SGLD); None: all


# ---------------------------------------------------------------- measures on plain arrays

def gini(x):
    """Hurley and Rickard: sort ascending, 2 sum_k k x_k / (N sum x) - (N+1)/N. 1 = sparse."""
    x = torch.sort(torch.as_tensor(x, dtype=torch.float64).flatten()).values
    n = len(x)
    return float(2 * (torch.arange(1, n + 1) * x).sum() / (n * x.sum()) - (n + 1) / n)


def c_fourier(E):
    """Singh et al.: W~ = |rfft(E, tokens)|^T (d, p//2+1); between-frequency variance of the
    column means over the mean within-column squared deviation."""
    Wt = torch.fft.rfft(E.double(), dim=0).abs().T
    mu = Wt.mean(0)
    return float(mu.var(unbiased=False) / (((Wt - mu) ** 2).mean() + 1e-8))


def med(E):
    """Gu et al.'s mean embedding difference (1/p) sum_i ||phi(i+1) - phi(i)||, cyclic."""
    return float((torch.roll(E, -1, 0) - E).double().norm(dim=1).mean())


def spread(v):
    """Coefficient of variation std / mean of the values v (N,): 0 when all are equal."""
    v = v.double()
    return float(v.std(unbiased=False) / v.mean())


def diagonal(c, t):
    """The rows of a per-pair tensor t (row a*p + b) at the pairs (i, i), i = 0..p-1."""
    return t[torch.arange(c.p) * (c.p + 1)]


def attention_entropy(w):
    """w (N, heads, queries, keys) -> per-head -sum w log w averaged over examples and queries.
    Singh et al.'s: of the head-averaged weights, attention_entropy(w.mean(1, keepdim=True))."""
    w = w.double().clamp_min(1e-30)
    return (-(w * w.log()).sum(-1)).mean((0, 2))


def spectrum(Z):
    """Eigenvalues of Z^T Z, descending, normalised to sum 1."""
    ev = torch.linalg.eigvalsh(Z.double().T @ Z.double()).flip(0).clamp_min(0)
    return ev / ev.sum()


def effective_rank(Z):
    q = spectrum(Z)
    q = q[q > 0]
    return float(torch.exp(-(q * q.log()).sum()))


def matrix_rank(Z):
    """Singh et al.'s R(Z): torch's numerical rank of Z^T Z at its default tolerance, in
    float32 as their features are (the tolerance scales with the dtype's eps)."""
    Z = Z.float()
    return int(torch.linalg.matrix_rank(Z.T @ Z))


def singh_esd(Z):
    """Eigenvalues of Z^T Z as Singh et al.'s compute_esd gets them: X = Z^T Z in float32, then
    sqrt|eigvalsh(X X^T)|. Round-off floors the near-zero ones, which their fit then sees."""
    X = Z.float().T @ Z.float()
    return torch.linalg.eigvalsh(X @ X.T).abs().sqrt().double().numpy()


def power_law_alpha(x, tail=2):
    """Continuous power-law exponent of the values x by maximum likelihood, xmin chosen to
    minimise the Kolmogorov-Smirnov distance (Clauset et al.; the `powerlaw` package that Singh
    et al. fit with): alpha = 1 + n / sum ln(x / xmin) over the n values >= xmin. Candidate
    xmin leave at least `tail` + 1 values."""
    x = np.sort(np.asarray(x, float)[np.asarray(x) > 0])
    best = (np.inf, np.nan)
    for i in range(len(x) - tail):
        t = x[i:]
        alpha = 1 + len(t) / np.log(t / t[0]).sum()
        emp = np.arange(len(t)) / len(t)                    # empirical CDF below each value
        ks = np.abs(emp - (1 - (t / t[0]) ** (1 - alpha))).max()
        best = min(best, (ks, alpha))
    return float(best[1])


def distance_irrelevance(correct, p):
    """Zhong et al.'s distance irrelevance (their code/eval-main.ipynb, "Distance Irrelevance"):
    the correct logit of every pair, correct (p*p,) at row a*p + b, laid out in a table
    T[(a+b) mod p, (a-b) mod p]; the mean over the columns (a-b) of the std down each column,
    over the std of the whole table. ~1 for the Clock (the correct logit does not depend on the
    distance a-b), small for the Pizza (it scales with |cos(w(a-b)/2)|). An even p folds two
    pairs onto one cell (a+b and a-b have one parity): NaN."""
    if p % 2 == 0:
        return np.nan
    a, b = torch.arange(p * p) // p, torch.arange(p * p) % p
    T = torch.empty(p, p, dtype=torch.float64)
    T[(a + b) % p, (a - b) % p] = correct.double()
    return float(T.std(0, unbiased=False).mean() / T.std(unbiased=False))


def gradient_symmetricity(grad_a, grad_b):
    """Zhong et al.'s gradient symmetricity (eval-main.ipynb, "Gradient Symmetricity"): the mean
    over (a, b, c) triples of the cosine between d logit_c / d E(a) and d logit_c / d E(b),
    the gradients with respect to the two operands' input embeddings, grad_a and grad_b (N, d).
    1 when the logits depend on E(a) + E(b) alone (the Pizza's sum); the Clock's product of
    rotations gives cos(w(a-b)) for a triple, ~0 on average."""
    cos = F.cosine_similarity(grad_a.double(), grad_b.double(), dim=-1, eps=0.0)
    return float(cos.mean())


# ---------------------------------------------------------------- measures that need the model

def embedding(model, cfg, operand=0):
    """The embeddings (p, d) of the first operand's tokens (operand=1: the second's, the same
    rows unless --b-offset); for the one-hot MLP the first layer's columns of that operand."""
    E = get_param(model, "embed")
    if E is not None:
        start = operand * cfg.b_offset
        return E[start:start + cfg.p]
    W = get_param(model, "first")
    width = W.shape[1] // (3 if cfg.mlp_eq else 2)  # one block of columns per input token
    return W[:, operand * width:operand * width + cfg.p].T


def neuron_logit_map(model, cfg):
    """W_L (p classes, d_mlp): logits as a linear function of the MLP neurons."""
    W_U = get_param(model, "readout")
    if cfg.model == "transformer":  # through the last block's W_out
        return (W_U.T @ get_param(model, "fc2", cfg.n_layers - 1))[:cfg.p]
    return W_U[:cfg.p]


def ntk(model, x):
    """Singh et al.'s empirical NTK K = J J^T, J the per-example gradient of the sum of all
    logits (alpha included) with respect to every parameter: the sum over parameter blocks of
    J_b J_b^T, those of nn.Linear and nn.Embedding weights from their factors (factored_ntk),
    the others from per-example gradients."""
    K, factored = factored_ntk(model, x)
    params = {k: v.detach() for k, v in model.named_parameters() if k not in factored}
    if not params:
        return K
    def f(prm, xi):
        return functional_call(model, prm, (xi[None],)).sum()  # the rest at the model's own
    # chunks of 256 pairs bound the memory (a lone chunk unchunked: vmap would copy its output);
    # J J^T summed over parameter blocks: no concatenated copy of J (0.9 GB for Gu's 2 layers)
    J = vmap(grad(f), in_dims=(None, 0), chunk_size=256 if len(x) > 256 else None)(params, x)
    return K + sum(b @ b.T for b in (j.flatten(1).double() for j in J.values()))


def factored_ntk(model, x):
    """J_b J_b^T of the weights (and biases) of the model's nn.Linear and nn.Embedding modules,
    summed, without per-example gradients: in one forward and backward of the summed logits
    over the batch, each call of such a module records its input a and the gradient g at its
    output, per example (row i of the batch is example i: eval mode, no batch statistics).
    Example i's gradient of a Linear weight is sum_t g_it a_it^T over the positions t of its
    calls, so (J J^T)_ij = sum_{t,s} (g_it . g_js)(a_it . a_js): (N T)^2 (in + out) products
    instead of N^2 in out, and no per-example copy of the weight; an Embedding's is
    sum_t onehot(a_it) g_it^T: sum_{t,s} [a_it = a_js] (g_it . g_js). A module whose weight
    the forward also reads outside its call (tied) is left out: the batch's gradient of its
    weight must be the sum of these per-example ones. Returns (K, names of the parameters
    it covers)."""
    mods = {n: m for n, m in model.named_modules()
            if type(m) is nn.Linear or (type(m) is nn.Embedding and m.padding_idx is None
                                        and m.max_norm is None and not m.scale_grad_by_freq)}
    calls = {n: [] for n in mods}  # per module, (input, output) of each call
    hooks = [m.register_forward_hook(lambda m, args, out, n=n: calls[n].append((args[0], out)))
             for n, m in mods.items()]
    try:
        with torch.enable_grad():
            logits = model(x)
    finally:
        for h in hooks:
            h.remove()
    called = [n for n in mods if calls[n]]
    outs = [out for n in called for _, out in calls[n]]
    weights = [mods[n].weight for n in called]
    grads = iter(torch.autograd.grad(logits.sum(), outs + weights, allow_unused=True,
                                     materialize_grads=True))  # a call the logits do not read: 0
    g_out = {n: [next(grads) for _ in calls[n]] for n in called}
    N, K, covered = len(x), torch.zeros(len(x), len(x), dtype=torch.float64), set()
    for n, g_w in zip(called, grads):
        m = mods[n]
        g = torch.cat([g.reshape(N, -1, g.shape[-1]) for g in g_out[n]], 1)  # (N, T, out)
        if type(m) is nn.Embedding:
            ids = torch.cat([a.reshape(N, -1) for a, _ in calls[n]], 1)      # (N, T)
            per_pos = torch.zeros_like(g_w).index_add_(0, ids.flatten(), g.flatten(0, 1))
            same = ids[:, :, None, None] == ids[None, None]                 # (N, T, N, T)
        else:
            a = torch.cat([a.reshape(N, -1, a.shape[-1]) for a, _ in calls[n]], 1)  # (N, T, in)
            per_pos = torch.einsum("ntc,ntd->cd", g, a)
            same = torch.einsum("itc,jsc->itjs", a.double(), a.double())
        if (per_pos - g_w).norm() > fast.MATCHES * g_w.norm():  # tied (or float32): ntk's vmap
            continue
        g = g.double()
        K += (torch.einsum("itc,jsc->itjs", g, g) * same).sum((1, 3))
        if getattr(m, "bias", None) is not None:  # example i's bias gradient sum_t g_it
            K += g.sum(1) @ g.sum(1).T
        covered |= {f"{n}.{k}".lstrip(".") for k, _ in m.named_parameters(recurse=False)}
    return K, covered


def hessian_top(model, x, y, block, v0=None, iters=10):
    """Top eigenvalue of the train-loss Hessian restricted to one parameter block, by power
    iteration on Hessian-vector products (AlQuabeh et al.). Returns (eigenvalue, vector)."""
    loss = F.cross_entropy(model(x).double(), y)
    g = torch.autograd.grad(loss, block, create_graph=True)[0]
    v = torch.randn_like(block) if v0 is None else v0.clone()
    lam = 0.0
    for _ in range(iters):
        v = v / v.norm()
        hv = torch.autograd.grad(g, block, v, retain_graph=True)[0]
        lam = float((hv * v).sum())
        v = hv
    return lam, v / v.norm()


def embedding_gradients(model, x, c):
    """d logit_{c_i} / d e_i for each row i of tokens x, c (N,) the classes: e (N, T, d) the
    output of the embedding module (the one holding NAMES' embed: the input embeddings, before
    positions are added), by a forward hook that makes it a leaf of the graph. The rows are
    independent (no batch statistics), so one backward of the summed logits gives every row's
    gradient. Returns (N, T, d)."""
    leaf = []

    def hook(module, args, out):
        leaf.append(out.detach().requires_grad_())
        return leaf[0]
    embed = model.get_submodule(param_name(model, "embed").rpartition(".")[0])
    handle = embed.register_forward_hook(hook)
    try:
        logits = model(x)
    finally:
        handle.remove()
    chosen = logits[torch.arange(len(x)), c].sum()
    return torch.autograd.grad(chosen, leaf[0])[0]


def sgld_llc(loss, params, n, seeds=range(LLC_CHAINS), burnin=LLC_BURNIN, draws=LLC_DRAWS,
             eps=LLC_EPS, gamma=LLC_GAMMA, batch=LLC_BATCH, progress=None):
    """Lau et al.'s local learning coefficient at w* = the params' current values, as devinterp
    estimates it (devinterp 1.3.2: optim/sgld.py SGLD.step; slt/llc.py LLCEstimator.finalize;
    the draw loop of backends/default/slt/sampler.py sample_single_chain), K chains at once.
    params: tensors whose first axis is the chain (K rows: K chains, at one w* or at several);
    loss(idx) -> (K,) each chain's mean loss at the params' current values over its examples
    idx (K, batch) of the n training examples, or over all n when idx is None. Each chain k
    starts at its w* and steps
        w <- w - eps/2 (n beta grad loss_B(w) + gamma (w - w*)) + N(0, eps),   n beta = n / log n,
    loss_B its mean loss on a mini-batch B of `batch` examples drawn afresh each step (None or
    >= n: all n, full batch), drawing loss_B(w) before the step (as devinterp) after `burnin`
    steps; then
        llc_k = n beta (mean of its drawn losses - its loss at w* over all n).
    Chain k draws from a generator seeded seeds[k], each step: its batch (randperm(n)[:batch]),
    then its noise, one normal_ over all its parameter entries (parameters in order): a chain's
    draws do not depend on the chains stacked with it, and a longer chain continues a shorter
    one. The params are put back to w* at the end; a parameter the loss does not read stays at
    w*. progress(steps done, steps) after each step.
    Returns (llc per chain (K,), drawn losses (K, draws))."""
    nbeta = n / math.log(n)
    K = len(params[0])
    gens = [torch.Generator().manual_seed(int(s)) for s in seeds]
    assert len(gens) == K, f"{len(gens)} seeds for {K} chains"
    w_star = [q.detach().clone() for q in params]
    sizes = [q[0].numel() for q in params]
    noise = torch.empty(K, sum(sizes), dtype=params[0].dtype)
    with torch.no_grad():
        loss_star = loss(None).double()
    drawn = torch.empty(K, draws, dtype=torch.float64)
    try:
        for t in range(burnin + draws):
            idx = None
            if batch is not None and batch < n:
                idx = torch.stack([torch.randperm(n, generator=g)[:batch] for g in gens])
            for k, g in enumerate(gens):
                noise[k].normal_(generator=g)
            with torch.enable_grad():  # analyze.py measures under no_grad
                value = loss(idx)
                grads = torch.autograd.grad(value.sum(), params, allow_unused=True)
            if t >= burnin:
                drawn[:, t - burnin] = value.detach().double()
            with torch.no_grad():
                for q, w, dq, xi in zip(params, w_star, grads, noise.split(sizes, 1)):
                    if dq is None:  # a parameter the loss does not read: left at w*
                        continue
                    drift = gamma * (q - w) + nbeta * dq
                    q.add_(drift, alpha=-eps / 2).add_(xi.view(q.shape), alpha=math.sqrt(eps))
            if progress:
                progress(t + 1, burnin + draws)
    finally:
        with torch.no_grad():
            for q, w in zip(params, w_star):
                q.copy_(w)
    return (nbeta * (drawn.mean(1) - loss_star)).numpy(), drawn.numpy()


# ---------------------------------------------------------------- the context

def run_context(cfg, model, final, llc=True):
    """What every checkpoint of a run shares: the grid of pairs and its split, fixed example
    sets, the Fourier basis, and the key frequencies of the final checkpoint, held fixed over
    the run: keys by W_L's Fourier norms (Nanda et al.'s rule; restricted and excluded loss
    keep or remove them), keys_embed by W_E's; llc False: no checkpoint takes the LLC."""
    x, y, valid = all_pairs(cfg)  # the whole grid, row a*p + b
    train = train_mask(cfg, valid)
    g = torch.Generator().manual_seed(0)
    ntk_idx = torch.nonzero(train).flatten()[torch.randperm(int(train.sum()), generator=g)[:N_NTK]]
    attn_idx = torch.randperm(cfg.p * cfg.p, generator=g)[:N_ATTN]
    valid_idx = torch.nonzero(valid).flatten()
    sym_idx = valid_idx[torch.randint(len(valid_idx), (N_GRAD_SYM,), generator=g)]
    sym_class = torch.randint(cfg.p, (N_GRAD_SYM,), generator=g)  # any class, as Zhong et al.
    basis = fourier_basis(cfg.p)
    load_weights(model, final)
    forward = grid_forward(model, x[attn_idx[:64]], y[attn_idx[:64]])
    keys = key_frequencies(frequency_norms(neuron_logit_map(model, cfg).detach(), basis))
    keys_embed = key_frequencies(frequency_norms(embedding(model, cfg).detach(), basis))
    # the Fourier-algorithm measures use the directions of a+b
    return types.SimpleNamespace(cfg=cfg, model=model, p=cfg.p, is_add=cfg.op == "add", x=x,
                                 y=y, valid=valid, train=train, test=valid & ~train,
                                 ntk_idx=ntk_idx,
                                 attn_idx=attn_idx, sym_idx=sym_idx, sym_class=sym_class,
                                 basis=basis, keys=keys, keys_embed=keys_embed, llc=llc, memo={},
                                 forward=forward)


def grid_forward(model, x, y):
    """f(P, buffers, tokens, cache) -> logits in eval mode: the forward that load_checkpoint_into
    runs over every pair. fast.py's table forward (one layer, or the MLP: about half the time
    of model.py's, BENCHMARKS.md) where on the probe batch (x, y) it gives model.py's logits and
    gradients (fast.check_forward) and the cache entries it has; else model.py's forward."""
    fn = fast.forward_fn(model)
    if fast.has_table(model.cfg):
        ref = copy.deepcopy(model).double().eval()
        P, buffers = dict(ref.named_parameters()), dict(ref.named_buffers())
        want, got = {}, {}
        with torch.no_grad():
            ref(x, cache=want)
            fn(P, buffers, x, train=False, cache=got)
        with torch.enable_grad():  # analyze.py measures under no_grad
            err = fast.check_forward(model, fn, x, y)
        for k in got:
            for g, w in zip(*(v if isinstance(v, list) else [v] for v in (got[k], want[k]))):
                err = max(err, float((g - w).norm() / w.norm().clamp_min(1e-300)))
        if err > fast.MATCHES:  # model.py edited: its own forward
            fn = fast.forward_fn(model, fast=False)
    return lambda P, buffers, tokens, cache: fn(P, buffers, tokens, train=False, cache=cache)


def load_weights(model, ck):
    """The checkpoint's weights into the model, or Stop in one line if they do not fit it
    (a checkpoint of an older model.py: other parameter names or shapes)."""
    try:
        model.load_state_dict(ck["model"])
    except RuntimeError as e:
        details = [line.strip() for line in str(e).splitlines()[1:] if line.strip()]
        raise Stop(f"the checkpoint of step {ck['step']} does not fit this model.py "
                   f"({details[0] if details else 'other parameters'}): analyse it with the "
                   f"code that trained it")


def load_checkpoint_into(c, model, ck):
    """c at checkpoint ck: the model in float64 and in eval mode (the trained function, no
    dropout mask) and one forward over every pair (c.forward: model.py's function)."""
    load_weights(model, ck)
    c.model = model.double().eval()
    c.step = ck["step"]
    c.cache, c.shared = {}, {}
    c.logits = c.forward(dict(c.model.named_parameters()), dict(c.model.named_buffers()), c.x,
                         c.cache).double()
    c.L = c.logits[:, :c.p]
    c.E = embedding(c.model, c.cfg)
    c.E_b = embedding(c.model, c.cfg, 1)


# ---------------------------------------------------------------- the registry
# A measure is a function of the context c of one checkpoint: c.model (float64, at the
# checkpoint), c.cfg, c.p, c.step; c.x, c.y every pair [a, b, '='] (row a*p + b) and its label;
# masks c.train, c.test, c.valid; c.logits (one forward over every pair), c.L its first p
# classes, c.cache that forward's cache ("attn", "mlp_act", "resid"), c.shared values that
# several measures of the checkpoint read (computed by the first); c.E the first operand's
# embedding (c.E_b the second's), c.basis the Fourier basis, c.keys / c.keys_embed the key
# frequencies of W_L / W_E, c.is_add; fixed example sets c.ntk_idx, c.attn_idx, c.sym_idx
# (pairs) with c.sym_class (a class each); and c.memo, a dict kept over the run's checkpoints
# (for state such as the NTK at the first checkpoint). It returns a number or an array of one
# shape at every checkpoint.


@dataclass(frozen=True)
class Measure:
    """An entry of MEASURES: the measure, and how summary.md and the figures show it."""
    fn: Callable         # the checkpoint's context c -> a number, or an array of one shape
    label: str = ""      # its name in summary.md's column titles
    # summary.md's columns, one per statistic over each seed's checkpoints (summary.SUMMARIES):
    # "at" its value at summary.AT, "at_grok" at generalization, "peak" its largest value,
    # "corr" its rank correlation with test loss; shown as mean +- std over the seeds
    summary: tuple = ()
    digits: int = 2      # decimals in summary.md
    figure: str = ""     # y label of its cross-run figure, figures/<key>_by_config.png ("": none)
    log: bool = False    # that figure's y axis logarithmic

def attn_entropy_heads(c, average=False):
    """Per head (average: of the head-averaged weights), over all 3 query positions of N_ATTN
    fixed pairs, first block; transformer only."""
    if c.cfg.model != "transformer":
        return np.full(1, np.nan)
    if "attn" not in c.shared:  # one forward for the three entropy measures
        cache = {}
        c.model.residuals(c.x[c.attn_idx], cache=cache)  # all 3 queries
        c.shared["attn"] = cache["attn"][0]
    w = c.shared["attn"]
    return attention_entropy(w.mean(1, keepdim=True) if average else w).numpy()


NORMS = (nn.LayerNorm, nn.RMSNorm)  # what model.make_norm builds


def sr_train(c):
    """Singh et al.'s scale-removed train loss (their mlp-inpnorm): every norm removed, and each
    block's MLP input u divided by ||u||: x = x + attn(x, x, x), then x + mlp(x / ||x||). Run
    by the model's own forward (scale_free), its norm modules made the identity for the
    call, so that an edited block is measured as it computes; transformer only."""
    if c.cfg.model != "transformer":
        return np.nan
    norms = [m for m in c.model.modules() if isinstance(m, NORMS)]
    hooks = [m.register_forward_hook(lambda module, args, out: args[0]) for m in norms]
    try:
        logits = c.model(c.x[c.train], scale_free=True)
    finally:
        for h in hooks:
            h.remove()
    return ce(logits.double(), c.y[c.train])


def ntk_distance(c):
    """||K_t - K_0|| / ||K_0||, K_0 the NTK at the run's first checkpoint: on N_NTK fixed train
    pairs, a sub-block of Singh et al.'s K over all of them (too slow on a CPU)."""
    with torch.enable_grad():
        K = ntk(c.model, c.x[c.ntk_idx])
    K0 = c.memo.setdefault("ntk_0", K)
    return float((K - K0).norm() / K0.norm())


def clock_pizza_gradients(c):
    """Gradient symmetricity of the checkpoint on its fixed triples; NaN for a model without
    learned input embeddings (one-hot operands)."""
    if get_param(c.model, "embed") is None:
        return np.nan
    with torch.enable_grad():
        grads = embedding_gradients(c.model, c.x[c.sym_idx], c.sym_class)
    return gradient_symmetricity(grads[:, 0], grads[:, 1])


def llc_problem(c, states, fast_path=True):
    """(loss, params, n, seeds) for sgld_llc: LLC_CHAINS chains at each of the weights `states`
    (state dicts of c.model's shape, in order; chain i of each seeded i), stacked as one
    float32 model (fast.Stacked, as train.py stacks seeds: on a CPU run by run, each on the
    table forward fast.forward_fn, checked against model.py on a probe batch as training
    checks it; fast_path False: model.py's own forward), in eval mode. The loss: the training
    pairs' mean cross-entropy (the model's negative log-likelihood, for a --loss stablemax run
    too) of each chain on its examples. Float32: SGLD's noise dwarfs float32 rounding."""
    x, y = c.x[c.train], c.y[c.train]
    model = copy.deepcopy(c.model).float().eval()
    fn = fast.forward_fn(model, fast_path)
    with torch.enable_grad():  # analyze.py measures under no_grad
        if fast_path and fast.has_table(c.cfg) and \
                fast.check_forward(model, fn, x[:64], y[:64]) > fast.MATCHES:
            fn = fast.forward_fn(model, fast=False)  # model.py edited: its own forward
    models = []
    for sd in states:
        m = copy.deepcopy(model)
        m.load_state_dict(sd)
        models += [m] * LLC_CHAINS
    stacked = fast.Stacked(models, fns=[fn] * len(models))
    K = len(models)

    def loss(idx):
        xb, yb = (x.expand(K, -1, -1), y.expand(K, -1)) if idx is None else (x[idx], y[idx])
        logits = stacked(xb, train=False)
        return F.cross_entropy(logits.flatten(0, 1), yb.flatten(), reduction="none") \
            .view(K, -1).mean(1)
    return loss, list(stacked.flat), len(y), list(range(LLC_CHAINS)) * len(states)


def run_llc(c, states, progress=None, fast_path=True, **settings):
    """The local learning coefficient of each of LLC_CHAINS chains at each of the weights
    `states` (sgld_llc, all chains as one stacked model): (len(states), LLC_CHAINS), and the
    drawn losses (len(states), LLC_CHAINS, draws). settings: sgld_llc's, LLC_* by default."""
    loss, params, n, seeds = llc_problem(c, states, fast_path)
    # the registry's settings named here, not as sgld_llc's defaults: the stamp follows them
    settings = dict(dict(burnin=LLC_BURNIN, draws=LLC_DRAWS, eps=LLC_EPS, gamma=LLC_GAMMA,
                         batch=LLC_BATCH), **settings)
    llc, drawn = sgld_llc(loss, params, n, seeds, progress=progress, **settings)
    return llc.reshape(len(states), LLC_CHAINS), drawn.reshape(len(states), LLC_CHAINS, -1)


def llc_every(cfg):
    """The period of the checkpoints that take the LLC: steps / LLC_POINTS rounded up to a
    multiple of the checkpoint period (so that it falls on checkpoints), at least one period;
    with step 0, at most LLC_POINTS + 1 checkpoints a run."""
    periods = math.ceil(cfg.steps / LLC_POINTS / cfg.ckpt_every)  # rounded up: <= LLC_POINTS
    return max(1, periods) * cfg.ckpt_every


def llc_chains(c):
    """The local learning coefficient of each SGLD chain (run_llc) at the checkpoints whose
    step is a multiple of llc_every(cfg); NaN at the others, and at all when c.llc is False.
    analyze.measure runs all such checkpoints' chains at once into c.memo["llc"] before it
    measures; a checkpoint not there is run alone."""
    if not c.llc or c.step % llc_every(c.cfg):
        return np.full(LLC_CHAINS, np.nan)
    done = c.memo.setdefault("llc", {})
    if c.step not in done:
        done[c.step] = run_llc(c, [c.model.state_dict()])[0][0]
    return done[c.step]


MEASURES = {  # name in analysis.npz -> Measure(function of the checkpoint's context, display)
    "step": Measure(lambda c: c.step),
    "train_loss": Measure(lambda c: ce(c.logits[c.train], c.y[c.train])),
    "test_loss": Measure(lambda c: ce(c.logits[c.test], c.y[c.test])),
    "restricted_loss": Measure(
        lambda c: restricted_loss(c.L, c.y, c.p, c.keys) if c.is_add else np.nan),
    "excluded_loss": Measure(
        lambda c: excluded_loss(c.L, c.y, c.p, c.keys, c.train) if c.is_add else np.nan),
    # Nanda et al.: Gini of the norms of the p Fourier components (constant, cos k, sin k each)
    "gini_embed": Measure(lambda c: gini(component_norms(c.E, c.basis))),
    "gini_logit": Measure(
        lambda c: gini(component_norms(neuron_logit_map(c.model, c.cfg), c.basis))),
    "c_fourier": Measure(lambda c: c_fourier(c.E), "C_Fourier", ("at_grok",),
                         figure="C_Fourier", log=True),
    # the operands' mean: Gu et al.'s code
    "med": Measure(lambda c: (med(c.E) + med(c.E_b)) / 2, "MED", ("corr",), figure="MED"),
    # Gu et al.'s one-hot variant: MED of the first MLP layer's output on the pairs (i, i)
    "med_hidden": Measure(lambda c: med(diagonal(c, c.cache["mlp_act"]))),
    # Gu et al.: weight decay makes the tokens uniform: the spread of ||phi(i)|| and of
    # ||phi(i+1) - phi(i)|| over the first operand's tokens
    "norm_spread": Measure(lambda c: spread(c.E.norm(dim=1))),
    "diff_spread": Measure(lambda c: spread((torch.roll(c.E, -1, 0) - c.E).norm(dim=1))),
    # Gu et al.: is the dug-out region learned, or only the rest? (NaN without a hole)
    "hole_acc": Measure(lambda c: accuracy_on(c, hole_mask(c.cfg) & c.valid)),
    "rest_acc": Measure(lambda c: accuracy_on(c, c.test & ~hole_mask(c.cfg))),
    # Singh et al.'s attention entropy: of the head-averaged weights (their README); ours, the
    # mean of the per-head entropies, is lower
    "attn_entropy": Measure(lambda c: float(np.mean(attn_entropy_heads(c, average=True))),
                            "attn entropy", ("at",), digits=3,
                            figure="attention entropy (nats)"),
    "attn_entropy_per_head": Measure(lambda c: float(np.mean(attn_entropy_heads(c)))),
    "attn_entropy_heads": Measure(attn_entropy_heads),
    "sr_train": Measure(sr_train, "SR-train", ("at",), figure="SR-train loss (MLP input / ||.||)",
                        log=True),
    # ours keeps the norms and normalises the MLP's input after its norm
    "sr_train_ln": Measure(
        lambda c: ce(c.model(c.x[c.train], scale_free=True).double(), c.y[c.train])),
    # Singh et al.: generalization comes with compressible features (low effective rank)
    "eff_rank": Measure(lambda c: effective_rank(c.cache["resid"][c.test]), "eff. rank",
                        ("at", "peak", "at_grok", "corr"), figure="effective rank of features"),
    "rank": Measure(lambda c: matrix_rank(c.cache["resid"][c.test])),
    # Singh et al.'s fit, on their float32 eigenvalues; and on ours in float64
    "power_law_alpha": Measure(lambda c: power_law_alpha(singh_esd(c.cache["resid"][c.test]))),
    "power_law_alpha_f64": Measure(
        lambda c: power_law_alpha(spectrum(c.cache["resid"][c.test]).numpy())),
    "ntk_distance": Measure(ntk_distance, figure="||K_t - K_0|| / ||K_0||"),
    "weight_norm": Measure(lambda c: sum(float((q ** 2).sum()) for q in c.model.parameters())),
    # Lau et al.'s local learning coefficient (devinterp's estimator), at LLC_POINTS checkpoints
    "llc_chains": Measure(llc_chains),
    "llc": Measure(lambda c: float(np.mean(llc_chains(c))),
                   figure=f"local learning coefficient (step 0, up to {LLC_POINTS} more)"),
    # Zhong et al.'s Clock (distance irrelevance ~1, gradient symmetricity low) or Pizza (both
    # the other way); distance irrelevance reads a + b, so addition only. No summary.md column:
    # its statistics show a key that a copy's analysis.npz predates as "not reached" (summary.at)
    "distance_irrelevance": Measure(
        lambda c: distance_irrelevance(c.logits[torch.arange(len(c.y)), c.y], c.p)
        if c.is_add else np.nan, figure="distance irrelevance"),
    "gradient_symmetricity": Measure(clock_pizza_gradients, figure="gradient symmetricity"),
    "fourier_embed": Measure(lambda c: frequency_norms(c.E, c.basis).numpy()),
}


def accuracy_on(c, mask):
    return float((c.logits.argmax(-1) == c.y)[mask].double().mean()) if mask.any() else np.nan


def hole_by_token(c, shared):
    """Accuracy in the hole on the first operands a whose token training also shows as a second
    operand (a >= b_offset: token a is b = a - b_offset's; every a on one vocabulary), or on
    the others, whose token no training pair holds (--b-offset: Gu et al.'s str.py)."""
    a = torch.arange(c.p ** 2) // c.p
    return accuracy_on(c, hole_mask(c.cfg) & c.valid & ((a >= c.cfg.b_offset) == shared))


def swapped(c):
    """Gu et al. (a^2+ab+b^2): a symmetric op can be answered on (a, b) by memorizing (b, a);
    the test pairs whose swap is a training pair."""
    return c.train.view(c.p, c.p).T.reshape(-1) & c.test


def neurons(c):
    """Nanda et al.'s frequency of each MLP neuron and its share (fourier.neuron_frequencies)."""
    if "neurons" not in c.memo:
        c.memo["neurons"] = neuron_frequencies(c.cache["mlp_act"], c.basis)
    return c.memo["neurons"]


def top_neurons(c):
    return c.cache["mlp_act"].reshape(c.p * c.p, -1).var(0).argsort(descending=True)[:N_NEURONS]


FINAL = {  # at the final checkpoint only: name -> function of its context (None: no such key)
    # the paper's: the frequencies of the neuron-logit map W_L, which every measure below uses
    "keys": lambda c: np.array(c.keys, dtype=int),
    "keys_embed": lambda c: np.array(c.keys_embed, dtype=int),  # by W_E's Fourier norms
    # loss over all pairs with the key frequencies removed, and with all but them removed
    "ablate_keys": lambda c: excluded_loss(c.L, c.y, c.p, c.keys) if c.is_add else np.nan,
    "ablate_all_but_keys": lambda c: (restricted_loss(c.L, c.y, c.p, c.keys) if c.is_add
                                      else np.nan),
    "cos_r2": lambda c: cos_template_r2(c.L, c.p, c.keys) if c.keys and c.is_add else np.nan,
    # Nanda et al.'s Table 1 fit: a coefficient per key frequency (93.2-98.2% of the variance)
    "cos_r2_per_freq": lambda c: cos_fit_r2(c.L, c.p, c.keys) if c.keys and c.is_add else np.nan,
    # their per-neuron rule (each MLP neuron's frequency and share of variance): the share of
    # neurons explained by one frequency (433 of 512 in the paper) and those frequencies
    "one_freq_share": lambda c: float((neurons(c)[1] > ONE_FREQ).double().mean()),
    "keys_neurons": lambda c: neurons(c)[0][neurons(c)[1] > ONE_FREQ].unique().numpy(),
    "final_neurons": lambda c: (c.cache["mlp_act"].reshape(c.p, c.p, -1)[:, :, top_neurons(c)]
                                .permute(2, 0, 1).numpy()),
    "neuron_ids": lambda c: top_neurons(c).numpy(),
    # the best test accuracy if the hole is never learned: the share of test pairs outside it
    "hole_bound": lambda c: (float((c.test & ~hole_mask(c.cfg)).sum() / c.test.sum())
                             if hole_mask(c.cfg).any() else np.nan),
    # the hole's first operands whose token training shows as a second operand, and the rest
    "hole_acc_shared": lambda c: hole_by_token(c, shared=True),
    "hole_acc_unshared": lambda c: hole_by_token(c, shared=False),
    "swap_acc": lambda c: accuracy_on(c, swapped(c)),
    "noswap_acc": lambda c: accuracy_on(c, c.test & ~swapped(c)),
    "swap_share": lambda c: float(swapped(c).sum() / c.test.sum()),
    # each head's attention from '=' to a, over (a, b)
    "final_attn_a": lambda c: (c.cache["attn"][0][:, :, -1, 0].T.reshape(-1, c.p, c.p).numpy()
                               if c.cfg.model == "transformer" else None),
}
