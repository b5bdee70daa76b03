"""
Singh et al. (the inductive bias of LayerNorm): where the norm sits, the learning rate, weight
decay and readout scale, their measures (C_Fourier, attention entropy, SR-train, R(Z)) and the
NTK: the claims (CLAIMS), the tables of REPRODUCTION.md that show them (SECTIONS) and the runs
they read.

    python experiments/claims.py --paper singh   # its verdict rows and tables
"""
import itertools
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import singh_released  # noqa: E402
import summary as S  # noqa: E402
from optim import schedule  # noqa: E402
from render import Section, per_seed  # noqa: E402
from rule import (Claim, Test, crossing, curve_at_crossing, not_addressed,  # noqa: E402
                  order, seed_mean_curve, signs, value)
from runsets import REPRO, Missing, Runs, field, load, singh_model, where  # noqa: E402
from seedstats import (after_grok, at_grok, falls_when_groks, grok_step,  # noqa: E402
                       largest_move_share, median_update_norm)
from singh_numbers import (COMPRESSIBILITY, SINGH, SINGH_CURVES, SINGH_LN,  # noqa: E402
                           SINGH_MODEL, released)
from stats import fisher_exact, sign_test  # noqa: E402

PAPERS = ("Singh et al.",)
SINGH_PAPER = PAPERS[0]


# ---------------------------------------------------------------- the runs

PLACE = "ln_placements_singh"
LN_NAME = {k: v[0] for k, v in SINGH_LN.items()}
RELEASED = "released 5-seed curves, layernorm-grok 7ea0e10"
SPLIT = "their split (`--split-rng singh`), their 5 seeds, 10k steps"


def placement(ln):
    """A placement on their split: the 5 seeds of ln_placements.sh, with the seeds more of the
    same command and budget: M and A* (placements_more_seeds, seeds 0-14),
    M+A* (seed_coupling_pre: seeds 0-14), No LN (seed_coupling.sh's 20)."""
    more = {"mlp-pre": "placements_more_seeds", "attn-pre": "placements_more_seeds",
            "pre": "seed_coupling_pre", "off": "seed_coupling"}
    if ln not in more:
        return Runs(PLACE, field(ln=ln, split_rng="singh"))
    return Runs([PLACE, more[ln]], field(ln=ln, split_rng="singh", data_seed=None))


# steps at which Singh et al.'s released NTK curves and our analysed runs all have the kernel:
# after its first move away from the initial one (step 0 -> 200: ~300x ||K_0|| in both), to the
# end of the shortest run (wd 1.5 stops at step 5920, 1000 after it generalizes)
NTK_GRID = np.arange(400, 5601, 400)
SINGH_NTK = os.path.join(REPRO, "sources", "singh_released", "lazy_ntk.csv")  # 7ea0e10
ANALYSED_WD = (0.75, 1.5)  # the weight decays of their sweep whose runs the copy keeps analysed
NTK_RUNS = {wd: Runs("singh_grids", singh_model(wd=wd), analysed=True) for wd in ANALYSED_WD}


def ntk_move_share(step, v):
    """largest_move_share over NTK_GRID."""
    return largest_move_share(step, v, NTK_GRID)


def released_ntk_share(alpha=1):
    """largest_move_share of Singh et al.'s released 5-seed mean NTK distance curve at this
    readout scale (alpha 1: lr 1e-3, wd 1, No LN, their sweeps' centre)."""
    head, a = singh_released.read(SINGH_NTK)
    return ntk_move_share(a[:, 0], a[:, head.index(f"model.output_scaling: {alpha:g} - "
                                                       "ntk/relative_distance")])


# ---------------------------------------------------------------- the tables



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


def analysed_wd_point(cfg):
    """wd_point of the runs of the sweep the copy keeps analysed (ANALYSED_WD), else None."""
    return wd_point(cfg) if any(singh_model(wd=wd)(cfg) for wd in ANALYSED_WD) else None


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


def ntk(root):
    """Singh et al.'s "features evolve continuously", read on the NTK distance ||K_t - K_0|| /
    ||K_0|| (analysis ntk_distance) of the analysed runs of their wd sweep: per seed its value at
    steps 200 and 400, its largest change between steps 400 apart (NTK_GRID) as a share of its
    total variation there, and at the end; the same share of the seed-mean curve with its 90%
    interval (5-seed draws); then the same of their released 5-seed mean curves."""
    rows = []
    for wd, group in NTK_RUNS.items():
        runs = group.get(load)
        for c, m, r in runs:
            share = ntk_move_share(r["step"], r["ntk_distance"])
            rows.append([f"wd {wd:g}", f"s{c.seed}", f"{S.at(r, 'ntk_distance', 200):.0f} / "
                         f"{S.at(r, 'ntk_distance', 400):.0f}", f"{share:.3f}",
                         f"{r['ntk_distance'][-1]:.0f} at {int(r['step'][-1])}"])
        res = seed_mean_curve(group, "ntk_distance", ntk_move_share, np.nan)(load)
        rows.append([f"wd {wd:g}", "seed-mean curve", "-",
                     f"{res['ours']:.3f} [{res['lo']:.3f}, {res['hi']:.3f}]", "-"])
    head, a = singh_released.read(SINGH_NTK)
    for name in head:
        if name.endswith("ntk/relative_distance"):
            j = head.index(name)
            rows.append([f"theirs, {name.split(' - ')[0].replace('model.output_scaling', 'alpha')}",
                         "5-seed mean", f"{np.interp(200, a[:, 0], a[:, j]):.0f} / "
                         f"{np.interp(400, a[:, 0], a[:, j]):.0f}",
                         f"{ntk_move_share(a[:, 0], a[:, j]):.3f}",
                         f"{a[-1, j]:.0f} at {int(a[-1, 0])}"])
    n = len(NTK_GRID) - 1
    print(S.markdown(["runs", "seed", "NTK distance at 200 / 400", f"largest change over "
                      f"{NTK_GRID[0]}-{NTK_GRID[-1]} in {n} steps of "
                      f"{NTK_GRID[1] - NTK_GRID[0]}, share of its total variation (even: "
                      f"{1 / n:.3f})", "at the end"], rows))


# ---------------------------------------------------------------- the claims



def placement_claims():
    rows = [Claim(
        paper=SINGH_PAPER, claim="LN placements grok in the order M < M+A* < A* < No LN (Fig. 2a)",
        value="1425 / 3525 / 7157 / 7807", source="Fig. 2a; " + RELEASED,
        statistic="per-seed first step with test loss <= 0.01, each placement against the next",
        like=True, differs="like for like: their split and 10k budget; seeds, not the paper's",
        section="placements",
        test=order([placement(ln) for ln in ("mlp-pre", "pre", "attn-pre", "off")],
                   lambda m, r: grok_step(m), names=["M", "M+A*", "A*", "No LN"])),
        Claim(paper=SINGH_PAPER, claim="No LN groks later than M+A* (Fig. 2a)",
             value="M+A* first", source="Fig. 2a; " + RELEASED,
             statistic="per-seed first step with test loss <= 0.01", like=True,
             differs="like for like: their split and 10k budget", section="placements",
             test=order([placement("pre"), placement("off")], lambda m, r: grok_step(m)))]
    for ln in ("mlp-pre", "pre", "attn-pre", "off", "pre-v", "attn-pre-v", "attn-pre-qk"):
        paper = SINGH_LN[ln][1][0] or None
        rows.append(Claim(
            paper=SINGH_PAPER, claim=f"{LN_NAME[ln]} groks at the paper's step (Fig. 2a, 3b)",
            value=paper or "never in 10k",
            source=RELEASED,
            statistic="seed-mean test-loss curve first <= 0.01",
            like=True,
            differs="like for like: " + SPLIT, section="placements", label=f"step {LN_NAME[ln]}",
            test=crossing(placement(ln), paper)))
    # their scripts more_depth.sh and rmsnorm.sh rerun the four placements with 3 layers of width
    # 64 and with RMSNorm; the appendix shows them as figures only, so the row tests Fig. 2a's
    # order there. RMSNorm has no No LN of its own: a model without a norm is the same either way
    depth = dict(n_layers=3, d_model=64, d_mlp=256)
    for what, script, groups, runs in (
            ("3 layers of width 64", "more_depth.sh",
             [Runs("singh_grids", singh_model(ln=ln, **depth))
              for ln in ("mlp-pre", "pre", "attn-pre", "off")],
             "singh_grids, 5 seeds a placement (M on the CPU, the others on one H100)"),
            ("RMSNorm", "rmsnorm.sh", [Runs("singh_grids", singh_model(ln=ln, norm="rmsnorm"))
                                       for ln in ("mlp-pre", "pre", "attn-pre")]
             + [placement("off")],
             "singh_grids, 5 seeds a placement; No LN: the 25 of the main order")):
        rows.append(Claim(
            paper=SINGH_PAPER, claim=f"with {what} the placements keep the order M < M+A* < A* "
                                     "< No LN (appendix)",
            value="Fig. 2a's order", source=f"scripts/{script} (7ea0e10); the appendix's "
                                            "figures are not in our copy of the text",
            statistic="per-seed first step with test loss <= 0.01, each placement against the "
                      "next", like=True, differs="like for like: " + SPLIT, section="grids",
            test=order(groups, lambda m, r: grok_step(m), names=["M", "M+A*", "A*", "No LN"])))
    return rows


def grid(label, keep, paper, claim, section="grids", copy="singh_grids", like=True,
         differs="like for like: " + SPLIT):
    return Claim(paper=SINGH_PAPER, claim=claim, value=paper or "never in 10k", source=RELEASED,
                statistic="seed-mean test-loss curve first <= 0.01", like=like,
                differs=differs, section=section, test=crossing(Runs(copy, keep), paper),
                label=label)


def lr_wd_claims():
    """Fig. 4: the learning rate with lr x wd fixed, the weight decay with lr fixed."""
    paper = SINGH[1e-8, "singh"]
    lrs = ((1e-3, 1), (3e-3, 1 / 3), (5e-3, 0.2), (1e-2, 0.1))
    rows = [grid(f"lr {lr:g}", singh_model(lr=lr, wd=wd), paper[lr, wd, 1][0] or None,
                 f"lr {lr:g} with lr x wd fixed groks at the paper's step (Fig. 4a)")
            for lr, wd in lrs]
    rows.append(Claim(
        paper=SINGH_PAPER, claim="a higher lr with lr x wd fixed groks sooner (Fig. 4a)",
        value="7807 / 7740 / 6582 / 4470", source="Fig. 4a; " + RELEASED,
        statistic="per-seed step to test loss 0.01, each lr against the next higher",
        like=True, differs="like for like: " + SPLIT, section="grids",
        test=order([Runs("singh_grids", singh_model(lr=lr, wd=wd)) for lr, wd in lrs],
                   lambda m, r: grok_step(m), paper_larger=True,
                   names=[f"lr {lr:g}" for lr, _ in lrs])))
    for wd in (0.1, 0.2, 0.5, 0.75, 1.5):
        rows.append(grid(f"wd {wd:g}", singh_model(wd=wd), paper[1e-3, wd, 1][0] or None,
                         f"wd {wd:g} with lr 1e-3 groks at the paper's step (Fig. 4c)"))
    # wd 0.1 and 0.2 are left out: in theirs they never reach 0.01, as 0.5, so the three tie
    wds = (0.5, 0.75, 1.0, 1.5)
    rows.append(Claim(
        paper=SINGH_PAPER, claim="a higher wd with lr fixed groks sooner (Fig. 4c)",
        value="never / 9787 / 7807 / 6395", source="Fig. 4c; " + RELEASED,
        statistic="per-seed step to test loss 0.01, each wd against the next larger", like=True,
        differs="like for like: " + SPLIT + "; wd 0.1 and 0.2 never reach 0.01 in theirs, as "
        "0.5: the three do not order", section="grids",
        test=order([Runs("singh_grids", singh_model(wd=wd)) for wd in wds],
                   lambda m, r: grok_step(m), paper_larger=True,
                   names=[f"wd {wd:g}" for wd in wds])))
    rows.append(Claim(
        paper=SINGH_PAPER, claim="a higher lr with lr x wd fixed keeps a larger update norm "
                                 "(Fig. 4b)",
        value="8.1e-3 / 1.1e-2 / 1.5e-2 / 1.7e-2", source="data/lr_update_norm.csv, median "
        "over steps 3000-3999 (7ea0e10)",
        statistic="per-seed median update norm over steps 3000-3999, each lr below the next "
                  "higher", like=True, differs="like for like: " + SPLIT + "; runs stop 1000 "
        "steps after they generalize, so a window may be part-filled", section="grids",
        test=order([Runs("singh_grids", singh_model(lr=lr, wd=wd)) for lr, wd in lrs],
                   median_update_norm(3000, 4000), names=[f"lr {lr:g}" for lr, _ in lrs],
                   never=False)))
    return rows


def alpha_claims():
    """Fig. 5: the readout scale alpha, with lr / alpha^2 and with lr fixed."""
    paper = SINGH[1e-8, "singh"]
    rows = []
    for a in (0.5, 0.75, 1.25, 1.5):
        lr = 1e-3 / a ** 2
        rows.append(grid(f"alpha {a:g}, lr / alpha^2", singh_model(lr=lr, alpha=a),
                         paper[lr, 1, a][0] or None,
                         f"alpha {a:g} with lr / alpha^2 groks at the paper's step (Fig. 5a)"))
    for a in (0.5, 0.75, 1.25, 1.5):
        rows.append(grid(f"alpha {a:g}, lr fixed", singh_model(alpha=a),
                         paper[1e-3, 1, a][0] or None,
                         f"alpha {a:g} with lr fixed groks at the paper's step (Fig. 5c)",
                         differs="like for like: " + SPLIT + "; their own eps 0 curves give "
                         f"{SINGH[0.0, 'kaiming'][1e-3, 1, a][0]} (row below)"))
    lazy = lambda alphas: [Runs("singh_grids", singh_model(lr=1e-3 / a ** 2, alpha=a))
                           for a in alphas]
    # alpha 1.5 is left out: in theirs it never reaches 0.01, as 1.25, so the two do not order
    alphas = (0.5, 0.75, 1.0, 1.25)
    rows.append(Claim(
        paper=SINGH_PAPER, claim="with lr / alpha^2 a larger alpha groks later (Fig. 5a)",
        value="0.5 < 0.75 < 1 < 1.25", source="Fig. 5a; " + RELEASED,
        statistic="per-seed step to test loss 0.01, each alpha against the next larger",
        like=True, differs="like for like: " + SPLIT + "; alpha 1.5 never reaches 0.01 in theirs, "
        "as 1.25: the two do not order", section="grids",
        test=order(lazy(alphas), lambda m, r: grok_step(m),
                   names=[f"alpha {a:g}" for a in alphas])))
    # Fig. 5c's caption: with lr fixed a lower alpha groks slower. Their released curves of that
    # sweep agree below alpha 1 (0.5, 0.75 never reach 0.01) but not above it; their eps 0 curves
    # the other way round. The rows test the caption on every alpha of the sweep.
    alphas = (0.5, 0.75, 1.0, 1.25, 1.5)
    step = lambda s: str(s) if s else "never"
    released = lambda sweep: " / ".join(step(SINGH[sweep][1e-3, 1, a][0]) for a in alphas)
    for sweep, what, curves, setting in (
            ((1e-8, "singh"), "", "released", ""),
            ((0.0, "kaiming"), ", in their eps 0, Kaiming runs", "eps 0",
             ", their eps 0 and Kaiming init")):
        others = (1e-8, "singh") if sweep[0] == 0.0 else (0.0, "kaiming")
        rows.append(Claim(
            paper=SINGH_PAPER, claim=f"with lr fixed a lower alpha groks slower{what} (Fig. 5c "
                                     "caption)",
            value=" < ".join(f"{a:g}" for a in reversed(alphas)),
            source=f"Fig. 5c caption; their {curves} curves of alpha "
            f"{' / '.join(f'{a:g}' for a in alphas)}: {released(sweep)}",
            statistic="per-seed step to test loss 0.01, each alpha against the next larger",
            like=True, differs=f"like for like: {SPLIT}{setting}; the other sweep's curves: "
            f"{released(others)}", section="grids",
            test=order([Runs("singh_grids", singh_model(alpha=a, eps=sweep[0], init=sweep[1]))
                        for a in alphas], lambda m, r: grok_step(m), paper_larger=True,
                       names=[f"alpha {a:g}" for a in alphas])))
    rows.append(Claim(
        paper=SINGH_PAPER, claim="with lr / alpha^2 a smaller alpha keeps a larger update norm "
                                 "(Fig. 5b)",
        value="6.5e-2 / 2.6e-2 / 2.2e-2", source="data/lazy_update_norm.csv, median over "
        "steps 1000-1999 (7ea0e10)",
        statistic="per-seed median update norm over steps 1000-1999, alpha 0.5 above 0.75 "
                  "above 1", like=True, differs="like for like: " + SPLIT, section="grids",
        test=order(lazy((0.5, 0.75, 1.0)), median_update_norm(1000, 2000),
                   paper_larger=True, names=["alpha 0.5", "alpha 0.75", "alpha 1"],
                   never=False)))
    return rows


def eps0_claims():
    """The appendix's AdamW eps 0 with Kaiming init."""
    rows = []
    eps0 = SINGH[0.0, "kaiming"]  # lazy.sh's loop (b): every alpha, lr fixed and lr / alpha^2
    for a, lr in [(a, 1e-3) for a in (0.5, 0.75, 1.0, 1.25, 1.5)] + [
            (a, 1e-3 / a ** 2) for a in (0.5, 0.75, 1.25, 1.5)]:
        how = "lr fixed" if lr == 1e-3 else "lr / alpha^2"
        rows.append(grid(f"eps 0: alpha {a:g}, {how}", singh_model(lr=lr, alpha=a, eps=0.0,
                                                            init="kaiming"),
                         eps0[lr, 1, a][0] or None,
                         f"AdamW eps 0, Kaiming init: alpha {a:g} with {how} groks at the "
                         "step of their released eps 0 curves (appendix)",
                         differs="like for like: " + SPLIT + ", their eps 0 and Kaiming init"))
    return rows


def optimization_claims():
    return lr_wd_claims() + alpha_claims() + eps0_claims()


def measure_claims():
    meas = lambda ln: Runs(PLACE, field(ln=ln), analysed=True)
    comp = lambda ln: Runs("ln_placements_compress", field(ln=ln), analysed=True)
    rows = [Claim(
        paper=SINGH_PAPER, claim="M and M+A* show slingshots, No LN does not (Fig. 2a caption)",
        value="slingshots in M, M+A*", source="Fig. 2a caption",
        statistic="per-seed max train loss in the 1000 steps after test acc 0.9: M and M+A* "
                  "(pooled) above No LN",
        like=False, differs="a slingshot is the paper's word, the statistic ours",
        section="placements",
        test=order([Runs(PLACE, field(ln="off")),
                    Runs(PLACE, where("ln pre or mlp-pre", lambda c: c.ln in ("pre", "mlp-pre")))],
                   after_grok("train_loss", np.max), never=False))]
    rows.append(Claim(
        paper=SINGH_PAPER,
        claim="Fourier features (C_Fourier) emerge sooner in placements that generalize sooner "
              "(Fig. 2b)",
        value="M > M+A* > A* > No LN at step 1000", source="Fig. 2b; their released curves "
        "show No LN above M+A* and A* at step 1000 (check_data, 7ea0e10), as ours: the text and "
        "its data disagree",
        statistic="per-seed C_Fourier at step 1000, each placement above the next later one",
        like=True, differs="like for like: their split and C_Fourier; the paper names no step "
        "(1000: every placement before its generalization)", section="c_fourier",
        test=order([meas(ln) for ln in ("mlp-pre", "pre", "attn-pre", "off")],
                   lambda m, r: S.at(r, "c_fourier", 1000), paper_larger=True,
                   names=["M", "M+A*", "A*", "No LN"], never=False)))
    rows.append(Claim(
        paper=SINGH_PAPER, claim="LN on q/k lowers attention entropy: A^qk lowest (Fig. 3c)",
        value="A^qk below the six others", source="Fig. 3c",
        statistic="per-seed attention entropy (head-averaged weights) at step 1000, A^qk "
                  "against the six other placements pooled", like=True,
        differs="like for like: their split and definition", section="early",
        test=order([meas("attn-pre-qk"), Runs(PLACE, where(
                       "every ln but attn-pre-qk", lambda c: c.ln != "attn-pre-qk"),
                       analysed=True)],
                   lambda m, r: S.at(r, "attn_entropy", 1000), never=False)))
    rows.append(Claim(
        paper=SINGH_PAPER, claim="A^qk's attention entropy at step 1000 is the paper's (Fig. 3c)",
        value=SINGH_CURVES["attn_entropy", "attn-pre-qk"][0],
        source="check_data/attn_ln_analysis.csv (7ea0e10)",
        statistic="5-seed mean attention entropy at step 1000",
        like=True,
        differs="like for like: their split and definition", section="early",
        label="attention entropy A^qk",
        test=value(meas("attn-pre-qk"), lambda m, r: S.at(r, "attn_entropy", 1000),
                   SINGH_CURVES["attn_entropy", "attn-pre-qk"][0], 5)))
    rows.append(Claim(
        paper=SINGH_PAPER, claim="No LN's SR-train falls as it groks (Fig. 3a)",
        value="falls in every seed",
        source="Fig. 3a",
        statistic="per seed: SR-train 1000 steps after test loss 0.01 below its maximum before",
        like=True, differs="like for like: their split and definition (every LN removed)",
        section="placement_measures", test=signs(meas("off"), falls_when_groks)))
    for ln in ("mlp-pre", "pre", "attn-pre", "off"):
        rows.append(Claim(
            paper=SINGH_PAPER, claim=f"{LN_NAME[ln]}: R(Z) at generalization is the paper's "
                                     "(compressibility)",
            value=SINGH_CURVES["rank", ln][3], source="data/ln_rank.csv (7ea0e10)",
            statistic="5-seed mean R(Z) curve at the seed-mean test-loss crossing", like=True,
            differs="like for like: their split, R(Z) as their code computes it",
            section="compressibility", label=f"R(Z) {LN_NAME[ln]}",
            test=curve_at_crossing(comp(ln), "rank", SINGH_CURVES["rank", ln][3])))
    wd_runs = [Runs("singh_grids", singh_model(wd=0.75), analysed=True),
               Runs("ln_placements_compress", field(ln="off"), analysed=True),
               Runs("singh_grids", singh_model(wd=1.5), analysed=True)]
    rows.append(Claim(
        paper=SINGH_PAPER, claim="R(Z) at generalization falls as wd rises: wd 0.75 > 1 > 1.5 "
                                 "(compressibility across wd)",
        value="62.7 > 59.4 > 35.8", source="data/wd_rank.csv, ln_rank.csv (7ea0e10)",
        statistic="per-seed R(Z) at its own first test loss <= 0.01, each wd above the next",
        like=True, differs="like for like: their split and R(Z); per seed, where their numbers "
        "are of the mean curve", section="compressibility_wd",
        test=order(wd_runs, at_grok("rank"), paper_larger=True,
                   names=["wd 0.75", "wd 1", "wd 1.5"], never=False)))
    for wd, g in ((0.75, wd_runs[0]), (1.5, wd_runs[2])):
        rows.append(Claim(
            paper=SINGH_PAPER, claim=f"wd {wd:g}: R(Z) at generalization is the paper's",
            value=SINGH_CURVES["rank", f"wd {wd:g}"][3], source="data/wd_rank.csv (7ea0e10)",
            statistic="5-seed mean R(Z) curve at the seed-mean test-loss crossing", like=True,
            differs="like for like: their split, R(Z) as their code computes it",
            section="compressibility_wd", label=f"R(Z) wd {wd:g}",
            test=curve_at_crossing(g, "rank", SINGH_CURVES["rank", f"wd {wd:g}"][3])))
    return rows


def train_fit_claims():
    paper = {"mlp-pre": 231, "pre": 214, "attn-pre": 148, "off": 317}  # conventions.md
    return [Claim(
        paper=SINGH_PAPER, claim=f"{LN_NAME[ln]} fits train (loss <= 0.01) at the paper's step",
        value=v,
        source="their released train-loss curves (conventions.md)",
        statistic="seed-mean train-loss curve first <= 0.01",
        like=True,
        differs="like for like: " + SPLIT, section="placements", label=f"train fit {LN_NAME[ln]}",
        test=crossing(Runs(PLACE, field(ln=ln)), v, key="train_loss")) for ln, v in paper.items()]


def ntk_claims():
    rows = []
    for wd, group in NTK_RUNS.items():
        rows.append(Claim(
            paper=SINGH_PAPER, claim=f"features evolve continuously: the NTK moves without a "
                                     f"jump (wd {wd:g})",
            value=released_ntk_share(), source="data/lazy_ntk.csv, alpha 1 (7ea0e10)",
            statistic="the seed-mean NTK distance's largest change between steps 400 apart "
                      "(400-5600) as a share of its total variation", like=False,
            differs="their split and NTK; their released kernel curves are of the alpha sweep "
                    "(alpha 1: wd 1), ours of the wd sweep's 0.75 and 1.5, the analysed runs "
                    "that have it", section="ntk", label=f"NTK jump share, wd {wd:g}",
            test=seed_mean_curve(group, "ntk_distance", ntk_move_share,
                                 released_ntk_share())))
    return rows


STEP_STATISTIC = "seed-mean test-loss curve first <= 0.01"


def offset_claim(rows):
    """Our step against their released curves' over every configuration of theirs that both
    reach within the budget (the rows of `rows` that read STEP_STATISTIC): a two-sided sign
    test, a question of our own (the paper claims no offset)."""
    steps = [c for c in rows if c.statistic == STEP_STATISTIC]

    def compute(load):
        pairs = []
        for c in steps:
            try:
                res = c.test(load)
            except Missing:
                continue
            if np.isfinite(res["paper"]) and np.isfinite(res["ours"]):
                pairs.append((res["ours"], res["paper"]))
        below = sum(a < b for a, b in pairs)
        above = sum(a > b for a, b in pairs)
        return dict(kind="order", p=sign_test(below, above), p_opposite=None, share=None,
                    test="difference", seeds=[len(pairs)],
                    weakest=f"ours sooner in {below}, later in {above}")
    return Claim(
        paper=SINGH_PAPER, claim="our step of test loss 0.01 is offset from their released "
                                 "curves' (every configuration both reach in 10k)",
        value="-", source="their released 5-seed curves (7ea0e10)",
        statistic="sign test over the configurations: our seed-mean step against theirs "
                  "(two-sided; the seeds column counts configurations)", like=True,
        differs="like for like: " + SPLIT, section="grids",
        test=Test(tuple(g for c in steps for g in c.test.reads), compute))


def unaddressed_claims():
    return [Claim(paper=SINGH_PAPER, claim="with lr fixed the update norms of different alpha "
                  "stay comparable (Fig. 5d)", value="-", source=None, statistic="-", like=False,
                  differs="-", section=None,
                  test=not_addressed("a claim of equality: a rank test cannot show it"))]


STEP_ROWS = placement_claims() + optimization_claims()
CLAIMS = (STEP_ROWS + [offset_claim(STEP_ROWS)] + train_fit_claims() + measure_claims()
          + ntk_claims() + unaddressed_claims())
# the claims the verdicts' summary opens with (claims.py verdicts), as written above
HEADLINES = ["LN placements grok in the order M < M+A* < A* < No LN (Fig. 2a)",
             "our step of test loss 0.01 is offset from their released curves' (every "
             "configuration both reach in 10k)"]
MEASURED = "bash experiments/ln_placements.sh --list | bash; python analyze.py runs/ln_placements"
SECTIONS = {
    "placements": Section("LN placements on their split, through the paper's 10k-step budget",
                          "runs/ln_placements", "bash experiments/ln_placements.sh --list | bash",
                          placements, "ln_placements_singh"),
    "placement_measures": Section("LN placements on their split: Singh et al.'s measures through "
                                  "the run", "runs/ln_placements", MEASURED, placement_measures,
                                  "ln_placements_singh"),
    "c_fourier": Section("LN placements on their split: C_Fourier at steps 500, 1000, 2000",
                         "runs/ln_placements", MEASURED, c_fourier, "ln_placements_singh"),
    "compressibility": Section("LN placements on their split: R(Z), power-law exponent, "
                               "effective rank", "runs/ln_placements", MEASURED,
                               lambda root: placement_measures(root, COMPRESSIBILITY),
                               "ln_placements_compress"),
    "compressibility_wd": Section("Weight decay on their split: R(Z), power-law exponent, "
                                  "effective rank", "runs/singh_grids", "bash experiments/"
                                  "singh_grids.sh --batched | grep -- --wd | bash",
                                  lambda root: placement_measures(root, COMPRESSIBILITY,
                                                                  analysed_wd_point, str),
                                  "singh_grids"),
    "early": Section("LN placements on their split: the first 1000 steps", "runs/ln_placements",
                     "bash experiments/ln_placements.sh --list | bash", early,
                     "ln_placements_singh"),
    "coupling": Section("Does one seed drawing both split and init slow No LN?",
                        "runs/seed_coupling", "bash experiments/seed_coupling.sh --batched | bash",
                        coupling, "seed_coupling"),
    "optimization": Section("Learning rate, weight decay and readout scale (Singh et al.)",
                            "runs/optimization", "bash experiments/optimization.sh --list | bash",
                            grids, "optimization"),
    "grids": Section("Singh et al.'s own grids and appendix", "runs/singh_grids",
                     "bash experiments/singh_grids.sh --batched | bash", grids, "singh_grids"),
    "ntk": Section("Does the NTK move continuously? (Singh et al.)", None, "bash experiments/"
                   "singh_grids.sh --batched | grep -- --wd | bash", ntk),
}

