"""
The summary table: one row per configuration (the runs that differ only in seed), its columns
from each run's training metrics and from the measures that ask for one (MEASURES' summary,
SUMMARIES). analyze.py writes it for a folder of runs as runs/summary.md and runs/summary.csv;
the tables of experiments/ build on its statistics and cells (fmt, markdown).

    groups, _ = group_runs(done)          # done: {run: (cfg, metrics, analysis)}
    header, rows = summary_table(groups)
    print(markdown(header, rows))
"""
import csv
import io
import os
from collections import Counter

import numpy as np

from config import Config
from measures import MEASURES
from runfiles import first_below, save_atomic
from stats import mann_whitney, rank_corr


# not what makes a configuration
IGNORED = ("seed", "data_seed", "steps", "eval_every", "ckpt_every")

# Summary measures are compared at one step that every run reaches (runs may stop soon after
# generalizing, --stop-after-grok): after memorization, before most configurations generalize.
AT = 1000

# the options that change how a setting is trained; a configuration without any is a baseline
INTERVENTIONS = ("optimizer", "grokfast", "gf_alpha", "gf_window", "gf_lamb", "orthograd", "loss")


# ---------------------------------------------------------------- configurations

def group_runs(done):
    """Runs that differ only in seed form one configuration, labelled by the options that differ
    between configurations. done: {run: (cfg, metrics, analysis)} -> ({label: [(run, cfg,
    metrics, analysis), ...]}, [the options that vary])."""
    groups = {}
    for run, (cfg, m, r) in done.items():
        key = tuple((k, str(v)) for k, v in cfg.to_dict().items() if k not in IGNORED)
        groups.setdefault(key, []).append((run, cfg, m, r))
    if not groups:
        return {}, []
    first = next(iter(groups))
    varying = [i for i in range(len(first)) if len({k[i][1] for k in groups}) > 1]
    labels = {k: ", ".join(f"{k[i][0]}={k[i][1]}" for i in varying) or "all runs" for k in groups}
    return {labels[k]: v for k, v in groups.items()}, [first[i][0] for i in varying]


def update_rule(cfg):
    """How a run steps: its lr and optimizer."""
    return cfg.lr, cfg.optimizer


def no_intervention(cfg):
    """Whether every INTERVENTIONS option but the optimizer is at its default."""
    default = Config()
    return all(getattr(cfg, k) == getattr(default, k) for k in INTERVENTIONS if k != "optimizer")


def setting(cfg):
    """What a run learns and on which model: its options but the seeds, budget, interventions
    and lr."""
    left_out = IGNORED + INTERVENTIONS + ("lr",)
    return tuple((k, v) for k, v in cfg.to_dict().items() if k not in left_out)


def baselines(groups):
    """Each configuration's baseline (or None): the same setting, no intervention (every other
    INTERVENTIONS option at its default) and the setting's most common lr and optimizer (a tie:
    the defaults; Grokfast's own setting trains with Adam: its baseline is Adam, no filter)."""
    default_update = update_rule(Config())
    seen = {}  # setting -> the update rule of each of its runs
    for runs in groups.values():
        seen.setdefault(setting(runs[0][1]), []).extend(update_rule(cfg) for _, cfg, _, _ in runs)
    out = {}
    for lab, runs in groups.items():
        s = setting(runs[0][1])
        # the most common update rule of the setting; a tie: the default's
        counts = Counter(seen[s])
        want = max(counts, key=lambda rule: (counts[rule], rule == default_update))
        out[lab] = None
        for g in groups.values():
            cfg = g[0][1]
            if setting(cfg) == s and no_intervention(cfg) and update_rule(cfg) == want:
                out[lab] = g
                break
    return out


# ---------------------------------------------------------------- each seed's statistics

def grok_steps(runs):
    """First step with test loss <= GROK of each run (None: never)."""
    return [first_below(m["step"], m["test_loss"]) for _, _, m, _ in runs]


def seed_curves(runs, key="test_loss"):
    """(steps, curves (seeds, steps)): each run's curve on the longest run's steps. A run that
    stopped early (--stop-after-grok) keeps its last value from then on."""
    steps = max((m["step"] for _, _, m, _ in runs), key=len)
    return steps, np.array([np.interp(steps, m["step"], m[key]) for _, _, m, _ in runs])


def mean_curve_step(runs):
    """Singh et al.'s statistic: the first step at which the seeds' mean test-loss curve is <=
    GROK (stats.crossing_step, as an int or None)."""
    steps, curves = seed_curves(runs)
    return first_below(steps, np.mean(curves, 0))


def first_at_or_above(steps, values, thr):
    """The first step whose value is >= thr (an accuracy), or None."""
    hit = np.nonzero(np.asarray(values) >= thr)[0]
    return int(np.asarray(steps)[hit[0]]) if len(hit) else None


def at(r, key, step=AT):
    """An analysis measure at `step`, or None if the run has none there."""
    if key not in r or r["step"][-1] < step:
        return None
    return float(np.interp(step, r["step"], r[key]))


def after_grok(m, key, f, window=1000):
    """f (max, min) of a logged metric over the `window` steps from the first test acc >= 0.9:
    slingshots and fluctuations after generalizing (every experiment runs 1000 steps past test
    loss <= GROK, which comes later)."""
    g = first_at_or_above(m["step"], m["test_acc"], 0.9)
    if g is None:
        return None
    return float(f(m[key][(m["step"] >= g) & (m["step"] <= g + window)]))


# ---------------------------------------------------------------- cells

def fmt(values, digits=0):
    """mean +- std of the values that exist (None: a run that never got there; NaN: a measure the
    run has not, e.g. attention entropy of the embedding-MLP, or one its cached analysis
    predates)."""
    v = [x for x in values if x is not None]
    if v and np.isnan(v).all():
        return "-"
    v = [x for x in v if not np.isnan(x)]
    if not v:
        return "not reached"
    return f"{np.mean(v):.{digits}f} +- {np.std(v):.{digits}f}"


def unfinished(cfg, m):
    """A run short of test loss 0.01: '-' if it ran its budget, else where it stopped (--resume)."""
    last = int(m["step"][-1])
    if last >= cfg.steps:
        return "-"
    return f"- (stopped at {last} of {cfg.steps})"


def hole_column(rs):
    """Gu et al.'s dug-out regions: is the hole learned (final and best accuracy in it), the
    rest of the test set, and the bound on test accuracy if the hole is never learned."""
    if any(np.isnan(float(r.get("hole_bound", np.nan))) for r in rs):  # a run without a hole
        return "-"
    final_in_hole = [float(r["hole_acc"][-1]) for r in rs]
    best_in_hole = [float(np.max(r["hole_acc"])) for r in rs]
    final_rest = [float(r["rest_acc"][-1]) for r in rs]
    bound = [float(r["hole_bound"]) for r in rs]
    return " / ".join(fmt(v, 3) for v in (final_in_hole, best_in_hole, final_rest, bound))


# ---------------------------------------------------------------- the table

def run_columns(lab, runs, base=None):
    """summary.md's columns of one configuration that read its training metrics, as (title,
    cell) pairs; runs: [(run, cfg, metrics, analysis), ...]; base: the runs of its baseline
    configuration, if any."""
    ms, rs = [m for _, _, m, _ in runs], [r for _, _, _, r in runs]
    te = grok_steps(runs)
    got = [s for s in te if s is not None]
    slings = (("train_loss", np.max, 2), ("test_acc", np.min, 3),
              ("test_acc", lambda a: np.mean(a < 0.9), 2))
    if base is None or base is runs:
        vs_base = "-"
    else:
        vs_base = "U {:g} / p {:.3f}".format(*mann_whitney(te, grok_steps(base)))
    swaps = [fmt([float(r.get(k, np.nan)) for r in rs], 3) for k in ("swap_acc", "noswap_acc")]
    mean_curve = mean_curve_step(runs)
    if mean_curve is None:
        mean_curve = "not reached"
    first_seed = min(got) if got else "none"
    all_seeds = max(got) if len(got) == len(te) else "not all"
    return [
        ("configuration", lab),
        ("seeds", " ".join(str(cfg.seed) for _, cfg, _, _ in runs)),
        ("train<=0.01 (mean +- std)", fmt([first_below(m["step"], m["train_loss"]) for m in ms])),
        ("test<=0.01 (mean +- std)", fmt(te)),
        ("reached", f"{len(got)}/{len(te)}"),
        ("test acc>=0.9 at", fmt([first_at_or_above(m["step"], m["test_acc"], 0.9) for m in ms])),
        ("final test acc", f"{np.mean([m['test_acc'][-1] for m in ms]):.3f}"),
        ("best test acc", fmt([float(np.max(m["test_acc"])) for m in ms], 3)),
        ("acc in hole: final / best; rest of test: final; best test acc if the hole is never "
         "learned", hole_column(rs)),
        ("final acc, test pairs with / without their swap in train", " / ".join(swaps)),
        ("1000 steps after test acc>=0.9: max train loss / min test acc / share of evals with "
         "test acc<0.9", " / ".join(fmt([after_grok(m, k, f) for m in ms], d)
                                     for k, f, d in slings)),
        ("key frequencies of W_E", "; ".join(str([int(k) for k in r["keys_embed"]]) for r in rs)),
        ("test acc>=0.95 at", fmt([first_at_or_above(m["step"], m["test_acc"], 0.95)
                                   for m in ms])),
        ("vs baseline (same setting, no intervention): Mann-Whitney U / p", vs_base),
        ("seed-mean test loss <= 0.01 at (Singh et al.'s statistic); first seed / all seeds",
         f"{mean_curve}; {first_seed} / {all_seeds}"),
    ]


# The statistics a MEASURES entry may ask summary.md for (its `summary`): column title, and the
# value of one seed from its analysis r, the measure's key and the seed's generalization step
# (None: never). A measure this run's analysis lacks (NaN) shows as '-'.
SUMMARIES = {
    "at": (f"at {AT}", lambda r, key, grok: at(r, key)),
    "at_grok": ("at generalization",
                lambda r, key, grok: None if grok is None else at(r, key, grok)),
    "peak": ("peak", lambda r, key, grok: float(np.max(r[key])) if key in r else np.nan),
    "corr": ("rank corr with test loss",
             lambda r, key, grok: rank_corr(r[key], r["test_loss"]) if key in r else np.nan),
}


def measure_columns(runs):
    """summary.md's columns of the measures that ask for them (MEASURES' summary), as (title,
    cell) pairs: each statistic's mean +- std over the seeds."""
    rs, te = [r for _, _, _, r in runs], grok_steps(runs)
    columns = []
    for key, m in MEASURES.items():
        for stat in m.summary:
            title, value = SUMMARIES[stat]
            cell = fmt([value(r, key, g) for r, g in zip(rs, te)], m.digits)
            columns.append((f"{m.label} {title}", cell))
    return columns


def summary_table(groups):
    """summary.md's header and rows, one row per configuration."""
    base = baselines(groups)
    rows = [run_columns(lab, runs, base[lab]) + measure_columns(runs)
            for lab, runs in groups.items()]
    header = [title for title, _ in rows[0]] if rows else ["configuration"]
    return header, [[cell for _, cell in row] for row in rows]


def markdown(header, rows):
    """A markdown table: the header's titles, then one line per row of cells (strings)."""
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                     + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


# the columns summary.md always shows: what each configuration is, and whether and when it
# generalized; any other shows only where a run has something in it
ALWAYS = ("configuration", "seeds", "train<=0.01 (mean +- std)", "test<=0.01 (mean +- std)",
          "reached", "final test acc")
EMPTY = ("-", "not reached", "none", "not all")  # a cell's parts that hold nothing


def shown(header, rows):
    """The header and rows without the columns in which no row has anything (every part of
    every cell, split at ' / ' and '; ', in EMPTY): a 300-step run has no cell at step 1000, an
    MLP none of attention, a run without a hole none in it."""
    def empty(cell):
        return all(part in EMPTY for part in cell.replace("; ", " / ").split(" / "))
    keep = [i for i, title in enumerate(header)
            if title in ALWAYS or not all(empty(row[i]) for row in rows)]
    return [header[i] for i in keep], [[row[i] for i in keep] for row in rows]


def write_summary(root, groups):
    """runs/summary.csv (every column) and runs/summary.md (those with something in them), one
    row per configuration."""
    header, rows = summary_table(groups)
    table = io.StringIO()
    csv.writer(table).writerows([header] + rows)
    save_atomic(table.getvalue(), os.path.join(root, "summary.csv"))
    save_atomic(markdown(*shown(header, rows)), os.path.join(root, "summary.md"))
