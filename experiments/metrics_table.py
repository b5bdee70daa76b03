"""
A table of runs from metrics.npz (no analysis.npz needed), for REPRODUCTION.md: per
configuration, the steps to test accuracy >= 0.95 and to test loss <= 0.01 with the share of
seeds that get there, the softmax-collapse share, and Mann-Whitney U tests of both step
counts against the same setting's baseline (summary.baselines: no intervention, the setting's
usual lr). A seed that never gets there counts as later than every step. A run trained on
another loss (StableMax) has its test loss recomputed as softmax cross-entropy from its
checkpoints (every ckpt_every steps, not every eval_every), so that both statistics are the
baseline's. It also draws <root>/figures/steps_to_generalize.png: per configuration and
statistic, every seed's step as a dot. collapse(): Prieto et al.'s Fig. 2 table, per run;
held(): per run, when test accuracy first and last reaches 0.95 and how much of the run stays.

    python experiments/metrics_table.py runs/interventions
"""
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
from analyze import run_config  # noqa: E402
from measures import MEASURES, load_checkpoint_into, run_context  # noqa: E402
from model import build_model  # noqa: E402
from runfiles import (GROK, Stop, checkpoint_paths, first_below, load_checkpoint,  # noqa: E402
                      load_metrics, load_npz)
from stats import mann_whitney  # noqa: E402
from summary import baselines, first_at_or_above, fmt, group_runs, markdown  # noqa: E402
import pack  # noqa: E402
from runsets import folder_arg  # noqa: E402


@torch.no_grad()
def softmax_test_loss(run, cfg):
    """(steps, softmax cross-entropy on the test pairs) at every checkpoint of a run: its
    metrics.npz holds the loss it trained on, which for StableMax is not the baseline's. A copy
    without checkpoints (reproduction/) brings this curve in its analysis.npz (step, test_loss)."""
    kept = os.path.join(run, "analysis.npz")
    if not glob.glob(os.path.join(run, "ckpt", "step_*.pt")) and os.path.exists(kept):
        a = load_npz(kept)
        if "step" not in a or "test_loss" not in a:
            raise Stop(f"incomplete {kept}: no step or test_loss")
        return a["step"], a["test_loss"]
    paths, model = checkpoint_paths(run)[0], build_model(cfg)
    if not paths:
        raise Stop(f"{run}: no checkpoints")
    c = run_context(cfg, model, load_checkpoint(paths[-1]))
    steps, loss = [], []
    for q in paths:  # one checkpoint in memory at a time
        load_checkpoint_into(c, model, load_checkpoint(q))
        steps.append(c.step)
        loss.append(MEASURES["test_loss"].fn(c))
    return np.array(steps), np.array(loss)


def runs_below(root):
    """(folder, Config) of each run right below root, in name order."""
    for path in sorted(glob.glob(os.path.join(root, "*", "metrics.npz"))):
        run = os.path.dirname(path)
        yield run, run_config(run)


def main(root):
    done = {}
    for run, cfg in runs_below(root):
        m = load_metrics(os.path.join(run, "metrics.npz"))
        m["softmax"] = ((m["step"], m["test_loss"]) if cfg.loss == "ce"
                        else softmax_test_loss(run, cfg))
        done[run] = (cfg, m, {})
    groups, _ = group_runs(done)
    base = baselines(groups)
    acc = lambda runs: [first_at_or_above(m["step"], m["test_acc"], 0.95) for _, _, m, _ in runs]
    loss = lambda runs: [first_below(*m["softmax"]) for _, _, m, _ in runs]
    print("| configuration | seeds | test acc >= 0.95 at (reached) | test loss <= 0.01 at "
          "(reached) | final test acc | softmax collapse: max share / at the end | steps run | "
          "vs baseline: Mann-Whitney U / p, steps to acc 0.95 ; to loss 0.01 |")
    print("|" + "---|" * 8)
    for lab, runs in groups.items():
        ms = [m for _, _, m, _ in runs]
        n = len(runs)
        b = base[lab]
        test = "-" if b is None or b is runs else " ; ".join(
            "U {:g} / p {:.3f}".format(*mann_whitney(f(runs), f(b))) for f in (acc, loss))
        print(f"| {lab} | {' '.join(str(c.seed) for _, c, _, _ in runs)} | "
              f"{fmt(acc(runs))} ({sum(s is not None for s in acc(runs))}/{n}) | "
              f"{fmt(loss(runs))} ({sum(s is not None for s in loss(runs))}/{n}) | "
              f"{fmt([m['test_acc'][-1] for m in ms], 3)} | "
              f"{fmt([np.nanmax(m['collapse']) for m in ms], 2)} / "
              f"{fmt([m['collapse'][-1] for m in ms], 2)} | "
              f"{' / '.join(str(int(m['step'][-1])) for m in ms)} | {test} |")
    import plots  # matplotlib only when drawing
    path = os.path.join(root, "figures", "steps_to_generalize.png")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    plots.steps_to_generalize(path, {"steps until test accuracy >= 0.95":
                                     {lab: acc(runs) for lab, runs in groups.items()},
                                     f"steps until test loss <= {GROK}":
                                     {lab: loss(runs) for lab, runs in groups.items()}},
                              {lab: [m["step"][-1] for _, _, m, _ in runs]
                               for lab, runs in groups.items()},
                              {lab: (f"C{i % 10}", "-") for i, lab in enumerate(groups)})
    print(f"\nfigure: {path}")


def collapse(root):
    """Prieto et al.'s Fig. 2, softmax in float16, float32 and float64: per run, the first
    evaluation where more than half the training rows' softmax sums round to 1 in the run's loss
    dtype (their figure's dotted line: share > 0.5; > 0.4 in their frac 0.4 panel), test
    accuracy there, its maximum and at the end."""
    rows = []
    for run, c in runs_below(root):
        m = load_metrics(os.path.join(run, "metrics.npz"))
        s, acc, sc = m["step"], m["test_acc"], m["collapse"]
        best = int(np.argmax(acc))
        at = [f"{s[o[0]]} ({acc[o[0]]:.3f})" if len(o := np.nonzero(sc > t)[0]) else "never"
              for t in (0.5, 0.4)]
        rows.append([f"frac {c.frac}, {c.loss_dtype}", str(c.seed), *at,
                     f"{acc[best]:.3f} at {s[best]}", f"{acc[-1]:.3f} / {m['train_acc'][-1]:.3f}",
                     f"{np.nanmax(sc):.2f}", str(int(s[-1]))])
    print(markdown(["configuration", "seed", "collapse share > 0.5 at (test acc)", "> 0.4 at",
                    "max test acc", "final test / train acc", "max collapse share",
                    "steps run"], rows))


def held(root, acc=0.95):
    """Per run (grouped by configuration, then seed): the first evaluation with test accuracy >=
    acc, the last one, the share of evaluations from the first on that are >= acc (1: it stays),
    the best and the final test accuracy."""
    done = {run: (cfg, load_metrics(os.path.join(run, "metrics.npz")), {})
            for run, cfg in runs_below(root)}
    groups, _ = group_runs(done)
    rows = []
    for lab, runs in groups.items():
        for _, c, m, _ in sorted(runs, key=lambda r: r[1].seed):
            s, a = m["step"], m["test_acc"]
            above = np.nonzero(a >= acc)[0]
            first, last = (int(s[above[0]]), int(s[above[-1]])) if len(above) else ("never",) * 2
            stays = f"{np.mean(a[above[0]:] >= acc):.2f}" if len(above) else "-"
            best = int(np.argmax(a))
            rows.append([lab, str(c.seed), str(first), str(last), stays,
                         f"{a[best]:.3f} at {s[best]}", f"{a[-1]:.3f}", str(int(s[-1]))])
    print(markdown(["configuration", "seed", f"test acc >= {acc} first at", "last at",
                    "share of evaluations >= it from the first on", "best test acc",
                    "final test acc", "steps run"], rows))


if __name__ == "__main__":
    try:
        with pack.opened(folder_arg(__doc__, "runs/interventions")) as root:  # runs, or their pack
            main(root)
    except Stop as e:  # a run it cannot read: one line
        sys.exit(f"error: {e}")
