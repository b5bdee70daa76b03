"""
The Fourier algorithm of Nanda et al. on plain arrays: the basis over Z_p, frequency norms and
key frequencies, restricted and excluded loss, the cos(w(a+b-c)) fits of the logits, and the
per-neuron frequency rule. measures.py registers them.
"""
import math

import torch
import torch.nn.functional as F

KEY_SHARE = 3.0   # k is a key frequency if its share of W_E's Fourier norm^2 is >= KEY_SHARE / K
ONE_FREQ = 0.85   # Nanda et al.: a neuron is explained by one frequency above this share


def fourier_basis(p):
    """Orthonormal (p, p) basis over Z_p: rows 1, cos(w_1 x), sin(w_1 x), cos(w_2 x), ..."""
    x = torch.arange(p, dtype=torch.float64)
    rows = [torch.ones(p)]
    for k in range(1, p // 2 + 1):
        rows += [torch.cos(2 * math.pi * k * x / p), torch.sin(2 * math.pi * k * x / p)]
    basis = torch.stack(rows[:p]).double()
    return basis / basis.norm(dim=1, keepdim=True)


def component_norms(W, basis):
    """Norm of each Fourier component of W (p, d) over its first axis: (p,), in the row order
    of basis (fourier_basis). Nanda et al.'s 'norms of the Fourier components' (their Gini
    coefficients)."""
    return (basis @ W.detach().double()).norm(dim=1)


def frequency_norms(W, basis):
    """Norm of each frequency's component of W (p, d) over its first axis: (1 + p//2,),
    index 0 the constant, index k the cos and sin of frequency k together."""
    squares = component_norms(W, basis) ** 2   # rows 1, cos 1, sin 1, cos 2, ...
    frequency = (torch.arange(1, len(squares)) + 1) // 2  # of rows 1, 2, ...: 1, 1, 2, 2, ...
    out = torch.zeros(basis.shape[0] // 2 + 1, dtype=torch.float64)
    out[0] = squares[0]
    out.index_add_(0, frequency, squares[1:])
    return out.sqrt()


def key_frequencies(norms):
    """Frequencies whose share of the non-constant squared norm is >= KEY_SHARE / K."""
    share = norms[1:] ** 2 / (norms[1:] ** 2).sum()
    return (torch.nonzero(share >= KEY_SHARE / len(share)).flatten() + 1).tolist()


def sum_directions(p, keys):
    """Orthonormal columns over all pairs (p*p,) spanned by 1, cos(w_k(a+b)), sin(w_k(a+b))."""
    a, b = torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij")
    s = (a + b).flatten().double()
    cols = [torch.ones(p * p, dtype=torch.float64)]
    for k in keys:
        cols.append(torch.cos(2 * math.pi * k * s / p))
        if 2 * k != p:  # an even p's frequency p/2 has no sine (sin(pi (a+b)) = 0)
            cols.append(torch.sin(2 * math.pi * k * s / p))
    U = torch.stack(cols, 1)
    return U / U.norm(dim=0)


def project(L, U):
    return U @ (U.T @ L)


def ce(logits, y):
    return float(F.cross_entropy(logits, y))


def restricted_loss(L, y, p, keys):
    """Nanda et al.: L (p*p, p) logits over all pairs, kept to the constant and the key
    directions cos/sin(w_k(a+b)); loss on all pairs."""
    return ce(project(L, sum_directions(p, keys)), y)


def excluded_loss(L, y, p, keys, on=None):
    """Nanda et al.: L (p*p, p) logits over all pairs with exactly the key directions removed;
    loss on the pairs `on` (a mask; None: all pairs)."""
    X = L - project(L, sum_directions(p, keys)[:, 1:])
    return ce(X, y) if on is None else ce(X[on], y[on])


def cos_template_r2(L, p, keys):
    """Fraction of the variance of the logits (centred per pair) explained by the best multiple
    of sum_k cos(w_k(a+b-c))."""
    a, b, c = torch.meshgrid(torch.arange(p), torch.arange(p), torch.arange(p), indexing="ij")
    T = sum(torch.cos(2 * math.pi * k * (a + b - c).double() / p) for k in keys).reshape(p * p, p)
    Lc = L - L.mean(1, keepdim=True)
    Tc = T - T.mean(1, keepdim=True)
    return float((Lc * Tc).sum() ** 2 / ((Tc ** 2).sum() * (Lc ** 2).sum()))


def neuron_frequencies(acts, basis):
    """Nanda et al.'s per-neuron rule (their notebook; transformers.py's calculate_key_freqs):
    a neuron's activations over all pairs (p*p, neurons), centred, in the 2-D Fourier basis;
    its share of variance in the 3 x 3 block {const, cos k, sin k}^2 of each frequency k.
    Returns per neuron the frequency with the largest share, and that share."""
    p = basis.shape[0]
    A = acts.double().reshape(p, p, -1)
    # two products: torch evaluates the three-operand einsum in an order ~25x slower here
    F2 = torch.einsum("jb,ibn->ijn", basis, torch.einsum("ia,abn->ibn", basis, A - A.mean((0, 1))))
    shares = []
    for k in range(1, p // 2 + 1):
        rows = [i for i in (0, 2 * k - 1, 2 * k) if i < p]  # even p: p/2 has no sine row
        shares.append((F2[rows][:, rows] ** 2).sum((0, 1)))
    share = torch.stack(shares) / (F2 ** 2).sum((0, 1))
    best = share.max(0)
    return best.indices + 1, best.values


def cos_fit_r2(L, p, keys):
    """Nanda et al.'s fit of the logits: L ~ sum_k alpha_k cos(w_k(a+b-c)), one least-squares
    coefficient per key frequency (centred per pair): the fraction of variance explained."""
    a, b, c = torch.meshgrid(torch.arange(p), torch.arange(p), torch.arange(p), indexing="ij")
    T = torch.stack([torch.cos(2 * math.pi * k * (a + b - c).double() / p).reshape(p * p, p)
                     for k in keys], -1)                               # (p*p, p, K)
    Lc = (L - L.mean(1, keepdim=True)).reshape(-1)
    Tc = (T - T.mean(1, keepdim=True)).reshape(-1, len(keys))
    coef = torch.linalg.lstsq(Tc, Lc.unsqueeze(1)).solution
    return float(1 - ((Lc - (Tc @ coef)[:, 0]) ** 2).sum() / (Lc ** 2).sum())
