"""
Forecast grokking part-way through a run: from what a run has logged up to a fraction t of its
budget (its `--steps`), will its test loss reach 0.01 (runfiles.GROK) within the budget, and at
which step? Read from every committed pack (reproduction/<experiment>/runs.npz), evaluated
leave-one-configuration-out: a run is forecast by models fit on the runs of the other
configurations only (a configuration: the config less its seeds, budget and logging periods),
never on a seed of its own.

    python experiments/forecast.py     # the table; reproduction/forecast.png

At each t a run is forecast only while it is pending: not yet at test loss 0.01 by step t x
budget (a run that has generalized needs no forecast). The methods, side by side:
  forecaster         logistic regression (will it generalize?) and ridge regression on log10
                     of the step (of the runs that do), on features of the metrics logged up to
                     t x budget (`features`), written in numpy;
  nearest config     the nearest other configuration (`config_distance`: fewest config fields
                     differing, then the smallest gap): the share of its pending runs that
                     generalize, the median step of those that do (as a share of budget);
  global median      the median step (as a share of budget) of every other configuration's
                     pending runs that generalize; one score for every run, so AUROC 0.5;
  test-loss trend    log10 test loss over the last half of the window, extrapolated to 0.01;
  weight-norm rule   log10 weight norm over the last half of the window, extrapolated to the
                     share of its peak at which the other configurations' runs generalized;
  restricted loss    the same rule for Nanda et al.'s restricted loss, on the runs whose
                     analysis.npz holds it (checkpoints, not every logged step). As Nanda et
                     al. define it, it keeps the key frequencies of the run's final checkpoint,
                     so this rule alone sees part of the future: an optimistic baseline.
A rule's score for the AUROC is minus its forecast step over the budget (never: -inf). Every
forecast step is at least the present step t x budget. The inter / intra-class distance ratio of
arXiv 2604.20923 needs each class's hidden representations, which no pack holds (checkpoints
stay out of them): not available here.
"""
import glob
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pack  # noqa: E402
import plots  # noqa: E402
from config import Config  # noqa: E402
from summary import first_at_or_above, markdown  # noqa: E402
from runfiles import (GROK, Stop, check_analysis, check_metrics, first_below, message,  # noqa: E402
                      printable)
from stats import sign_test, u_statistic  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
REPRO = os.path.join(HERE, "reproduction")
FIGURE = os.path.join(REPRO, "forecast.png")
FRACTIONS = (0.05, 0.1, 0.2, 0.3, 0.5)  # of the budget, the points at which a run is forecast
TOLERANCE = 0.2   # a forecast step within 20% of the true one counts as good (the lead time)
MIN_ROWS = 5      # metric rows a run needs by the first fraction's step, for any trend to fit
COLUMNS = ("test_loss", "train_loss", "test_acc", "train_acc", "weight_norm", "update_norm")  # of
# metrics.npz, besides step, that a forecast reads
RIDGE = 1.0       # L2 penalty of both models on standardised features (not on the intercept)
NEWTON_STEPS = 50  # iterations of the logistic regression's Newton method (it converges in ~10)
NOT_KEY = ("seed", "data_seed", "steps", "schedule_steps", "eval_every", "ckpt_every")  # a
# configuration is the config without these: its seeds, and what only says how long or how
# often a run logs. Runs that differ only there train alike, so they are held out together.
FEATURES = ("log10 step", "log10 test loss", "log10 min test loss", "test-loss trend",
            "log10 train loss", "train-loss trend", "test acc", "train acc",
            "log10 weight norm / peak", "weight-norm trend", "log10 update norm",
            "share of the window since train acc 0.99")
METHODS = ("forecaster", "nearest config", "global median", "test-loss trend",
           "weight-norm rule")
RESTRICTED = "restricted-loss rule"
SAME = "forecaster, the same runs"  # the forecaster on the restricted-loss rule's runs
BY_EXPERIMENT = 0.1  # the fraction at which the report breaks the forecasts down by experiment


# ---------------------------------------------------------------- the runs

def load_runs(repro=REPRO):
    """(runs, skipped): every run of every pack that can be forecast, as dicts (experiment,
    name, key, budget, grok: the step of test loss <= GROK or None, metrics, analysis); skipped:
    {reason: {experiment: count}} of those left out."""
    runs, skipped, seen = [], {}, set()
    for path in sorted(glob.glob(os.path.join(repro, "*", pack.PACK))):
        exp = os.path.basename(os.path.dirname(path))
        for name, files in pack.read(path).items():
            cfg = checked_config(path, name, files)
            run = dict(experiment=exp, name=name, key=config_key(cfg), cfg=cfg,
                       budget=int(cfg["steps"]), metrics=files["metrics.npz"],
                       analysis=files.get("analysis.npz", {}))
            full = json.dumps(cfg, sort_keys=True)
            why = "a copy of a run in another pack" if full in seen else unusable(run)
            seen.add(full)
            if why:
                skipped.setdefault(why, {}).setdefault(exp, 0)
                skipped[why][exp] += 1
                continue
            run["grok"] = first_below(run["metrics"]["step"], run["metrics"]["test_loss"])
            runs.append(run)
    if not runs:
        raise Stop(f"no runs to forecast in {repro}/*/{pack.PACK}")
    return runs, skipped


def checked_config(path, name, files):
    """A pack's run's config.json as a dict, if it is a run's config and its metrics hold what
    a forecast reads; else Stop naming the run."""
    where = f"{printable(path)}: run {name}"
    try:
        cfg = json.loads(files["config.json"])
        Config.saved(cfg).check()
        if "steps" not in cfg or "loss" not in cfg:  # load_runs and unusable read them
            raise ValueError("no steps or no loss")
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # none, not JSON, not a run's
        raise Stop(f"{where}: not a run's config ({message(e)})") from None
    check_metrics(files.get("metrics.npz", {}), f"{where}: metrics.npz", COLUMNS)
    check_analysis(files.get("analysis.npz", {}), f"{where}: analysis.npz", ("restricted_loss",))
    return cfg


def config_key(cfg):
    """A configuration: the config less NOT_KEY, as text (equal for the seeds of one)."""
    return json.dumps({k: v for k, v in cfg.items() if k not in NOT_KEY}, sort_keys=True)


def unusable(run):
    """Why a run cannot be forecast, or None."""
    cfg, m = run["cfg"], run["metrics"]
    if not len(m["step"]):
        return "no metric rows"
    if cfg["loss"] != "ce":  # StableMax's logged test loss is its own, not cross-entropy's
        return "trained on another loss: its logged test loss is not softmax cross-entropy"
    if not np.all(np.isfinite(m["test_loss"])):
        return "a non-finite test loss logged"
    grok = first_below(m["step"], m["test_loss"])
    if grok is None and m["step"][-1] < run["budget"]:
        return "stopped before its budget without test loss 0.01: its outcome is unknown"
    if np.sum(m["step"] <= FRACTIONS[0] * run["budget"]) < MIN_ROWS:
        return f"fewer than {MIN_ROWS} metric rows by {FRACTIONS[0]:g} of its budget"
    return None


def window(arrays, c):
    """The rows of a dict of per-step arrays (metrics, or an analysis's per-checkpoint ones)
    logged at steps <= c: all a forecast at step c may read."""
    keep = arrays["step"] <= c
    return {k: v[keep] for k, v in arrays.items()
            if np.ndim(v) == 1 and len(v) == len(keep)}


# ---------------------------------------------------------------- features and rules

def slope(x, y):
    """Least-squares slope of y on x; 0 with fewer than two points."""
    if len(x) < 2 or np.ptp(x) == 0:
        return 0.0
    x = x - x.mean()
    return float(np.dot(x, y - y.mean()) / np.dot(x, x))


def log10(v):
    return np.log10(np.maximum(v, 1e-30))


def features(metrics, c):
    """The forecaster's inputs at step c, from the metric rows logged at steps <= c only:
    levels now, trends over the last half of the window (the change of log10 over c steps),
    and how long ago the run memorised its training set."""
    m = window(metrics, c)
    s, half = m["step"], m["step"] >= c / 2
    test, train, norm = log10(m["test_loss"]), log10(m["train_loss"]), log10(m["weight_norm"])
    update = m["update_norm"][half]
    update = update[np.isfinite(update)]
    memorised = first_at_or_above(s, m["train_acc"], 0.99)
    return np.array([
        np.log10(c), test[-1], test.min(), c * slope(s[half], test[half]),
        train[-1], c * slope(s[half], train[half]), m["test_acc"][-1], m["train_acc"][-1],
        norm[-1] - norm.max(), c * slope(s[half], norm[half]),
        float(np.median(log10(update))) if len(update) else 0.0,
        0.0 if memorised is None else 1 - memorised / c])


def trend_step(steps, values, level, c):
    """The step at which log10 of a measure, fit by a line over the last half of its window
    (steps <= c), reaches `level`: c if it is already there, np.inf if it is not falling."""
    w = window(dict(step=steps, v=values), c)
    if not len(w["step"]):
        return np.inf
    if w["v"][-1] <= level:
        return float(c)
    half = w["step"] >= c / 2
    x, y = w["step"][half], log10(w["v"][half])
    b = slope(x, y)
    if b >= 0:
        return np.inf
    now = y.mean() + b * (c - x.mean())  # the fit's value at c
    return float(c + max(0.0, (log10(level) - now) / b))


def norm_share_at_grok(run):
    """The weight norm at the run's generalization over its peak before it."""
    m = window(run["metrics"], run["grok"])
    return float(m["weight_norm"][-1] / m["weight_norm"].max())


def restricted_at_grok(run):
    """Nanda et al.'s restricted loss at the run's generalization (between checkpoints)."""
    a = run["analysis"]
    return float(np.interp(run["grok"], a["step"], a["restricted_loss"]))


def has_restricted(run, c):
    """Whether the run's analysis holds the restricted loss at two checkpoints <= c at least."""
    a = run["analysis"]
    return "restricted_loss" in a and np.sum(a["step"] <= c) >= 2


# ---------------------------------------------------------------- models, in numpy

def standardise(X, ref):
    """X scaled by ref's column means and standard deviations (a constant column: by 1)."""
    mu, sd = ref.mean(0), ref.std(0)
    return (X - mu) / np.where(sd > 0, sd, 1.0)


def with_intercept(X):
    return np.hstack([np.ones((len(X), 1)), X])


def fit_logistic(X, y, penalty=RIDGE):
    """Weights of an L2-penalised logistic regression (intercept first, not penalised), by
    Newton's method: deterministic."""
    A, w = with_intercept(X), np.zeros(X.shape[1] + 1)
    P = penalty * np.eye(len(w))
    P[0, 0] = 0.0
    for _ in range(NEWTON_STEPS):
        p = 1 / (1 + np.exp(-A @ w))
        grad = A.T @ (p - y) + P @ w
        hess = A.T @ (A * (p * (1 - p))[:, None]) + P + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def fit_ridge(X, y, penalty=RIDGE):
    """Weights of a ridge regression (intercept first, not penalised)."""
    A = with_intercept(X)
    P = penalty * np.eye(A.shape[1])
    P[0, 0] = 0.0
    return np.linalg.solve(A.T @ A + P, A.T @ y)


def predict(w, X):
    return with_intercept(X) @ w


def auroc(scores, labels):
    """The probability that a positive scores above a negative (ties count half): Mann-Whitney's
    U over the pairs; None with no positive or no negative."""
    scores, labels = np.asarray(scores, float), np.asarray(labels, bool)
    n1, n0 = labels.sum(), (~labels).sum()
    if n1 == 0 or n0 == 0:
        return None
    return float(u_statistic(scores[labels], scores[~labels]) / (n1 * n0))  # a positive above


# ---------------------------------------------------------------- nearest configuration

def config_distance(a, b):
    """(fields that differ, their gap) of two configs (dicts without NOT_KEY): fewest differing
    fields first, then the smallest gap: |log10 ratio| summed over the numeric fields that
    differ, a decade (1) for each other one (a placement, an optimizer)."""
    differ = [k for k in a if a[k] != b.get(k)]
    numeric = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    gap = sum(abs(np.log10((abs(a[k]) + 1e-12) / (abs(b[k]) + 1e-12)))
              if numeric(a[k]) and numeric(b.get(k)) else 1.0 for k in differ)
    return len(differ), gap


def nearest(key, keys):
    """The keys among `keys` nearest to `key` (ties: all of them)."""
    me = json.loads(key)
    d = {k: config_distance(me, json.loads(k)) for k in keys}
    best = min(d.values())
    return [k for k in keys if d[k] == best]


# ---------------------------------------------------------------- leave one configuration out

def outcome(runs):
    """(generalized within budget: bool array, its step over the budget: nan where not)."""
    y = np.array([r["grok"] is not None and r["grok"] <= r["budget"] for r in runs])
    share = np.array([r["grok"] / r["budget"] if y_ else np.nan for r, y_ in zip(runs, y)])
    return y, share


def forecast_at(runs, t):
    """Every method's forecast for every run pending at t (of its budget), each run forecast
    from the runs of the other configurations only: {method: (score, step)} over `pending`,
    and pending. A score orders runs by how likely they generalize within their budget."""
    cut = lambda r: t * r["budget"]
    pending = [r for r in runs if r["grok"] is None or r["grok"] > cut(r)]
    X = np.array([features(r["metrics"], cut(r)) for r in pending])
    y, share = outcome(pending)
    keys = np.array([r["key"] for r in pending])
    budget = np.array([r["budget"] for r in pending], float)
    c = t * budget
    out = {m: (np.full(len(pending), np.nan), np.full(len(pending), np.nan))
           for m in METHODS + (RESTRICTED,)}

    def put(method, i, score, step):
        out[method][0][i], out[method][1][i] = score, np.maximum(step, c[i])

    rule = lambda step, i: -step / budget[i]  # a rule's score: sooner, likelier
    known = [has_restricted(r, c_) for r, c_ in zip(pending, c)]
    for i, r in enumerate(pending):  # a rule that needs nothing from other configurations
        s = trend_step(r["metrics"]["step"], r["metrics"]["test_loss"], GROK, c[i])
        put("test-loss trend", i, rule(s, i), s)
    for key in sorted(set(keys)):
        test, train = keys == key, keys != key
        Xs = standardise(X, X[train])
        p = 1 / (1 + np.exp(-predict(fit_logistic(Xs[train], y[train]), Xs[test])))
        fit = train & y
        step = 10 ** predict(fit_ridge(Xs[fit], np.log10(share[fit] * budget[fit])), Xs[test])
        put("forecaster", test, p, step)
        put("global median", test, 0.0, np.median(share[fit]) * budget[test])  # one score: 0.5
        near = np.isin(keys, nearest(key, sorted(set(keys[train]))))
        put("nearest config", test, np.mean(y[near]),
            np.median(share[near & y]) * budget[test] if (near & y).any()
            else np.inf)  # its runs pending at t never generalize: neither will this one
        level = np.median([norm_share_at_grok(r) for r, f in zip(pending, fit) if f])
        for i in np.nonzero(test)[0]:
            m = pending[i]["metrics"]
            peak = window(m, c[i])["weight_norm"].max()
            s = trend_step(m["step"], m["weight_norm"], level * peak, c[i])
            put("weight-norm rule", i, rule(s, i), s)
        levels = [restricted_at_grok(r) for r, f, k in zip(pending, fit, known) if f and k]
        for i in np.nonzero(test)[0]:
            if known[i] and levels:
                a = pending[i]["analysis"]
                s = trend_step(a["step"], a["restricted_loss"], np.median(levels), c[i])
                put(RESTRICTED, i, rule(s, i), s)
    return out, pending


def scores(score, step, pending):
    """(AUROC, median |forecast - true| / true step over the runs that generalize, how many
    of each) of one method's forecasts; runs it has no forecast for (nan) left out."""
    y, share = outcome(pending)
    has = ~np.isnan(score)
    true = share * np.array([r["budget"] for r in pending])
    err = np.abs(step - true) / true
    hit = has & y
    return (auroc(score[has], y[has]), float(np.median(err[hit])) if hit.any() else None,
            int(has.sum()), int(hit.sum()))


def lead(step, pending, t):
    """Over the runs that generalize: the median of their steps still ahead at t (true step -
    t x budget), and of that as a share of their true step."""
    y, share = outcome(pending)
    budget = np.array([r["budget"] for r in pending])
    has = y & ~np.isnan(step)
    ahead = (share - t) * budget
    return float(np.median(ahead[has])), float(np.median((ahead / (share * budget))[has]))


def evaluate(runs, fractions=FRACTIONS):
    """{t: ({method: scores}, {method: lead}, forecasts, pending)} of every method at every
    fraction (forecasts: forecast_at's), the forecaster also on the restricted-loss rule's runs
    alone (SAME)."""
    done = {}
    for t in fractions:
        out, pending = forecast_at(runs, t)
        sub = ~np.isnan(out[RESTRICTED][0])
        out[SAME] = tuple(np.where(sub, v, np.nan) for v in out["forecaster"])
        table, ahead = {}, {}
        for method, (score, step) in out.items():
            table[method] = scores(score, step, pending)
            ahead[method] = lead(step, pending, t) if table[method][3] else None
        done[t] = table, ahead, out, pending
    return done


# ---------------------------------------------------------------- the report

def pct(x):
    return "-" if x is None else "inf" if x == np.inf else f"{100 * x:.0f}%"


def cell(scored):
    """'AUROC / median error (runs; that generalize)' of scores()'s tuple."""
    a, err, n, k = scored
    return "-" if n == 0 else f"{'-' if a is None else f'{a:.2f}'} / {pct(err)} ({n}; {k})"


def first_good(done, method):
    """(t, lead) of the first fraction from which on a method's median error stays below
    TOLERANCE (at every later fraction too); (None, None): none."""
    good = None
    for t, (table, ahead, _, _) in done.items():
        err = table[method][1]
        if err is None or err >= TOLERANCE:
            good = None
        elif good is None:
            good = t, ahead[method]
    return good or (None, None)


def report(done, runs, skipped):
    """The markdown printed: what was used and left out, then the table."""
    used = {}
    for r in runs:
        used[r["experiment"]] = used.get(r["experiment"], 0) + 1
    lines = [f"{len(runs)} runs of {len({r['key'] for r in runs})} configurations used: "
             + ", ".join(f"{e} {n}" for e, n in sorted(used.items())) + "."]
    for why, by in sorted(skipped.items()):
        lines.append(f"Left out, {why}: " + ", ".join(f"{e} {n}" for e, n in sorted(by.items()))
                     + ".")
    head = ["method"] + [f"t = {t:g}: AUROC / median error (runs; generalize)"
                         for t in done] + [f"first t from which the median error stays < "
                                           f"{pct(TOLERANCE)}: median steps still ahead "
                                           "(share of the true step)"]
    rows = []
    for method in METHODS + (RESTRICTED, SAME):
        cells = [cell(table[method]) for table, _, _, _ in done.values()]
        t, ahead = first_good(done, method)
        cells.append("not by t = " + f"{max(done):g}" if t is None else
                     f"t = {t:g}: {ahead[0]:.0f} ({pct(ahead[1])})" if ahead else f"t = {t:g}")
        rows.append([method] + cells)
    return "\n\n".join(lines) + "\n\n" + markdown(head, rows)


def by_experiment(done, t=BY_EXPERIMENT):
    """At fraction t, the forecaster and the nearest configuration experiment by experiment."""
    _, _, out, pending = done[t]
    exps = np.array([r["experiment"] for r in pending])
    rows = []
    for exp in sorted(set(exps)):
        mine = exps == exp
        pick = lambda method: tuple(np.where(mine, v, np.nan) for v in out[method])
        rows.append([exp] + [cell(scores(*pick(m), pending)) for m in
                             ("forecaster", "nearest config", "global median")])
    return markdown([f"experiment, at t = {t:g}"] + [f"{m}: AUROC / median error (runs; that "
                                                     "generalize)" for m in
                                                     ("forecaster", "nearest config",
                                                      "global median")], rows)


def versus(done, t, other="nearest config"):
    """Configuration by configuration at fraction t: whether the forecaster's median error over
    its pending runs that generalize is below another method's (True), above (False) or equal
    (None); -> [(key, True / False / None)]."""
    _, _, out, pending = done[t]
    y, share = outcome(pending)
    true = share * np.array([r["budget"] for r in pending])
    err = {m: np.abs(out[m][1] - true) / true for m in ("forecaster", other)}
    keys = np.array([r["key"] for r in pending])
    result = []
    for key in sorted(set(keys[y])):
        mine = (keys == key) & y
        a, b = (float(np.median(err[m][mine])) for m in ("forecaster", other))
        result.append((key, None if a == b else bool(a < b)))
    return result


def figure(done, path=FIGURE):
    """Median relative error of the forecast step against the fraction of the budget seen."""
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ts = list(done)
    for i, method in enumerate(METHODS + (RESTRICTED,)):
        err = [done[t][0][method][1] for t in ts]
        gaps = [f"{t:g}" for t, e in zip(ts, err) if e == np.inf]
        ax.plot(ts, [np.nan if e is None else 100 * e for e in err], "o-", color=f"C{i}",
                label=method + (" (its runs)" if method == RESTRICTED else "")
                + (f" (at t = {', '.join(gaps)}: infinite)" if gaps else ""))
    ax.axhline(100 * TOLERANCE, color="k", ls=":", lw=1, label=f"{pct(TOLERANCE)} error")
    ax.set(yscale="log", xlabel="fraction of the budget seen (t)",
           ylabel="median |forecast - true| / true step, %",
           title="Forecast of the step of test loss <= 0.01, leave one configuration out")
    ax.legend(fontsize=8)
    plots.save(fig, path)


def main(repro=REPRO, path=FIGURE):
    """Print the report; draw the figure (path None: not)."""
    start = time.process_time()
    runs, skipped = load_runs(repro)
    done = evaluate(runs)
    print(report(done, runs, skipped))
    print(by_experiment(done))
    for other in ("nearest config", "global median"):
        print(f"Configuration by configuration, the forecaster's median error against the "
              f"{other}'s: below in / above in / equal in (one-sided sign test p):\n")
        for t in done:
            v = [x for _, x in versus(done, t, other)]
            print(f"- t = {t:g}: {v.count(True)} / {v.count(False)} / {v.count(None)} "
                  f"(p {sign_test(v.count(True), v.count(False), 'greater'):.3g})")
        print()
    print("The inter / intra-class distance ratio (arXiv 2604.20923): not available (the packs "
          "hold no hidden representations).\n")
    if path:
        figure(done, path)
    print(f"({time.process_time() - start:.0f} s of CPU)")
    return done


if __name__ == "__main__":
    if sys.argv[1:] in (["-h"], ["--help"]):
        print(__doc__.strip())
        sys.exit(0)
    if sys.argv[1:]:  # one line, as every other error: the help is --help's
        sys.exit(f"error: forecast.py takes no argument (got {' '.join(sys.argv[1:])}); "
                 "--help says what it does")
    try:
        main()
    except Stop as e:
        sys.exit(f"error: {e}")
