"""
Nanda et al. (progress measures): the mainline through its three phases, key frequencies and the
Fourier fits, restricted and excluded loss, training fraction and weight decay, the appendix's
regularizers, and their released runs beside ours: the claims (CLAIMS), the tables of
REPRODUCTION.md that show them (SECTIONS) and the runs they read.

    python experiments/claims.py --paper nanda   # its verdict rows and tables
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import analyze as A  # noqa: E402
import metrics_table  # noqa: E402
import summary as S  # noqa: E402
from render import Section, per_seed, summary  # noqa: E402
from rule import Claim, not_addressed, order, signs, trend, value  # noqa: E402
from runfiles import first_below  # noqa: E402
from runsets import Missing, Runs, field, load, where  # noqa: E402
from seedstats import (acc_step, grok_step, head_wave_fit, heads_fit, jumps,  # noqa: E402
                       largest_rise)

PAPERS = ("Nanda et al.",)
NANDA = PAPERS[0]

NANDA_RUN = "their released frac-0.3 run (mod_addition_frac_train_sweep.pth; conventions.md)"

# Nanda et al.'s released runs (saved_runs/ of progress-measures-paper), each one run: the first
# epoch with test loss <= 0.01 (`python experiments/nanda_released.py` re-derives each). Their
# run without weight decay stores no fraction: its final weights' loss over all pairs allows a
# test set of at most 1278 pairs, so it trained on at least 90% of them (not Fig. 26's 30%).
NANDA_RELEASED = {"frac 0.25": 22177, "frac 0.28": 15612, "frac 0.3": 8258, "frac 0.95": 279,
                  "wd 0.1": 98730, "no wd": 249}
# appendix C.1.3: the share of the variance of each head's attention scores that a wave of one
# frequency explains, heads 0-3 of their mainline model
NANDA_HEAD_FVE = (0.9902, 0.9521, 0.9910, 0.9242)
NANDA_MAIN = Runs("nanda_cleanup", analysed=True)  # their mainline to 40k, their split, seeds 0-4


# ---------------------------------------------------------------- the tables



def regularizers(root):
    """Nanda et al.'s appendix, per run: test loss 0.01 and test accuracy 0.95 reached at (their
    dropout models end at 99.7%, loss 0.215, Table 6), the end, train-loss jumps (> 10x from
    one evaluation to the next, to above 1e-3: seedstats.jumps), and at the last checkpoint their
    Tables 1 and 5: Gini of W_E and W_L, W_L's key frequencies, the logit fit on them, the
    one-frequency neuron share."""
    groups, _ = S.group_runs(load(root, analysed=True))
    rows = []
    for lab, runs in groups.items():
        for _, c, m, a in runs:
            n, first = jumps(m["step"], m["train_loss"])
            # dropout stops short of test loss 0.01: when it reaches test accuracy 0.95 too
            acc = S.first_at_or_above(m["step"], m["test_acc"], 0.95)
            rows.append([lab, str(c.seed), str(grok_step(m) or "-"),
                         str(acc or "-"), f"{m['test_acc'][-1]:.3f} / {m['test_loss'][-1]:.3g}",
                         f"{n} ({first or '-'})", f"{np.nanmax(m['collapse']):.2f}",
                         str(int(m["step"][-1])),
                         f"{a['gini_embed'][-1]:.2f} / {a['gini_logit'][-1]:.2f}",
                         str([int(k) for k in a["keys"]]),
                         f"{100 * a['cos_r2_per_freq']:.1f}%", f"{a['one_freq_share']:.3f}"])
    print(S.markdown(["configuration", "seed", "test loss <= 0.01 at", "test acc >= 0.95 at",
                      "final test acc / loss", "train-loss jumps > 10x, to > 1e-3 (first at)",
                      "max softmax-collapse share", "steps run", "Gini W_E / W_L",
                      "key frequencies (W_L)", "logit FVE", "one-frequency neurons"], rows))


def phases(root):
    """Nanda et al.'s three phases (Sec. 5.2; their mainline: memorization to 1.4k epochs,
    circuit formation to 9.4k, cleanup to 14k) per mainline seed by analyze.phases' rules, with
    the Gini coefficients of W_E's and W_L's Fourier norms and the sum of squared weights at each
    phase's end and at the last checkpoint."""
    rows = []
    for c, m, a in load(root, analysed=True, keep=nanda_mainline).values():
        ends = A.phases(m)
        last = int(a["step"][-1])
        read = lambda step: "-" if step is None else " / ".join(
            f"{S.at(a, k, step):.3g}" for k in ("gini_embed", "gini_logit", "weight_norm"))
        rows.append([str(c.seed)] + [str(e or "-") for e in ends]
                    + [f"{e or '-'}: {read(e)}" for e in ends] + [f"{last}: {read(last)}"])
    print(S.markdown(["seed", "memorization ends (test-loss peak)", "circuit formation ends "
                      "(test loss < 1)", "cleanup ends (weight norm flat)"]
                     + [f"Gini W_E / W_L / sum of squared weights at the end of {p}"
                        for p in ("memorization", "circuit formation", "cleanup")]
                     + ["the same at the last checkpoint"], rows))


def nanda_mainline(cfg):
    """A run with the mainline's regularization (nanda_regularizers.sh holds the others too)."""
    return cfg.wd > 0 and not cfg.dropout and not cfg.l1 and cfg.loss_dtype == "float64"


def cleanup(root):
    """Nanda et al.'s mainline through cleanup (runs with the mainline's regularization): key
    frequencies, the neuron and logit fits, and the progress measures every 1600 steps up to
    step 16000 (the paper's cleanup ends at ~14k), then every 10000."""
    runs = load(root, analysed=True, keep=nanda_mainline)
    ks = lambda a: " / ".join(str(a[n].tolist()) for n in ("keys", "keys_neurons", "keys_embed"))
    print(S.markdown(["seed", "test loss <= 0.01 at", "key frequencies: W_L's norms (the paper's "
                      "rule) / the per-neuron rule / W_E's norms", "MLP neurons with > 85% of "
                      "their variance at one frequency", "logit fit (FVE): a coefficient per "
                      "key frequency / one shared"],
                     [[str(c.seed), str(grok_step(m) or "-"), ks(a),
                       f"{round(c.d_mlp * a['one_freq_share'])} of {c.d_mlp}",
                       f"{a['cos_r2_per_freq']:.1%} / {a['cos_r2']:.1%}"]
                      for c, m, a in runs.values()]))
    cols = "step test_loss restricted_loss excluded_loss gini_embed gini_logit weight_norm".split()
    for run, (c, _, a) in runs.items():
        at = np.nonzero(((s := a["step"]) <= 16000) & (s % 1600 == 0) | (s % 10000 == 0))[0]
        print(f"seed {c.seed} ({run}):\n\n" + S.markdown(cols, [
            [str(int(s[i]))] + [f"{a[k][i]:.3g}" for k in cols[1:]] for i in at]))


def attention(root):
    """Nanda et al.'s attention-head fit (appendix C.1.3) on their mainline at 40k: per seed and
    head, the frequency whose wave best fits the head's score difference (the logit of the
    attention weight '=' pays a, over every pair), whether it is a key frequency of W_L, and the
    share of variance it explains; then the paper's four heads."""
    rows = []
    for c, m, r in NANDA_MAIN.get(load):
        fits = [head_wave_fit(a) for a in r["final_attn_a"]]
        keys = r["keys"].tolist()
        rows.append([f"seed {c.seed}", str(keys)]
                    + [f"k {k}{'' if k in keys else ' (no key)'}: {fve:.1%}" for k, fve in fits]
                    + [f"{np.mean([fve for _, fve in fits]):.1%}"])
    rows.append(["paper (their mainline)", "5 of them"]
                + [f"{v:.2%}" for v in NANDA_HEAD_FVE] + [f"{np.mean(NANDA_HEAD_FVE):.1%}"])
    print(S.markdown(["run", "key frequencies (W_L)"] + [f"head {h}: best k, share of variance"
                                                         for h in range(4)] + ["mean"], rows))


def nanda_released(root):
    """Nanda et al.'s released runs beside ours (NANDA_RELEASED; `python
    experiments/nanda_released.py` re-derives theirs): the first step with test loss <= 0.01,
    their split; then excluded loss with and without weight decay, seed by seed (the paper's
    key rule on W_L at the last checkpoint picks the frequencies it excludes)."""
    theirs = NANDA_RELEASED
    steps = lambda runs: " / ".join(f"s{c.seed}: {grok_step(m) or S.unfinished(c, m)}"
                                    for c, m, _ in runs)

    def ours(copy, keep=None):
        try:
            return f"{steps(Runs(copy, keep).get(load))} ({copy})"
        except Missing as e:
            return f"not committed ({e})"
    rows = [[f"frac {f:g}", str(theirs[f"frac {f:g}"]), ours("nanda_fractions", field(frac=f))]
            for f in (0.25, 0.28)]
    rows += [["frac 0.3", str(theirs["frac 0.3"]), ours("nanda_cleanup")],
             ["frac 0.95", str(theirs["frac 0.95"]), ours("nanda_frac95")],
             ["frac 0.3, wd 0.1", str(theirs["wd 0.1"]), ours("nanda_wd")],
             ["frac 0.3, wd 0.01", "no data in the copy read", "not run"],
             ["wd 0 (theirs: frac >= 0.9, from its weights)", str(theirs["no wd"]),
              "frac 0.3, this project's split: " + ours("nanda", field(wd=0.0))]]
    print(S.markdown(["run (wd 1 unless named)", "theirs: test loss <= 0.01 at epoch",
                      "ours, per seed"], rows))
    rows = []
    for copy, wd in (("nanda", 0.0), ("nanda", 1.0), ("nanda_cleanup", 1.0)):
        group = Runs(copy, field(wd=wd, frac=0.3), analysed=True)
        for c, m, r in group.get(load):
            ex = r["excluded_loss"]
            rows.append([f"{copy} s{c.seed}", f"{wd:g}", c.split_rng, str(r["keys"].tolist()),
                         f"{ex[0]:.3g} / {ex.min():.3g} / {ex[-1]:.3g}",
                         f"{largest_rise(ex):.3g}", str(grok_step(m) or "-")])
    print(S.markdown(["run", "wd", "split", "key frequencies (W_L, last checkpoint)",
                      "excluded loss at 0 / lowest / last", "largest rise above its lowest so "
                      "far", "test loss <= 0.01 at"], rows))


# ---------------------------------------------------------------- the claims



def nanda_claims():
    main = Runs("nanda_cleanup", analysed=True)
    first = lambda key, thr: (lambda m, r: first_below(m["step"], m[key], thr))
    like = "like for like: their split (`--split-rng nanda`), their 40k; theirs one run"
    rows = [Claim(paper=NANDA, claim=claim, value=v, source=NANDA_RUN, statistic=stat, like=True,
                  differs=like, section="cleanup", label=label, test=value(main, f, v))
            for claim, v, stat, f, label in (
                ("train loss falls below 0.01 at epoch 274", 274, "per seed", first(
                    "train_loss", 0.01), "train fit"),
                ("test loss peaks at 26.6", 26.6, "per-seed max test loss",
                 lambda m, r: float(np.max(m["test_loss"])), "test-loss peak"),
                ("test loss peaks at epoch 1420", 1420, "per-seed step of the max test loss",
                 lambda m, r: float(m["step"][np.argmax(m["test_loss"])]), "peak step"),
                ("test loss falls below 1 at epoch 7583", 7583, "per seed",
                 first("test_loss", 1.0 - 1e-12), "test loss < 1"),
                ("test loss falls below 0.01 at epoch 8258", 8258, "per seed",
                 first("test_loss", 0.01), "test loss 0.01"),
                ("433 of 512 neurons are explained by one frequency (Table 1)", 433,
                 "per-seed count of neurons > 85% at one frequency",
                 lambda m, r: 512 * float(r["one_freq_share"]), "one-frequency neurons"))]
    rows.append(Claim(
        paper=NANDA, claim="a few (3-5) key frequencies", value="3-5", source="paper text",
        statistic="per seed: W_L's key frequencies (their rule) number 3-5",
        like=True, differs=like, section="cleanup",
        test=signs(main, lambda m, r: 3 <= len(r["keys"]) <= 5)))
    rows.append(Claim(
        paper=NANDA, claim="restricted loss falls before test loss does (Fig. 7)",
        value="before",
        source="Sec. 5.2, Fig. 7",
        statistic="per seed: restricted loss <= 0.1 at a checkpoint before test loss <= 0.01",
        like=True, differs=like, section="cleanup",
        test=signs(main, lambda m, r: (first_below(r["step"], r["restricted_loss"], 0.1)
                                       or np.inf) < (grok_step(m) or np.inf))))
    rows.append(Claim(
        paper=NANDA, claim="ablating the key frequencies destroys performance, ablating the rest "
                           "does not (Fig. 6)",
        value="both",
        source="Sec. 4.4, Fig. 6",
        statistic="per seed at 40k: loss without the keys above chance (ln 113) and with only "
                  "the keys below 0.01", like=True, differs=like, section="cleanup",
        test=signs(main, lambda m, r: bool(r["ablate_keys"] > math.log(113)
                                           and r["ablate_all_but_keys"] < 0.01))))
    rows += regularizer_claims()
    nanda = lambda **kw: Runs("nanda", field(**kw))
    rows.append(Claim(
        paper=NANDA, claim="without weight decay it never groks (appendix D.1, Fig. 26)",
        value="wd 1 before wd 0 (never)",
        source="appendix D.1",
        statistic="per-seed step to test loss 0.01, wd 1 against wd 0",
        like=False,
        differs="this project's split; 40k steps", section="nanda",
        test=order([nanda(wd=1.0, frac=0.3), nanda(wd=0.0)], lambda m, r: grok_step(m))))
    rows.append(Claim(
        paper=NANDA, claim="more training data groks sooner (appendix D.1, Fig. 20)",
        value="frac 0.7 < 0.5 < 0.3",
        source="appendix D.1",
        statistic="per-seed step to test loss 0.01, each fraction against the next smaller",
        like=False, differs="this project's split", section="nanda",
        test=order([nanda(frac=f, wd=1.0) for f in (0.7, 0.5, 0.3)],
                   lambda m, r: grok_step(m), names=["frac 0.7", "frac 0.5", "frac 0.3"])))
    rows.append(Claim(
        paper=NANDA, claim="their fraction sweep: steps to test loss 0.01 fall as the training "
                           "fraction grows",
        value="22177 / 15612 / 8258 / 3324 / 1109 / 556 / 343 / 439 / 387",
        source="their released mod_addition_frac_train_sweep.pth, frac 0.25-0.9, one run each "
               "(conventions.md)",
        statistic="Spearman's correlation of the fraction and the step, one-sided permutation "
                  "test", like=True, differs="like for like: their split; one seed a fraction "
        "as theirs, not their seeds", section="fractions",
        test=trend(Runs(["nanda_cleanup", "nanda_fractions"], field(seed=0)),
                   lambda c: c.frac, lambda m, r: grok_step(m))))
    rows.append(Claim(
        paper=NANDA, claim="wd 0.1 groks at epoch 98730 (their released run)", value=98730,
        source="saved_runs/wd_10-1_mod_addition_loss_curve.pth",
        statistic="first step with test loss <= 0.01",
        like=True,
        differs="like for like: their split of seed 1; one run against one",
        section="nanda_wd",
        label="wd 0.1", test=value(Runs("nanda_wd"), lambda m, r: grok_step(m), 98730)))
    return rows


def regularizer_claims():
    """Appendix D.1-D.2: weight decay replaced by dropout or L1 (3 seeds each in the paper), the
    loss in float32. The text as we hold it lost the dropout rates and L1's lambda: ours are
    nanda_regularizers.sh's. Grokking is test accuracy 0.95 within 40k steps: their dropout
    models end at 99.7% with test loss 0.215 (Table 6), never 0.01."""
    differs = "their split and 40k steps; the dropout rates and L1's lambda are ours (the " \
              "text lost them)"
    groks = lambda m, r: acc_step(m) is not None
    slingshots = lambda m, r: jumps(m["step"], m["train_loss"])[0]
    return [Claim(
        paper=NANDA, claim="dropout on the MLP neurons instead of weight decay groks in every "
                           "seed (appendix D.1, Fig. 28)",
        value="3 of 3 seeds",
        source="appendix D.1, Table 6",
        statistic="per run: test accuracy >= 0.95 within 40k steps",
        like=False,
        differs=differs, section="regularizers",
        test=signs(Runs("nanda_regularizers", where("dropout > 0", lambda c: c.dropout > 0)),
                   groks)), Claim(
        paper=NANDA, claim="an L1 penalty instead of weight decay does not grok (appendix D.1, "
                           "Fig. 28)",
        value="0 of 3 seeds",
        source="appendix D.1",
        statistic="per run: test accuracy never >= 0.95 within 40k steps",
        like=False,
        differs=differs, section="regularizers",
        test=signs(Runs("nanda_regularizers", where("l1 > 0", lambda c: c.l1 > 0)),
                   lambda m, r: not groks(m, r))), Claim(
        paper=NANDA, claim="a float32 loss makes slingshots in the one-layer model (appendix "
                           "D.2)",
        value="float32 jumps, float64 not",
        source="appendix D.2",
        statistic="per run: evaluations whose train "
        "loss is > 10x the one before and > 1e-3; float64 fewer than float32", like=False,
        differs="their split, 40k steps; on a CPU (theirs a GPU)", section="regularizers",
        test=order([Runs("nanda_cleanup", field(loss_dtype="float64")),
                    Runs("nanda_regularizers", field(loss_dtype="float32"))], slingshots,
                   names=["float64", "float32"]))]


def released_claims():
    """Claims read against their released runs (saved_runs/) and the appendix's head fits; a
    released file with no data is not addressed."""
    rows = [Claim(
        paper=NANDA, claim="each attention head is a wave of one key frequency: the fit explains "
                           "their share of variance (appendix C.1.3)",
        value=float(np.mean(NANDA_HEAD_FVE)), source="appendix C.1.3: 99.02 / 95.21 / 99.10 / "
        "92.42% (heads 0-3), their mean",
        statistic="per seed at 40k: the share of variance of each head's score difference (the "
                  "logit of its attention weight to a) that the best one-frequency wave explains, "
                  "mean over the 4 heads", like=False,
        differs="their split and 40k, their fit; the score read from the stored attention weight "
                "(float16), their one model against our 5 seeds",
        section="attention", label="head fit FVE", test=value(NANDA_MAIN, heads_fit,
                                                               float(np.mean(NANDA_HEAD_FVE))))]
    rows.append(Claim(
        paper=NANDA, claim="smaller weight decay groks later: wd 0.1 after wd 1 (appendix D.1, "
                           "Fig. 27)",
        value=f"wd 1 before wd 0.1 ({NANDA_RELEASED['frac 0.3']} / {NANDA_RELEASED['wd 0.1']})",
        source="mod_addition_frac_train_sweep.pth, wd_10-1_mod_addition_loss_curve.pth",
        statistic="per-seed step to test loss 0.01, wd 1 against wd 0.1", like=True,
        differs="like for like: their split; one run of wd 0.1 as theirs", section="nanda_released",
        test=order([Runs("nanda_cleanup"), Runs("nanda_wd")], lambda m, r: grok_step(m))))
    rows.append(Claim(
        paper=NANDA, claim="wd 0.01 groks later still (their released wd_10-2 run)", value="-",
        source="wd_10-2_mod_addition_loss_curve.pth", statistic="-", like=False,
        differs="-", section=None, test=not_addressed(
            "the stored copy of their repository has no data for that file; a run of ours "
            "would take ~10^6 epochs if 10x less wd delays grokking as 0.1 did (98730 against "
            "8258): ~15 CPU-hours at the ~52 ms a step of nanda_wd")))
    keyed = lambda m, r: largest_rise(r["excluded_loss"]) if len(r["keys"]) else None
    rows.append(Claim(
        paper=NANDA, claim="without weight decay excluded loss does not rise: no circuit forms "
                           "(appendix D.1, Fig. 26)",
        value="wd 0 below wd 1", source="appendix D.1, Fig. 26",
        statistic="per seed with a key frequency at the end (the paper's rule on W_L): excluded "
                  "loss's largest rise above its lowest value so far, wd 0 below wd 1; a run "
                  "with none is left out (its excluded loss is its train loss: no rise by "
                  "construction)", like=False,
        differs="wd 0 on this project's split, wd 1 on both", section="nanda_released",
        test=order([Runs("nanda", field(wd=0.0), analysed=True),
                    Runs(["nanda", "nanda_cleanup"], field(wd=1.0, frac=0.3), analysed=True)],
                   keyed, never=False)))
    rows.append(Claim(
        paper=NANDA, claim="frac 0.95 groks at epoch 279 (their released sweep)",
        value=NANDA_RELEASED["frac 0.95"], source="mod_addition_frac_train_sweep.pth",
        statistic="first step with test loss <= 0.01", like=True,
        differs="like for like: their split; one run against one", section="nanda_released",
        label="frac 0.95", test=value(Runs("nanda_frac95"), lambda m, r: grok_step(m),
                                      NANDA_RELEASED["frac 0.95"])))
    for frac in (0.25, 0.28):
        name = f"frac {frac:g}"
        rows.append(Claim(
            paper=NANDA, claim=f"{name} groks at epoch {NANDA_RELEASED[name]} (their released "
                               "sweep)",
            value=NANDA_RELEASED[name], source="mod_addition_frac_train_sweep.pth",
            statistic="first step with test loss <= 0.01",
            like=True, differs="like for like: their split; one run against one",
            section="nanda_released", label=name,
            test=value(Runs("nanda_fractions", field(frac=frac)), lambda m, r: grok_step(m),
                       NANDA_RELEASED[name])))
    return rows


CLAIMS = nanda_claims() + released_claims()
# the claims the verdicts' summary opens with (claims.py verdicts), as written above
HEADLINES = ["restricted loss falls before test loss does (Fig. 7)",
             "ablating the key frequencies destroys performance, ablating the rest does not "
             "(Fig. 6)"]
MAINLINE = "python train.py --preset nanda --split-rng nanda --seed 0 1 2 3 4 " \
           "--out runs/nanda_regularizers"
SECTIONS = {
    "nanda": Section("Progress measures: training fraction and weight decay (Nanda et al.)",
                     "runs/nanda", "bash experiments/nanda.sh --list | bash",
                     lambda root: (summary(root), per_seed(root, ref="frac=0.3, wd=1.0")),
                     "nanda"),
    "regularizers": Section("Dropout, L1 and a float32 loss (Nanda et al.'s appendix)",
                            "runs/nanda_regularizers",
                            "bash experiments/nanda_regularizers.sh --batched | bash",
                            regularizers, "nanda_regularizers"),
    "nanda_wd": Section("Weight decay 0.1 on their split (Nanda et al.'s released wd 0.1 run)",
                        "runs/nanda_wd", "python train.py --preset nanda --split-rng nanda --wd "
                        "0.1 --seed 1 --steps 110000 --out runs/nanda_wd", metrics_table.main,
                        "nanda_wd"),
    "fractions": Section("Training fractions (Nanda et al.'s released sweep)",
                         "runs/nanda_fractions", "bash experiments/nanda_fractions.sh --list | "
                         "bash", metrics_table.main, "nanda_fractions"),
    "cleanup": Section("The mainline through cleanup (Nanda et al.)", "runs/nanda_regularizers",
                       MAINLINE, cleanup, "nanda_cleanup"),
    "phases": Section("The mainline's phases, Gini and weight norm at their ends (Nanda et al.)",
                      "runs/nanda_regularizers", MAINLINE, phases, "nanda_cleanup"),
    "attention": Section("Attention heads as waves of one frequency (Nanda et al.)", None,
                         MAINLINE, attention),
    "nanda_released": Section("Nanda et al.'s released runs beside ours: fractions, weight "
                              "decay, excluded loss without it", None, "bash experiments/"
                              "nanda.sh --list | bash; python train.py --preset nanda "
                              "--split-rng nanda --frac 0.95 --seed 0 --stop-after-grok 1000 "
                              "--out runs/nanda_frac95", nanda_released),
}

