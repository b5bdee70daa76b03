"""
Progress measures of the four papers at every checkpoint of every run, then every figure.

    python analyze.py runs/              # every run folder below runs/, then the cross-run figures
    python analyze.py runs/ln-pre_s0     # one run

Writes runs/<name>/analysis.npz (one row per checkpoint; keys in measures.py's MEASURES and
FINAL, and README.md), runs/<name>/figures/*.png, and for a folder of runs runs/figures/*.png,
runs/summary.md and runs/summary.csv. A run is recomputed only when its checkpoints or the code
of a measure changed (see stamp).
"""
import argparse
import csv
import glob
import hashlib
import inspect
import io
import json
import os
import sys
import time
import types
from collections import Counter

import numpy as np
import torch

from model import Config, build_model
from measures import FINAL, MEASURES, load_checkpoint_into, load_weights, run_context
from runfiles import (GROK, KEYS, ArgumentParser, Stop, checkpoint_paths, first_below,
                      load_checkpoint, load_metrics, message, printable, save_atomic)
from stats import mann_whitney, rank_corr

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------- one run

def measure(cfg, cks):
    """Every measure at every checkpoint, then FINAL at the last: analysis.npz's dict."""
    model = build_model(cfg)
    c = run_context(cfg, model, cks[-1])
    rows = {k: [] for k in MEASURES}
    for ck in cks:
        load_checkpoint_into(c, model, ck)
        for k, m in MEASURES.items():
            rows[k].append(m.fn(c))
    res = {k: np.array(v) for k, v in rows.items()}
    for k, f in FINAL.items():
        v = f(c)
        if v is not None:
            res[k] = v
    return res


def source_file(f):
    """The file that defines function or class f, or None (a builtin)."""
    try:
        return os.path.abspath(inspect.getsourcefile(f))
    except TypeError:
        return None


def ours(v):
    """Whether v is a function or class defined in this project's files, not a library's."""
    is_code = inspect.isfunction(v) or inspect.isclass(v)
    return is_code and os.path.dirname(source_file(v) or "") == HERE


def describe(v, found):
    """A value as the stamp sees it, the same in every process: a function or model class of
    this project by its source (and what it calls, into found); a module, another class or a
    library's function by its name; a container by its items; an array by its bytes; anything
    else by its repr."""
    if is_model(v) or (inspect.isfunction(v) and ours(v)):
        follow(v, found)
        return inspect.getsource(v)
    if inspect.ismodule(v):
        return v.__name__
    if callable(v):  # a library's: its repr may hold a memory address
        return f"{getattr(v, '__module__', '')}.{getattr(v, '__qualname__', type(v).__name__)}"
    if isinstance(v, dict):
        items = ", ".join(f"{describe(k, found)}: {describe(x, found)}" for k, x in v.items())
        return "{" + items + "}"
    if isinstance(v, (list, tuple)):
        return f"{type(v).__name__}(" + ", ".join(describe(x, found) for x in v) + ")"
    if isinstance(v, (set, frozenset)):
        return "{" + ", ".join(sorted(describe(x, found) for x in v)) + "}"
    if isinstance(v, torch.Tensor):
        v = v.detach().cpu().numpy()
    if isinstance(v, np.ndarray):  # by its bytes: the repr of a large array leaves most out
        digest = hashlib.sha1(np.ascontiguousarray(v).tobytes()).hexdigest()
        return f"array({v.dtype}, {v.shape}, {digest})"
    return repr(v)


def is_model(v):
    """Whether v is a model class of this project (nn.Module): its methods are the forward the
    measures run. Its other classes (Config, Stop, Measure) hold options, errors and display:
    an edit to them changes no measured value."""
    return inspect.isclass(v) and issubclass(v, torch.nn.Module) and ours(v)


def follow(f, found):
    """Into found, what a function of this project calls, or every method of a model class."""
    if inspect.isfunction(f):
        called(f, found)
        return
    for method in vars(f).values():
        if inspect.isfunction(method):
            called(method, found)


def called(f, found):
    """Add to found what f uses by name, recursively, through the functions and lambdas nested
    in it too: the source of every function and model class of this project's files (looked up
    in f's module) and the value of every constant (describe). Keyed by file and name, not
    module, so that running analyze.py as a script or importing it gives one stamp. Library
    code is left out."""
    def names(code):
        for k in code.co_consts:
            if isinstance(k, types.CodeType):
                yield from names(k)
        yield from code.co_names
    for n in names(f.__code__):
        key = f"{os.path.basename(source_file(f))}:{n}"
        if key in found or n not in f.__globals__:
            continue
        found[key] = None  # taken: a function that calls itself is described once
        found[key] = describe(f.__globals__[n], found)


def stamp(paths):
    """What analysis.npz was computed from: the checkpoints (path, size, mtime), the function of
    every registered measure and of measure() that runs them, and everything of this project
    they call (called): functions, constants, and the model's code, from build_model through
    the model classes. Any change makes the run be recomputed; an edit elsewhere (Config, the
    figures, a measure's summary column) does not."""
    # the registries: each entry's function is a root below, and the rest of a MEASURES entry
    # (its summary column, its figure) changes no stored value
    found = {f"{os.path.basename(source_file(measure))}:{name}": "the roots"
             for name in ("MEASURES", "FINAL")}
    roots = [("measure", measure)] + [(k, m.fn) for k, m in MEASURES.items()] + \
        list(FINAL.items())
    for _, f in roots:
        called(f, found)
    code = [(name, inspect.getsource(f)) for name, f in roots] + sorted(found.items())
    cks = [(q, os.path.getsize(q), os.path.getmtime(q)) for q in paths]
    return hashlib.sha1(repr([cks, code]).encode()).hexdigest()


def run_config(run_dir):
    """A run's Config, from its config.json (the checkpoints must be of it)."""
    path = os.path.join(run_dir, "config.json")
    try:
        with open(path) as f:
            d = json.load(f)
        if not isinstance(d, dict):
            raise TypeError(f"a JSON {type(d).__name__}, not an object")
        cfg = Config.from_dict(d)
    except FileNotFoundError:
        raise Stop(f"{printable(run_dir)}: no config.json") from None
    except (OSError, ValueError, TypeError, AttributeError) as e:  # not JSON, not a config
        raise Stop(f"{printable(path)} is not a run's config ({message(e)})") from None
    cfg.check()
    return cfg


def run_checkpoints(run_dir, cfg, log):
    """The checkpoints of ckpt/ in step order, each checked to be of this run (its config and
    weights' shapes); a bad one is skipped with a line naming it."""
    paths, other = checkpoint_paths(run_dir)
    for q in other:
        log(f"skipped {printable(q)}: not a checkpoint (ckpt/step_XXXXXX.pt)")
    model, same = build_model(cfg), lambda d: {**d, "steps": 0}
    cks, last = [], "no checkpoints"
    for q in paths:
        try:
            ck = load_checkpoint(q)
        except Stop as e:
            log(f"skipped {e}")
            last = e
            continue
        try:
            if same(Config.from_dict(ck["config"]).to_dict()) != same(cfg.to_dict()):
                raise Stop("it is of another run (its config differs)")
            load_weights(model, ck)
        except (Stop, ValueError, TypeError) as e:  # another model's weights, another config
            log(f"skipped {printable(q)}: {e}")
            last = e
            continue
        cks.append(ck)
    if not cks:
        raise Stop(f"{printable(run_dir)}: {last}")
    return cks


def analyse_run(run_dir, log=print):
    """All measures at every checkpoint of one run; writes and returns analysis.npz's dict,
    or returns the one written before if nothing it was computed from changed (a cache: one
    that cannot be read is made again)."""
    cfg = run_config(run_dir)
    paths, _ = checkpoint_paths(run_dir)
    s = stamp(paths)
    out = os.path.join(run_dir, "analysis.npz")
    if os.path.exists(out):
        try:
            with np.load(out, allow_pickle=False) as f:
                old = {k: f[k] for k in f.files}
            if str(old.get("stamp")) == s:
                return old
        except Exception as e:  # a zip cut short, a column that cannot be read
            log(f"{printable(out)} cannot be read ({message(e)}): computing it again")
    t0 = time.time()
    cks = run_checkpoints(run_dir, cfg, log)
    with torch.no_grad():
        res = measure(cfg, cks)
    res["stamp"] = s
    save_atomic(res, out)
    log(f"{printable(run_dir)}: {len(cks)} checkpoints analysed in {time.time() - t0:.1f}s, "
        f"key frequencies (W_L) {[int(k) for k in res['keys']]}")
    return res


# ---------------------------------------------------------------- across runs

# not what makes a configuration
IGNORED = ("seed", "data_seed", "steps", "schedule_steps", "eval_every", "ckpt_every")
# Summary measures are compared at one step that every run reaches (runs may stop soon after
# generalizing, --stop-after-grok): after memorization, before most configurations generalize.
AT = 1000


def phases(m, flat=0.01):
    """Nanda et al.'s phases (section 5.2; their mainline 1.4k / 9.4k / 14k) by rules on the
    logged curves: memorization ends at the test-loss peak, circuit formation when test loss
    first falls below 1, cleanup when the sum of squared weights ends its sharp fall: the first
    evaluation from test loss GROK after which it falls by less than `flat` in 1000 steps."""
    step, loss, wn = m["step"], m["test_loss"], m["weight_norm"]
    below = np.nonzero(loss < 1.0)[0]
    i_clean = below[0] if len(below) else len(step) - 1
    i_peak = int(np.argmax(loss[:i_clean + 1]))
    later = np.minimum(np.searchsorted(step, step + 1000), len(step) - 1)   # 1000 steps on
    grokked = np.maximum.accumulate(loss <= GROK)           # from the first test loss <= GROK
    done = grokked & (step + 1000 <= step[-1]) & (wn[later] > (1 - flat) * wn)
    return (int(step[i_peak]), int(step[i_clean]) if len(below) else None,
            int(step[np.argmax(done)]) if done.any() else None)


def grok_steps(runs):
    """First step with test loss <= GROK of each run (None: never)."""
    return [first_below(m["step"], m["test_loss"]) for _, _, m, _ in runs]


def unfinished(cfg, m):
    """A run short of test loss 0.01: '-' if it ran its budget, else where it stopped (--resume)."""
    last = int(m["step"][-1])
    return "-" if last >= cfg.steps else f"- (stopped at {last} of {cfg.steps})"


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


def grok_dot(runs, key):
    """(mean generalization step of the seeds that generalized, mean of `key` there), or None."""
    pts = [s for s in grok_steps(runs) if s is not None]
    if not pts:
        return None
    g = np.mean(pts)
    return g, np.mean([np.interp(g, r["step"], r[key]) for _, _, _, r in runs])


def sweeps(groups, varying):
    """For each numeric option that varies: over the runs whose other numeric options sit at
    their most common value (the baseline), points (value, steps to generalize or NaN, best test
    accuracy), one series per combination of the options that are not numbers (split, op, ...).
    -> {option: (baseline, {series label: [points]})}, options with fewer than 2 values left out."""
    runs = [x for g in groups.values() for x in g]
    if not runs:
        return {}

    def is_num(o):  # in every run: --batch-size is None in a full-batch one
        values = [getattr(cfg, o) for _, cfg, _, _ in runs]
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    out = {}
    for opt in filter(is_num, varying):
        base = {o: Counter(getattr(cfg, o) for _, cfg, _, _ in runs).most_common(1)[0][0]
                for o in varying if is_num(o) and o != opt}
        series = {}
        for _, cfg, m, _ in runs:
            if all(getattr(cfg, o) == v for o, v in base.items()):
                lab = ", ".join(f"{o}={getattr(cfg, o)}" for o in varying if not is_num(o)) or opt
                s = first_below(m["step"], m["test_loss"])
                series.setdefault(lab, []).append(
                    (getattr(cfg, opt), np.nan if s is None else s, np.max(m["test_acc"])))
        if len({x for pts in series.values() for x, _, _ in pts}) >= 2:
            out[opt] = (base, series)
    return out


def fmt(values, digits=0):
    """mean +- std of the values that exist (None: a run that never got there; NaN: a measure the
    run has not, e.g. attention entropy of the embedding-MLP, or one its cached analysis
    predates)."""
    v = [x for x in values if x is not None]
    if v and np.isnan(v).all():
        return "-"
    v = [x for x in v if not np.isnan(x)]
    return f"{np.mean(v):.{digits}f} +- {np.std(v):.{digits}f}" if v else "not reached"


def at(r, key, step=AT):
    """An analysis measure at `step`, or None if the run has none there."""
    return float(np.interp(step, r["step"], r[key])) if key in r and r["step"][-1] >= step else None


def after_grok(m, key, f, window=1000):
    """f (max, min) of a logged metric over the `window` steps from the first test acc >= 0.9:
    slingshots and fluctuations after generalizing (every experiment runs 1000 steps past test
    loss <= GROK, which comes later)."""
    g = first_at_or_above(m["step"], m["test_acc"], 0.9)
    return None if g is None else float(f(m[key][(m["step"] >= g) & (m["step"] <= g + window)]))


def first_at_or_above(steps, values, thr):
    """The first step whose value is >= thr (an accuracy), or None."""
    hit = np.nonzero(np.asarray(values) >= thr)[0]
    return int(np.asarray(steps)[hit[0]]) if len(hit) else None


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


INTERVENTIONS = ("optimizer", "grokfast", "gf_alpha", "gf_window", "gf_lamb", "orthograd", "loss")


def baselines(groups):
    """Each configuration's baseline (or None): the same setting, no intervention (every other
    INTERVENTIONS option at its default) and the setting's most common lr and optimizer (a tie:
    the defaults; Grokfast's own setting trains with Adam: its baseline is Adam, no filter)."""
    default = Config()
    update = lambda cfg: (cfg.lr, cfg.optimizer)
    plain = lambda cfg: all(getattr(cfg, k) == getattr(default, k)
                            for k in INTERVENTIONS if k != "optimizer")
    setting = lambda cfg: tuple((k, v) for k, v in cfg.to_dict().items()
                                if k not in IGNORED + INTERVENTIONS + ("lr",))
    seen, out = {}, {}
    for runs in groups.values():
        seen.setdefault(setting(runs[0][1]), []).extend(update(cfg) for _, cfg, _, _ in runs)
    for lab, runs in groups.items():
        s = setting(runs[0][1])
        # the most common update of the setting; a tie: the default's
        want = max(Counter(seen[s]).items(), key=lambda kv: (kv[1], kv[0] == update(default)))[0]
        out[lab] = next((g for g in groups.values() if setting(g[0][1]) == s
                         and plain(g[0][1]) and update(g[0][1]) == want), None)
    return out


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
         f"{mean_curve_step(runs) or 'not reached'}; {min(got) if got else 'none'} / "
         f"{max(got) if len(got) == len(te) else 'not all'}"),
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
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
                     + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def write_summary(root, groups):
    """runs/summary.csv and runs/summary.md, one row per configuration."""
    header, rows = summary_table(groups)
    table = io.StringIO()
    csv.writer(table).writerows([header] + rows)
    save_atomic(table.getvalue(), os.path.join(root, "summary.csv"))
    save_atomic(markdown(header, rows), os.path.join(root, "summary.md"))


# ---------------------------------------------------------------- every run, and the figures

def find_runs(path):
    """path if it is a run, else the runs (folders with config.json) right below it."""
    ckpt, config = os.path.join(path, "ckpt"), os.path.join(path, "config.json")
    if os.path.isdir(ckpt) or os.path.exists(config):
        return [path]
    return sorted(os.path.dirname(q) for q in glob.glob(os.path.join(path, "*", "config.json")))


def cross_run(root, done):
    """Figures across runs and the summary table; done: {run: (cfg, metrics, analysis)}."""
    import plots  # matplotlib only when drawing
    groups, varying = group_runs(done)
    # each measure with a figure (MEASURES' figure); dots at the mean generalization step on
    # those that summary.md shows at generalization
    drawn = [(key, m.figure, m.log) for key, m in MEASURES.items() if m.figure]
    dots = {key: {lab: grok_dot(runs, key) for lab, runs in groups.items()}
            for key, m in MEASURES.items() if m.figure and "at_grok" in m.summary}
    try:
        plots.cross_run_figures(
            root, {lab: [(m, r) for _, _, m, r in runs] for lab, runs in groups.items()},
            grok={lab: grok_steps(runs) for lab, runs in groups.items()}, dots=dots,
            sweeps=sweeps(groups, varying), thr=GROK, measures=drawn)
    except OSError as e:  # a full disk, a folder it may not write in
        raise figures_failed(root, e) from None
    write_summary(root, groups)


def figures_failed(folder, e):
    """Stop for a figure that could not be written (plots.save has removed its temp file)."""
    return Stop(f"{printable(folder)}: cannot write its figures ({e.strerror})")


def analyse_one(run):
    """(cfg, metrics, analysis) of one run, its figures drawn; Stop if it cannot be analysed."""
    import plots  # matplotlib only when drawing
    try:
        run.encode("utf-8")
    except UnicodeEncodeError:
        raise Stop(f"{printable(run)}: the name is not UTF-8; rename the folder") from None
    m = load_metrics(os.path.join(run, "metrics.npz"), KEYS)
    if not len(m["step"]):
        raise Stop(f"{run}/metrics.npz has no rows")
    res = analyse_run(run)
    cfg = run_config(run)
    try:
        plots.run_figures(run, m, res, first_below(m["step"], m["test_loss"]), phases(m),
                          thr=GROK)
    except OSError as e:  # a full disk, a folder it may not write in
        raise figures_failed(run, e) from None
    return cfg, m, res


def main(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", metavar="RUNS_DIR_OR_RUN", help="a run folder, or a folder of runs")
    root = ap.parse_args(argv).root
    if not os.path.isdir(root):
        sys.exit(f"error: {printable(root)} is not a folder")
    runs = find_runs(root)
    if not runs:
        sys.exit(f"error: no runs (folders with config.json) in {printable(root)}")
    done = {}
    try:
        for i, run in enumerate(runs):
            print(f"[{i + 1}/{len(runs)}] {printable(run)}", flush=True)
            try:
                done[run] = analyse_one(run)
            except Stop as e:  # one bad run: said, and the others go on
                print(f"skipped: {e}")
        if not done:
            sys.exit(f"error: no run could be analysed in {printable(root)} (the lines above "
                     "say why)")
        if len(runs) > 1 or root != runs[0]:
            cross_run(root, done)
    except Stop as e:
        sys.exit(f"error: {e}")
    except KeyboardInterrupt:
        print("error: interrupted; the analysis.npz files written so far are kept",
              file=sys.stderr)
        sys.exit(130)
    print(f"figures in {printable(root)}/figures and each run's figures/")


if __name__ == "__main__":
    main()

