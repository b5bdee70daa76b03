"""
The statistics of stats.py against their definitions on hand-made inputs: tests against the
enumeration of every split or sign pattern, the bootstrap against the enumeration of every
resample of a few seeds.

    python -m pytest -q test_stats.py
"""
import itertools
import math

import numpy as np
import pytest

import stats as S
import summary


def test_rank_corr():
    assert S.rank_corr([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert S.rank_corr([1, 2, 3, 4], [1, 8, 27, 64]) == pytest.approx(1.0)  # monotone, not linear
    assert S.rank_corr([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert S.rank_corr([1, 2, 3, 4], [2, 1, 4, 3]) == pytest.approx(0.6)  # 1 - 6*4/(4*15)


def test_ranks_share_their_mean_among_ties():
    assert S.ranks([3.0, 1.0, 3.0, 2.0]).tolist() == [2.5, 0.0, 2.5, 1.0]
    assert S.ranks([5, 5, 5]).tolist() == [1.0, 1.0, 1.0]
    # ranks 0 1.5 1.5 3 against 0 1 2 3, less their means: products sum to 4.5, squares 4.5 and 5
    assert S.rank_corr([1, 2, 2, 4], [1, 2, 3, 4]) == pytest.approx(4.5 / math.sqrt(4.5 * 5))
    # the order of tied values does not matter (an unstable sort once made it)
    assert S.rank_corr([2, 1, 2, 4], [3, 1, 2, 4]) == S.rank_corr([2, 1, 2, 4], [2, 1, 3, 4])


def test_rank_corr_test_counts_the_permutations():
    x = [1, 2, 3, 4]
    assert S.rank_corr_test(x, [4, 3, 2, 1]) == (pytest.approx(-1.0), pytest.approx(1 / 24))
    assert S.rank_corr_test(x, [1, 2, 3, 4])[1] == pytest.approx(1.0)
    # [3, 4, 2, 1]: rho -0.8 (sum d^2 = 18); the orders with rho <= -0.8 have sum d^2 >= 18
    want = np.mean([sum((a - b) ** 2 for a, b in zip(x, p)) >= 18
                    for p in itertools.permutations(x)])
    assert S.rank_corr_test(x, [3, 4, 2, 1])[1] == pytest.approx(want)
    r, p = S.rank_corr_test(x, [5, 5, 5, 5])  # no order on one side: no evidence
    assert np.isnan(r) and p == 1.0
    r, p = S.rank_corr_test(list(range(30)), list(range(30))[::-1])  # normal approximation
    assert r == pytest.approx(-1.0) and p < 1e-6


def test_mann_whitney_by_its_definition():
    rng = np.random.default_rng(0)
    for n1, n2 in ((5, 5), (4, 7), (40, 35)):  # exact, exact, normal approximation
        x, y = list(rng.integers(0, 20, n1)), list(rng.integers(5, 25, n2))
        x[0] = None  # never generalized: later than everything
        inf = lambda v: np.inf if v is None else v
        pairs = sum((inf(a) > b) + 0.5 * (inf(a) == b) for a in x for b in y)
        U, p = S.mann_whitney(x, y)
        assert U == pairs == S.u_statistic(x, y) and 0 < p <= 1
    assert S.mann_whitney([1, 2, 3], [4, 5, 6]) == (0, pytest.approx(0.1))  # 2 of 20 splits
    assert S.mann_whitney([1, 2, 3], [1, 2, 3])[1] == 1.0
    same = list(range(60))
    assert S.mann_whitney(same, same)[1] == pytest.approx(1.0)


def test_one_sided_mann_whitney_counts_the_splits_on_one_side():
    assert S.mann_whitney([1, 2, 3], [4, 5, 6], "less")[1] == pytest.approx(1 / 20)
    assert S.mann_whitney([1, 2, 3], [4, 5, 6], "greater")[1] == pytest.approx(1.0)
    assert S.mann_whitney([4, 5, 6], [1, 2, 3], "greater")[1] == pytest.approx(1 / 20)
    # 1 2 4 | 3 5 6: U = 1; splits with U <= 1 are {1 2 3} and {1 2 4}
    assert S.mann_whitney([1, 2, 4], [3, 5, 6], "less")[1] == pytest.approx(2 / 20)
    # normal approximation, far apart: one side near 0, the other near 1, the two-sided twice one
    x, y = list(range(40)), list(range(30, 70))
    lo, hi, two = (S.mann_whitney(x, y, a)[1] for a in ("less", "greater", "two-sided"))
    assert lo < 1e-6 and hi > 1 - 1e-6 and two == pytest.approx(2 * lo)


def test_fisher_and_sign_tests_by_enumeration():
    # Fisher: which n1 of the n runs form group 1, every way equally likely, successes fixed
    # (9, 10, 4, 10): two groups of 10 runs, 184756 splits
    for a, n1, b, n2 in ((3, 4, 1, 4), (9, 10, 4, 10), (5, 8, 1, 10), (0, 3, 3, 3)):
        runs = [1] * (a + b) + [0] * (n1 + n2 - a - b)
        seen = [sum(runs[i] for i in g) for g in itertools.combinations(range(n1 + n2), n1)]
        freq = {x: seen.count(x) for x in set(seen)}
        p = sum(v for x, v in freq.items() if v <= freq[a]) / len(seen)
        assert S.fisher_exact(a, n1, b, n2) == pytest.approx(p)
    assert S.fisher_exact(3, 4, 1, 4) == pytest.approx(34 / 70)  # the tea-tasting table
    for w, l in ((9, 3), (0, 6), (4, 4), (7, 1)):  # every sign pattern of the w + l pairs
        wins = [sum(s) for s in itertools.product((0, 1), repeat=w + l)]
        extreme = sum(min(k, w + l - k) <= min(w, l) for k in wins) / len(wins)
        assert S.sign_test(w, l) == pytest.approx(min(1.0, extreme))
        assert S.sign_test(w, l, "greater") == pytest.approx(np.mean([k >= w for k in wins]))


def test_u_null_by_enumeration():
    for n1, n2 in ((3, 3), (2, 5), (4, 4)):
        us = [S.mann_whitney(list(c), [i for i in range(n1 + n2) if i not in c])[0]
              for c in itertools.combinations(range(n1 + n2), n1)]
        want = np.bincount(np.array(us, int), minlength=n1 * n2 + 1) / len(us)
        np.testing.assert_allclose(S.u_null(n1, n2), want)


def test_seeds_to_decide():
    # a complete separation: 3 a side give p 1/20 = 0.05, not below; 4 a side give 1/70
    assert S.seeds_to_decide(1.0) == 4
    assert S.seeds_to_decide(0.5) is None and S.seeds_to_decide(0.2) is None
    # every sign the paper's: 5 seeds give p 1/32 < 0.05, 4 give 1/16
    assert S.seeds_to_decide(1.0, "sign") == 5
    # a smaller effect needs more seeds, and the number found is the first with p < 0.05
    n = S.seeds_to_decide(0.7)
    assert n > 4 and S.seeds_to_decide(0.7) < S.seeds_to_decide(0.6)
    def p(m):  # one-sided p of m a side with U at 0.7 of the pairs: exact, or normal past 12
        if m <= 12:
            return S.u_null(m, m)[math.ceil(0.7 * m * m):].sum()
        z = (0.7 - 0.5) * m * m / math.sqrt(m * m * (2 * m + 1) / 12)
        return math.erfc(z / math.sqrt(2)) / 2
    assert p(n) < 0.05 <= p(n - 1)


def steps_curves(cross, length=10, every=100):
    """Seeds whose test loss is 1 until step cross[i], then 0: the mean curve is <= 0.01 only
    where every seed has crossed, so the crossing of a set of seeds is their latest."""
    step = np.arange(length) * every
    return step, np.array([np.where(step < c, 1.0, 0.0) for c in cross])


def test_crossing_step_is_the_seed_mean_curves_and_summary_agrees():
    step, curves = steps_curves([200, 500, 300])
    assert S.crossing_step(step, curves) == 500
    assert S.crossing_step(step, np.ones((2, 10))) == np.inf
    # summary.mean_curve_step on runs of these curves, one stopped early (its last value held)
    runs = [(None, None, dict(step=step, test_loss=c), None) for c in curves]
    short = dict(step=step[:6], test_loss=curves[1][:6])
    assert summary.mean_curve_step(runs) == 500
    assert summary.mean_curve_step(runs[:1] + [(None, None, short, None)] + runs[2:]) == 500
    s, c = summary.seed_curves(runs)
    assert S.crossing_step(s, c) == summary.mean_curve_step(runs)


def exact_interval(stat, n, size, level=S.LEVEL):
    """The percentile interval over every one of the n^size resamples, each equally likely."""
    return S.percentile_interval([stat(np.array(i)) for i in
                                  itertools.product(range(n), repeat=size)], level)


def test_crossing_interval_equals_the_enumeration_of_every_resample():
    cross = [200, 500, 300]
    step, curves = steps_curves(cross)
    # the crossing of a resample is its latest seed's: P(200) = 1/27, P(<= 300) = 8/27, so
    # the 5% quantile is 300 and the 95% one 500
    assert S.crossing_interval(step, curves) == (300, 500)
    assert exact_interval(lambda i: S.crossing_step(step, curves[i]), 3, 3) == (300, 500)
    # resamples of one seed (size 1): the seeds' own spread
    assert S.crossing_interval(step, curves, size=1) == (200, 500)
    # identical seeds: zero width; a seed that never crosses puts the upper end at np.inf
    assert S.crossing_interval(*steps_curves([400] * 5)) == (400, 400)
    lo, hi = S.crossing_interval(*steps_curves([200, 300, 10 ** 6]))
    assert lo == 300 and hi == np.inf
    # the same draws every call (fixed seed)
    step, curves = steps_curves([100, 200, 300, 400, 500, 600, 700])
    assert S.crossing_interval(step, curves) == S.crossing_interval(step, curves)


def test_mean_interval_equals_the_enumeration_of_every_resample():
    v = np.array([0.0, 1.0])  # resample means 0, 1/2, 1 with P 1/4, 1/2, 1/4
    assert S.mean_interval(v) == (0.0, 1.0)
    # three seeds 0, 1, 2: resample sums 0..6 with counts 1 3 6 7 6 3 1 of 27, so the 5% quantile
    # of the mean is 1/3 (P(0) = 1/27 < 0.05) and the 95% one 5/3 (P(<= 4/3) = 23/27 < 0.95);
    # the median is 0, 1, 2 with P 7/27, 13/27, 7/27
    v = np.array([0.0, 1.0, 2.0])
    assert S.mean_interval(v) == pytest.approx((1 / 3, 5 / 3))
    assert S.mean_interval(v) == pytest.approx(exact_interval(lambda i: np.mean(v[i]), 3, 3))
    assert S.mean_interval(v, median=True) == (0.0, 2.0)
    assert exact_interval(lambda i: np.median(v[i]), 3, 3) == (0.0, 2.0)
    assert S.mean_interval([7.0] * 4) == (7.0, 7.0)
    assert S.mean_interval([1.0, None, 3.0])[1] == np.inf  # None: never, as np.inf
    assert S.percentile_interval([np.nan, 2.0, np.nan, 2.0]) == (2.0, 2.0)  # NaN left out
