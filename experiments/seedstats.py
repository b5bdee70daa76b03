"""
Per-run statistics the claims and tables read: each takes one run's metrics m (and its analysis
r) and returns a number, True / False, or None (the run has none). The tests of rule.py compare
them across seeds; the papers' modules name which one a claim reads.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import summary as S  # noqa: E402
import stats  # noqa: E402
from runfiles import first_below  # noqa: E402


def grok_step(m):
    """First step with test loss <= 0.01, None: never (Singh et al.'s threshold)."""
    return first_below(m["step"], m["test_loss"])


def acc_step(m, acc=0.95):
    """First step with test accuracy >= acc, None: never."""
    return S.first_at_or_above(m["step"], m["test_acc"], acc)


def jumps(step, loss, factor=10, floor=1e-3):
    """Slingshots: (how many evaluations have train loss > factor x the one before and above
    floor, first step). The floor keeps out round-off of a loss near 0 (a run at 1e-10 moves by
    10x from one evaluation to the next without leaving its fit)."""
    up = np.nonzero((loss[1:] > factor * loss[:-1]) & (loss[1:] > floor))[0] + 1
    return len(up), (int(step[up[0]]) if len(up) else None)


def at_grok(key):
    """An analysis measure at the run's own first test loss <= 0.01, None: never."""
    return lambda m, r: None if grok_step(m) is None else S.at(r, key, grok_step(m))


def median_update_norm(start, end):
    """The median update norm over steps [start, end), None: the run logged none there."""
    def f(m, r):
        v = m["update_norm"][(m["step"] >= start) & (m["step"] < end)]
        v = v[np.isfinite(v)]
        return float(np.median(v)) if len(v) else None
    return f


def after_grok(key, f):
    """f (max, min) of a metric over the 1000 steps from the first test acc >= 0.9."""
    return lambda m, r: S.after_grok(m, key, f)


def falls_when_groks(m, r, key="sr_train", after=1000):
    """True: the measure 1000 steps after the first test loss <= 0.01 is below its maximum up
    to there; None: never there, or the run ended before."""
    g = grok_step(m)
    if g is None or r["step"][-1] < g + after:
        return None
    return S.at(r, key, g + after) < float(np.max(r[key][r["step"] <= g]))


def largest_rise(v):
    """The largest rise of a curve above its lowest value so far (0: it never rises)."""
    v = np.asarray(v, float)
    return float(np.max(v - np.minimum.accumulate(v)))


def largest_move_share(step, v, grid):
    """The largest change of a curve between consecutive steps of grid (linear between its
    own steps), as a share of its total variation over the grid: 1, all of its movement in one
    interval; 1 / (len(grid) - 1), the same in each."""
    d = np.abs(np.diff(np.interp(grid, step, v)))
    return float(d.max() / d.sum())


def head_wave_fit(attn):
    """Nanda et al.'s fit of an attention head (appendix C.1.3) from its attention weight from
    '=' to a over every pair (a, b) (p, p): the score difference s(a) - s(b), read as the
    weight's logit (the weight '=' pays itself, 0.1-0.4% in the paper, left out), fit by c +
    x (cos wa - cos wb) + y (sin wa - sin wb) at each frequency k (w = 2 pi k / p), least
    squares. -> (the best k, the share of the variance it explains)."""
    p = attn.shape[-1]
    w = np.clip(np.asarray(attn, float), 1e-6, 1 - 1e-6)  # float16 copies may round to 0 or 1
    score = np.log(w / (1 - w)).ravel()
    total = np.sum((score - score.mean()) ** 2)
    best = (None, -np.inf)
    for k in range(1, p // 2 + 1):
        wave = [f(2 * np.pi * k * np.arange(p) / p) for f in (np.cos, np.sin)]
        X = np.stack([np.ones(p * p)] + [(v[:, None] - v[None, :]).ravel() for v in wave], 1)
        resid = score - X @ np.linalg.lstsq(X, score, rcond=None)[0]
        fve = 1 - np.sum(resid ** 2) / total
        if fve > best[1]:
            best = (k, float(fve))
    return best


def heads_fit(m, r):
    """The mean over the heads of head_wave_fit's share of variance (analysis final_attn_a)."""
    return float(np.mean([head_wave_fit(a)[1] for a in r["final_attn_a"]]))


def tracking(r, keys):
    """How closely a measure follows test loss over a run's checkpoints: the largest |Spearman|
    of its keys with test loss, None where it has no values (NaN)."""
    rhos = [abs(stats.rank_corr(r[k], r["test_loss"])) for k in keys if np.isfinite(r[k]).all()]
    return max(rhos) if rhos else None


def med_beats(keys):
    """True: MED's rank correlation with test loss over the checkpoints, in the direction Gu et
    al. claim (positive), is above the measure's in either direction (tracking); None: the
    measure has no values, or a tie (to rounding: both +-1 where everything moves one way)."""
    def f(m, r):
        theirs, med = tracking(r, keys), stats.rank_corr(r["med"], r["test_loss"])
        return None if theirs is None or np.isclose(med, theirs) else med > theirs
    return f


def med_tracks(m, r):
    """True: MED and test loss rank-correlate positively over the checkpoints; None: too few."""
    if len(r["med"]) < 3:
        return None
    return stats.rank_corr(r["med"], r["test_loss"]) > 0


def llc_shape(m, r):
    """devinterp's grokking example's LLC shape in one run: True when the LLC of the memorised
    model (at its first LLC checkpoint with train loss <= 0.01 and test loss not yet) has risen
    at least half-way from step 0 to its largest value up to test loss <= 0.01, and the first
    LLC checkpoint after that is below that largest value; None: no LLC checkpoint at step 0,
    in the memorised stretch or after it, or a run that never fits or generalizes."""
    fit, grok = first_below(m["step"], m["train_loss"]), grok_step(m)
    if fit is None or grok is None:
        return None
    has = np.isfinite(r["llc"])
    step, llc = r["step"][has], r["llc"][has]
    memorised = (step >= fit) & (step <= grok)
    after = step > grok
    if not len(step) or step[0] != 0 or not memorised.any() or not after.any():
        return None
    top = float(llc[step <= grok].max())
    risen = llc[memorised][0] - llc[0] >= (top - llc[0]) / 2
    return bool(risen and llc[after][0] < top)
