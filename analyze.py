"""
Progress measures of the four papers at every checkpoint of every run, then every figure.

    python analyze.py runs/              # every run folder below runs/, then the cross-run figures
    python analyze.py runs/ln-pre_s0     # one run
    python analyze.py --no-llc runs/     # without the local learning coefficient (~1/3 the time)

Writes runs/<name>/analysis.npz (one row per checkpoint; keys in measures.py's MEASURES and
FINAL, and README.md), runs/<name>/figures/*.png, and for a folder of runs runs/figures/*.png,
runs/summary.md and runs/summary.csv. A run is recomputed only when its checkpoints or the code
of a measure changed (see stamp).
"""
import argparse
import functools
import glob
import hashlib
import inspect
import json
import os
import sys
import time
import types
from collections import Counter
from dataclasses import replace

import numpy as np
import torch

from config import Config
from measures import (FINAL, LLC_POINTS, MEASURES, llc_every, load_checkpoint_into,
                      load_weights, run_context, run_llc)
from model import build_model
from runfiles import (GROK, KEYS, ArgumentParser, Stop, check_analysis, checkpoint_paths,
                      first_below, load_checkpoint, load_metrics, load_npz, message, printable,
                      save_atomic)
from summary import grok_steps, group_runs, write_summary

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKPOINT_S = 0.5  # the measures of a checkpoint without the LLC, s (a guess for the
# progress line until they are timed: 0.4 s on a 2-vCPU Xeon, BENCHMARKS.md)


# ---------------------------------------------------------------- one run

def measure(cfg, cks, llc=True, progress=None):
    """Every measure at every checkpoint, then FINAL at the last: analysis.npz's dict; llc
    False: the local learning coefficient's columns NaN (measures.llc_chains). First the SGLD
    chains of every checkpoint that takes the LLC, all as one stacked model (measures.run_llc),
    then the checkpoints one by one. progress(what, seconds so far, seconds left) after each
    SGLD step and each checkpoint."""
    model = build_model(cfg)
    c = run_context(cfg, model, cks[-1], llc=llc)
    rows = {k: [] for k in MEASURES}
    began = time.time()
    at = [ck for ck in cks if ck["step"] % llc_every(cfg) == 0] if llc else []
    if at:
        def sgld(t, steps):  # the checkpoints after it guessed at CHECKPOINT_S each
            took = time.time() - began
            progress(f"LLC at {len(at)} checkpoints, SGLD step {t}/{steps}", took,
                     took / t * (steps - t) + CHECKPOINT_S * len(cks))
        chains, _ = run_llc(c, [ck["model"] for ck in at], sgld if progress else None)
        c.memo["llc"] = {ck["step"]: v for ck, v in zip(at, chains)}
    start = time.time()
    for i, ck in enumerate(cks):
        load_checkpoint_into(c, model, ck)
        for k, m in MEASURES.items():
            rows[k].append(m.fn(c))
        if progress:
            now = time.time()
            progress(f"checkpoint {i + 1}/{len(cks)}", now - began,
                     (now - start) / (i + 1) * (len(cks) - i - 1))
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
    used = list(names(f.__code__))  # globals, and the attributes read (fourier.ce: ce)
    for n in used:
        if n not in f.__globals__:
            continue
        value = f.__globals__[n]
        add(found, f"{os.path.basename(source_file(f))}:{n}", value)
        if inspect.ismodule(value) and source_file(value) and \
                os.path.dirname(source_file(value)) == HERE:
            # a module of ours used as a module: what f reads of it, by its own file's keys
            for attr in used:
                if hasattr(value, attr):
                    add(found, f"{os.path.basename(value.__file__)}:{attr}",
                        getattr(value, attr))


def add(found, key, value):
    """Describe value into found[key], once: a function that calls itself is described once."""
    if key in found:
        return
    found[key] = None  # taken
    found[key] = describe(value, found)


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
    roots = [("measure", measure)]
    roots += [(k, m.fn) for k, m in MEASURES.items()]
    roots += list(FINAL.items())
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
        cfg = Config.saved(d)
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
    model = build_model(cfg)
    cks, last = [], "no checkpoints"
    for q in paths:
        try:
            ck = load_checkpoint(q)
        except Stop as e:
            log(f"skipped {e}")
            last = e
            continue
        try:
            if not same_run(Config.from_dict(ck["config"]), cfg):
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


def same_run(a, b):
    """Whether Configs a and b are of one run: equal but for --steps, which --resume may
    extend (so checkpoints before the extension hold the shorter budget)."""
    return replace(a, steps=0) == replace(b, steps=0)


def analyse_run(run_dir, log=print, llc=True, status=functools.partial(print, flush=True)):
    """All measures at every checkpoint of one run; writes and returns analysis.npz's dict,
    or returns the one written before if nothing it was computed from changed (a cache: one
    that cannot be read is made again). llc False skips the local learning coefficient (most
    of an analysis's time); an analysis with it serves a caller that skips it, not the other
    way round. status: the progress line, every 5 s."""
    cfg = run_config(run_dir)
    paths, _ = checkpoint_paths(run_dir)
    s = stamp(paths)
    out = os.path.join(run_dir, "analysis.npz")
    if os.path.exists(out):
        try:
            with np.load(out, allow_pickle=False) as f:
                old = {k: f[k] for k in f.files}
            if str(old.get("stamp")) == s and (not llc or not old.get("llc_skipped", False)):
                return old
        except Exception as e:  # a zip cut short, a column that cannot be read
            log(f"{printable(out)} cannot be read ({message(e)}): computing it again")
    t0, shown = time.time(), 0.0
    cks = run_checkpoints(run_dir, cfg, log)

    def progress(what, seconds, left):  # at most every 5 s, as training's status line
        nonlocal shown
        if time.time() - shown >= 5 and left > 0:
            shown = time.time()
            status(f"{printable(run_dir)}: {what} | {seconds:.0f}s | {left:.0f}s left")
    with torch.no_grad():
        res = measure(cfg, cks, llc, progress)
    res["stamp"], res["llc_skipped"] = s, not llc
    save_atomic(res, out)
    log(f"{printable(run_dir)}: {len(cks)} checkpoints analysed in {time.time() - t0:.1f}s, "
        f"key frequencies (W_L) {[int(k) for k in res['keys']]}")
    return res


def analysis_of(run_dir, llc=True):
    """A run's analysis.npz dict: a copy without checkpoints (reproduction/) brings its own;
    a run is analysed (analyse_run, quietly: cached when nothing changed)."""
    kept = os.path.join(run_dir, "analysis.npz")
    if os.path.exists(kept) and not glob.glob(os.path.join(run_dir, "ckpt", "step_*.pt")):
        res = check_analysis(load_npz(kept), printable(kept), MEASURES)  # or one line
        if "keys_embed" not in res:  # an older copy's names: keys W_E's, keys_logit W_L's
            res["keys_embed"], res["keys"] = res.pop("keys", None), res.pop("keys_logit", None)
        return res
    return analyse_run(run_dir, log=lambda *_: None, llc=llc)


# ---------------------------------------------------------------- across runs

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
    memorization = int(step[i_peak])
    circuits, cleanup = None, None
    if len(below):
        circuits = int(step[i_clean])
    if done.any():
        cleanup = int(step[np.argmax(done)])
    return memorization, circuits, cleanup


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


def analyse_one(run, llc=True):
    """(cfg, metrics, analysis) of one run, its figures drawn; Stop if it cannot be analysed."""
    import plots  # matplotlib only when drawing
    try:
        run.encode("utf-8")
    except UnicodeEncodeError:
        raise Stop(f"{printable(run)}: the name is not UTF-8; rename the folder") from None
    m = load_metrics(os.path.join(run, "metrics.npz"), KEYS)
    if not len(m["step"]):
        raise Stop(f"{run}/metrics.npz has no rows")
    res = analyse_run(run, llc=llc)
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
    ap.add_argument("--no-llc", dest="llc", action="store_false",
                    help="skip the local learning coefficient (llc, llc_chains: NaN) at the "
                    f"up to {LLC_POINTS} + 1 checkpoints a run that take it: SGLD chains, about "
                    "a third of a run's analysis on a CPU (BENCHMARKS.md)")
    args = ap.parse_args(argv)
    root = args.root
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
                done[run] = analyse_one(run, args.llc)
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

