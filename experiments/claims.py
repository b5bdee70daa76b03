"""
Every table of REPRODUCTION.md, printed from the run folders that made it (a reader re-derives it):

    python experiments/claims.py             # every section whose runs are here
    python experiments/claims.py coupling    # one section (names: --help)
    python experiments/claims.py coupling reproduction/seed_coupling    # from that folder
    python experiments/claims.py verdicts    # every claim's verdict (experiments/verdicts.py)

A section reads its runs/ folder or, where that has none, the repository's copy in reproduction/
(COPIES: a folder with the runs packed in runs.npz, see experiments/pack.py), else says which
command makes it. Sections of analysed runs analyse them first (analyze.py's cache: only runs
whose checkpoints or measures changed).
"""
import glob
import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import analyze as A  # noqa: E402
import clock_pizza  # noqa: E402
import data  # noqa: E402
import forecast  # noqa: E402
import metrics_table  # noqa: E402
import minibatch_table  # noqa: E402
import gu_table  # noqa: E402
import pack  # noqa: E402
import singh_released  # noqa: E402
import stats  # noqa: E402
import summary as S  # noqa: E402
import claims_registry  # noqa: E402
import verdicts  # noqa: E402
from singh_numbers import (COMPRESSIBILITY, SINGH, SINGH_CURVES, SINGH_LN,  # noqa: E402
                           SINGH_MODEL, released)
from optim import schedule  # noqa: E402
from runfiles import Stop, first_below, load_metrics  # noqa: E402
from verdicts import grok_step, jumps  # noqa: E402
from stats import fisher_exact, mann_whitney, sign_test  # noqa: E402


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


def summary(root, runs=None):
    """analyze.py's summary table (runs/summary.md); runs: load(root)'s, if the caller has it."""
    groups, _ = S.group_runs(runs or load(root, analysed=True))
    print(S.markdown(*S.summary_table(groups)))


def per_seed(root, arm=None, paper=None, ref=None):
    """Steps to test loss <= 0.01 seed by seed, their mean, the seed-mean curve's step (Singh
    et al.'s statistic; "held" where a seed that stopped earlier counts with its last value) and
    a Mann-Whitney U test against `ref` (a label as printed), else the first group. arm: a label
    per config, groups sorted by label (default: analyze's grouping); paper: cfg -> theirs."""
    done = load(root)
    if arm is None:
        groups, _ = S.group_runs(done)
    else:
        groups = {}
        for run, (cfg, m, r) in done.items():
            groups.setdefault(arm(cfg), []).append((run, cfg, m, r))
        groups = dict(sorted(groups.items()))
    groups = dict(sorted(groups.items(), key=lambda kv: kv[0] != ref))  # stable: ref, then the rest
    groups = {lab: sorted(runs, key=lambda r: r[1].seed) for lab, runs in groups.items()}  # s2, s10
    first = groups.get(ref) if ref else next(iter(groups.values()))
    rows = []
    for lab, runs in groups.items():
        te = S.grok_steps(runs)
        hit = [s for s in te if s is not None]  # the bounds on the seed-mean curve's step
        bounds = f"{min(hit)} / {max(hit) if len(hit) == len(te) else 'not all'}" if hit else "none"
        mw = "-" if runs is first or first is None else "U {:g} / p {:.3f}".format(
            *mann_whitney(te, S.grok_steps(first)))
        mc, stop = S.mean_curve_step(runs), min(int(m["step"][-1]) for _, _, m, _ in runs)
        rows.append([lab, " / ".join(f"s{c.seed}: {s or S.unfinished(c, m)}"
                                     for (_, c, m, _), s in zip(runs, te)),
                     f"{S.fmt(te)} ({sum(s is not None for s in te)}/{len(te)})",
                     f"{mc} (held: a seed stopped at {stop})" if mc and mc > stop
                     else str(mc or "not reached"), bounds,
                     S.fmt([float(np.max(m["test_acc"])) for _, _, m, _ in runs], 3), mw]
                    + ([paper(runs[0][1])] if paper else []))
    print(S.markdown(["configuration", "test loss <= 0.01 at, per seed", "mean +- std (reached)",
                      "seed-mean curve <= 0.01 at", "first seed / all seeds <= 0.01 at",
                      "best test acc", f"vs {ref or next(iter(groups))}"
                      + ("" if first else " (not among these runs)") + ": Mann-Whitney U / p"]
                     + (["paper (seed-mean curve)"] if paper else []), rows))


def singh_label(cfg):
    """The (lr, wd, alpha) a run trains with, after what differs from their one-layer No LN."""
    lr, wd = schedule(cfg, cfg.warmup)
    model = ", ".join(f"{k} {getattr(cfg, k):g}" if isinstance(v, float) else
                      f"{k} {getattr(cfg, k)}" for k, v in SINGH_MODEL.items()
                      if getattr(cfg, k) != v)
    return (model + ": " if model else "") + f"lr {lr:.3g}, wd {wd:.3g}, alpha {cfg.alpha:g}"


def singh_number(cfg):
    """Singh et al.'s numbers for a run's config, '-' where they have none."""
    same = all(getattr(cfg, k) == v for k, v in SINGH_MODEL.items() if k not in ("eps", "init"))
    sweep = SINGH.get((cfg.eps, cfg.init), {}) if same else {}  # eps and init pick the sweep
    lr, wd = schedule(cfg, cfg.warmup)
    v = next((v for k, v in sweep.items() if np.allclose(k, (lr, wd, cfg.alpha), rtol=1e-6)), None)
    return "-" if v is None else released(*v)


def grids(root):
    """singh_grids.sh, optimization.sh: per_seed with Singh et al.'s numbers, vs the centre."""
    per_seed(root, singh_label, singh_number, ref="lr 0.001, wd 1, alpha 1")


def singh_name(ln):
    """A placement's flag and the paper's name for it."""
    return f"{ln} ({SINGH_LN.get(ln, ('not in the paper',))[0]})"


def placements(root):
    """experiments/ln_placements.sh: per_seed with Singh et al.'s numbers beside, each against
    No LN. Their measures through the run, beside the released curves: placement_measures."""
    paper = lambda c: released(*SINGH_LN[c.ln][1]) if c.ln in SINGH_LN else "-"
    per_seed(root, lambda c: singh_name(c.ln), paper, ref="off (No LN)")


def curve_points(step, v, g):
    """SINGH_CURVES' columns and the last step of a curve: at 1000, max and where, at step g
    (linear between its steps; None: g is None or past the end), at the end."""
    i, c = int(np.argmax(v)), dict(step=step, v=v)
    return (S.at(c, "v"), float(v[i]), int(step[i]), None if g is None else S.at(c, "v", g),
            float(v[-1]), int(step[-1]))


def rise_and_fall(step, v, grok, after=1000):
    """(max up to `grok`, value `after` steps later or None past the end); None: no grok."""
    if grok is None:
        return None
    return float(np.max(v[step <= grok])), S.at(dict(step=step, v=v), "v", grok + after)


def placement_measures(root, keys=("c_fourier", "attn_entropy", "sr_train"), by=lambda c: c.ln,
                       name=singh_name):
    """Singh et al.'s measures under their definitions (C_Fourier, attention entropy of
    head-averaged weights, SR-train with every LN removed; or COMPRESSIBILITY) on the seed-mean
    curve of each placement (or group: by, None leaves a run out; printed as name), through the
    run, beside their released curves (SINGH_CURVES[measure, group]); then SR-train seed by
    seed. The runs of a group differ only in --seed (experiments/ln_placements.sh)."""
    groups = {}
    for run, (cfg, m, r) in load(root, True, lambda c: by(c) is not None).items():
        groups.setdefault(by(cfg), []).append((run, cfg, m, r))
    num = lambda x: "-" if x is None else f"{x:.3g}"
    rows, falls = [], []
    for ln, runs in sorted(groups.items(), key=lambda kv: kv[0] != "off"):
        runs.sort(key=lambda x: x[1].seed)
        g, step = S.mean_curve_step(runs), max((r["step"] for *_, r in runs), key=len)
        for k in keys:
            mean = np.mean([np.interp(step, r["step"], r[k]) for *_, r in runs], 0)
            at1k, top, top_step, at_g, last, last_step = curve_points(step, mean, g)
            p = SINGH_CURVES.get((k, ln))
            rows.append([name(ln), k, str(g or "not reached"), num(at1k),
                         f"{num(top)} at {top_step}", num(at_g), f"{num(last)} at {last_step}",
                         "not in their data" if p is None else
                         f"{num(p[0])} / {num(p[1])} at {p[2]} / {num(p[3])} / {num(p[4])}"])
        seeds = [(c.seed, rise_and_fall(r["step"], r["sr_train"], s))
                 for (_, c, _, r), s in zip(runs, S.grok_steps(runs))]
        falls.append([name(ln), " / ".join(
            f"s{s}: " + ("never" if x is None else f"{x[0]:.2f} -> {num(x[1])}")
            for s, x in seeds)])
    print(S.markdown(["placement", "measure", "seed-mean test loss <= 0.01 at", "at 1000",
                      "max", "at the seed-mean step", "last",
                      "paper (released mean curve): at 1000 / max / at their step / at 10k"], rows))
    if "sr_train" in keys:
        print(S.markdown(["placement", "SR-train per seed: max before test loss <= 0.01 -> 1000 "
                          "steps after (-: the run ended before)"], falls))


def c_fourier(root, steps=(500, 1000, 2000)):
    """C_Fourier early in training, per placement (Fig. 2b: it rises sooner in placements that
    generalize sooner): the mean over seeds and each seed at `steps` ("-": the run stopped before,
    1000 steps after it generalized; the mean is of the others), beside the released mean curve
    at step 1000 (the only early reading of theirs). Placements in the paper's order of
    generalization, M first; every placement has the same seeds (ln_placements.sh)."""
    groups = {}
    for cfg, _, r in load(root, True).values():
        groups.setdefault(cfg.ln, {})[cfg.seed] = r
    order = ["mlp-pre", "pre-v", "attn-pre-v", "pre", "attn-pre", "off", "attn-pre-qk"]
    seeds = sorted(next(iter(groups.values()))) if groups else []

    def cell(values):
        there = [v for v in values if v is not None]
        if not there:
            return "-"
        each = " / ".join("-" if v is None else f"{v:.3g}" for v in values)
        return f"{np.mean(there):.3g} ({each})"
    rows = []
    for ln in sorted(groups, key=lambda ln: order.index(ln) if ln in order else len(order)):
        paper = SINGH_CURVES.get(("c_fourier", ln))
        rows.append([singh_name(ln)]
                    + [cell([S.at(groups[ln][s], "c_fourier", step) for s in seeds])
                       for step in steps]
                    + ["-" if paper is None else f"{paper[0]:.3g}"])
    per_seed = " / ".join(f"s{s}" for s in seeds)
    print(S.markdown(["placement"] + [f"C_Fourier at {step}: seed mean ({per_seed})"
                                      for step in steps] + ["released mean curve at 1000"], rows))


def wd_point(cfg):
    """A point of Singh et al.'s weight-decay sweep but its centre (wd 1: the No LN runs of
    ln_placements.sh, the same command): "wd X", or None."""
    wd = f"{schedule(cfg, cfg.warmup)[1]:.3g}"
    return f"wd {wd}" if wd != "1" and singh_label(cfg) == f"lr 0.001, wd {wd}, alpha 1" else None


def subsets(runs, k=5):
    """Singh et al.'s statistic (the seed-mean curve's step, or None) of every k of the runs."""
    return [S.mean_curve_step(list(c)) for c in itertools.combinations(runs, k)]


def coupling(root):
    """seed_coupling.sh: split and init from one seed vs independent draws, then seed by seed."""
    arm = lambda c: ("coupled: split and init from one seed" if c.data_seed is None
                     and c.split_rng == "torch" else "independent: split from --data-seed"
                     if c.data_seed is not None else f"{c.split_rng}: their code's split")
    per_seed(root, arm)
    by, groups, paper = {}, {}, SINGH[1e-8, "singh"][1e-3, 1, 1][0]
    for run, (cfg, m, r) in load(root).items():
        s, lab = grok_step(m), arm(cfg).split(":")[0]
        by.setdefault(cfg.seed, {})[lab] = np.inf if s is None else s
        groups.setdefault(lab, []).append((run, cfg, m, r))
    for lab, runs in sorted(groups.items()):  # the paper's statistic is on 5 seeds: every 5 here
        at = sorted(np.inf if s is None else s for s in subsets(runs))
        if at:
            pick = lambda f: at[int(f * (len(at) - 1))]  # a quantile, np.inf if never
            q = lambda f: "never" if pick(f) == np.inf else pick(f)
            print(f"{lab}, the seed-mean curve of each of the {len(at)} sets of 5 of its "
                  f"{len(runs)} seeds: <= 0.01 at median {q(0.5)} (5-95%: {q(0.05)}-{q(0.95)}), "
                  f"by the paper's {paper} in {sum(s <= paper for s in at)}, not in 10k steps "
                  f"in {sum(s == np.inf for s in at)}\n")
    for other in ("independent", "singh"):
        pairs = [(d["coupled"], d[other]) for d in by.values() if other in d and "coupled" in d]
        if pairs:
            first, later = sum(a < b for a, b in pairs), sum(a > b for a, b in pairs)
            reached, n = [sum(np.isfinite(v[i]) for v in pairs) for i in (0, 1)], len(pairs)
            print(f"seed by seed, coupled vs {other}: coupled first in {first}, later in "
                  f"{later}, tied in {n - first - later} of {n} seeds (sign test p "
                  f"{sign_test(first, later):.3f}); reached 0.01: {reached[0]} of {n} against "
                  f"{reached[1]} of {n} (Fisher exact p "
                  f"{fisher_exact(reached[0], n, reached[1], n):.3f})\n")


def early(root):
    """Singh et al.'s measures at step 1000 under their definitions (attn_entropy: head-averaged
    weights; sr_train: every LN removed), beside ours (per-head; LNs kept, LN(x) normalised)."""
    groups, _ = S.group_runs(load(root, analysed=True))
    keys = ("attn_entropy", "attn_entropy_per_head", "sr_train", "sr_train_ln")
    rows = [[lab] + [S.fmt([S.at(r, k) for _, _, _, r in runs], 3) for k in keys]
            for lab, runs in groups.items()]
    print(S.markdown(["configuration"] + [f"{k} at step {S.AT}" for k in keys], rows))


def regularizers(root):
    """Nanda et al.'s appendix, per run: test loss 0.01 and test accuracy 0.95 reached at (their
    dropout models end at 99.7%, loss 0.215, Table 6), the end, train-loss jumps (> 10x from
    one evaluation to the next, to above 1e-3: verdicts.jumps), and at the last checkpoint their
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


def gu_runs(root):  # the hole runs, token uniformity, depth, the DNN, then analyze.py's summary
    summary(root, gu_table.main(root))  # of the runs the four tables read: analysed once


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


def llc(root):
    """The local learning coefficient and Zhong et al.'s signatures through each run: the steps
    at which train and test loss first reach 0.01 and whether the run has devinterp's shape
    (claims_registry.llc_shape), then at its LLC checkpoints (measures.llc_every) and its last
    the train and test loss, the LLC (each chain's; "-" where not taken), distance irrelevance
    and gradient symmetricity."""
    for run, (_, m, a) in load(root, analysed=True, llc=True).items():
        at = np.union1d(np.nonzero(np.isfinite(a["llc"]))[0], [len(a["step"]) - 1])
        chains = lambda i: " / ".join(f"{v:.2f}" for v in a["llc_chains"][i])
        rows = [[str(int(a["step"][i])), f"{a['train_loss'][i]:.3g}", f"{a['test_loss'][i]:.3g}",
                 f"{a['llc'][i]:.2f} ({chains(i)})" if np.isfinite(a["llc"][i]) else "-",
                 f"{a['distance_irrelevance'][i]:.3f}", f"{a['gradient_symmetricity'][i]:.3f}"]
                for i in at]
        fit = first_below(m["step"], m["train_loss"])
        shape = {None: "-", True: "yes", False: "no"}[claims_registry.llc_shape(m, a)]
        print(f"{os.path.basename(run)}: train loss <= 0.01 at {fit}, test loss at "
              f"{grok_step(m)}; devinterp's shape: {shape}\n")
        print(S.markdown(["step", "train loss", "test loss", "LLC (per chain)",
                          "distance irrelevance", "gradient symmetricity"], rows))


def attention(root):
    """Nanda et al.'s attention-head fit (appendix C.1.3) on their mainline at 40k: per seed and
    head, the frequency whose wave best fits the head's score difference (the logit of the
    attention weight '=' pays a, over every pair), whether it is a key frequency of W_L, and the
    share of variance it explains; then the paper's four heads."""
    R = claims_registry
    rows = []
    for c, m, r in R.NANDA_MAIN.get(load):
        fits = [R.head_wave_fit(a) for a in r["final_attn_a"]]
        keys = r["keys"].tolist()
        rows.append([f"seed {c.seed}", str(keys)]
                    + [f"k {k}{'' if k in keys else ' (no key)'}: {fve:.1%}" for k, fve in fits]
                    + [f"{np.mean([fve for _, fve in fits]):.1%}"])
    rows.append(["paper (their mainline)", "5 of them"]
                + [f"{v:.2%}" for v in R.NANDA_HEAD_FVE] + [f"{np.mean(R.NANDA_HEAD_FVE):.1%}"])
    print(S.markdown(["run", "key frequencies (W_L)"] + [f"head {h}: best k, share of variance"
                                                         for h in range(4)] + ["mean"], rows))


def nanda_released(root):
    """Nanda et al.'s released runs beside ours (claims_registry.NANDA_RELEASED; `python
    experiments/nanda_released.py` re-derives theirs): the first step with test loss <= 0.01,
    their split; then excluded loss with and without weight decay, seed by seed (the paper's
    key rule on W_L at the last checkpoint picks the frequencies it excludes)."""
    R, theirs = claims_registry, claims_registry.NANDA_RELEASED
    steps = lambda runs: " / ".join(f"s{c.seed}: {grok_step(m) or S.unfinished(c, m)}"
                                    for c, m, _ in runs)

    def ours(copy, keep=lambda c: True):
        try:
            return f"{steps(verdicts.Runs(copy, keep).get(load))} ({copy})"
        except verdicts.Missing as e:
            return f"not committed ({e})"
    rows = [[f"frac {f:g}", str(theirs[f"frac {f:g}"]), ours("nanda_fractions", R.field(frac=f))]
            for f in (0.25, 0.28)]
    rows += [["frac 0.3", str(theirs["frac 0.3"]), ours("nanda_cleanup")],
             ["frac 0.95", str(theirs["frac 0.95"]), ours("nanda_frac95")],
             ["frac 0.3, wd 0.1", str(theirs["wd 0.1"]), ours("nanda_wd")],
             ["frac 0.3, wd 0.01", "no data in the copy read", "not run"],
             ["wd 0 (theirs: frac >= 0.9, from its weights)", str(theirs["no wd"]),
              "frac 0.3, this project's split: " + ours("nanda", R.field(wd=0.0))]]
    print(S.markdown(["run (wd 1 unless named)", "theirs: test loss <= 0.01 at epoch",
                      "ours, per seed"], rows))
    rows = []
    for copy, wd in (("nanda", 0.0), ("nanda", 1.0), ("nanda_cleanup", 1.0)):
        group = verdicts.Runs(copy, R.field(wd=wd, frac=0.3), analysed=True)
        for c, m, r in group.get(load):
            ex = r["excluded_loss"]
            rows.append([f"{copy} s{c.seed}", f"{wd:g}", c.split_rng, str(r["keys"].tolist()),
                         f"{ex[0]:.3g} / {ex.min():.3g} / {ex[-1]:.3g}",
                         f"{R.largest_rise(ex):.3g}", str(grok_step(m) or "-")])
    print(S.markdown(["run", "wd", "split", "key frequencies (W_L, last checkpoint)",
                      "excluded loss at 0 / lowest / last", "largest rise above its lowest so "
                      "far", "test loss <= 0.01 at"], rows))


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


def ntk(root):
    """Singh et al.'s "features evolve continuously", read on the NTK distance ||K_t - K_0|| /
    ||K_0|| (analysis ntk_distance) of the analysed runs of their wd sweep: per seed its value at
    steps 200 and 400, its largest change between steps 400 apart (NTK_GRID) as a share of its
    total variation there, and at the end; the same share of the seed-mean curve with its 90%
    interval (5-seed draws); then the same of their released 5-seed mean curves."""
    R = claims_registry
    rows = []
    for wd, group in R.NTK_RUNS.items():
        runs = group.get(load)
        for c, m, r in runs:
            share = R.largest_move_share(r["step"], r["ntk_distance"])
            rows.append([f"wd {wd:g}", f"s{c.seed}", f"{S.at(r, 'ntk_distance', 200):.0f} / "
                         f"{S.at(r, 'ntk_distance', 400):.0f}", f"{share:.3f}",
                         f"{r['ntk_distance'][-1]:.0f} at {int(r['step'][-1])}"])
        res = R.seed_mean_curve(group, "ntk_distance", R.largest_move_share, np.nan)(load)
        rows.append([f"wd {wd:g}", "seed-mean curve", "-",
                     f"{res['ours']:.3f} [{res['lo']:.3f}, {res['hi']:.3f}]", "-"])
    head, a = singh_released.read(R.SINGH_NTK)
    for name in head:
        if name.endswith("ntk/relative_distance"):
            j = head.index(name)
            rows.append([f"theirs, {name.split(' - ')[0].replace('model.output_scaling', 'alpha')}",
                         "5-seed mean", f"{np.interp(200, a[:, 0], a[:, j]):.0f} / "
                         f"{np.interp(400, a[:, 0], a[:, j]):.0f}",
                         f"{R.largest_move_share(a[:, 0], a[:, j]):.3f}",
                         f"{a[-1, j]:.0f} at {int(a[-1, 0])}"])
    n = len(R.NTK_GRID) - 1
    print(S.markdown(["runs", "seed", "NTK distance at 200 / 400", f"largest change over "
                      f"{R.NTK_GRID[0]}-{R.NTK_GRID[-1]} in {n} steps of "
                      f"{R.NTK_GRID[1] - R.NTK_GRID[0]}, share of its total variation (even: "
                      f"{1 / n:.3f})", "at the end"], rows))


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
    R = claims_registry
    ntk_runs = lambda c: any(R.singh(wd=wd)(c) for wd in R.NTK_RUNS)  # its analysed runs
    copies = (("gu_setting", R.GU_FULL), ("nanda", verdicts.Runs("nanda", analysed=True)),
              ("nanda_cleanup", R.NANDA_MAIN),
              ("singh_grids", verdicts.Runs("singh_grids", ntk_runs, analysed=True)))
    rows = []
    for copy, group in copies:
        runs = group.get(load)
        groups = {}
        for c, m, r in runs:
            groups.setdefault(run_label(c), []).append(r)
        for label, rs in list(groups.items()) + ([("all", [r for *_, r in runs])]
                                                 if len(groups) > 1 else []):
            cells = []
            for name, keys in R.EARLIER.items():
                beat = [R.med_beats(keys)(None, r) for r in rs]
                theirs = [R.tracking(r, keys) for r in rs]
                theirs = [t for t in theirs if t is not None]
                cells.append("-" if not theirs else f"{np.median(theirs):.2f}; "
                             f"{sum(b is True for b in beat)}/{sum(b is not None for b in beat)}")
            med = np.median([stats.rank_corr(r["med"], r["test_loss"]) for r in rs])
            rows.append([copy, label, str(len(rs)), f"{med:.2f}"] + cells)
    print(S.markdown(["copy", "configuration", "runs", "MED: median Spearman with test loss"]
                     + [f"{name}: median abs Spearman; MED above in" for name in R.EARLIER],
                     rows))


def seed_steps(runs):
    """{arm: {seed: step of test loss <= 0.01, or None}}; an arm is a run's name less its seed."""
    arms = {}
    for run, (cfg, m, _) in runs.items():
        arm = os.path.basename(run).rsplit("_s", 1)[0]
        arms.setdefault(arm, {})[cfg.seed] = grok_step(m)
    return arms


def tuning_grid(runs, ln):
    """The tuning seed's cells of one placement, as printed rows, and the chosen (lr, wd): the
    first to test loss 0.01 (a tie: the smaller lr, then wd); None while a cell is missing."""
    grid = {}
    for run, (cfg, m, _) in runs.items():
        if cfg.ln == ln and cfg.seed == claims_registry.TUNING_SEED:
            grid[cfg.lr, cfg.wd] = (grok_step(m), int(m["step"][-1]), cfg.steps)
    lrs = sorted({lr for lr, _ in grid})
    wds = sorted({wd for _, wd in grid})
    rows = []
    for lr in lrs:
        row = [f"{lr:g}"]
        for wd in wds:
            if (lr, wd) not in grid:
                row.append("-")
                continue
            step, last, budget = grid[lr, wd]
            if step is not None:
                row.append(str(step))
            elif last < budget:
                row.append(f"running (step {last} of {budget})")
            else:
                row.append(f"not reached in {budget}")
        rows.append(row)
    done = [(step, lr, wd) for (lr, wd), (step, _, _) in grid.items() if step is not None]
    finished = all(step is not None or last == budget for step, last, budget in grid.values())
    chosen = None
    if done and finished and len(grid) == len(lrs) * len(wds):
        chosen = min(done)[1:]
    return ["lr \\ wd"] + [f"{wd:g}" for wd in wds], rows, chosen


def tuned_adamw(root):
    """experiments/tuned_adamw.sh: AdamW's lr x wd on the tuning seed, per placement (stage 1),
    then the chosen cell on the compared seeds 0-4 beside every method and the matched AdamW of
    interventions.sh (stage 2): steps to test loss 0.01 seed by seed, and a one-sided
    Mann-Whitney test that the method gets there before the tuned AdamW."""
    runs = load(root)
    for ln in sorted({cfg.ln for cfg, _, _ in runs.values()}, key=lambda ln: ln != "pre"):
        name = claims_registry.LN_NAME.get(ln, ln)
        header, rows, chosen = tuning_grid(runs, ln)
        print(f"{ln} ({name}), stage 1, seed {claims_registry.TUNING_SEED}: test loss <= 0.01 "
              "at (rows lr, columns wd)\n")
        print(S.markdown(header, rows))
        if chosen is None:
            print("the cell to compare: not yet chosen (cells missing or running)\n")
            continue
        lr, wd = chosen
        print(f"the cell to compare: lr {lr:g}, wd {wd:g}\n")
        tuned = {cfg.seed: grok_step(m) for cfg, m, _ in runs.values() if cfg.ln == ln
                 and (cfg.lr, cfg.wd) == chosen and cfg.seed != claims_registry.TUNING_SEED}
        if not tuned:
            print("stage 2: the chosen cell is not run on the compared seeds\n")
            continue
        seeds = sorted(tuned)
        arms = {f"tuned AdamW (lr {lr:g}, wd {wd:g})": tuned}
        for copy in claims_registry.COMPARED[ln]:  # an arm in two packs: the first pack's
            with pack.opened(os.path.join("reproduction", copy)) as folder:
                for arm, steps in seed_steps(load(folder)).items():
                    arms.setdefault(arm, steps)
        rows = []
        for arm, steps in arms.items():
            these = [steps.get(s) for s in seeds]
            if steps is tuned:
                test = "-"
            else:
                test = "U {:g} / p {:.3f}".format(*mann_whitney(these, [tuned[s] for s in seeds],
                                                                "less"))
            rows.append([arm, " / ".join(str(v) if v is not None else "-" for v in these), test])
        print(f"{ln} ({name}), stage 2, seeds {' '.join(map(str, seeds))}: test loss <= 0.01 at; "
              "the methods from interventions.sh (another machine for No LN: Zen 5)\n")
        print(S.markdown(["arm", "per seed", "earlier than the tuned AdamW: Mann-Whitney U / "
                          "p (one-sided)"], rows))


SECTIONS = {  # name: (REPRODUCTION.md's heading, folder (None: it reads the copies it needs),
    # what makes it, printer)
    "placements": ("LN placements on their split, through the paper's 10k-step budget",
                   "runs/ln_placements",
                   "bash experiments/ln_placements.sh --list | bash", placements),
    "placement_measures": ("LN placements on their split: Singh et al.'s measures through "
                           "the run", "runs/ln_placements",
                           "bash experiments/ln_placements.sh --list | bash; python analyze.py "
                           "runs/ln_placements", placement_measures),
    "c_fourier": ("LN placements on their split: C_Fourier at steps 500, 1000, 2000",
                  "runs/ln_placements", "bash experiments/ln_placements.sh --list | bash; python "
                  "analyze.py runs/ln_placements", c_fourier),
    "compressibility": ("LN placements on their split: R(Z), power-law exponent, effective rank",
                        "runs/ln_placements", "bash experiments/ln_placements.sh --list | bash; "
                        "python analyze.py runs/ln_placements",
                        lambda root: placement_measures(root, COMPRESSIBILITY)),
    "compressibility_wd": ("Weight decay on their split: R(Z), power-law exponent, effective "
                           "rank", "runs/singh_grids", "bash experiments/singh_grids.sh --batched"
                           " | grep -- --wd | bash",
                           lambda root: placement_measures(root, COMPRESSIBILITY, wd_point, str)),
    "early": ("LN placements on their split: the first 1000 steps", "runs/ln_placements",
              "bash experiments/ln_placements.sh --list | bash", early),
    "coupling": ("Does one seed drawing both split and init slow No LN?", "runs/seed_coupling",
                 "bash experiments/seed_coupling.sh --batched | bash", coupling),
    "optimization": ("Learning rate, weight decay and readout scale (Singh et al.)",
                     "runs/optimization", "bash experiments/optimization.sh --list | bash", grids),
    "grids": ("Singh et al.'s own grids and appendix", "runs/singh_grids",
              "bash experiments/singh_grids.sh --batched | bash", grids),
    "nanda": ("Progress measures: training fraction and weight decay (Nanda et al.)",
              "runs/nanda", "bash experiments/nanda.sh --list | bash",
              lambda root: (summary(root), per_seed(root, ref="frac=0.3, wd=1.0"))),
    "tuned_adamw": ("A tuned AdamW beside the accelerators", "runs/tuned_adamw",
                    "bash experiments/tuned_adamw.sh", tuned_adamw),
    "regularizers": ("Dropout, L1 and a float32 loss (Nanda et al.'s appendix)",
                     "runs/nanda_regularizers",
                     "bash experiments/nanda_regularizers.sh --batched | bash", regularizers),
    "nanda_wd": ("Weight decay 0.1 on their split (Nanda et al.'s released wd 0.1 run)",
                 "runs/nanda_wd", "python train.py --preset nanda --split-rng nanda --wd 0.1 "
                 "--seed 1 --steps 110000 --out runs/nanda_wd", metrics_table.main),
    "fractions": ("Training fractions (Nanda et al.'s released sweep)",
                  "runs/nanda_fractions", "bash experiments/nanda_fractions.sh --list | bash",
                  metrics_table.main),
    "cleanup": ("The mainline through cleanup (Nanda et al.)", "runs/nanda_regularizers",
                "python train.py --preset nanda --split-rng nanda --seed 0 1 2 3 4 "
                "--out runs/nanda_regularizers", cleanup),
    "phases": ("The mainline's phases, Gini and weight norm at their ends (Nanda et al.)",
               "runs/nanda_regularizers", "python train.py --preset nanda --split-rng nanda "
               "--seed 0 1 2 3 4 --out runs/nanda_regularizers", phases),
    "gu_setting": ("Gu et al. in their code's setting", "runs/gu_setting",
                   "bash experiments/gu_setting.sh --batched | bash", gu_runs),
    "gu_quadratic": ("a^2+ab+b^2 at three training fractions (Gu et al.'s Fig. 4)",
                     "runs/gu_quadratic", "bash experiments/gu_quadratic.sh --batched | bash",
                     gu_quadratic),
    "gu_preview": ("Gu et al.'s strip, a first look", "runs/gu_preview",
                   "python train.py --preset gu --seed 0 --split strip --hole 40 [--b-offset 60] "
                   "--steps 10000 --out runs/gu_preview", gu_runs),
    "embedding": ("Embedding-MLP (AlQuabeh et al.)", "runs/embedding", "bash experiments/"
                  "embedding.sh --list | bash", lambda root: (summary(root), per_seed(
                      root, ref="op=add, split=random, embed=learned, emb_lr_ratio=1"))),
    "minibatch": ("Embedding-MLP with mini-batches (AlQuabeh et al.)", "runs/minibatch",
                  "bash experiments/minibatch.sh --list | bash", minibatch_table.main),
    "prieto": ("Grokking accelerators in Prieto et al.'s own setting (their Fig. 1)",
               "runs/prieto_fig1", "bash experiments/interventions.sh --list | grep prieto_fig1 "
               "| bash", metrics_table.main),
    "prieto_seeds": ("Prieto et al.'s Fig. 1, seed by seed: when test accuracy reaches 0.95 "
                     "and how long it stays", "runs/prieto_fig1", "bash experiments/"
                     "interventions.sh --list | grep prieto_fig1 | bash", metrics_table.held),
    "interventions": ("Grokking accelerators", "runs/interventions",
                      "bash experiments/interventions.sh --list | bash", metrics_table.main),
    "interventions_noln": ("Grokking accelerators on No LN", "runs/interventions",
                           "bash experiments/interventions.sh --list | bash", metrics_table.main),
    "interventions_noln_ma": ("Grokking accelerators on No LN: Grokfast MA, its controls and "
                              "the baseline again, another machine", "runs/interventions",
                              "bash experiments/interventions.sh --list | bash",
                              metrics_table.main),
    "interventions_nanda": ("Grokking accelerators on Nanda et al.'s model", "runs/interventions",
                            "bash experiments/interventions.sh --list | bash",
                            metrics_table.main),
    "grokfast": ("Grokfast in its own setting: each filter against Adam at its weight decay",
                 "runs/interventions", "bash experiments/interventions.sh --list | grep -- "
                 "'--op mul' | bash", metrics_table.main),
    "grokfast_wd0": ("Grokfast's setting: Adam at wd 0 (their baseline), and the arms at wd "
                     "0.005 / 0.01 again on other machines", "runs/interventions",
                     "bash experiments/interventions.sh --list | grep -- '--op mul' | bash",
                     metrics_table.main),
    "collapse": ("Softmax in float16, float32 and float64 (Prieto et al.'s Fig. 2)",
                 "runs/prieto_fig2", "bash experiments/interventions.sh --list | grep "
                 "prieto_fig2 | bash", metrics_table.collapse),
    "collapse_gpu": ("Softmax in float16 on a GPU (Prieto et al.'s Fig. 2)", "runs/prieto_fig2",
                     "bash experiments/interventions.sh --list | grep prieto_fig2 | grep "
                     "float16 | bash", metrics_table.collapse),
    "attention": ("Attention heads as waves of one frequency (Nanda et al.)", None,
                  "python train.py --preset nanda --split-rng nanda --seed 0 1 2 3 4 "
                  "--out runs/nanda_regularizers", attention),
    "nanda_released": ("Nanda et al.'s released runs beside ours: fractions, weight decay, "
                       "excluded loss without it", None, "bash experiments/nanda.sh --list | "
                       "bash; python train.py --preset nanda --split-rng nanda --frac 0.95 "
                       "--seed 0 --stop-after-grok 1000 --out runs/nanda_frac95",
                       nanda_released),
    "ntk": ("Does the NTK move continuously? (Singh et al.)", None, "bash experiments/"
            "singh_grids.sh --batched | grep -- --wd | bash", ntk),
    "med": ("MED against the earlier progress measures (Gu et al.)", None,
            "bash experiments/gu_setting.sh --batched | bash", med),
    "llc": ("The LLC and the Clock / Pizza signatures through one run", "runs/llc_example",
            "python train.py --ln pre --seed 0 --stop-after-grok 1000 --out runs/llc_example; "
            "python analyze.py runs/llc_example", llc),
    "pizza_check": ("Zhong et al.'s model A: distance irrelevance and gradient symmetricity",
                    None, "python experiments/claims.py pizza_check",
                    lambda root: print(S.markdown(*clock_pizza.model_a_table()))),
    "clock_pizza": ("Clock or Pizza by LN placement", "runs/clock_pizza",
                    "bash experiments/clock_pizza.sh --list | bash",
                    lambda root: print(S.markdown(*clock_pizza.table(root)))),
    "verdicts": ("Verdicts, claim by claim", None, "python experiments/claims.py verdicts",
                 lambda root: verdicts.main(load, claims_registry.CLAIMS)),
    "forecast": ("Forecasting grokking part-way through a run", None,
                 "python experiments/forecast.py", lambda root: forecast.main()),
}
COPIES = {  # section: its runs' copy in the repository, read where its runs/ folder has none
    name: os.path.join("reproduction", copy) for name, copy in (("nanda", "nanda"),
        ("placements", "ln_placements_singh"), ("placement_measures", "ln_placements_singh"),
        ("early", "ln_placements_singh"), ("compressibility", "ln_placements_compress"),
        ("coupling", "seed_coupling"), ("grids", "singh_grids"), ("fractions", "nanda_fractions"),
        ("gu_setting", "gu_setting"), ("collapse", "prieto_fig2"), ("embedding", "embedding"),
        ("minibatch", "minibatch"), ("gu_preview", "gu_preview"), ("prieto", "prieto_fig1"),
        ("optimization", "optimization"), ("interventions", "interventions_pre"),
        ("cleanup", "nanda_cleanup"), ("compressibility_wd", "singh_grids"),
        ("c_fourier", "ln_placements_singh"), ("phases", "nanda_cleanup"), ("nanda_wd", "nanda_wd"),
        ("tuned_adamw", "tuned_adamw"),
        ("prieto_seeds", "prieto_fig1"), ("interventions_noln", "interventions_noln_zen5"),
        ("interventions_noln_ma", "interventions_noln"),
        ("interventions_nanda", "interventions_nanda"), ("grokfast", "grokfast_setting_zen5"),
        ("grokfast_wd0", "grokfast_setting"), ("collapse_gpu", "prieto_fig2_gpu"),
        ("llc", "llc_example"), ("clock_pizza", "clock_pizza"),
        ("gu_quadratic", "gu_quadratic"), ("regularizers", "nanda_regularizers"))}


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        return print(__doc__.strip() + "\n\nsections: " + ", ".join(SECTIONS))
    flags = [a for a in argv if a.startswith("-")]
    if flags:  # no option but --help: a typo must not print the help and exit 0
        sys.exit(f"error: unknown option {flags[0]}; give section names (--help lists them)")
    asked = []  # [section, folder]: a word after a section's name that is not one is its folder
    for a in argv:
        if a in SECTIONS:
            asked.append([a, None])
        elif asked and asked[-1][1] is None:
            asked[-1][1] = a
        else:
            sys.exit(f"error: unknown section {a}; choose from {', '.join(SECTIONS)}")
    errors = []
    for n, folder in asked or [[n, None] for n in SECTIONS]:
        heading, root, make, show = SECTIONS[n]
        if root is None:  # a section that reads the copies of several experiments itself
            print(f"## {heading}\n")
            if folder:
                errors.append(f"{n} reads the repository's copies, not a folder ({folder})")
                print(f"error: {errors[-1]}\n")
            else:
                show(None)
            continue
        root = folder or (root if pack.has_runs(root) else COPIES.get(n, root))
        print(f"## {heading} ({root})\n")
        if pack.has_runs(root):
            try:
                with pack.opened(root) as runs:
                    show(runs)
            except Stop as e:  # a run it cannot read: say which, go on with the other sections
                errors.append(str(e))
                print(f"error: {e}\n")
        elif folder:
            errors.append(f"no runs in {folder}")
            print(f"error: no runs in {folder}\n")
        else:
            print(f"runs not committed; made by: {make}\n")
    if errors:
        sys.exit(f"error: {'; '.join(errors)}")


if __name__ == "__main__":
    main(sys.argv[1:])
