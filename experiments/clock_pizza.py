"""
Clock or Pizza by LN placement: Zhong et al.'s distance irrelevance and gradient symmetricity
(measures.py) of the runs of experiments/clock_pizza.sh, per placement over its seeds, at
generalization (test loss <= 0.01, linear between checkpoints) and at the last checkpoint;
beside them Zhong et al.'s two saved models as anchors.

    python experiments/clock_pizza.py                      # runs/clock_pizza
    python experiments/clock_pizza.py runs/ln_placements   # any folder of such runs

A seed counts as Pizza-like when its (distance irrelevance, gradient symmetricity) lies nearer
to their model A (a Pizza) than to their model B (a Clock). The Mann-Whitney test compares a
placement's gradient symmetricity at the last checkpoint with No LN's.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import analyze as A  # noqa: E402
import summary as S  # noqa: E402
from runfiles import KEYS, Stop, first_below, load_metrics  # noqa: E402
from singh_numbers import SINGH_LN  # noqa: E402
from stats import mann_whitney  # noqa: E402

MEASURED = ("distance_irrelevance", "gradient_symmetricity")
# Zhong et al.'s saved models (fjzzq2002/pizza, code/save/), (distance irrelevance, gradient
# symmetricity): model A (attention rate 0) as their notebook prints it, and as this project's
# measures give it (test_measures); model B (rate 1) measured by this project's measures on
# their saved weights
ZHONG = {"their model A (Pizza, attention rate 0)": (0.172, 0.994),
         "their model B (Clock, attention rate 1)": (0.848, 0.334)}


def seed_values(run):
    """(config, {measure: (at generalization or None, at the last checkpoint)}) of one run."""
    r = A.analyse_run(run, log=lambda *_: None)
    m = load_metrics(os.path.join(run, "metrics.npz"), KEYS)
    grok = first_below(m["step"], m["test_loss"])
    values = {k: (None if grok is None else S.at(r, k, grok), float(r[k][-1])) for k in MEASURED}
    return A.run_config(run), values


def pizza_like(di, gs):
    """Whether (di, gs) lies nearer to model A than to model B."""
    (a, b) = ZHONG.values()
    return np.hypot(di - a[0], gs - a[1]) < np.hypot(di - b[0], gs - b[1])


def table(root):
    """The table's header and rows, one per placement in Singh et al.'s order."""
    runs = A.find_runs(root)
    if not runs:
        raise Stop(f"no runs in {root}: make them with bash experiments/clock_pizza.sh")
    by_ln = {}
    for run in runs:
        cfg, values = seed_values(run)
        by_ln.setdefault(cfg.ln, []).append((cfg.seed, values))
    gs_last = lambda ln: [v["gradient_symmetricity"][1] for _, v in by_ln[ln]]
    rows = []
    for ln in sorted(by_ln, key=lambda ln: list(SINGH_LN).index(ln) if ln in SINGH_LN else 99):
        seeds = sorted(by_ln[ln], key=lambda sv: sv[0])
        cells = [S.fmt([v[k][i] for _, v in seeds], 3) for i in (0, 1) for k in MEASURED]
        pizza = sum(pizza_like(*(v[k][1] for k in MEASURED)) for _, v in seeds)
        test = "-" if ln == "off" or "off" not in by_ln else \
            "U {:g} / p {:.3f}".format(*mann_whitney(gs_last(ln), gs_last("off")))
        rows.append([f"{ln} ({SINGH_LN.get(ln, ('not in the paper',))[0]})",
                     " ".join(str(s) for s, _ in seeds)] + cells + [f"{pizza}/{len(seeds)}", test])
    for name, (di, gs) in ZHONG.items():
        rows.append([name, "-", "-", "-", f"{di:.3f}", f"{gs:.3f}", "-", "-"])
    header = ["placement", "seeds", "distance irrelevance at generalization",
              "gradient symmetricity at generalization", "distance irrelevance, last",
              "gradient symmetricity, last", "Pizza-like seeds (last)",
              "gradient symmetricity vs No LN: Mann-Whitney U / p"]
    return header, rows


def main(argv):
    root = argv[0] if argv else "runs/clock_pizza"
    try:
        print(S.markdown(*table(root)))
    except Stop as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
