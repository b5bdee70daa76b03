"""
Figures, drawn from arrays only (metrics.npz and analysis.npz): restyle without recomputing.
Called by analyze.py; each function takes what analyze computed.
"""
import csv
import os
from collections import Counter

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from analyze import rank_corr
from train import GROK, first_below

IGNORED = ("seed", "data_seed", "steps", "eval_every", "ckpt_every")  # not what makes a configuration
# Summary measures are compared at one step that every run reaches (runs may stop soon after
# generalizing, --stop-after-grok): after memorization, before most configurations generalize.
AT = 1000


def phases(step, test_loss):
    """Nanda et al.'s three phases, located by a simple rule on the test loss: circuit formation
    ends (cleanup starts) when it first falls below 1, memorization ends at its peak before
    that, cleanup ends when it first reaches 0.01. Later slingshot spikes are ignored."""
    below = np.nonzero(test_loss < 1.0)[0]
    i_clean = below[0] if len(below) else len(step) - 1
    i_peak = int(np.argmax(test_loss[:i_clean + 1]))
    return step[i_peak], (step[i_clean] if len(below) else None), first_below(step, test_loss)


def mark_grok(ax, step):
    if step is not None:
        ax.axvline(step, color="k", ls=":", lw=1, label=f"test loss <= {GROK} at {step}")


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path + ".tmp.png", dpi=110)
    os.replace(path + ".tmp.png", path)  # atomic, like every other output
    plt.close(fig)


def run_figures(run, cfg, m, r):
    out = os.path.join(run, "figures")
    os.makedirs(out, exist_ok=True)
    s, g = m["step"], first_below(m["step"], m["test_loss"])
    name = os.path.basename(os.path.normpath(run))

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    a1.plot(s, m["train_loss"], label="train")
    a1.plot(s, m["test_loss"], label="test")
    a1.set(yscale="log", xlabel="step", ylabel="cross-entropy loss", title=f"{name}: loss")
    a2.plot(s, m["train_acc"], label="train")
    a2.plot(s, m["test_acc"], label="test")
    a2.set(xlabel="step", ylabel="accuracy", title="accuracy")
    for ax in (a1, a2):
        mark_grok(ax, g)
        ax.legend()
    save(fig, os.path.join(out, "curves.png"))

    fig, ax = plt.subplots(figsize=(11, 3.5))
    f = r["fourier_embed"][-1]
    ax.bar(np.arange(len(f)), f, color="C0")
    for k in r["keys"]:
        ax.bar(k, f[k], color="C3")
    ax.set(xlabel="frequency k (0 = constant)", ylabel="norm of W_E's Fourier component",
           title=f"Fourier components of the embedding at step {r['step'][-1]}; key frequencies (red) {[int(k) for k in r['keys']]}")
    save(fig, os.path.join(out, "fourier_embed.png"))

    rs = r["step"]
    fig, axs = plt.subplots(1, 3, figsize=(15, 4))
    for k, lab in [("train_loss", "train"), ("test_loss", "test"), ("restricted_loss", "restricted (all pairs)"),
                   ("excluded_loss", "excluded (train pairs)")]:
        axs[0].plot(rs, r[k], label=lab)
    axs[0].set(yscale="log", ylabel="loss", title="progress measures: losses")
    axs[1].plot(rs, r["gini_embed"], label="Gini of W_E Fourier norms")
    axs[1].plot(rs, r["gini_logit"], label="Gini of W_L Fourier norms")
    axs[1].set(ylabel="Gini", title="sparsity in the Fourier basis")
    axs[2].plot(rs, r["weight_norm"])
    axs[2].set(ylabel="sum of squared weights", title="weight norm")
    mem, circ, clean = phases(s, m["test_loss"])
    for ax in axs:
        ax.axvspan(0, mem, color="C0", alpha=0.08, label="memorization")
        if circ is not None:
            ax.axvspan(mem, circ, color="C1", alpha=0.08, label="circuit formation")
            ax.axvspan(circ, clean if clean is not None else rs[-1], color="C2", alpha=0.08, label="cleanup")
        ax.set_xlabel("step")
        ax.legend(fontsize=7)
    save(fig, os.path.join(out, "progress.png"))

    fig, axs = plt.subplots(1, 3, figsize=(15, 4))
    axs[0].plot(rs, r["med"], color="C4", label="MED")
    axs[0].set(ylabel="MED (1/p sum ||phi(i+1) - phi(i)||)", xlabel="step", title="MED against test loss")
    tw = axs[0].twinx()
    tw.plot(rs, r["test_loss"], color="C1", label="test loss")
    tw.set(yscale="log", ylabel="test loss")
    axs[0].legend(loc="upper left")
    tw.legend(loc="upper right")
    axs[1].plot(rs, r["c_fourier"])
    axs[1].axhline(1.0, color="gray", lw=0.8)
    axs[1].set(yscale="log", ylabel="C_Fourier", xlabel="step", title="C_Fourier of W_E")
    ent = r["attn_entropy_heads"]
    for h in range(ent.shape[1]):
        axs[2].plot(rs, ent[:, h], lw=0.8, label=f"head {h}")
    axs[2].plot(rs, r["attn_entropy"], "k", label="mean")
    axs[2].set(ylabel="attention entropy (nats; max ln 3)", xlabel="step", title="attention entropy")
    axs[2].legend(fontsize=7)
    for ax in axs:
        mark_grok(ax, g)
    save(fig, os.path.join(out, "med_cfourier_entropy.png"))

    pics = ([(f"head {h}: attention '=' -> a", im) for h, im in enumerate(r["final_attn_a"])] if "final_attn_a" in r else []) + \
        [(f"neuron {n}", im) for n, im in zip(r["neuron_ids"], r["final_neurons"])]
    cols = (len(pics) + 1) // 2
    fig, axs = plt.subplots(2, cols, figsize=(3 * cols, 6), squeeze=False)
    for ax in axs.flat[len(pics):]:
        ax.axis("off")
    for ax, (title, im) in zip(axs.flat, pics):
        ax.imshow(im, cmap="viridis", origin="lower")
        ax.set(title=title, xlabel="b", ylabel="a")
        ax.title.set_fontsize(9)
    fig.suptitle(f"step {r['step'][-1]}: attention of the last position over (a, b), and MLP neurons")
    save(fig, os.path.join(out, "heatmaps.png"))


# ---------------------------------------------------------------- across runs

def group_runs(done):
    """Runs that differ only in seed form one configuration; labelled by what differs."""
    groups = {}
    for run, (cfg, m, r) in done.items():
        key = tuple((k, str(v)) for k, v in cfg.to_dict().items() if k not in IGNORED)
        groups.setdefault(key, []).append((run, cfg, m, r))
    varying = [i for i in range(len(next(iter(groups)))) if len({k[i][1] for k in groups}) > 1] if groups else []
    return {", ".join(f"{k[i][0]}={k[i][1]}" for i in varying) or "all runs": v for k, v in groups.items()}, \
        [next(iter(groups))[i][0] for i in varying] if groups else []


def band(ax, runs, key, label, style, source=2):
    color, ls = style
    n = min(len(x[source][key]) for x in runs)
    steps = runs[0][source]["step"][:n]
    ys = np.stack([x[source][key][:n] for x in runs])
    ax.plot(steps, ys.mean(0), color=color, ls=ls, label=label)
    ax.fill_between(steps, ys.min(0), ys.max(0), color=color, alpha=0.2)


def grok_steps(runs):
    return [first_below(m["step"], m["test_loss"]) for _, _, m, _ in runs]


def cross_run_figures(root, done):
    out = os.path.join(root, "figures")
    os.makedirs(out, exist_ok=True)
    groups, varying = group_runs(done)
    # (colour, line style): the colour cycle has 10 colours, so configurations 11-20 are dashed
    styles = {lab: (f"C{i % 10}", "-" if i < 10 else "--") for i, lab in enumerate(groups)}
    colors = {lab: c for lab, (c, _) in styles.items()}

    fig, axs = plt.subplots(1, 2, figsize=(13, 4.5))
    for lab, runs in groups.items():
        band(axs[0], runs, "test_loss", lab, styles[lab])
        band(axs[1], runs, "train_loss", lab, styles[lab])
    for ax, t in zip(axs, ("test", "train")):
        ax.axhline(GROK, color="gray", lw=0.8, ls=":")
        ax.set(yscale="log", xlabel="step", ylabel=f"{t} loss", title=f"{t} loss: mean over seeds, min-max band")
        ax.legend(fontsize=7)
    save(fig, os.path.join(out, "loss_by_config.png"))

    stats = {lab: [s for s in grok_steps(runs) if s is not None] for lab, runs in groups.items()}
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(groups)), 4.5))
    labs = list(groups)
    ax.bar(range(len(labs)), [np.mean(stats[l]) if stats[l] else np.nan for l in labs],
           yerr=[np.std(stats[l]) if stats[l] else 0 for l in labs], color=[colors[l] for l in labs], capsize=4)
    ax.set_xticks(range(len(labs)), [f"{l}\n({len(stats[l])}/{len(groups[l])} seeds)" for l in labs], fontsize=7, rotation=20)
    ax.set(ylabel=f"steps until test loss <= {GROK}", title="steps to generalize (mean +- std over seeds that did)")
    save(fig, os.path.join(out, "steps_to_generalize.png"))

    for key, ylab, log in [("c_fourier", "C_Fourier", True), ("sr_train", "SR-train loss (MLP input / ||.||)", True),
                           ("attn_entropy", "attention entropy (nats)", False), ("med", "MED", False),
                           ("eff_rank", "effective rank of features", False), ("ntk_distance", "||K_t - K_0|| / ||K_0||", False),
                           ("update_norm", "update norm ||theta_t+1 - theta_t||", True)]:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for lab, runs in groups.items():
            band(ax, runs, key, lab, styles[lab], source=2 if key == "update_norm" else 3)  # metrics or analysis
            pts = [s for s in grok_steps(runs) if s is not None]
            if pts and key == "c_fourier":
                g = np.mean(pts)
                mean_curve = np.mean([np.interp(g, r["step"], r[key]) for _, _, _, r in runs])
                ax.plot([g], [mean_curve], "o", color=colors[lab], mec="k")
        ax.set(yscale="log" if log else "linear", xlabel="step", ylabel=ylab,
               title=ylab + (" (dots: mean generalization step)" if key == "c_fourier" else ""))
        ax.legend(fontsize=7)
        save(fig, os.path.join(out, f"{key}_by_config.png"))

    # a sweep: steps to generalize and best test accuracy against each numeric option that varies,
    # over the runs whose other numeric options sit at their most common value (the baseline);
    # options that are not numbers (split, op, fix_wd, ...) tell the series apart
    runs = [x for g in groups.values() for x in g]
    is_num = lambda o: isinstance(getattr(runs[0][1], o), (int, float)) and not isinstance(getattr(runs[0][1], o), bool)
    for opt in filter(is_num, varying):
        base = {o: Counter(getattr(c, o) for _, c, _, _ in runs).most_common(1)[0][0] for o in varying if is_num(o) and o != opt}
        series = {}
        for _, c, m, _ in runs:
            if all(getattr(c, o) == v for o, v in base.items()):
                lab = ", ".join(f"{o}={getattr(c, o)}" for o in varying if not is_num(o)) or opt
                s = first_below(m["step"], m["test_loss"])
                series.setdefault(lab, []).append((getattr(c, opt), np.nan if s is None else s, np.max(m["test_acc"])))
        if len({x for pts in series.values() for x, _, _ in pts}) < 2:
            continue
        fig, axs = plt.subplots(1, 2, figsize=(11, 4))
        for i, (lab, pts) in enumerate(sorted(series.items())):
            for ax, j in zip(axs, (1, 2)):
                ax.plot([x for x, *_ in pts], [q[j] for q in pts], "o", color=f"C{i % 10}", alpha=0.7, label=lab)
        xs = [x for pts in series.values() for x, *_ in pts]
        for ax, ylab in zip(axs, (f"steps until test loss <= {GROK}", "best test accuracy")):
            ax.set(xscale="log" if min(xs) > 0 else "linear", xlabel=opt, ylabel=ylab)
            ax.legend(fontsize=7)
        axs[0].set_title(f"against {opt} ({', '.join(f'{o}={v}' for o, v in base.items()) or 'all runs'}; "
                         "runs that never generalize have no dot)", fontsize=8)
        save(fig, os.path.join(out, f"sweep_{opt}.png"))

    write_summary(root, groups, done)


def fmt(values, digits=0):
    """mean +- std of the values that exist (None: a run that never got there; NaN: a measure the
    run has not, e.g. attention entropy of the embedding-MLP, or one its cached analysis predates)."""
    v = [x for x in values if x is not None]
    if v and np.isnan(v).all():
        return "-"
    v = [x for x in v if not np.isnan(x)]
    return f"{np.mean(v):.{digits}f} +- {np.std(v):.{digits}f}" if v else "not reached"


def at(r, key, step=AT):
    """An analysis measure at `step`, or None if the run has none there."""
    return float(np.interp(step, r["step"], r[key])) if key in r and r["step"][-1] >= step else None


def after_grok(m, key, f, window=1000):
    """f (max, min) of a logged metric over the `window` steps from the first test acc >= 0.9:
    slingshots and fluctuations after generalizing (every experiment runs 1000 steps past test
    loss <= GROK, which comes later)."""
    g = first_below(m["step"], -m["test_acc"], -0.9)
    return None if g is None else float(f(m[key][(m["step"] >= g) & (m["step"] <= g + window)]))


def write_summary(root, groups, done):
    header = ["configuration", "seeds", "train<=0.01 (mean +- std)", "test<=0.01 (mean +- std)", "reached", "test acc>=0.9 at",
              "final test acc", "best test acc", "final acc in hole / rest of test", "final acc, test pairs with / without their swap in train",
              "1000 steps after test acc>=0.9: max train loss / min test acc / share of evals with test acc<0.9", "C_Fourier at generalization", f"attn entropy at {AT}", f"SR-train at {AT}",
              f"eff. rank at {AT}", "eff. rank: peak / at generalization", "rank corr with test loss: MED / eff. rank", "key frequencies"]
    rows = []
    for lab, runs in groups.items():
        tr = [first_below(m["step"], m["train_loss"]) for _, _, m, _ in runs]
        te = grok_steps(runs)
        at_grok = lambda k: [at(r, k, g) for (*_, r), g in zip(runs, te) if g is not None]
        rows.append([lab, " ".join(str(c.seed) for _, c, _, _ in runs), fmt(tr), fmt(te),
                     f"{sum(x is not None for x in te)}/{len(te)}",
                     fmt([first_below(m["step"], -m["test_acc"], -0.9) for _, _, m, _ in runs]),
                     f"{np.mean([m['test_acc'][-1] for _, _, m, _ in runs]):.3f}",
                     fmt([float(np.max(m["test_acc"])) for _, _, m, _ in runs], 3),
                     *(" / ".join(fmt([float(r.get(k, np.nan)) for *_, r in runs], 3) for k in keys)
                       for keys in (("hole_acc", "rest_acc"), ("swap_acc", "noswap_acc"))),
                     " / ".join(fmt([after_grok(m, k, f) for _, _, m, _ in runs], d) for k, f, d in
                                (("train_loss", np.max, 2), ("test_acc", np.min, 3), ("test_acc", lambda a: np.mean(a < 0.9), 2))),
                     fmt(at_grok("c_fourier"), 2),
                     *(fmt([at(r, k) for _, _, _, r in runs], 3 if k == "attn_entropy" else 2) for k in ("attn_entropy", "sr_train", "eff_rank")),
                     # Singh et al.: generalization comes with compressible features (low eff. rank)
                     fmt([float(np.max(r["eff_rank"])) for *_, r in runs], 1) + " / " +
                     fmt(at_grok("eff_rank"), 1),
                     " / ".join(f"{np.mean([rank_corr(r[k], r['test_loss']) for *_, r in runs]):.2f}" for k in ("med", "eff_rank")),
                     "; ".join(str([int(k) for k in r["keys"]]) for _, _, _, r in runs)])
    with open(os.path.join(root, "summary.csv.tmp"), "w", newline="") as f:
        csv.writer(f).writerows([header] + rows)
    os.replace(os.path.join(root, "summary.csv.tmp"), os.path.join(root, "summary.csv"))
    md = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows]
    with open(os.path.join(root, "summary.md.tmp"), "w") as f:
        f.write("\n".join(md) + "\n")
    os.replace(os.path.join(root, "summary.md.tmp"), os.path.join(root, "summary.md"))
