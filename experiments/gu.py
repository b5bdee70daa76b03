"""
Gu et al. (beyond progress measures): MED against test loss and the earlier progress measures,
token uniformity under weight decay, dug-out squares and strips, depth, a^2+ab+b^2: the claims
(CLAIMS), the tables of REPRODUCTION.md that show them (SECTIONS) and the runs they read.

    python experiments/claims.py --paper gu   # its verdict rows and tables
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import data  # noqa: E402
import stats  # noqa: E402
from data import hole_mask  # noqa: E402
from runfiles import first_below  # noqa: E402
import summary as S  # noqa: E402
from render import Section, summary  # noqa: E402
from rule import Claim, order, signs, trend  # noqa: E402
from runsets import Runs, field, load, singh_model, where  # noqa: E402
from seedstats import acc_step, med_beats, med_tracks, tracking  # noqa: E402

PAPERS = ("Gu et al.",)
GU = PAPERS[0]

GU_SET = "their code's setting (`--preset gu`), 3 seeds, their 30k epochs"
GU_QUAD = "their code's setting (`--preset gu`), 3 seeds, but 3000 of their 30k epochs; " \
          "the fractions are ours (the paper names none)"
# the measures Gu et al. set MED against (earlier progress measures), each of one or more keys
# of analysis.npz (Gini: the better of W_E's and W_L's for each run)
EARLIER = {"restricted loss": ("restricted_loss",), "excluded loss": ("excluded_loss",),
           "Gini": ("gini_embed", "gini_logit"), "weight norm": ("weight_norm",),
           "C_Fourier": ("c_fourier",)}
# Gu et al.'s setting, every run that reached their 30k epochs (p 97, one or two layers, the DNN)
GU_FULL = Runs("gu_setting", where("p 97, fewer than 3 layers",
                                   lambda c: c.p == 97 and c.n_layers < 3), analysed=True)


# ---------------------------------------------------------------- the tables



def gu_tables(root):
    """The dug-out runs seed by seed (is the hole learned?), the token-uniformity claim (weight
    decay makes ||phi(i)|| and ||phi(i+1) - phi(i)|| uniform), depth and the primes at frac 0.5
    (does test accuracy fluctuate, does MED follow test loss?) and the DNN; returns the runs
    they read."""
    runs = load(root, analysed=True)
    holes(runs)
    uniformity(runs)
    depth(runs)
    dnn(runs)
    return runs


def gu_runs(root):
    """gu_tables, then analyze.py's summary of the same runs (analysed once)."""
    summary(root, gu_tables(root))


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
                         f"{stats.rank_corr(r['med'], r['test_loss']):.2f} ({len(r['med'])})"])
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
            cols = [f"{stats.rank_corr(r[k], r['test_loss']):.2f}; " + " / ".join(
                "-" if v(k, s) is None else f"{v(k, s):.3f}" for s in steps)
                for k in ("med", "med_hidden")]
            place = f"{c.split} k={c.hole}" if c.split in ("square", "strip") else c.split
            rows.append([f"{c.embed} input, {place} split", str(c.seed), str(steps[2]),
                         str(grok or S.unfinished(c, m)), f"{m['test_acc'][-1]:.3f}", *cols])
    if rows:
        print(S.markdown(["DNN", "seed", "last step", "test loss <= 0.01 at", "final test acc",
                          "MED: rank corr with test loss; at 0 / generalizing / last",
                          "MED of the first hidden layer: the same"], rows))


def gu_quadratic(root):
    """Gu et al.'s Fig. 4 (a^2+ab+b^2 at growing fractions), run by run: the best and final test
    accuracy, the test pairs answered at the end, and the share of the test pairs whose swap
    (b, a) is a training pair with the accuracy on them and on the rest (measures.FINAL)."""
    rows = []
    for run, (c, m, r) in load(root, analysed=True).items():
        n_test = len(data.make_data(c)[3])
        rows.append([f"{c.frac:g}", str(c.seed), str(n_test), f"{m['test_acc'].max():.3f}",
                     f"{m['test_acc'][-1]:.3f}", str(round(float(m["test_acc"][-1]) * n_test)),
                     f"{float(r['swap_share']):.3f}",
                     f"{float(r['swap_acc']):.3f} / {float(r['noswap_acc']):.3f}"])
    print(S.markdown(["frac", "seed", "test pairs", "best test acc", "final test acc",
                      "test pairs answered at the end", "share of test pairs whose swap is "
                      "trained", "final acc on them / on the rest"], rows))


def run_label(c):
    """A run of Gu et al.'s or Nanda et al.'s or Singh et al.'s one-layer setting in a few words:
    the model, the split, the fraction, the weight decay."""
    model = (f"{c.n_layers}-layer transformer" if c.model == "transformer"
             else f"DNN ({c.embed} input)")
    split = "random" if c.split == "random" else f"{c.split} {c.hole}" + (
        f", second operand offset {c.b_offset}" if c.b_offset else "")
    return f"{model}, {split}, frac {c.frac:g}, wd {c.wd:g}"


def med(root):
    """Gu et al.'s "MED traces test loss more accurately" than the earlier progress measures:
    per configuration of each copy with MED, the median over its runs of MED's Spearman
    correlation with test loss over the checkpoints, and of each earlier measure's |Spearman|
    (either direction; Gini the better of W_E's and W_L's), with the runs in which MED is
    above it. Gu et al.'s setting first: the runs that reached their 30k epochs."""
    ntk = [singh_model(wd=wd) for wd in (0.75, 1.5)]  # the analysed runs of Singh et al.'s grid
    copies = (("gu_setting", GU_FULL), ("nanda", Runs("nanda", analysed=True)),
              ("nanda_cleanup", Runs("nanda_cleanup", analysed=True)),
              ("singh_grids", Runs("singh_grids", where("wd 0.75 or 1.5", lambda c: any(
                  keep(c) for keep in ntk)), analysed=True)))
    rows = []
    for copy, group in copies:
        runs = group.get(load)
        groups = {}
        for c, m, r in runs:
            groups.setdefault(run_label(c), []).append(r)
        for label, rs in list(groups.items()) + ([("all", [r for *_, r in runs])]
                                                 if len(groups) > 1 else []):
            cells = []
            for name, keys in EARLIER.items():
                beat = [med_beats(keys)(None, r) for r in rs]
                theirs = [tracking(r, keys) for r in rs]
                theirs = [t for t in theirs if t is not None]
                cells.append("-" if not theirs else f"{np.median(theirs):.2f}; "
                             f"{sum(b is True for b in beat)}/{sum(b is not None for b in beat)}")
            med = np.median([stats.rank_corr(r["med"], r["test_loss"]) for r in rs])
            rows.append([copy, label, str(len(rs)), f"{med:.2f}"] + cells)
    print(S.markdown(["copy", "configuration", "runs", "MED: median Spearman with test loss"]
                     + [f"{name}: median abs Spearman; MED above in" for name in EARLIER],
                     rows))


# ---------------------------------------------------------------- the claims



def gu_claims():
    gu = lambda keep, partial=False: Runs("gu_setting", keep, analysed=True, partial=partial)
    one = lambda **kw: field(model="transformer", split="random", **kw)
    rows = []
    for label, keep, like in (
            ("one layer, frac 0.5", one(n_layers=1, frac=0.5, p=97), True),
            ("two layers, p 97", one(n_layers=2, frac=0.5, p=97), True),
            ("two layers, p 53 / 71 / 113 (part of 30k)", where(
                "2 layers, p 53 / 71 / 113", lambda c: c.n_layers == 2 and c.p in (53, 71, 113)),
             False),
            ("three layers, p 97 (part of 30k)", one(n_layers=3, frac=0.5, p=97), False),
            ("the DNN, one-hot input", field(model="mlp", embed="onehot", split="random"), True),
            ("the DNN, learned input", field(model="mlp", embed="learned", split="random"),
             True)):
        rows.append(Claim(
            paper=GU, claim=f"MED tracks test loss over training: {label}",
            value="positive",
            source="abstract; Fig. 5",
            statistic="per run: the rank correlation of MED and test loss over the checkpoints "
                      "is positive",
            like=like, differs=("like for like: " if like else "") + GU_SET, section="gu_setting",
            test=signs(gu(keep, partial=not like), med_tracks)))
    spread = lambda m, r: float(r["norm_spread"][-1])
    rows.append(Claim(
        paper=GU, claim="weight decay drives the tokens to uniformity", value="wd 1 more uniform",
        source="abstract, insight (i)",
        statistic="per-seed spread (std / mean) of the embedding norms at the end, wd 1 below "
                  "wd 0",
        like=False, differs=GU_SET + "; the spread is our reading (their code has no measure)",
        section="gu_setting",
        test=order([gu(one(wd=1.0, frac=0.3)), gu(one(wd=0.0, frac=0.3))], spread,
                   never=False)))
    hole_kept = lambda m, r: float(r["hole_acc"][-1]) < 0.5
    for label, keep in (
            ("their squares k = 40 / 50 / 60 / 67", field(split="square", model="transformer")),
            ("their strips k = 40 / 50 / 60 / 67 (second operand offset by 60)",
             where("split strip, b_offset 60", lambda c: c.split == "strip" and c.b_offset == 60)),
            ("their DNN, square k = 70", field(model="mlp", split="square")),
            ("their DNN, strip k = 35 (one vocabulary, as their code)",
             field(model="mlp", split="strip"))):
        rows.append(Claim(
            paper=GU, claim=f"a dug-out region is not learned, capping test accuracy: {label}",
            value="not learned",
            source="Fig. 3; insight (ii)",
            statistic="per run: accuracy in the region at the end below 0.5",
            like=True,
            differs="like for like: " + GU_SET, section="gu_setting",
            test=signs(gu(keep), hole_kept)))
    share_below = lambda m, r: None if acc_step(m, 0.9) is None else float(
        np.mean(m["test_acc"][m["step"] > 5000] < 0.9))
    for label, order_value, runs, shallow, deep in (
            ("", "2 layers above 1", "gu_setting, 1 and 2 layers, p 97",
             one(n_layers=1, frac=0.5, p=97), one(n_layers=2, frac=0.5, p=97)),
            (": 3 layers", "3 layers above 2",
             "gu_setting, 2 layers seeds 0-2, 3 layers seed 0 (seeds 1-2 stopped at 2090)",
             one(n_layers=2, frac=0.5, p=97), one(n_layers=3, frac=0.5, p=97, seed=0))):
        rows.append(Claim(
            paper=GU, claim=f"test accuracy fluctuates more with depth{label} (Fig. 2)",
            value=order_value,
            source="Fig. 2",
            statistic="per seed: share of evaluations after step 5000 below test accuracy 0.9",
            like=True, differs="like for like: " + GU_SET, section="gu_setting",
            test=order([gu(shallow), gu(deep)], share_below, never=False)))
    quadratic = Runs("gu_quadratic", analysed=True)
    rows.append(Claim(
        paper=GU, claim="a^2+ab+b^2: the upper limit of test accuracy rises with the fraction "
                        "(Fig. 4)", value="rises", source="Fig. 4 caption",
        statistic="Spearman's correlation of the fraction and each run's best test accuracy, "
                  "one-sided permutation test", like=False, differs=GU_QUAD,
        section="gu_quadratic",
        test=trend(quadratic, lambda c: c.frac, lambda m, r: float(m["test_acc"].max()),
                   paper_sign=1)))
    rows.append(Claim(
        paper=GU, claim="a^2+ab+b^2: nothing is learned beyond the training set, the test pairs "
                        "answered being the swaps of trained ones (our reading of Fig. 4: they "
                        "'have not increased')", value="not learned beyond the training set",
        source="Fig. 4 caption",
        statistic="per run: accuracy at the end below 0.05 on the test pairs whose swap (b, a) "
                  "is not a training pair (chance: 1/97)",
        like=False, differs=GU_QUAD + "; the statistic is our reading", section="gu_quadratic",
        test=signs(quadratic, lambda m, r: float(r["noswap_acc"]) < 0.05)))
    return rows


def med_claims():
    """MED against the earlier progress measures, in their setting."""
    rows = []
    for name, keys in EARLIER.items():
        rows.append(Claim(
            paper=GU, claim=f"MED traces test loss more accurately than {name}",
            value="MED closer",
            source="abstract",
            statistic="per run: MED's rank correlation with test loss over the checkpoints "
                      f"above {name}'s in either direction", like=False,
            differs="their code's setting (`--preset gu`) and 30k epochs, every run of p 97 "
                    "(one or two layers, the DNN); the statistic is ours: the paper names none "
                    "for 'more accurately'", section="med",
            test=signs(GU_FULL, med_beats(keys))))
    return rows


CLAIMS = gu_claims() + med_claims()
# the claims the verdicts' summary opens with (claims.py verdicts), as written above
HEADLINES = ["MED traces test loss more accurately than restricted loss"]
SECTIONS = {
    "gu_setting": Section("Gu et al. in their code's setting", "runs/gu_setting",
                          "bash experiments/gu_setting.sh --batched | bash", gu_runs,
                          "gu_setting"),
    "gu_quadratic": Section("a^2+ab+b^2 at three training fractions (Gu et al.'s Fig. 4)",
                            "runs/gu_quadratic", "bash experiments/gu_quadratic.sh --batched | "
                            "bash", gu_quadratic, "gu_quadratic"),
    "gu_preview": Section("Gu et al.'s strip, a first look", "runs/gu_preview",
                          "python train.py --preset gu --seed 0 --split strip --hole 40 "
                          "[--b-offset 60] --steps 10000 --out runs/gu_preview", gu_runs,
                          "gu_preview"),
    "med": Section("MED against the earlier progress measures (Gu et al.)", None,
                   "bash experiments/gu_setting.sh --batched | bash", med),
}

