"""
Statistics over seeds, in numpy and the standard library: rank tests, exact small-sample tests
and bootstrap intervals. A run that never reached a threshold counts as np.inf (None is read as
np.inf too), so it ranks after every run that did.

    lo, hi = crossing_interval(step, curves)    # Singh et al.'s statistic, resampled over seeds
    lo, hi = mean_interval(steps_per_seed)      # a per-seed statistic's mean (or median)
    U, p = mann_whitney(x, y, "less")           # one-sided: x tends to be smaller than y
"""
import itertools
import math

import numpy as np

from runfiles import GROK

LEVEL = 0.9        # two-sided coverage of every interval
RESAMPLES = 4000   # bootstrap resamples
RNG_SEED = 0       # fixed, so that every interval printed is the same on every call


def as_values(v):
    """None (never reached) -> np.inf, as floats."""
    return np.array([np.inf if x is None else x for x in v], float)


# ---------------------------------------------------------------- rank and exact tests

def ranks(v):
    """Each value's rank in v, 0 the smallest; tied values share their ranks' mean (Spearman's
    and Mann-Whitney's convention: a loss that saturates ranks the same wherever it holds)."""
    _, inv, counts = np.unique(np.asarray(v), return_inverse=True, return_counts=True)
    return (np.cumsum(counts) - (counts + 1) / 2)[inv]


def rank_corr(x, y):
    """Spearman's rank correlation: Pearson's on the ranks (ties at their mean rank); NaN when
    one side is constant."""
    rx, ry = ranks(x), ranks(y)
    if rx.min() == rx.max() or ry.min() == ry.max():
        return np.nan
    return float(np.corrcoef(rx, ry)[0, 1])


def u_statistic(x, y):
    """Mann-Whitney's U of x against y: the pairs with x > y (ties 1/2), from the pooled ranks.
    None ranks after every step."""
    pooled = ranks(as_values(list(x) + list(y))) + 1  # ranks from 1
    return float(pooled[:len(x)].sum() - len(x) * (len(x) + 1) / 2)


def mann_whitney(x, y, alternative="two-sided"):
    """(U of x against y, p): U as u_statistic. alternative: 'two-sided', 'less' (x tends to be
    smaller than y) or 'greater'. Exact over the splits of the pooled ranks up to 200k of them,
    else normal with ties corrected. None ranks after every step."""
    v = as_values(list(x) + list(y))
    n1, n = len(x), len(v)
    pooled = ranks(v) + 1  # ranks from 1
    _, counts = np.unique(v, return_counts=True)

    def u(r):  # U of a first sample whose pooled ranks are r
        return r.sum() - n1 * (n1 + 1) / 2
    U = u(pooled[:n1])
    mu = n1 * (n - n1) / 2  # U's mean under the null
    if math.comb(n, n1) <= 200000:
        us = np.array([u(pooled[list(first)])
                       for first in itertools.combinations(range(n), n1)])
        tail = {"two-sided": np.abs(us - mu) >= abs(U - mu) - 1e-9, "less": us <= U + 1e-9,
                "greater": us >= U - 1e-9}[alternative]
        return U, float(np.mean(tail))
    var = n1 * (n - n1) / 12 * (n + 1 - (counts ** 3 - counts).sum() / (n * (n - 1)))
    if var == 0:
        return U, 1.0
    z = (U - mu) / math.sqrt(var)
    p = {"two-sided": math.erfc(abs(z) / math.sqrt(2)), "less": math.erfc(-z / math.sqrt(2)) / 2,
         "greater": math.erfc(z / math.sqrt(2)) / 2}[alternative]
    return U, p


def rank_corr_test(x, y):
    """One-sided p that Spearman's correlation is this low or lower if y's order were random:
    exact over every permutation of y up to 8 points, else normal (sd 1 / sqrt(n - 1))."""
    r, n = rank_corr(x, y), len(x)
    if np.isnan(r):  # one side constant: no order to test
        return r, 1.0
    if n <= 8:
        rs = np.array([rank_corr(x, p) for p in itertools.permutations(y)])
        return r, float(np.mean(rs <= r + 1e-9))
    return r, math.erfc(-r * math.sqrt(n - 1) / math.sqrt(2)) / 2


def fisher_exact(a, n1, b, n2):
    """Two-sided Fisher exact p that a of n1 and b of n2 share one rate (margins fixed)."""
    k, n = a + b, n1 + n2

    def pr(x):  # hypergeometric: x of the k in the first group
        return math.comb(n1, x) * math.comb(n2, k - x) / math.comb(n, k)
    lo, hi = max(0, k - n2), min(k, n1)
    return min(1.0, sum(pr(x) for x in range(lo, hi + 1) if pr(x) <= pr(a) * (1 + 1e-9)))


def sign_test(wins, losses, alternative="two-sided"):
    """Exact sign test (ties left out): P(a split this uneven | fair coins). alternative
    'greater': one-sided, P(at least `wins` wins)."""
    n = wins + losses
    if alternative == "greater":
        return sum(math.comb(n, i) for i in range(wins, n + 1)) / 2 ** n
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n)


def u_null(n1, n2):
    """Probabilities of U = 0 .. n1 n2 under the null (no ties): the count of arrangements with
    U = u obeys c(n1, n2, u) = c(n1 - 1, n2, u - n2) + c(n1, n2 - 1, u)."""
    c = [[np.zeros(1) for _ in range(n2 + 1)] for _ in range(n1 + 1)]
    for i in range(n1 + 1):
        for j in range(n2 + 1):
            if i and j:
                c[i][j] = np.zeros(i * j + 1)
                c[i][j][j:] += c[i - 1][j]
                c[i][j][:len(c[i][j - 1])] += c[i][j - 1]
            else:
                c[i][j] = np.ones(1)
    return c[n1][n2] / c[n1][n2].sum()


def seeds_to_decide(share, test="rank", alpha=0.05, most=200):
    """Seeds that would make an effect of the observed size significant (one-sided p < alpha):
    per arm for a rank test, share = U / (n1 n2), the probability that a seed of the paper's
    earlier arm is earlier; in all for a sign test, share = the wins' share. The effect is held
    at its observed size; None: no effect in the paper's direction, or more than `most`."""
    if share <= 0.5:
        return None
    for n in range(2, most + 1):
        if test == "sign":
            p = sign_test(round(share * n), n - round(share * n), "greater")
        elif n <= 12:  # exact: P(U >= the observed share of the n^2 pairs)
            p = u_null(n, n)[math.ceil(share * n * n - 1e-9):].sum()
        else:
            z = (share - 0.5) * n * n / math.sqrt(n * n * (2 * n + 1) / 12)
            p = math.erfc(z / math.sqrt(2)) / 2
        if p < alpha:
            return n
    return None


# ---------------------------------------------------------------- bootstrap intervals

def crossing_step(step, curves, threshold=GROK):
    """Singh et al.'s statistic: the first step at which the mean over seeds of the curves (seeds,
    steps) is <= threshold; np.inf if it never is."""
    hit = np.nonzero(np.mean(curves, 0) <= threshold)[0]
    return float(step[hit[0]]) if len(hit) else np.inf


def percentile_interval(values, level=LEVEL):
    """The (1 - level) / 2 and (1 + level) / 2 quantiles, each a value of the sample (np.inf
    kept: a share of resamples that never cross puts the upper end at np.inf; NaN, a statistic
    a resample does not have, left out)."""
    v = as_values(values)
    v = v[~np.isnan(v)]
    lo, hi = np.quantile(v, [(1 - level) / 2, (1 + level) / 2], method="inverted_cdf")
    return float(lo), float(hi)


def bootstrap(stat, n, size=None, level=LEVEL, resamples=RESAMPLES, seed=RNG_SEED):
    """Percentile interval of stat(indices) over `resamples` draws of `size` (default n) of the
    n seeds with replacement. size = the paper's seed count asks where a statistic of that many
    seeds of ours falls, to set beside the paper's."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, (resamples, size or n))
    return percentile_interval([stat(i) for i in draws], level)


def crossing_interval(step, curves, size=None, threshold=GROK, **kw):
    """Bootstrap interval of crossing_step over the seeds (rows of curves)."""
    curves = np.asarray(curves, float)
    return bootstrap(lambda i: crossing_step(step, curves[i], threshold), len(curves), size, **kw)


def mean_interval(values, size=None, median=False, **kw):
    """Bootstrap interval of the mean (or median) of a per-seed statistic (None: np.inf)."""
    v = as_values(values)
    f = np.median if median else np.mean
    return bootstrap(lambda i: f(v[i]), len(v), size, **kw)
