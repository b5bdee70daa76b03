"""
The grokking accelerators and their critics: Prieto et al. (StableMax, ⊥Grad, softmax collapse),
Grokfast (Lee et al.), and the accelerators against an AdamW with its lr and wd tuned: the claims
(CLAIMS), the tables of REPRODUCTION.md that show them (SECTIONS) and the runs they read.

    python experiments/claims.py --paper accelerators   # its verdict rows and tables
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import metrics_table  # noqa: E402
import pack  # noqa: E402
import summary as S  # noqa: E402
from render import Section  # noqa: E402
from rule import Claim, not_addressed, order, signs, value  # noqa: E402
from runsets import Runs, field, load, where  # noqa: E402
from seedstats import acc_step, grok_step  # noqa: E402
from singh_numbers import SINGH_LN  # noqa: E402
from stats import mann_whitney  # noqa: E402

PAPERS = ("Prieto et al.", "Grokfast (Lee et al.)", "the accelerators' critics")
PRIETO, GROKFAST, CRITICS = PAPERS
LN_NAME = {k: v[0] for k, v in SINGH_LN.items()}

FIG1 = "prieto_fig1"
GF_BOTH = "`python experiments/claims.py grokfast grokfast_wd0`"
TUNING_SEED = 5  # the tuning scripts' stage 1: not among the seeds the arms are compared on
COMPARED_SEEDS = [0, 1, 2, 3, 4]  # their stage 2
GRID = [(lr, wd) for lr in (0.001, 0.003, 0.006) for wd in (1.0, 3.0)]  # every arm's tuning grid
# each method as its paper runs it (interventions.sh's arms), and the runs of it at any (lr, wd);
# a paper's own setting off the grid joins that method's grid (tuned_methods.sh)
METHODS = {"Grokfast EMA": (field(grokfast="ema", lr=0.001, wd=1.0), field(grokfast="ema")),
           "⊥AdamW": (field(orthograd=True, lr=0.001, wd=0.0), field(orthograd=True)),
           "Muon": (field(optimizer="muon", lr=0.001, wd=1.0), field(optimizer="muon"))}
PAPER_CELL = {"Grokfast EMA": (0.001, 1.0), "⊥AdamW": (0.001, 0.0), "Muon": (0.001, 1.0)}
ADAMW = dict(optimizer="adamw", grokfast="none", orthograd=False, loss="ce")  # plain AdamW
# the arms experiments/tuned_methods.sh tunes alike on one machine, AdamW and each method: the
# runs of each at any (lr, wd), and its grid
TUNED_ARMS = {"AdamW": field(**ADAMW), **{name: keep for name, (_, keep) in METHODS.items()}}
CELLS = {"AdamW": GRID, **{name: GRID + [cell for cell in (PAPER_CELL[name],) if cell not in GRID]
                           for name in METHODS}}
# the cells tuned_methods.sh's stage 1 chose on seed 5, per placement and arm (`python
# experiments/claims.py tuned_methods` prints the choice; test_claims checks them); an arm not
# here is not yet chosen
TUNED = {("pre", "AdamW"): (0.001, 1.0), ("pre", "Grokfast EMA"): (0.003, 1.0),
         ("pre", "⊥AdamW"): (0.001, 1.0), ("pre", "Muon"): (0.003, 1.0),
         ("off", "AdamW"): (0.006, 3.0), ("off", "Grokfast EMA"): (0.006, 3.0),
         ("off", "⊥AdamW"): (0.001, 0.0), ("off", "Muon"): (0.006, 1.0)}
# the packs holding each placement's methods; the first is the one the verdicts compare
COMPARED = {"pre": ("interventions_pre",), "off": ("interventions_noln_zen5", "interventions_noln")}


# ---------------------------------------------------------------- the tables



def seed_steps(runs):
    """{arm: {seed: step of test loss <= 0.01, or None}}; an arm is a run's name less its seed."""
    arms = {}
    for run, (cfg, m, _) in runs.items():
        arm = os.path.basename(run).rsplit("_s", 1)[0]
        arms.setdefault(arm, {})[cfg.seed] = grok_step(m)
    return arms


def tuning_grid(runs, cells):
    """The tuning seed's cells (lr, wd) of one arm on one placement, as printed rows (lr down, wd
    across; "-" off the grid), and the chosen (lr, wd): the first to test loss 0.01 (a tie: the
    smaller lr, then wd); None while a cell is missing, or running short of the first crossing
    so far. A cell that has passed that step without crossing can no longer be chosen, so it may
    be stopped there ("stopped"): the choice is the one its full budget would give."""
    grid = {}
    for run, (cfg, m, _) in runs.items():
        if cfg.seed == TUNING_SEED and (cfg.lr, cfg.wd) in cells:
            grid[cfg.lr, cfg.wd] = (grok_step(m), int(m["step"][-1]), cfg.steps)
    done = [(step, lr, wd) for (lr, wd), (step, _, _) in grid.items() if step is not None]
    first = min(done)[0] if done else None
    lrs = sorted({lr for lr, _ in cells})
    wds = sorted({wd for _, wd in cells})
    rows = []
    for lr in lrs:
        row = [f"{lr:g}"]
        for wd in wds:
            if (lr, wd) not in cells:
                row.append("-")
                continue
            if (lr, wd) not in grid:
                row.append("not yet run")
                continue
            step, last, budget = grid[lr, wd]
            if step is not None:
                row.append(str(step))
            elif last == budget:
                row.append(f"not reached in {budget}")
            elif first is not None and last >= first:
                row.append(f"not by {last} (stopped: past {first})")
            else:
                row.append(f"running (step {last} of {budget})")
        rows.append(row)
    # every cell crossed, or passed the first crossing without crossing (its budget included)
    decided = all(step is not None or (first is not None and last >= first)
                  for step, last, _ in grid.values())
    chosen = min(done)[1:] if done and decided and len(grid) == len(cells) else None
    return ["lr \\ wd"] + [f"{wd:g}" for wd in wds], rows, chosen


def show_grid(what, runs, cells):
    """Print one arm's stage 1 on one placement (tuning_grid's table and its choice); return the
    chosen (lr, wd), or None."""
    header, rows, chosen = tuning_grid(runs, cells)
    print(f"{what}, stage 1, seed {TUNING_SEED}: test loss <= 0.01 at (rows lr, columns wd)\n")
    print(S.markdown(header, rows))
    print("the cell to compare: " + (f"lr {chosen[0]:g}, wd {chosen[1]:g}\n" if chosen
                                     else "not yet chosen (cells missing or running)\n"))
    return chosen


def tuned_adamw(root):
    """experiments/tuned_adamw.sh: AdamW's lr x wd on the tuning seed, per placement (stage 1),
    then the chosen cell on the compared seeds 0-4 beside every method and the matched AdamW of
    interventions.sh (stage 2): steps to test loss 0.01 seed by seed, and a one-sided
    Mann-Whitney test that the method gets there before the tuned AdamW."""
    runs = load(root)
    for ln in sorted({cfg.ln for cfg, _, _ in runs.values()}, key=lambda ln: ln != "pre"):
        name = LN_NAME.get(ln, ln)
        chosen = show_grid(f"{ln} ({name})", {r: v for r, v in runs.items() if v[0].ln == ln},
                           GRID)
        if chosen is None:
            continue
        lr, wd = chosen
        tuned = {cfg.seed: grok_step(m) for cfg, m, _ in runs.values() if cfg.ln == ln
                 and (cfg.lr, cfg.wd) == chosen and cfg.seed != TUNING_SEED}
        if not tuned:
            print("stage 2: the chosen cell is not run on the compared seeds\n")
            continue
        seeds = sorted(tuned)
        arms = {f"tuned AdamW (lr {lr:g}, wd {wd:g})": tuned}
        for copy in COMPARED[ln]:  # an arm in two packs: the first pack's
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


def arm_steps(runs, keep, ln, cell):
    """{seed: step of test loss <= 0.01, or None: never} of one arm's cell on the compared
    seeds, those whose outcome is known (a run still going below its budget is left out)."""
    return {cfg.seed: grok_step(m) for cfg, m, _ in runs.values() if keep(cfg) and cfg.ln == ln
            and (cfg.lr, cfg.wd) == cell and cfg.seed != TUNING_SEED
            and (grok_step(m) is not None or m["step"][-1] >= cfg.steps)}


def tuned_methods(root):
    """experiments/tuned_methods.sh: AdamW and each method tuned alike on one machine, over the
    same lr x wd grid (a method's paper's own setting added) on the same tuning seed (stage 1),
    each arm's chosen cell then on the compared seeds 0-4 (stage 2): steps to test loss 0.01
    seed by seed and a one-sided Mann-Whitney test that the method gets there before AdamW."""
    runs = load(root)
    for ln in ("pre", "off"):
        name = LN_NAME[ln]
        arms = {}  # arm: (its chosen cell, {seed: step})
        for arm, keep in TUNED_ARMS.items():
            mine = {r: v for r, v in runs.items() if keep(v[0]) and v[0].ln == ln}
            if not mine:
                continue
            chosen = show_grid(f"{arm} on {ln} ({name})", mine, CELLS[arm])
            if chosen:
                arms[arm] = chosen, arm_steps(mine, keep, ln, chosen)
        done = lambda steps: sorted(steps) == COMPARED_SEEDS
        rows = []
        for arm, ((lr, wd), steps) in arms.items():
            if arm == "AdamW":
                test = "-"
            elif not done(steps):
                test = f"stage 2: seeds {' '.join(map(str, sorted(steps))) or 'none'} done"
            elif "AdamW" not in arms or not done(arms["AdamW"][1]):
                test = "stage 2: AdamW's not done"
            else:
                adamw = arms["AdamW"][1]
                test = "U {:g} / p {:.3f}".format(*mann_whitney(
                    [steps[s] for s in COMPARED_SEEDS], [adamw[s] for s in COMPARED_SEEDS],
                    "less"))
            rows.append([f"{arm} tuned", f"lr {lr:g}, wd {wd:g}",
                         " / ".join(str(steps[s] or "never") if s in steps else "-"
                                    for s in COMPARED_SEEDS), test])
        print(f"{ln} ({name}), stage 2, seeds {' '.join(map(str, COMPARED_SEEDS))}: test loss "
              "<= 0.01 at, every arm at the cell its stage 1 chose\n")
        print(S.markdown(["arm", "cell", "per seed", "earlier than the tuned AdamW: "
                          "Mann-Whitney U / p (one-sided)"], rows))


# ---------------------------------------------------------------- the claims



def prieto_claims():
    fig1 = lambda **kw: Runs(FIG1, field(**kw))
    stays_at_chance = lambda m, r: float(np.max(m["test_acc"])) < 0.1  # never above 10%
    return [
        Claim(paper=PRIETO, claim="⊥AdamW at lr 0.01, wd 0 reaches 95% test accuracy within 300 "
                                 "epochs (Fig. 1a)",
             value="<= 300",
             source="Fig. 1a",
             statistic="per seed: test accuracy 0.95 by step 300",
             like=True,
             differs="like for like: their Fig. 1 setting", section="prieto",
             test=signs(fig1(orthograd=True), lambda m, r: (acc_step(m) or np.inf) <= 300)),
        Claim(paper=PRIETO, claim="with a float32 softmax the model does not generalize (Fig. 1c)",
             value="no",
             source="Sec. 3, Fig. 1c",
             statistic="per seed: best test accuracy below 0.1",
             like=True,
             differs="like for like: their Fig. 1 setting, 4000 steps", section="prieto",
             test=signs(fig1(orthograd=False, loss_dtype="float32"),
                        stays_at_chance)),
        Claim(paper=PRIETO, claim="in float64 the softmax still does not grok within their budget "
                                 "(Fig. 1c)",
             value="no",
             source="Fig. 1c",
             statistic="per seed: best test accuracy below 0.1",
             like=True,
             differs="like for like: their Fig. 1 setting and 80k", section="prieto",
             test=signs(fig1(loss="ce", loss_dtype="float64"),
                        stays_at_chance)),
        Claim(paper=PRIETO, claim="at frac 0.7 a float32 softmax ends below float64 in test "
                                 "accuracy (Fig. 2)",
             value="float32 below",
             source="Fig. 2",
             statistic="per-seed best test accuracy, float32 below float64",
             like=True,
             differs="like for like: their Fig. 2 setting (lr 5e-4, 20k)", section="collapse",
             test=order([Runs("prieto_fig2", field(frac=0.7, loss_dtype=d)) for d in
                         ("float32", "float64")], lambda m, r: float(np.max(m["test_acc"])),
                        never=False)),
        Claim(paper=PRIETO, claim="⊥AdamW groks without weight decay where AdamW does not "
                                 "(on M+A*, the fair comparison)",
             value="⊥AdamW first",
             source="Sec. 4",
             statistic="per-seed step to test accuracy 0.95, ⊥AdamW at wd 0 against AdamW at "
                       "wd 0", like=False, differs="this project's model (M+A*), not theirs",
             section="interventions",
             test=order([Runs("interventions_pre", field(wd=0.0, orthograd=True)),
                         Runs("interventions_pre", field(wd=0.0, orthograd=False))],
                        lambda m, r: acc_step(m))),
        Claim(paper=PRIETO, claim="StableMax groks without weight decay by ~80k epochs (Fig. 1b)",
             value="yes",
             source="Fig. 1b",
             statistic="per seed: test accuracy 0.95 reached within 80k",
             like=True,
             differs="like for like: their Fig. 1 setting and 80k", section="prieto_seeds",
             test=signs(fig1(loss="stablemax"), lambda m, r: acc_step(m) is not None))]


def grokfast_claims():
    copy = lambda wd: "grokfast_setting_zen5" if wd else "grokfast_setting"
    section = lambda wd: "grokfast" if wd else "grokfast_wd0"
    gf = lambda wd, filt: Runs(copy(wd), field(wd=wd, grokfast=filt))
    like = "their x*y mod 97 headline setting as near as this model gets; 5 seeds, theirs one run"
    rows = [Claim(paper=GROKFAST, claim=f"Grokfast {name} reaches 95% validation accuracy at "
                                       f"{v} iterations",
                 value=v,
                 source="their README",
                 statistic="per seed: first step with test accuracy >= 0.95",
                 like=False,
                 differs=like, section=section(wd), label=name,
                 test=value(gf(wd, filt), lambda m, r: acc_step(m), v))
            for name, wd, filt, v in (("EMA", 0.005, "ema", 910), ("MA", 0.01, "ma", 790),
                                      ("Adam baseline, wd 0", 0.0, "none", 39890))]
    rows.append(Claim(
        paper=GROKFAST, claim="Grokfast EMA groks sooner than Adam at wd 0 (their baseline)",
        value="EMA first", source="their README",
        statistic="per-seed step to test accuracy 0.95", like=False, differs=like,
        section=None, command=GF_BOTH,
        test=order([gf(0.005, "ema"), gf(0.0, "none")], lambda m, r: acc_step(m))))
    rows.append(Claim(
        paper=GROKFAST, claim="the EMA filter speeds grokking at the same weight decay",
        value="EMA first", source="their README (the filter is the method)",
        statistic="per-seed step to test accuracy "
        "0.95, EMA against Adam at EMA's wd 0.005", like=False, differs=like, section="grokfast",
        test=order([gf(0.005, "ema"), gf(0.005, "none")], lambda m, r: acc_step(m))))
    return rows


def tuned_runs(ln, arm):
    """One arm's stage 2 in tuned_methods.sh on one placement: the cell its stage 1 chose, on
    the compared seeds; None while that cell is not chosen."""
    cell, keep = TUNED.get((ln, arm)), TUNED_ARMS[arm]
    if cell is None:
        return None
    seeds = f"{COMPARED_SEEDS[0]}-{COMPARED_SEEDS[-1]}"
    return Runs("tuned_methods", where(
        f"ln {ln}, {keep}, lr {cell[0]:g}, wd {cell[1]:g}, seeds {seeds}",
        lambda c: keep(c) and c.ln == ln and (c.lr, c.wd) == cell and c.seed in COMPARED_SEEDS))


def tuned_claims():
    """Each method against AdamW both ways the critics ask: as the papers run them (each arm at
    its paper's setting, interventions.sh) and with equal tuning (each arm's cell chosen on the
    same grid and tuning seed, on one machine: tuned_methods.sh)."""
    rows = []
    step = lambda m, r: grok_step(m)
    for ln, (copy, *_) in COMPARED.items():
        model = LN_NAME[ln]
        own = Runs(copy, field(**ADAMW, lr=0.001, wd=1.0), partial=True)
        adamw = tuned_runs(ln, "AdamW")
        for name, (paper_keep, keep) in METHODS.items():
            rows.append(Claim(
                paper=CRITICS, claim=f"{name} at its paper's setting groks before AdamW at its "
                                     f"own ({model})",
                value=f"{name} first", source="what the method's paper implies",
                statistic="per-seed step to test loss 0.01", like=False,
                differs=f"this project's model ({model}), not the method's paper's; each arm at "
                        "its paper's setting, untuned" + (", on a Zen 5" if ln == "off" else ""),
                section="interventions" if ln == "pre" else "interventions_noln",
                test=order([Runs(copy, paper_keep, partial=True), own], step)))
            mine = tuned_runs(ln, name)
            unchosen = [arm for arm, runs in ((name, mine), ("AdamW", adamw)) if runs is None]
            if unchosen:
                test = not_addressed(f"{' and '.join(unchosen)}'s cell on {model} is not yet "
                                     "chosen: experiments/tuned_methods.sh stage 1")
            else:
                test = order([mine, adamw], step)
            rows.append(Claim(
                paper=CRITICS, claim=f"{name} tuned groks before AdamW tuned ({model})",
                value=f"{name} first", source="what the method's paper implies",
                statistic="per-seed step to test loss 0.01", like=False,
                differs=f"this project's model ({model}), not the method's paper's; every arm "
                        "tuned alike on one 2-vCPU Intel Xeon (on seed 5 over lr {1e-3, 3e-3, "
                        "6e-3} x wd {1, 3}, a method's paper's setting added; compared on "
                        "seeds 0-4)",
                section="tuned_methods", test=test))
    return rows


CLAIMS = prieto_claims() + grokfast_claims() + tuned_claims()
# the claims the verdicts' summary opens with (claims.py verdicts), as written above
HEADLINES = [f"{name} tuned groks before AdamW tuned (M+A*)" for name in METHODS]
INTERVENTIONS = "bash experiments/interventions.sh --list | bash"
FIG1_RUNS = "bash experiments/interventions.sh --list | grep prieto_fig1 | bash"
FIG2_RUNS = "bash experiments/interventions.sh --list | grep prieto_fig2 | bash"
MUL = "bash experiments/interventions.sh --list | grep -- '--op mul' | bash"
SECTIONS = {
    "tuned_adamw": Section("A tuned AdamW beside the accelerators", "runs/tuned_adamw",
                           "bash experiments/tuned_adamw.sh", tuned_adamw, "tuned_adamw"),
    "tuned_methods": Section("AdamW and the accelerators tuned alike, on one machine",
                             "runs/tuned_methods",
                             "bash experiments/tuned_methods.sh", tuned_methods, "tuned_methods"),
    "prieto": Section("Grokking accelerators in Prieto et al.'s own setting (their Fig. 1)",
                      "runs/prieto_fig1", FIG1_RUNS, metrics_table.main, "prieto_fig1"),
    "prieto_seeds": Section("Prieto et al.'s Fig. 1, seed by seed: when test accuracy reaches "
                            "0.95 and how long it stays", "runs/prieto_fig1", FIG1_RUNS,
                            metrics_table.held, "prieto_fig1"),
    "interventions": Section("Grokking accelerators", "runs/interventions", INTERVENTIONS,
                             metrics_table.main, "interventions_pre"),
    "interventions_noln": Section("Grokking accelerators on No LN", "runs/interventions",
                                  INTERVENTIONS, metrics_table.main, "interventions_noln_zen5"),
    "interventions_noln_ma": Section("Grokking accelerators on No LN: Grokfast MA, its controls "
                                     "and the baseline again, another machine",
                                     "runs/interventions", INTERVENTIONS, metrics_table.main,
                                     "interventions_noln"),
    "interventions_nanda": Section("Grokking accelerators on Nanda et al.'s model",
                                   "runs/interventions", INTERVENTIONS, metrics_table.main,
                                   "interventions_nanda"),
    "grokfast": Section("Grokfast in its own setting: each filter against Adam at its weight "
                        "decay", "runs/interventions", MUL, metrics_table.main,
                        "grokfast_setting_zen5"),
    "grokfast_wd0": Section("Grokfast's setting: Adam at wd 0 (their baseline), and the arms at "
                            "wd 0.005 / 0.01 again on other machines", "runs/interventions", MUL,
                            metrics_table.main, "grokfast_setting"),
    "collapse": Section("Softmax in float16, float32 and float64 (Prieto et al.'s Fig. 2)",
                        "runs/prieto_fig2", FIG2_RUNS, metrics_table.collapse, "prieto_fig2"),
    "collapse_gpu": Section("Softmax in float16 on a GPU (Prieto et al.'s Fig. 2)",
                            "runs/prieto_fig2", "bash experiments/interventions.sh --list | grep "
                            "prieto_fig2 | grep float16 | bash", metrics_table.collapse,
                            "prieto_fig2_gpu"),
}

