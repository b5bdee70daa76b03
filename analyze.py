"""
Progress measures of the four papers at every checkpoint of every run, then every figure.

    python analyze.py runs/              # every run folder below runs/, then the cross-run figures
    python analyze.py runs/ln-pre_s0     # one run

Writes runs/<name>/analysis.npz (one row per checkpoint; keys in MEASURES below and README.md),
runs/<name>/figures/*.png, and for a folder of runs runs/figures/*.png, runs/summary.md and
runs/summary.csv. A run is recomputed only when its checkpoints changed.
"""
import glob
import hashlib
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.func import functional_call, grad, vmap
from torch.nn.attention import SDPBackend, sdpa_kernel

from model import Config, build_model
from data import Stop, all_pairs, hole_mask, train_mask
from train import load_checkpoint, save_atomic

KEY_SHARE = 3.0   # k is a key frequency if its share of W_E's Fourier norm^2 is >= KEY_SHARE / K
N_NTK = 64        # fixed train examples for the empirical NTK
N_ATTN = 1024     # fixed pairs for attention entropy (full forward over all positions)
N_NEURONS = 4     # MLP neurons drawn as (a, b) heatmaps
VERSION = 1       # bump when a measure changes, so cached analyses are recomputed
MEASURES = ["step", "train_loss", "test_loss", "restricted_loss", "excluded_loss", "gini_embed",
            "gini_logit", "c_fourier", "med", "attn_entropy", "attn_entropy_heads", "sr_train",
            "eff_rank", "spectrum_exponent", "ntk_distance", "weight_norm", "hessian_embed",
            "hessian_fc1", "fourier_embed", "fourier_logit"]


# ---------------------------------------------------------------- measures on plain arrays

def fourier_basis(p):
    """Orthonormal (p, p) basis over Z_p: rows 1, cos(w_1 x), sin(w_1 x), cos(w_2 x), ..."""
    x = torch.arange(p, dtype=torch.float64)
    rows = [torch.ones(p)]
    for k in range(1, p // 2 + 1):
        rows += [torch.cos(2 * math.pi * k * x / p), torch.sin(2 * math.pi * k * x / p)]
    B = torch.stack(rows[:p]).double()
    return B / B.norm(dim=1, keepdim=True)


def frequency_norms(W, B):
    """Norm of each frequency's component of W (p, d) over its first axis: (1 + p//2,),
    index 0 the constant, index k the cos and sin of frequency k together."""
    c = (B @ W.double()).pow(2).sum(1)
    out = torch.zeros(B.shape[0] // 2 + 1, dtype=torch.float64)
    out[0] = c[0]
    out.index_add_(0, (torch.arange(1, len(c)) + 1) // 2, c[1:])
    return out.sqrt()


def key_frequencies(norms):
    """Frequencies whose share of the non-constant squared norm is >= KEY_SHARE / K."""
    share = norms[1:] ** 2 / (norms[1:] ** 2).sum()
    return (torch.nonzero(share >= KEY_SHARE / len(share)).flatten() + 1).tolist()


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


def attention_entropy(w):
    """w (N, heads, queries, keys) -> per-head -sum w log w averaged over examples and queries."""
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


def spectrum_exponent(Z):
    """beta of a plain least-squares fit log lambda_i = c - beta log i over the top half."""
    q = spectrum(Z)
    n = max(2, len(q) // 2)
    i = torch.arange(1, n + 1, dtype=torch.float64)
    lam = q[:n].clamp_min(1e-300)
    A = torch.stack([torch.ones(n, dtype=torch.float64), -i.log()], 1)
    return float(torch.linalg.lstsq(A, lam.log().unsqueeze(1)).solution[1])


def sum_directions(p, keys):
    """Orthonormal columns over all pairs (p*p,) spanned by 1, cos(w_k(a+b)), sin(w_k(a+b))."""
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    s = (a + b).flatten().double()
    cols = [torch.ones(p * p, dtype=torch.float64)]
    for k in keys:
        cols += [torch.cos(2 * math.pi * k * s / p), torch.sin(2 * math.pi * k * s / p)]
    U = torch.stack(cols, 1)
    return U / U.norm(dim=0)


def project(L, U):
    return U @ (U.T @ L)


def ce(logits, y):
    return float(F.cross_entropy(logits, y))


def restricted_excluded(L, y, train, p, keys):
    """Nanda et al.: L (p*p, p) logits over all pairs. Restricted: keep only the constant and
    the key directions cos/sin(w_k(a+b)) (loss on all pairs). Excluded: remove exactly the key
    directions (loss on the train pairs)."""
    U = sum_directions(p, keys)
    restricted = project(L, U)
    excluded = L - project(L, U[:, 1:])
    return ce(restricted, y), ce(excluded[train], y[train])


def ablations(L, y, p, keys):
    """Loss over all pairs with each key frequency removed, all removed, all but them removed."""
    each = [ce(L - project(L, sum_directions(p, [k])[:, 1:]), y) for k in keys]
    U = sum_directions(p, keys)
    return np.array(each), ce(L - project(L, U[:, 1:]), y), ce(project(L, U), y)


def cos_template_r2(L, p, keys):
    """Fraction of the variance of the logits (centred per pair) explained by the best multiple
    of sum_k cos(w_k(a+b-c))."""
    a, b, c = torch.meshgrid(torch.arange(p), torch.arange(p), torch.arange(p), indexing="ij")
    T = sum(torch.cos(2 * math.pi * k * (a + b - c).double() / p) for k in keys).reshape(p * p, p)
    Lc = L - L.mean(1, keepdim=True)
    Tc = T - T.mean(1, keepdim=True)
    return float((Lc * Tc).sum() ** 2 / ((Tc ** 2).sum() * (Lc ** 2).sum()))


def rank_corr(x, y):
    """Spearman's rank correlation (no ties expected in real-valued measures)."""
    rx, ry = (np.argsort(np.argsort(np.asarray(v))).astype(float) for v in (x, y))
    return float(np.corrcoef(rx, ry)[0, 1])


# ---------------------------------------------------------------- measures that need the model

def embedding(model, cfg):
    """Operand-token embeddings (p, d); for the one-hot MLP the first layer's columns of a."""
    if hasattr(model, "embed"):
        return model.embed.weight[:cfg.p]
    return model.fc1.weight[:, :cfg.p].T


def neuron_logit_map(model, cfg):
    """W_L (p classes, d_mlp): logits as a linear function of the MLP neurons."""
    if cfg.model == "transformer":
        return (model.unembed.T @ model.blocks[-1].fc2.weight)[:cfg.p]
    return model.readout.weight[:cfg.p]


def ntk(model, x, y):
    """Empirical NTK K = J J^T of the correct-class logit on fixed examples (per-example grads)."""
    params = {k: v.detach() for k, v in model.named_parameters()}

    def f(prm, xi, yi):
        return functional_call(model, prm, (xi[None],))[0].gather(0, yi[None])[0]
    with sdpa_kernel(SDPBackend.MATH):  # batchable attention for deeper models, as in Stacked
        J = vmap(grad(f), in_dims=(None, 0, 0))(params, x, y)
    J = torch.cat([j.flatten(1) for j in J.values()], 1).double()
    return J @ J.T


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


def analyse_run(run_dir, log=print):
    """All measures at every checkpoint of one run; writes and returns analysis.npz's dict."""
    with torch.no_grad():
        return _analyse_run(run_dir, log)


def _analyse_run(run_dir, log):
    paths = sorted(glob.glob(os.path.join(run_dir, "ckpt", "step_*.pt")))
    if not paths:
        raise Stop(f"{run_dir}: no checkpoints")
    stamp = hashlib.sha1(repr([VERSION] + [(q, os.path.getsize(q), os.path.getmtime(q)) for q in paths]).encode()).hexdigest()
    out = os.path.join(run_dir, "analysis.npz")
    if os.path.exists(out):
        old = dict(np.load(out))
        if str(old.get("stamp")) == stamp:
            return old
    cks = [load_checkpoint(q) for q in paths]
    try:
        cfg = Config.from_dict(cks[-1]["config"])
        model = build_model(cfg)
    except (ValueError, TypeError, KeyError) as e:
        raise Stop(f"{run_dir}: unknown config ({e})")
    t0, p = time.time(), cfg.p
    is_add = cfg.op == "add"  # the Fourier-algorithm measures use the directions of a+b
    x_all, y_all, valid = all_pairs(cfg)  # the whole grid, row a*p + b
    train = train_mask(cfg, valid)
    test = valid & ~train
    g = torch.Generator().manual_seed(0)
    ntk_idx = torch.nonzero(train).flatten()[torch.randperm(int(train.sum()), generator=g)[:N_NTK]]
    attn_idx = torch.randperm(p * p, generator=g)[:N_ATTN]
    B = fourier_basis(p)
    # key frequencies from the final checkpoint, held fixed over the run (Nanda et al.)
    model.load_state_dict(cks[-1]["model"])
    keys = key_frequencies(frequency_norms(embedding(model, cfg).detach(), B))
    rows = {k: [] for k in MEASURES}
    K0, v_e, v_w = None, None, None
    for ck in cks:
        model.load_state_dict(ck["model"])
        model = model.double()
        cache = {}
        logits = model(x_all, cache=cache).double()
        L = logits[:, :p]
        E, WL = embedding(model, cfg), neuron_logit_map(model, cfg)
        fe, fl = frequency_norms(E, B), frequency_norms(WL, B)
        r_loss, x_loss = restricted_excluded(L, y_all, train, p, keys) if is_add else (np.nan, np.nan)
        if cfg.model == "transformer":
            c2 = {}
            model.residuals(x_all[attn_idx], cache=c2)  # all 3 queries
            ent = attention_entropy(c2["attn"][0]).numpy()
        else:
            ent = np.full(1, np.nan)
        with torch.enable_grad():
            K = ntk(model, x_all[ntk_idx], y_all[ntk_idx])
            if cfg.model == "mlp" and cfg.embed == "learned":
                h_e, v_e = hessian_top(model, x_all[train], y_all[train], model.embed.weight, v_e)
                h_w, v_w = hessian_top(model, x_all[train], y_all[train], model.fc1.weight, v_w)
            else:
                h_e = h_w = np.nan
        K0 = K if K0 is None else K0
        row = dict(step=ck["step"], train_loss=ce(logits[train], y_all[train]), test_loss=ce(logits[test], y_all[test]),
                   restricted_loss=r_loss, excluded_loss=x_loss, gini_embed=gini(fe[1:]), gini_logit=gini(fl[1:]),
                   c_fourier=c_fourier(E), med=med(E), attn_entropy=float(np.mean(ent)), attn_entropy_heads=ent,
                   sr_train=ce(model(x_all[train], scale_free=True).double(), y_all[train]),
                   eff_rank=effective_rank(cache["resid"][test]), spectrum_exponent=spectrum_exponent(cache["resid"][test]),
                   ntk_distance=float((K - K0).norm() / K0.norm()), weight_norm=sum(float((q ** 2).sum()) for q in model.parameters()),
                   hessian_embed=h_e, hessian_fc1=h_w, fourier_embed=fe.numpy(), fourier_logit=fl.numpy())
        for k in MEASURES:
            rows[k].append(row[k])
    res = {k: np.array(v) for k, v in rows.items()}
    # at the final checkpoint: ablations, the cos template, and the periodic pictures
    each, all_keys, but_keys = ablations(L, y_all, p, keys) if is_add else (np.zeros(0), np.nan, np.nan)
    act = cache["mlp_act"].reshape(p, p, -1)
    top = act.reshape(p * p, -1).var(0).argsort(descending=True)[:N_NEURONS]
    res.update(keys=np.array(keys, dtype=int), ablate_each=each, ablate_keys=all_keys, ablate_all_but_keys=but_keys,
               cos_r2=cos_template_r2(L, p, keys) if keys and is_add else np.nan,
               final_neurons=act[:, :, top].permute(2, 0, 1).numpy(), neuron_ids=top.numpy(),
               final_loss=ce(L[valid], y_all[valid]), stamp=stamp)
    hole = hole_mask(cfg) & valid  # Gu et al.: is the dug-out region learned, or only the rest?
    right = logits.argmax(-1) == y_all
    # Gu et al. (a^2+ab+b^2): a symmetric op can be answered on (a, b) by memorizing (b, a);
    # accuracy on the test pairs whose swap is a training pair, and on the others
    swapped = train.view(p, p).T.reshape(-1) & test
    res.update(hole_acc=float(right[hole].double().mean()) if hole.any() else np.nan,
               rest_acc=float(right[test & ~hole].double().mean()),
               swap_acc=float(right[swapped].double().mean()), noswap_acc=float(right[test & ~swapped].double().mean()),
               swap_share=float(swapped.sum() / test.sum()))
    if cfg.model == "transformer":
        res["final_attn_a"] = cache["attn"][0][:, :, -1, 0].T.reshape(-1, p, p).numpy()  # each head, query '=' -> a
    save_atomic(res, out)
    log(f"{run_dir}: {len(cks)} checkpoints analysed in {time.time() - t0:.1f}s, key frequencies {keys}")
    return res


def find_runs(path):
    if os.path.isdir(os.path.join(path, "ckpt")) or os.path.exists(os.path.join(path, "config.json")):
        return [path]
    return sorted(os.path.dirname(q) for q in glob.glob(os.path.join(path, "*", "config.json")))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0].startswith("-"):
        sys.exit(__doc__.strip().splitlines()[0] + "\nusage: python analyze.py RUNS_DIR_OR_RUN")
    import plots  # matplotlib only when drawing
    root = argv[0]
    if not os.path.isdir(root):
        sys.exit(f"error: {root} is not a folder")
    runs = find_runs(root)
    if not runs:
        sys.exit(f"error: no runs (folders with config.json) in {root}")
    done = {}
    for i, run in enumerate(runs):
        print(f"[{i + 1}/{len(runs)}] {run}", flush=True)
        try:
            res = analyse_run(run)
            cfg = Config.from_dict(load_checkpoint(sorted(glob.glob(os.path.join(run, "ckpt", "step_*.pt")))[-1])["config"])
            metrics = dict(np.load(os.path.join(run, "metrics.npz")))
        except Stop as e:
            print(f"skipped: {e}")
            continue
        plots.run_figures(run, cfg, metrics, res)
        done[run] = (cfg, metrics, res)
    if len(runs) > 1 or root != runs[0]:
        plots.cross_run_figures(root, done)
    print(f"figures in {root}/figures and each run's figures/")


if __name__ == "__main__":
    main()
