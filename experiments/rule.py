"""
The verdict rule of REPRODUCTION.md and the tests it reads: a claim (Claim) names its paper, its
number and where it is, what is like for like, and a test (Test: the groups of runs it reads and
a statistic over their seeds, from `crossing`, `value`, `order`, ... below); `verdict` turns the
test's result into reproduced / not reproduced / inconclusive by RULE.

    python experiments/claims.py verdicts        # every claim's verdict
    python experiments/verdicts.py --calibrate   # how often our intervals hold a 5-seed statistic
"""
import json
import os
import sys
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import summary as S  # noqa: E402
import stats  # noqa: E402
from runfiles import GROK  # noqa: E402
from runsets import REPRO, Missing  # noqa: E402

ALPHA = 0.05       # one-sided significance of an ordering
CALIBRATION_TRIALS = 200  # random splits of No LN's seeds that --calibrate tries
CALIBRATION_SEEDS = (5, 10, 15, 20)  # seed counts of ours whose intervals --calibrate measures
CALIBRATION = os.path.join(REPRO, "calibration.json")  # what --calibrate measured: the coverage


def coverage(method, size, n):
    """The measured coverage of our interval of a `size`-seed statistic (method "crossing": the
    seed-mean curve's step; "mean": a per-seed statistic's mean) from n of our seeds: the share
    of --calibrate's splits in which it held the same statistic of held-out seeds, at the largest
    calibrated seed count <= n (more seeds narrow nothing away: coverage grows with n); None:
    not measured (fewer seeds than any calibrated count, or no calibration file)."""
    if not os.path.isfile(CALIBRATION):
        return None
    with open(CALIBRATION) as f:
        table = json.load(f).get(f"{method} {size}", {})
    below = [int(k) for k in table if int(k) <= n]
    return table[str(max(below))] if below else None


RULE = f"""The rule, the same evidence bar for positive and negative results; the setting (like for
like, or what differs) is a column of its own and never changes a verdict:
- **An ordering, or a sign every seed should show**: a one-sided rank test over seeds
  (Mann-Whitney U; a chain holds when each link does, p the largest of the links'; a sign: the
  sign test; a trend: Spearman's correlation, a permutation test). **reproduced** when the
  paper's direction holds at p < {ALPHA}; **not reproduced** when the opposite holds at
  p < {ALPHA}; else **inconclusive**, with the seeds that would decide an effect of the size
  observed (a side, for a rank test).
- **A number**: the paper's statistic computed on as many of our seeds as the paper used, drawn
  from ours with replacement ({stats.RESAMPLES} draws, a fixed RNG seed), gives our
  {stats.LEVEL:.0%} percentile interval ("never": not reached within the budget). The table labels
  it with its **measured coverage**: how often such an interval from this many of our seeds held
  the same statistic of other seeds of ours (`python experiments/verdicts.py --calibrate`, on
  No LN's 25 seeds on their split). **reproduced** when the paper's number lies in the interval
  (a step within one evaluation of it counts as in); **not reproduced** when it lies outside;
  **inconclusive** where no coverage is measured (fewer seeds than --calibrate tries) or the
  comparison is one run against one (it decides nothing). A low coverage makes "not reproduced"
  weak and "reproduced" strong: read the two with the label.
- **A question of our own with no direction** (do subgroups differ from a base?): two-sided rank
  tests against the base, p the smallest times their number (Bonferroni); **reproduced** (a
  difference) at p < {ALPHA}, else **inconclusive**.
- **not addressed**: no committed runs test the claim; the reason is given."""


# ---------------------------------------------------------------- claims and their tests

@dataclass(frozen=True)
class Test:
    """A statistic over groups of runs: compute(load) -> a result (a dict, kind "interval",
    "order" or "none"); reads: what it reads (Runs, or what else, each printed by str)."""
    reads: tuple
    compute: Callable
    names: tuple = ()  # what the tables call each group read, where they name them

    def __call__(self, load):
        return self.compute(load)

    def __str__(self):
        if self.names:
            return " against ".join(f"{n}: {g}" for n, g in zip(self.names, self.reads))
        return " against ".join(map(str, self.reads))


@dataclass(frozen=True)
class Claim:
    """One claim of a paper: the claim in one sentence, the paper's number or words (value) and
    where they are (source), the statistic its test computes, whether the comparison is like for
    like and what differs, the claims.py section that prints its table (or command)."""
    paper: str
    claim: str
    value: object
    source: Optional[str]
    statistic: str
    like: bool
    differs: str
    section: Optional[str]
    test: Test
    label: Optional[str] = None
    command: Optional[str] = None


def crossing(group, paper, paper_seeds=5, key="test_loss", budget=10000):
    """Singh et al.'s statistic (the seed-mean curve's first step <= 0.01) on our seeds and its
    interval over resamples of the paper's seed count; paper None: not within the budget."""
    def compute(load):
        runs = group.get(load)
        # a run stopped short of the budget above the threshold cannot be held at its last
        # value (seed_curves would hold it there to the end): left out, and the row says so
        held = [c.seed for c, m, _ in runs if m["step"][-1] < min(budget, c.steps)
                and m[key][-1] > GROK]
        runs = [x for x in runs if x[0].seed not in held]
        step, curves = S.seed_curves([(None, c, m, r) for c, m, r in runs], key)
        curves = curves[:, step <= budget]
        step = step[step <= budget]
        lo, hi = stats.crossing_interval(step, curves, size=paper_seeds)
        return dict(kind="interval", ours=stats.crossing_step(step, curves), lo=lo, hi=hi,
                    paper=np.inf if paper is None else paper, seeds=[len(runs)],
                    size=paper_seeds, method="crossing", within=float(np.min(np.diff(step))),
                    left_out=held)
    return Test((group,), compute)


def value(group, per_seed, paper, paper_seeds=1, within=0):
    """A per-seed statistic's mean on our seeds, its interval over resamples of the paper's seed
    count (1: a paper number of one run against one seed's spread). per_seed(m, r); None: the
    seed has none (left out). within: how far outside the interval still counts as in (a step:
    the evaluation spacing)."""
    def compute(load):
        v = [per_seed(m, r) for _, m, r in group.get(load)]
        v = [x for x in v if x is not None]
        lo, hi = stats.mean_interval(v, size=paper_seeds)
        return dict(kind="interval", ours=float(np.mean(v)), lo=lo, hi=hi, paper=paper,
                    seeds=[len(v)], size=paper_seeds, method="mean", within=within)
    return Test((group,), compute)


def curve_at_crossing(group, key, paper, paper_seeds=5):
    """The seed-mean curve of an analysis measure at the seed-mean test-loss curve's crossing
    (how Singh et al. read their measures at generalization), resampled together over seeds."""
    def compute(load):
        runs = [(None, c, m, r) for c, m, r in group.get(load)]
        step, loss = S.seed_curves(runs)
        grid = max((r["step"] for *_, r in runs), key=len)
        curves = np.array([np.interp(grid, r["step"], r[key]) for *_, r in runs])

        def stat(i):  # NaN: these seeds' mean curve never crosses
            s = stats.crossing_step(step, loss[i])
            return np.nan if s == np.inf else float(np.interp(s, grid, curves[i].mean(0)))
        lo, hi = stats.bootstrap(stat, len(runs), paper_seeds)
        return dict(kind="interval", ours=stat(np.arange(len(runs))), lo=lo, hi=hi, paper=paper,
                    seeds=[len(runs)], size=paper_seeds, method="crossing", within=0)
    return Test((group,), compute)


def order(groups, per_seed, paper_larger=False, names=None, never=True):
    """The paper's ordering of groups (named) by a per-seed statistic per_seed(m, r): each
    group's values below the next's (paper_larger: above). None is a step never reached (after
    every value) or, never=False, a seed without the statistic (left out). A chain holds when
    every link does: p the largest of the links' one-sided p, the opposite the smallest."""
    def compute(load):
        vals = []
        for g in groups:
            v = [per_seed(m, r) for _, m, r in g.get(load)]
            vals.append(v if never else [x for x in v if x is not None])
        side = ("greater", "less") if paper_larger else ("less", "greater")
        links = []
        for x, y in zip(vals, vals[1:]):
            U = stats.mann_whitney(x, y)[0]
            share = U / (len(x) * len(y))  # P(x > y): the paper's direction is 1 - share
            links.append((stats.mann_whitney(x, y, side[0])[1],
                          stats.mann_whitney(x, y, side[1])[1],
                          share if paper_larger else 1 - share))
        weakest, against = max(links), min(range(len(links)), key=lambda i: links[i][1])
        link = lambda i: f"{names[i]} against {names[i + 1]}" if names else None
        return dict(kind="order", p=weakest[0], p_opposite=links[against][1], share=weakest[2],
                    test="rank", seeds=[len(v) for v in vals],
                    weakest=link(links.index(weakest)), against=link(against))
    return Test(tuple(groups), compute, tuple(names or ()))


def signs(group, per_seed, tries=1):
    """A sign every seed should show (per_seed(m, r): True the paper's way, False not, None
    neither): the one-sided sign test; tries: how many variants of the question were looked at
    before this one was chosen, its p multiplied by that (Bonferroni)."""
    def compute(load):
        v = [per_seed(m, r) for _, m, r in group.get(load)]
        wins, losses = sum(x is True for x in v), sum(x is False for x in v)
        p = lambda a, b: min(1.0, tries * stats.sign_test(a, b, "greater"))
        return dict(kind="order", p=p(wins, losses), p_opposite=p(losses, wins),
                    share=wins / max(1, wins + losses), test="sign", seeds=[wins + losses])
    return Test((group,), compute)


def trend(group, x, per_seed, paper_sign=-1):
    """The paper's trend of a per-run statistic per_seed(m, r) along x(cfg) (paper_sign -1:
    falling, +1 rising): Spearman's correlation, one-sided permutation test
    (stats.rank_corr_test, whose p is of a low correlation); rho is the correlation itself."""
    def compute(load):
        runs = group.get(load)
        xs = [x(c) for c, _, _ in runs]
        ys = [-paper_sign * per_seed(m, r) for _, m, r in runs]  # the paper's way: falling
        r, p = stats.rank_corr_test(xs, ys)
        return dict(kind="order", p=p, p_opposite=stats.rank_corr_test(xs, [-y for y in ys])[1],
                    share=None, test="trend", seeds=[len(runs)], rho=paper_sign * -r)
    return Test((group,), compute)


def any_differs(group, by, base, per_seed):
    """A claim of our own with no direction: some subgroup (by(cfg)) differs from the base's
    in a per-seed statistic per_seed(m, r). Each subgroup against the base, two-sided
    Mann-Whitney; p the smallest times their number (Bonferroni); no opposite side."""
    def compute(load):
        vals = {}
        for c, m, r in group.get(load):
            vals.setdefault(by(c), []).append(per_seed(m, r))
        if base not in vals:
            raise Missing(f"no runs of {base}")
        others = sorted(k for k in vals if k != base)
        if not others:
            raise Missing(f"no runs but {base}'s")
        ps = [stats.mann_whitney(vals[k], vals[base])[1] for k in others]
        least = int(np.argmin(ps))
        return dict(kind="order", p=min(1.0, len(ps) * ps[least]), p_opposite=None, share=None,
                    test="difference", seeds=[len(vals[base])] + [len(vals[k]) for k in others],
                    weakest=f"{others[least]} against {base}")
    return Test((group,), compute)


def not_addressed(reason):
    """A claim no committed run tests, with the reason."""
    return Test((), lambda load: dict(kind="none", reason=reason))


def seed_mean_curve(group, key, stat, paper, paper_seeds=5):
    """stat(step, curve) of the seed-mean curve of an analysis measure (as Singh et al. release
    their measures: 5-seed means), its interval over resamples of the paper's seed count."""
    def compute(load):
        runs = group.get(load)
        grid = max((r["step"] for *_, r in runs), key=len)
        curves = np.array([np.interp(grid, r["step"], r[key]) for *_, r in runs])
        f = lambda i: stat(grid, curves[i].mean(0))
        lo, hi = stats.bootstrap(f, len(runs), paper_seeds)
        return dict(kind="interval", ours=f(np.arange(len(runs))), lo=lo, hi=hi, paper=paper,
                    seeds=[len(runs)], size=paper_seeds, method="crossing", within=0)
    return Test((group,), compute)


def exact(compute_ours, paper, decimals, reads):
    """A number computed once, with no seeds (compute_ours(): our value), against the paper's
    as it prints it: the interval is our number at the paper's decimals, so the row is
    reproduced when the two agree to the paper's precision. reads: what it computes from."""
    def compute(load):
        ours = compute_ours()
        return dict(kind="interval", ours=ours, lo=round(ours, decimals),
                    hi=round(ours, decimals), paper=paper, seeds=[1], size=1, method="exact",
                    within=0)
    return Test((reads,), compute)


def interval_coverage(res):
    """The measured coverage of a result's interval (1 for a computation with no seeds)."""
    if res["method"] == "exact":
        return 1.0
    return coverage(res["method"], res["size"], min(res["seeds"]))


def verdict(res):
    """(verdict, why) of a result by RULE: the same bar both ways, whatever the setting."""
    if res["kind"] == "none":
        return "not addressed", res["reason"]
    if res["kind"] == "interval":
        inside = res["lo"] - res["within"] <= res["paper"] <= res["hi"] + res["within"]
        if res["method"] != "exact" and res["seeds"] == [1] and res["size"] == 1:
            return "inconclusive", "one run against one decides nothing; seeds of ours would"
        cov = interval_coverage(res)
        held = res.get("left_out")
        note = f"; seeds {held} left out: stopped above {GROK} short of the budget" if held else ""
        if cov is None:
            n = min(res["seeds"])
            return "inconclusive", (f"no coverage measured for {n} seed{'s' * (n > 1)} "
                                    f"(--calibrate measures {CALIBRATION_SEEDS[0]} and more){note}")
        if inside:
            return "reproduced", f"the paper's number in our interval{note}"
        return "not reproduced", f"the paper's number outside our interval{note}"
    where = f" ({res['weakest']})" if res.get("weakest") and len(res["seeds"]) > 2 else ""
    what = {"sign": "sign", "trend": "trend"}.get(res["test"], "ordering")
    if res["p"] < ALPHA:
        if res["test"] == "difference":  # a question of our own: no paper, no direction
            return "reproduced", f"a difference at p {res['p']:.3g}{where}"
        return "reproduced", f"the claimed {what} at p {res['p']:.3g}"
    if res["p_opposite"] is not None and res["p_opposite"] < ALPHA:
        against = f" ({res['against']})" if res.get("against") and len(res["seeds"]) > 2 else ""
        return "not reproduced", f"the opposite {what} at p {res['p_opposite']:.3g}{against}"
    if res["share"] is None:
        return "inconclusive", f"neither way at p < {ALPHA}"
    n = stats.seeds_to_decide(res["share"], res["test"])
    unit = "seeds" if res["test"] == "sign" else "seeds a side"
    return "inconclusive", (f"~{n} {unit} would decide{where}" if n else
                            f"no effect the claimed way in these seeds{where}")


def evaluate(load, claims):
    """[(claim, result, verdict, why)] of every claim, its runs read with load(root, analysed,
    keep) (runsets.load)."""
    out = []
    for c in claims:
        try:
            res = c.test(load)
        except Missing as e:
            res = dict(kind="none", reason=str(e))
        out.append((c, res) + verdict(res))
    return out


def calibrate(load, group, ours=CALIBRATION_SEEDS, theirs=5, trials=CALIBRATION_TRIALS,
              resamples=1000):
    """How often our interval holds the paper's statistic when the paper's runs are ours: the
    seeds of group (Runs; the CLI: No LN on their split), split at random into `n` of ours and
    `theirs` held out, our interval from the n (resamples of the statistic's seed count) against
    the held-out seeds' statistic, for each method of the rule: "crossing 5" (the seed-mean
    curve's step of 5 seeds, within one evaluation step), "mean 1" and "mean 5" (a per-seed
    statistic, here the step of test loss 0.01, of one run and the mean of 5).
    -> {method: {n: the share of trials inside}}."""
    runs = [(None, c, m, r) for c, m, r in group.get(load)]
    step, curves = S.seed_curves(runs)
    keep = step <= 10000
    step, curves = step[keep], curves[:, keep]
    within = float(np.min(np.diff(step)))
    steps = stats.as_values([stats.crossing_step(step, c[None]) for c in curves])
    methods = {
        "crossing 5": (theirs, within, lambda i, size, t: stats.crossing_interval(
            step, curves[i], size=size, resamples=resamples, seed=t),
                       lambda i: stats.crossing_step(step, curves[i])),
        "mean 1": (1, 0, lambda i, size, t: stats.mean_interval(
            steps[i], size=size, resamples=resamples, seed=t), lambda i: float(steps[i][0])),
        "mean 5": (theirs, 0, lambda i, size, t: stats.mean_interval(
            steps[i], size=size, resamples=resamples, seed=t), lambda i: float(np.mean(steps[i])))}
    rng, out = np.random.default_rng(stats.RNG_SEED), {name: {} for name in methods}
    for n in (n for n in ours if n + theirs <= len(curves)):
        picks = [rng.permutation(len(curves)) for _ in range(trials)]
        for name, (size, tol, interval, held) in methods.items():
            inside = 0
            for t, pick in enumerate(picks):
                lo, hi = interval(pick[:n], size, t)
                inside += lo - tol <= held(pick[n:n + size]) <= hi + tol
            out[name][n] = inside / trials
    return out
