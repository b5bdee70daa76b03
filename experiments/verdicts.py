"""
The verdict table: every claim of the registry (experiments/claims_registry.py: the paper, the
claim in one sentence, its number and where it is, the runs and the statistic that test it, what
is like for like and what differs) given its verdict by one rule (RULE, `verdict`) from the
committed run copies in reproduction/, with a 90% bootstrap interval over seeds or a one-sided
rank test (the tests below: `crossing`, `value`, `order`, ...):

    python experiments/claims.py verdicts   # the table, the rule, reproduction/verdicts.png
    python experiments/verdicts.py --write  # the same table into REPRODUCTION.md
    python experiments/verdicts.py --registry    # each claim's runs, statistic, like for like
    python experiments/verdicts.py --calibrate   # how often our intervals hold a 5-seed statistic

REPRODUCTION.md opens with this table (between its verdicts markers; test_verdicts.py fails when
the two differ). A claim reads copies only, never runs/: the table is what the repository holds.
"""
import atexit
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import summary as S  # noqa: E402
import pack  # noqa: E402
import plots  # noqa: E402
import stats  # noqa: E402
from runfiles import Stop, first_below  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
REPRO = os.path.join(HERE, "reproduction")
FIGURE = os.path.join(REPRO, "verdicts.png")
DOC = os.path.join(HERE, "REPRODUCTION.md")
BEGIN, END = "<!-- verdicts:begin -->", "<!-- verdicts:end -->"
ALPHA = 0.05       # one-sided significance of an ordering
# An interval of the seed-mean crossing is narrower than the statistic's spread: --calibrate finds
# that the interval of 5 / 10 / 15 / 20 of No LN's seeds holds the crossing of 5 others in 42% /
# 52% / 62% / 72% of splits, not 90%. So "not reproduced" by an interval waits for 20 seeds, where
# it errs about one time in four for a paper whose runs behave as ours (with 5, more often than not)
MIN_SEEDS = 20
CALIBRATION_TRIALS = 200  # random splits of No LN's seeds that --calibrate tries

RULE = f"""The rule, the same for positive and negative results:
- **A number**: the paper's statistic computed on as many of our seeds as the paper used, drawn
  from ours with replacement ({stats.RESAMPLES} draws, a fixed RNG seed), gives our
  {stats.LEVEL:.0%} percentile interval ("never": not reached within the budget); a paper number of
  one run is set against one seed's spread. **reproduced** when the paper's number lies in that
  interval; **not reproduced** when it lies outside, the comparison is like for like (the same
  statistic, grid, split and budget) and the interval rests on at least {MIN_SEEDS} of our seeds;
  else **inconclusive**. The interval is narrower than the statistic's spread (the seed-mean
  crossing acts like a maximum over seeds, which no resample of them exceeds): `python
  experiments/verdicts.py --calibrate` measures how often it holds the statistic of other seeds,
  less often than {stats.LEVEL:.0%} even at {MIN_SEEDS} seeds, so an interval's "reproduced" is
  conservative and its "not reproduced" less certain than an ordering's.
- **An ordering, or a sign every seed should show**: a one-sided rank test over seeds
  (Mann-Whitney U; a chain holds when each link does, p the largest of the links'; a sign: the
  sign test). **reproduced** when the paper's ordering holds at p < {ALPHA}; **not reproduced**
  when the opposite holds at p < {ALPHA}, like for like; else **inconclusive**, with the seeds that
  would decide an effect of the size observed (a side, for a rank test).
- **A question of our own with no direction** (do subgroups differ from a base?): two-sided rank
  tests against the base, p the smallest times their number (Bonferroni); **reproduced** (a
  difference) at p < {ALPHA}, else **inconclusive**.
- **not addressed**: no committed runs test the claim; the reason is given."""


# ---------------------------------------------------------------- per-seed statistics

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


# ---------------------------------------------------------------- runs

class Missing(Exception):
    """A claim's runs are not in the repository: its verdict is "not addressed"."""


UNPACKED = {}  # copy's folder -> its runs as folders: a pack is unpacked once a process


def run_folder(root):
    """root itself where it holds run folders (a live runs/), else its pack unpacked into a
    temporary folder, kept for the process (claims read the same copy many times)."""
    if pack.run_folders(root) or not os.path.isfile(os.path.join(root, pack.PACK)):
        return root
    if root not in UNPACKED:
        tmp = tempfile.mkdtemp(prefix="verdicts_")
        atexit.register(shutil.rmtree, tmp, True)
        pack.unpack(os.path.join(root, pack.PACK), tmp)
        UNPACKED[root] = tmp
    return UNPACKED[root]


class Runs:
    """One group of runs: the copy reproduction/<copy> (several: a list), the runs kept. A run
    that stopped short of its budget without generalizing makes the group Missing, unless
    partial (a claim that reads what such runs did so far)."""
    def __init__(self, copies, keep=lambda c: True, analysed=False, partial=False):
        self.copies = [copies] if isinstance(copies, str) else copies
        self.keep, self.analysed, self.partial = keep, analysed, partial

    def get(self, load):
        """[(cfg, metrics, analysis)] by copy, then seed; load: claims.load."""
        out = []
        for copy in self.copies:
            root = os.path.join(REPRO, copy)
            if not os.path.isdir(root):
                raise Missing(f"reproduction/{copy} is not committed")
            folder = run_folder(root)
            try:
                done = load(folder, self.analysed, self.keep).values()
            except Stop as e:  # name the copy, not the temporary folder
                raise Stop(str(e).replace(folder, root)) from None
            done = sorted(done, key=lambda x: x[0].seed)
            short = [c.seed for c, m, _ in done if grok_step(m) is None and m["step"][-1] < c.steps]
            if short and not self.partial:  # a step never reached might yet be
                raise Missing(f"reproduction/{copy}: seeds {short} stopped before their budget "
                              "(--resume)")
            out += done
        if not out:
            raise Missing(f"its runs are not in reproduction/{' + '.join(self.copies)}")
        return out


# ---------------------------------------------------------------- tests: each returns a result

def crossing(group, paper, paper_seeds=5, key="test_loss", budget=10000):
    """Singh et al.'s statistic (the seed-mean curve's first step <= 0.01) on our seeds and its
    interval over resamples of the paper's seed count; paper None: not within the budget."""
    def test(load):
        runs = group.get(load)
        step, curves = S.seed_curves([(None, c, m, r) for c, m, r in runs], key)
        curves = curves[:, step <= budget]
        step = step[step <= budget]
        lo, hi = stats.crossing_interval(step, curves, size=paper_seeds)
        return dict(kind="interval", ours=stats.crossing_step(step, curves), lo=lo, hi=hi,
                    paper=np.inf if paper is None else paper, seeds=[len(runs)],
                    size=paper_seeds)
    return test


def value(group, per_seed, paper, paper_seeds=1):
    """A per-seed statistic's mean on our seeds, its interval over resamples of the paper's seed
    count (1: a paper number of one run against one seed's spread). per_seed(m, r); None: the
    seed has none (left out)."""
    def test(load):
        v = [per_seed(m, r) for _, m, r in group.get(load)]
        v = [x for x in v if x is not None]
        lo, hi = stats.mean_interval(v, size=paper_seeds)
        return dict(kind="interval", ours=float(np.mean(v)), lo=lo, hi=hi, paper=paper,
                    seeds=[len(v)], size=paper_seeds)
    return test


def curve_at_crossing(group, key, paper, paper_seeds=5):
    """The seed-mean curve of an analysis measure at the seed-mean test-loss curve's crossing
    (how Singh et al. read their measures at generalization), resampled together over seeds."""
    def test(load):
        runs = [(None, c, m, r) for c, m, r in group.get(load)]
        step, loss = S.seed_curves(runs)
        grid = max((r["step"] for *_, r in runs), key=len)
        curves = np.array([np.interp(grid, r["step"], r[key]) for *_, r in runs])

        def stat(i):  # NaN: these seeds' mean curve never crosses
            s = stats.crossing_step(step, loss[i])
            return np.nan if s == np.inf else float(np.interp(s, grid, curves[i].mean(0)))
        lo, hi = stats.bootstrap(stat, len(runs), paper_seeds)
        return dict(kind="interval", ours=stat(np.arange(len(runs))), lo=lo, hi=hi, paper=paper,
                    seeds=[len(runs)], size=paper_seeds)
    return test


def order(groups, per_seed, paper_larger=False, names=None, never=True):
    """The paper's ordering of groups (named) by a per-seed statistic per_seed(m, r): each
    group's values below the next's (paper_larger: above). None is a step never reached (after
    every value) or, never=False, a seed without the statistic (left out). A chain holds when
    every link does: p the largest of the links' one-sided p, the opposite the smallest."""
    def test(load):
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
    return test


def signs(group, per_seed):
    """A sign every seed should show (per_seed(m, r): True the paper's way, False not, None
    neither): the one-sided sign test."""
    def test(load):
        v = [per_seed(m, r) for _, m, r in group.get(load)]
        wins, losses = sum(x is True for x in v), sum(x is False for x in v)
        return dict(kind="order", p=stats.sign_test(wins, losses, "greater"),
                    p_opposite=stats.sign_test(losses, wins, "greater"),
                    share=wins / max(1, wins + losses), test="sign", seeds=[wins + losses])
    return test


def trend(group, x, per_seed, paper_sign=-1):
    """The paper's trend of a per-run statistic per_seed(m, r) along x(cfg) (paper_sign -1:
    falling, +1 rising): Spearman's correlation, one-sided permutation test
    (stats.rank_corr_test, whose p is of a low correlation); rho is the correlation itself."""
    def test(load):
        runs = group.get(load)
        xs = [x(c) for c, _, _ in runs]
        ys = [-paper_sign * per_seed(m, r) for _, m, r in runs]  # the paper's way: falling
        r, p = stats.rank_corr_test(xs, ys)
        return dict(kind="order", p=p, p_opposite=stats.rank_corr_test(xs, [-y for y in ys])[1],
                    share=None, test="trend", seeds=[len(runs)], rho=paper_sign * -r)
    return test


def any_differs(group, by, base, per_seed):
    """A claim of our own with no direction: some subgroup (by(cfg)) differs from the base's
    in a per-seed statistic per_seed(m, r). Each subgroup against the base, two-sided
    Mann-Whitney; p the smallest times their number (Bonferroni); no opposite side."""
    def test(load):
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
    return test


def not_addressed(reason):
    return lambda load: dict(kind="none", reason=reason)


# ---------------------------------------------------------------- the rule

def verdict(res, like):
    """(verdict, why) of a result by RULE; like: the comparison is like for like."""
    if res["kind"] == "none":
        return "not addressed", res["reason"]
    if res["kind"] == "interval":
        if res["lo"] <= res["paper"] <= res["hi"]:
            return "reproduced", "the paper's number in our interval"
        if not like:
            return "inconclusive", "outside our interval, not like for like"
        if min(res["seeds"]) < MIN_SEEDS:
            n = min(res["seeds"])
            return "inconclusive", f"outside our interval of {n} seed{'s' * (n > 1)}; " \
                                   f"{MIN_SEEDS} would decide"
        return "not reproduced", "outside our interval, like for like"
    where = f" ({res['weakest']})" if res.get("weakest") and len(res["seeds"]) > 2 else ""
    what = {"sign": "sign", "trend": "trend"}.get(res["test"], "ordering")
    if res["p"] < ALPHA:
        if res["test"] == "difference":  # a question of our own: no paper, no direction
            return "reproduced", f"a difference at p {res['p']:.3g}{where}"
        return "reproduced", f"the paper's {what} at p {res['p']:.3g}"
    if res["p_opposite"] is not None and res["p_opposite"] < ALPHA:
        against = f" ({res['against']})" if res.get("against") and len(res["seeds"]) > 2 else ""
        if like:
            return "not reproduced", f"the opposite {what} at p {res['p_opposite']:.3g}{against}"
        return "inconclusive", f"the opposite {what}{against}, not like for like"
    if res["share"] is None:
        return "inconclusive", f"neither way at p < {ALPHA}"
    n = stats.seeds_to_decide(res["share"], res["test"])
    unit = "seeds" if res["test"] == "sign" else "seeds a side"
    return "inconclusive", (f"~{n} {unit} would decide{where}" if n else
                            f"no effect the paper's way in these seeds{where}")


# ---------------------------------------------------------------- the table

def num(x):
    """A number as the table prints it: 'never' for np.inf, steps as integers."""
    if x is None or x == np.inf:
        return "never"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def ours(res):
    if res["kind"] == "none":
        return "-"
    if res["kind"] == "interval":
        return (f"{num(res['ours'])} [{num(res['lo'])}, {num(res['hi'])}]"
                + ("" if res["size"] == res["seeds"][0] else " (one seed's spread)"
                   if res["size"] == 1 else f" ({res['size']}-seed draws)"))
    rho = f"rho {res['rho']:.2f}, " if "rho" in res else ""
    if res["p_opposite"] is None:
        return f"{rho}p {res['p']:.3g}"
    return f"{rho}p {res['p']:.3g} (opposite {res['p_opposite']:.3g})"


def evaluate(load, claims):
    """[(claim, result, verdict, why)] of every claim, its runs read with load(root, analysed,
    keep) (claims.load)."""
    out = []
    for c in claims:
        try:
            res = c["test"](load)
        except Missing as e:
            res = dict(kind="none", reason=str(e))
        out.append((c, res) + verdict(res, c["like"]))
    return out


def table(done):
    """The verdict table, markdown, one row a claim."""
    head = ["paper", "claim", "paper's value (source)", "ours: value [90% interval] or one-sided "
            "p", "seeds", "verdict", "command"]
    rows = []
    for c, res, v, why in done:
        cmd = c.get("command") or (f"`python experiments/claims.py {c['section']}`"
                                   if c["section"] else "-")
        paper = num(c["value"]) if isinstance(c["value"], (int, float)) else c["value"]
        rows.append([c["paper"], c["claim"], f"{paper} ({c['source']})" if c["source"] else paper,
                     ours(res), " / ".join(map(str, res.get("seeds", []))) or "-",
                     f"**{v}**: {why}", cmd])
    return S.markdown(head, rows)


def registry(claims):
    """What tests each claim: its runs, the statistic, what is like for like and what differs."""
    return S.markdown(["paper", "claim", "runs (reproduction/)", "statistic",
                       "like for like, and what differs"],
                      [[c["paper"], c["claim"], c["runs"], c["statistic"],
                        ("" if c["like"] else "not like for like: ") + c["differs"]]
                       for c in claims if c["runs"]])  # None: no runs test it


def report(done):
    """What REPRODUCTION.md shows between its verdicts markers: the table, then the rule."""
    return table(done) + "\n" + RULE + "\n"


def forest_rows(done):
    """The numeric claims whose paper number is finite, as plots.forest draws them."""
    return [(f"{c['paper'].split()[0]}: {c.get('label', c['claim'])}", res["paper"], res["ours"],
             res["lo"], res["hi"], v) for c, res, v, _ in done
            if res["kind"] == "interval" and np.isfinite(res["paper"])]


def main(load, claims, figure=FIGURE):
    """The verdicts section of claims.py: print the report, draw the forest plot."""
    done = evaluate(load, claims)
    print(report(done))
    if figure:
        plots.forest(figure, forest_rows(done))


def write_doc(text, path=DOC):
    """Put text between REPRODUCTION.md's verdicts markers (atomically)."""
    doc = open(path).read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"error: {path} has no {BEGIN} ... {END} block")
    head, rest = doc.split(BEGIN, 1)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(head + BEGIN + "\n" + text + rest[rest.index(END):])
    os.replace(tmp, path)


def doc_block(path=DOC):
    """The text between REPRODUCTION.md's verdicts markers, None if it has none."""
    doc = open(path).read()
    if BEGIN not in doc or END not in doc:
        return None
    return doc.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")


def calibrate(load, group, ours=(5, 10, 15, 20), theirs=5, trials=CALIBRATION_TRIALS,
              resamples=1000):
    """How often our interval holds the paper's statistic when the paper's runs are ours: the
    seeds of group (Runs; the CLI: No LN on their split), split at random into `n` of ours and
    `theirs` held out, the interval of the seed-mean crossing from our n (resamples of `theirs`
    seeds) against the held-out seeds' crossing. -> {n: the share of trials inside}."""
    runs = [(None, c, m, r) for c, m, r in group.get(load)]
    step, curves = S.seed_curves(runs)
    keep = step <= 10000
    step, curves = step[keep], curves[:, keep]
    rng, out = np.random.default_rng(stats.RNG_SEED), {}
    for n in (n for n in ours if n + theirs <= len(curves)):
        inside = 0
        for t in range(trials):
            pick = rng.permutation(len(curves))
            lo, hi = stats.crossing_interval(step, curves[pick[:n]], size=theirs,
                                             resamples=resamples, seed=t)
            inside += lo <= stats.crossing_step(step, curves[pick[n:n + theirs]]) <= hi
        out[n] = inside / trials
    return out


def cli(args, load, claims, no_ln):
    """python experiments/verdicts.py --write | --registry | --calibrate; claims: the registry's,
    no_ln: the runs --calibrate splits (No LN on their split, 25 seeds)."""
    if args == ["--write"]:  # the table into the document
        write_doc(report(evaluate(load, claims)))
    elif args == ["--registry"]:
        print(registry(claims))
    elif args == ["--calibrate"]:
        for n, share in calibrate(load, no_ln).items():
            print(f"No LN on their split, {n} seeds of ours: the {stats.LEVEL:.0%} interval holds "
                  f"the held-out 5 seeds' seed-mean crossing in {share:.0%} of "
                  f"{CALIBRATION_TRIALS} splits")
    else:
        sys.exit("usage: python experiments/verdicts.py --write | --registry | --calibrate\n"
                 "  --write: put the verdict table into REPRODUCTION.md\n"
                 "  --registry: each claim's runs, statistic and what is like for like\n"
                 "  --calibrate: how often an interval of n of our seeds holds a 5-seed "
                 "statistic of the others")


if __name__ == "__main__":
    # The registry builds its tests from the module `verdicts`, which this script is not (it runs
    # as __main__): work through that module, so that the Missing a claim's runs raise is the one
    # `evaluate` catches.
    import claims_registry
    import verdicts
    from claims import load
    verdicts.cli(sys.argv[1:], load, claims_registry.CLAIMS, claims_registry.placement("off"))
