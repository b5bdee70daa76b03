"""
The results layer's floor: the run copies of reproduction/ and how a claim or a table reads them.

    load(root)        {run: (cfg, metrics, analysis)} of the run folders below root
    Runs(copy, keep)  a group of runs of one or more copies, kept by config; printed as it reads
    field(...), singh(...), where(...)   the configs a group keeps, each printed as it keeps

A selection is one statement: the same object picks the runs and says which it picks (the
verdict registry prints str(Runs)), so the two cannot drift apart.
"""
import atexit
import glob
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import analyze as A  # noqa: E402
import pack  # noqa: E402
from optim import schedule  # noqa: E402
from runfiles import Stop, first_below, load_metrics  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
REPRO = os.path.join(HERE, "reproduction")


def load(root, analysed=False, keep=lambda cfg: True, llc=False):
    """{run: (cfg, metrics, analysis)} of the runs right below root whose config passes keep;
    a run without checkpoints (a copy in reproduction/) brings its analysis.npz. llc: a run of
    runs/ is analysed with the LLC (the llc section's; the others read no LLC, and an analysis
    without it takes a fraction of the time)."""
    done = {}
    for run in sorted(map(os.path.dirname, glob.glob(os.path.join(root, "*", "metrics.npz")))):
        cfg = A.run_config(run)
        if not keep(cfg):
            continue
        res = A.analysis_of(run, llc) if analysed else {}
        done[run] = (cfg, load_metrics(os.path.join(run, "metrics.npz")), res)
    return done


# ---------------------------------------------------------------- which configs

class Keep:
    """A predicate on a run's config that says what it keeps: str() is the selection as the
    registry prints it."""
    def __init__(self, text, test):
        self.text, self.test = text, test

    def __call__(self, cfg):
        return self.test(cfg)

    def __str__(self):
        return self.text


def where(text, test):
    """A selection no field states: test(cfg), described by text."""
    return Keep(text, test)


def field(**want):
    """The runs whose config has these values."""
    return Keep(", ".join(f"{k} {v}" for k, v in want.items()),
                lambda c: all(getattr(c, k) == v for k, v in want.items()))


def lr_wd(cfg):
    return tuple(round(float(x), 6) for x in schedule(cfg, cfg.warmup))


def singh_model(ln="off", lr=1e-3, wd=1.0, alpha=1.0, eps=1e-8, init="singh", **model):
    """Runs on their split of Singh et al.'s one-layer model with this placement and (lr, wd,
    alpha) as it trains (lr / alpha^2 included), eps and init; model: what else differs."""
    base = dict(n_layers=1, d_model=128, d_mlp=512, norm="layernorm", data_seed=None)
    want = {**base, **model, "ln": ln, "eps": eps, "init": init, "split_rng": "singh"}
    extra = dict(model)
    if eps != 1e-8:
        extra["eps"] = eps
    if init != "singh":
        extra["init"] = init
    text = f"their split, ln {ln}, lr {lr:g}, wd {wd:g}, alpha {alpha:g}" + "".join(
        f", {k} {v}" for k, v in extra.items())
    return Keep(text, lambda c: (all(getattr(c, k) == v for k, v in want.items())
                                 and c.alpha == alpha
                                 and lr_wd(c) == (round(lr, 6), round(wd, 6))))


def configurations(folder):
    """{run name: its configuration less what tells one seed's run from another's} of the runs
    below folder (its pack unpacked where it has no run folders)."""
    with pack.opened(folder) as runs:
        out = {}
        for name in pack.run_folders(runs):
            d = A.run_config(os.path.join(runs, name)).to_dict()
            out[name] = json.dumps({k: v for k, v in d.items() if k not in ("seed", "data_seed")},
                                   sort_keys=True)
        return out


def foreign(folder, copy):
    """The runs below folder whose configuration (seed aside) no run of the copy has: runs of
    another experiment than the one the copy holds."""
    known = set(configurations(copy).values())
    return sorted(name for name, c in configurations(folder).items() if c not in known)


# ---------------------------------------------------------------- groups of runs

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
        pack.unpack(os.path.join(root, pack.PACK), tmp, compress=False)
        UNPACKED[root] = tmp
    return UNPACKED[root]


class Runs:
    """One group of runs: the copy reproduction/<copy> (several: a list), the runs kept (a
    Keep, printed as the selection; None: every run). A run that stopped short of its budget
    without generalizing makes the group Missing, unless partial (a claim that reads what such
    runs did so far). name: what a table calls the group."""
    def __init__(self, copies, keep=None, analysed=False, partial=False, name=None):
        self.copies = [copies] if isinstance(copies, str) else copies
        self.keep = keep or Keep("", lambda c: True)
        self.analysed, self.partial, self.name = analysed, partial, name

    def __str__(self):
        what = " + ".join(self.copies) + (f" ({self.keep})" if str(self.keep) else "")
        return f"{self.name}: {what}" if self.name else what

    def get(self, load):
        """[(cfg, metrics, analysis)] by copy, then seed; load: runsets.load or a stand-in."""
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
            short = [c.seed for c, m, _ in done
                     if first_below(m["step"], m["test_loss"]) is None and m["step"][-1] < c.steps]
            if short and not self.partial:  # a step never reached might yet be
                raise Missing(f"reproduction/{copy}: seeds {short} stopped before their budget "
                              "(--resume)")
            out += done
        if not out:
            raise Missing(f"its runs are not in reproduction/{' + '.join(self.copies)}")
        return out


def folder_arg(doc, default=None):
    """The folder named on the command line, or `default`: --help prints `doc`, and a folder
    that is not there is a one-line error (each table script's command line)."""
    args = sys.argv[1:]
    if len(args) > 1 or (not args and default is None) or (args and args[0].startswith("-")):
        print(doc.strip())
        sys.exit(args not in (["-h"], ["--help"]))
    root = args[0] if args else default
    if not os.path.isdir(root):
        sys.exit(f"error: no folder {root}")
    return root
