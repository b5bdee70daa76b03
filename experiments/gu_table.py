"""
Gu et al.'s tables of REPRODUCTION.md from the run folders of experiments/gu_setting.sh: the
dug-out runs seed by seed (is the hole learned?), the token-uniformity claim (weight decay makes
||phi(i)|| and ||phi(i+1) - phi(i)|| uniform), depth and the primes at frac 0.5 (does test
accuracy fluctuate, does MED follow test loss?) and the DNN.

    python experiments/gu_table.py reproduction/gu_setting   # the four, from the copied runs
    python experiments/claims.py gu_setting      # the four, and analyze.py's summary, of runs/
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from data import hole_mask  # noqa: E402
from runfiles import Stop, first_below  # noqa: E402
from stats import rank_corr  # noqa: E402
import summary as S  # noqa: E402
import pack  # noqa: E402
from runsets import folder_arg, load  # noqa: E402


def holes(runs):
    """The dug-out runs of {run: (cfg, metrics, analysis)}, seed by seed: is the hole learned,
    and the bound on test accuracy if it never is (1 - |hole| / |test|)."""
    rows = []
    for c, m, r in runs.values():
        if c.split in ("square", "strip"):
            vocab = f"b on tokens {c.b_offset}+" if c.b_offset else "one vocabulary"
            model = "DNN, " if c.model == "mlp" else ""
            rows.append([f"{model}{c.split} k={c.hole}, {vocab}", str(c.seed),
                         str(int(hole_mask(c).sum())),
                         str(first_below(m["step"], m["test_loss"]) or S.unfinished(c, m)),
                         *(f"{v:.3f}" for v in (np.max(m["test_acc"]), m["test_acc"][-1])),
                         f"{r['hole_acc'][-1]:.3f} / {np.max(r['hole_acc']):.3f}",
                         num(r["rest_acc"][-1]), num(r["hole_bound"]),
                         f"{num(r['hole_acc_shared'])} / {num(r['hole_acc_unshared'])}"
                         if c.b_offset and "hole_acc_shared" in r else "-"])
    if rows:
        print(S.markdown(["training set", "seed", "pairs dug out", "test loss <= 0.01 at",
                          "best test acc", "final test acc", "acc in hole: last / best checkpoint",
                          "acc, rest of test: last", "bound if the hole is never learned",
                          "acc in hole, last: a's token also b's / no b's (--b-offset)"], rows))


def num(v):
    """'-' for NaN: no such pairs (a strip that is the whole test set leaves no rest)."""
    return "-" if np.isnan(float(v)) else f"{float(v):.3f}"


UNIFORM_AT = (0, 1000, 5000)  # and the last checkpoint
BASE_FRAC = 0.5  # base.py's setting (Fig. 2, depth; Fig. 5, the primes); the rest trains 0.3


def uniformity(runs):
    """The runs without a hole: spread (std / mean over the first operand's tokens) of
    ||phi(i)|| and of ||phi(i+1) - phi(i)|| through training, and MED, seed by seed."""
    rows = []
    for c, m, r in runs.values():
        if c.model == "transformer" and c.split not in ("square", "strip") and c.frac != BASE_FRAC \
                and "norm_spread" in r:
            last = int(r["step"][-1])
            cols = [" / ".join("-" if v is None else f"{v:.3f}"  # '-': not reached yet
                               for v in (S.at(r, k, s) for s in (*UNIFORM_AT, last)))
                    for k in ("norm_spread", "diff_spread", "med")]
            rows.append([f"wd {c.wd:g}, {c.n_layers} layer(s), frac {c.frac:g}, p {c.p}",
                         str(c.seed), str(last), *cols])
    if rows:
        at = " / ".join(map(str, (*UNIFORM_AT, "last")))
        print(S.markdown(["setting", "seed", "last step", f"spread of norms at {at}",
                          f"spread of differences at {at}", f"MED at {at}"], rows))


def depth(runs):
    """Fig. 2 and Fig. 5, seed by seed: the transformers at frac 0.5. After test accuracy first
    reaches 0.9, to the last step, how often it falls back below 0.9 and how low (Fig. 2: it
    fluctuates more with depth); MED at step 0, at its peak and at the last checkpoint, and its
    rank correlation with test loss over the checkpoints (Fig. 5: they move together)."""
    rows = []
    for c, m, r in runs.values():
        if c.model == "transformer" and c.frac == BASE_FRAC and "med" in r:
            g = S.first_at_or_above(m["step"], m["test_acc"], 0.9)
            after = m["test_acc"][m["step"] >= g] if g is not None else None
            rows.append([f"{c.n_layers} layer(s), p {c.p}", str(c.seed), str(int(m["step"][-1])),
                         str(first_below(m["step"], m["test_loss"]) or S.unfinished(c, m)),
                         str(g or "-"), "-" if g is None else
                         f"{np.mean(after < 0.9):.3f} / {np.min(after):.3f}",
                         " / ".join(f"{v:.2f}" for v in (r["med"][0], np.max(r["med"]),
                                                         r["med"][-1])),
                         f"{rank_corr(r['med'], r['test_loss']):.2f} ({len(r['med'])})"])
    if rows:
        print(S.markdown(["setting (frac 0.5)", "seed", "last step", "test loss <= 0.01 at",
                          "test acc >= 0.9 at", "from then on: share of evaluations < 0.9 / "
                          "min test acc", "MED at 0 / peak / last",
                          "MED: rank corr with test loss (checkpoints)"], rows))


def dnn(runs):
    """Gu et al.'s DNN, seed by seed: does MED move with test loss? MED of the operands' rows
    (the learned embedding; with one-hot input, the first layer's columns that each token's
    one-hot selects) and of the first hidden layer on the pairs (i, i), their README's measure
    for one-hot input: rank correlation over the checkpoints, and the values at the first, the
    generalizing and the last checkpoint."""
    rows = []
    for c, m, r in runs.values():
        if c.model == "mlp" and "med" in r:
            grok = first_below(m["step"], m["test_loss"])
            steps = (0, grok, int(r["step"][-1]))
            v = lambda k, s: None if s is None else S.at(r, k, s)  # None: past the last ckpt
            cols = [f"{rank_corr(r[k], r['test_loss']):.2f}; " + " / ".join(
                "-" if v(k, s) is None else f"{v(k, s):.3f}" for s in steps)
                for k in ("med", "med_hidden")]
            place = f"{c.split} k={c.hole}" if c.split in ("square", "strip") else c.split
            rows.append([f"{c.embed} input, {place} split", str(c.seed), str(steps[2]),
                         str(grok or S.unfinished(c, m)), f"{m['test_acc'][-1]:.3f}", *cols])
    if rows:
        print(S.markdown(["DNN", "seed", "last step", "test loss <= 0.01 at", "final test acc",
                          "MED: rank corr with test loss; at 0 / generalizing / last",
                          "MED of the first hidden layer: the same"], rows))


def main(root):
    """The four tables; returns the runs they read ({run: (cfg, metrics, analysis)})."""
    runs = load(root, analysed=True)
    holes(runs)
    uniformity(runs)
    depth(runs)
    dnn(runs)
    return runs


if __name__ == "__main__":
    try:
        with pack.opened(folder_arg(__doc__)) as root:  # run folders, or their pack
            main(root)
    except Stop as e:  # a run it cannot read: one line
        sys.exit(f"error: {e}")
