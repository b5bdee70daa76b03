"""
Figures, drawn from arrays only: restyle without recomputing. Only draws; every number it
marks (generalization steps, phases, sweeps) and the list of measures drawn across runs (from
measures.MEASURES) are computed by analyze.py and passed in. Imports matplotlib and numpy only,
nothing of this project.
"""
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np


def mark_grok(ax, step, thr):
    if step is not None:
        ax.axvline(step, color="k", ls=":", lw=1, label=f"test loss <= {thr} at {step}")


def save(fig, path):
    """Write the figure to a temp file of this process and rename (as runfiles.save_atomic):
    never a half-written figure, nor two writers' mixed. The temp name ends in .png, which
    tells matplotlib the format. A failure removes the temp file."""
    fig.tight_layout()
    tmp = f"{path}.{os.getpid()}.tmp.png"
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- one run

def run_figures(run, m, r, grok, phases, thr):
    """m: metrics.npz, r: analysis.npz of the run; grok: first step with test loss <= thr (None:
    never); phases: ends of memorization, circuit formation and cleanup (None: not reached)."""
    out = os.path.join(run, "figures")
    os.makedirs(out, exist_ok=True)
    name = os.path.basename(os.path.normpath(run))
    curves(os.path.join(out, "curves.png"), name, m, grok, thr)
    fourier_embed(os.path.join(out, "fourier_embed.png"), r)
    progress(os.path.join(out, "progress.png"), r, phases)
    med_cfourier_entropy(os.path.join(out, "med_cfourier_entropy.png"), r, grok, thr)
    heatmaps(os.path.join(out, "heatmaps.png"), r)


def curves(path, name, m, grok, thr):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    a1.plot(m["step"], m["train_loss"], label="train")
    a1.plot(m["step"], m["test_loss"], label="test")
    a1.set(yscale="log", xlabel="step", ylabel="cross-entropy loss", title=f"{name}: loss")
    a2.plot(m["step"], m["train_acc"], label="train")
    a2.plot(m["step"], m["test_acc"], label="test")
    a2.set(xlabel="step", ylabel="accuracy", title="accuracy")
    for ax in (a1, a2):
        mark_grok(ax, grok, thr)
        ax.legend()
    save(fig, path)


def fourier_embed(path, r):
    fig, ax = plt.subplots(figsize=(11, 3.5))
    f = r["fourier_embed"][-1]
    ax.bar(np.arange(len(f)), f, color="C0")
    for k in r["keys_embed"]:
        ax.bar(k, f[k], color="C3")
    ax.set(xlabel="frequency k (0 = constant)", ylabel="norm of W_E's Fourier component",
           title=f"Fourier components of the embedding at step {r['step'][-1]}; "
                 f"key frequencies (red) {[int(k) for k in r['keys_embed']]}")
    save(fig, path)


def progress(path, r, phases):
    rs = r["step"]
    fig, axs = plt.subplots(1, 3, figsize=(15, 4))
    for k, lab in [("train_loss", "train"), ("test_loss", "test"),
                   ("restricted_loss", "restricted (all pairs)"),
                   ("excluded_loss", "excluded (train pairs)")]:
        axs[0].plot(rs, r[k], label=lab)
    axs[0].set(yscale="log", ylabel="loss", title="progress measures: losses")
    axs[1].plot(rs, r["gini_embed"], label="Gini of W_E Fourier norms")
    axs[1].plot(rs, r["gini_logit"], label="Gini of W_L Fourier norms")
    axs[1].set(ylabel="Gini", title="sparsity in the Fourier basis")
    axs[2].plot(rs, r["weight_norm"])
    axs[2].set(ylabel="sum of squared weights", title="weight norm")
    mem, circ, clean = phases
    for ax in axs:
        ax.axvspan(0, mem, color="C0", alpha=0.08, label="memorization")
        if circ is not None:
            ax.axvspan(mem, circ, color="C1", alpha=0.08, label="circuit formation")
            ax.axvspan(circ, clean if clean is not None else rs[-1], color="C2", alpha=0.08,
                       label="cleanup")
        ax.set_xlabel("step")
        ax.legend(fontsize=7)
    save(fig, path)


def med_cfourier_entropy(path, r, grok, thr):
    rs = r["step"]
    fig, axs = plt.subplots(1, 3, figsize=(15, 4))
    axs[0].plot(rs, r["med"], color="C4", label="MED")
    axs[0].set(ylabel="MED (1/p sum ||phi(i+1) - phi(i)||)", xlabel="step",
               title="MED against test loss")
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
    axs[2].plot(rs, r["attn_entropy"], "k", label="of the head-averaged weights (Singh)")
    axs[2].set(ylabel="attention entropy (nats; max ln 3)", xlabel="step",
               title="attention entropy")
    axs[2].legend(fontsize=7)
    for ax in axs:
        mark_grok(ax, grok, thr)
    save(fig, path)


def heatmaps(path, r):
    pics = [(f"head {h}: attention '=' -> a", im) for h, im in enumerate(r.get("final_attn_a", []))]
    pics += [(f"neuron {n}", im) for n, im in zip(r["neuron_ids"], r["final_neurons"])]
    cols = (len(pics) + 1) // 2
    fig, axs = plt.subplots(2, cols, figsize=(3 * cols, 6), squeeze=False)
    for ax in axs.flat[len(pics):]:
        ax.axis("off")
    for ax, (title, im) in zip(axs.flat, pics):
        ax.imshow(im, cmap="viridis", origin="lower")
        ax.set(title=title, xlabel="b", ylabel="a")
        ax.title.set_fontsize(9)
    fig.suptitle(f"step {r['step'][-1]}: attention of the last position over (a, b), "
                 "and MLP neurons")
    save(fig, path)


# ---------------------------------------------------------------- across runs

# training metrics drawn across runs, as the measures: (key in metrics.npz, y label, log scale)
METRICS_BY_CONFIG = [("update_norm", "update norm ||theta_t+1 - theta_t||", True)]


def cross_run_figures(root, groups, grok, dots, sweeps, thr, measures=()):
    """groups: {configuration: [(metrics, analysis) of each seed]}; grok: {configuration: each
    seed's step to test loss <= thr, None where it did not get there}; dots: {measure:
    {configuration: (mean generalization step, the measure's mean there)}}; sweeps: {option:
    (baseline, {series: [(value, steps to generalize or NaN, best test accuracy)]})};
    measures: [(key in analysis.npz, y label, log scale)], each drawn as <key>_by_config.png."""
    out = os.path.join(root, "figures")
    os.makedirs(out, exist_ok=True)
    # (colour, line style): the colour cycle has 10 colours, so configurations 11-20 are dashed
    styles = {lab: (f"C{i % 10}", "-" if i < 10 else "--") for i, lab in enumerate(groups)}
    loss_by_config(os.path.join(out, "loss_by_config.png"), groups, styles, thr)
    steps_to_generalize(os.path.join(out, "steps_to_generalize.png"),
                        {f"steps until test loss <= {thr}": grok},
                        {lab: [m["step"][-1] for m, _ in runs] for lab, runs in groups.items()},
                        styles)
    from_analysis = [(key, ylab, log, 1) for key, ylab, log in measures]
    from_metrics = [(key, ylab, log, 0) for key, ylab, log in METRICS_BY_CONFIG]
    for key, ylab, log, source in from_analysis + from_metrics:
        if not any(np.isfinite(x[source][key]).any()
                   for runs in groups.values() for x in runs):
            continue  # undefined for every run here (an MLP has no attention, no SR-train)
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for lab, runs in groups.items():
            band(ax, runs, key, lab, styles[lab], source=source)
            dot = dots.get(key, {}).get(lab)
            if dot is not None:
                ax.plot(*dot, "o", color=styles[lab][0], mec="k")
        ax.set(yscale="log" if log else "linear", xlabel="step", ylabel=ylab,
               title=ylab + (" (dots: mean generalization step)" if key in dots else ""))
        ax.legend(fontsize=7)
        save(fig, os.path.join(out, f"{key}_by_config.png"))
    for opt, (base, series) in sweeps.items():
        sweep(os.path.join(out, f"sweep_{opt}.png"), opt, base, series, thr)


def band(ax, runs, key, label, style, source=1):
    """Mean over seeds and a min-max band; source 0: metrics, 1: analysis. On the steps of the
    longest run, each run interpolated there between the steps it has a value at (seeds may log
    at other steps; a measure may be taken at some checkpoints only, NaN at the others); a run
    that stopped early (--stop-after-grok) keeps its last value, as summary.mean_curve_step."""
    color, ls = style
    steps = max((x[source]["step"] for x in runs), key=len)
    ys = np.stack([interp_finite(steps, x[source]["step"], x[source][key]) for x in runs])
    ax.plot(steps, ys.mean(0), color=color, ls=ls, label=label)
    ax.fill_between(steps, ys.min(0), ys.max(0), color=color, alpha=0.2)


def interp_finite(steps, xs, ys):
    """ys (at steps xs) at `steps`, linear between its finite values; NaN if it has none."""
    ok = np.isfinite(ys)
    return np.interp(steps, xs[ok], ys[ok]) if ok.any() else np.full(len(steps), np.nan)


def loss_by_config(path, groups, styles, thr):
    fig, axs = plt.subplots(1, 2, figsize=(13, 4.5))
    for lab, runs in groups.items():
        band(axs[0], runs, "test_loss", lab, styles[lab], source=0)
        band(axs[1], runs, "train_loss", lab, styles[lab], source=0)
    for ax, t in zip(axs, ("test", "train")):
        ax.axhline(thr, color="gray", lw=0.8, ls=":")
        ax.set(yscale="log", xlabel="step", ylabel=f"{t} loss",
               title=f"{t} loss: mean over seeds, min-max band")
        ax.legend(fontsize=7)
    save(fig, path)


def steps_to_generalize(path, stats, last, styles):
    """One panel per statistic ({y label: {configuration: each seed's step, None where it did
    not get there}}; last: {configuration: each seed's last step}): a bar at the mean +- std of
    the seeds that got there, each of them a dot, each seed that did not an open circle at its
    last step (not there by then). Ticks name only what differs between the configurations:
    each "key=value" of a label that is not its key's most common value."""
    labs = list(last)
    toks = [l.split(", ") for l in labs]
    keyed = len(labs) > 1 and len({len(t) for t in toks}) == 1  # the same keys in every label
    common = [max(col, key=col.count) for col in zip(*toks)] if keyed else []  # ties: the first
    ticks = [", ".join(t for t in ts if t not in common) or "the most common values"
             for ts in toks]
    fig, axs = plt.subplots(len(stats), 1, figsize=(max(6, 1.3 * len(labs)), 3.5 * len(stats)),
                            squeeze=False)
    for ax, (ylab, steps) in zip(axs[:, 0], stats.items()):
        got = {l: [s for s in steps[l] if s is not None] for l in labs}
        ax.bar(range(len(labs)), [np.mean(got[l]) if got[l] else np.nan for l in labs],
               yerr=[np.std(got[l]) if got[l] else 0 for l in labs],
               color=[styles[l][0] for l in labs], capsize=4, alpha=0.6)
        for i, l in enumerate(labs):
            ax.plot([i] * len(got[l]), got[l], "k.", markersize=5)
            out = [t for s, t in zip(steps[l], last[l]) if s is None]
            ax.plot([i] * len(out), out, "ko", mfc="none", markersize=5)
        ax.set_xticks(range(len(labs)), [f"{t}\n({len(got[l])}/{len(last[l])} seeds)"
                                         for t, l in zip(ticks, labs)], fontsize=7, rotation=15)
        ax.set(ylabel=ylab)
    title = ("steps to generalize: mean +- std over the seeds that did, each a dot; open: not by "
             "its last step")
    if common:
        title += "\nmost common values: " + ", ".join(common)
    axs[0, 0].set_title(title, fontsize=9)
    save(fig, path)


def sweep(path, opt, base, series, thr):
    """Steps to generalize and best test accuracy against one option (runs that never
    generalize have no dot)."""
    fig, axs = plt.subplots(1, 2, figsize=(11, 4))
    for i, (lab, pts) in enumerate(sorted(series.items())):
        for ax, j in zip(axs, (1, 2)):
            ax.plot([x for x, *_ in pts], [q[j] for q in pts], "o", color=f"C{i % 10}", alpha=0.7,
                    label=lab)
    xs = [x for pts in series.values() for x, *_ in pts]
    for ax, ylab in zip(axs, (f"steps until test loss <= {thr}", "best test accuracy")):
        ax.set(xscale="log" if min(xs) > 0 else "linear", xlabel=opt, ylabel=ylab)
        ax.legend(fontsize=7)
    held = ", ".join(f"{o}={v}" for o, v in base.items()) or "all runs"
    axs[0].set_title(f"against {opt} ({held}; runs that never generalize have no dot)", fontsize=8)
    save(fig, path)


# ---------------------------------------------------------------- the verdicts

VERDICT_COLORS = {"reproduced": "C2", "not reproduced": "C3", "inconclusive": "C1"}


def forest(path, rows):
    """One row a numeric claim: our value and 90% interval divided by the paper's number (log
    axis; 1: the paper's), coloured by verdict. rows: (label, paper, ours, lo, hi, verdict);
    np.inf (never within the budget) is drawn as an arrow off the right edge."""
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(rows) + 1.2))
    right = 4.0
    for y, (label, paper, ours, lo, hi, verdict) in enumerate(reversed(rows)):
        color = VERDICT_COLORS.get(verdict, "0.5")
        # each value over the paper's, cut at the right edge
        lo = min(lo / paper, right)
        hi = min(hi / paper, right)
        mid = min(ours / paper, right)
        ax.plot([lo, hi], [y, y], color=color, lw=2.5)
        ax.plot([mid], [y], "o", color=color, ms=4)
        if hi >= right:
            ax.annotate("", (right * 1.15, y), (right, y),
                        arrowprops=dict(arrowstyle="->", color=color))
    ax.axvline(1, color="k", lw=1)
    ax.set_yticks(range(len(rows)), [r[0] for r in reversed(rows)], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(0.25, right * 1.2)
    ticks = [0.25, 0.5, 1, 2, 4]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.minorticks_off()
    ax.set(xlabel="ours / the paper's number (bar: 90% interval; dot: all our seeds)",
           title="The paper's number (1) against our interval")
    for name, color in VERDICT_COLORS.items():
        ax.plot([], [], color=color, lw=2.5, label=name)
    ax.legend(fontsize=7, loc="lower right")
    save(fig, path)
