"""
The forecaster of experiments/forecast.py on made-up runs: its AUROC against the pairwise count,
its features on a hand-made curve, that nothing after the present step is read, and that a run
is never forecast by a model fit on a seed of its own configuration.

    python -m pytest -q test_forecast.py
"""
import io
import itertools
import json
import os
import sys

import numpy as np
import pytest

from config import Config
from runfiles import Stop

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import forecast as F  # noqa: E402


def made_run(seed, lr, grok, budget=1000, experiment="made"):
    """A run of configuration lr (its key) that memorises by step 100 and whose test loss falls
    log-linearly from 1 to 0.001 (at step `grok`: 0.01; None: it stays at 1), its weight norm
    peaking at step 100."""
    step = np.arange(0, budget + 1, 10)
    test = np.ones(len(step)) if grok is None else 10 ** np.clip(-2 * step / grok, -3, 0)
    norm = 60 - np.abs(step - 100) / 100 + seed
    m = dict(step=step, test_loss=test, test_acc=np.clip(1 - test, 0, 1),
             train_loss=np.maximum(1e-3, 1 - step / 100), train_acc=np.minimum(1, step / 100),
             weight_norm=norm, update_norm=np.full(len(step), 1e-2 * (1 + seed)))
    cfg = dict(lr=lr, seed=seed, steps=budget, loss="ce")
    return dict(experiment=experiment, name=f"lr{lr}_s{seed}", key=F.config_key(cfg), cfg=cfg,
                budget=budget, metrics=m, analysis={},
                grok=F.first_below(step, test))


def made_runs():
    """Four configurations of three seeds: three generalize (sooner with a larger lr), one not."""
    return [made_run(seed, lr, None if lr == 1e-4 else int(400 * 1e-3 / lr) + 50 * seed)
            for lr in (1e-4, 5e-4, 1e-3, 2e-3) for seed in range(3)]


def test_auroc_is_the_share_of_positive_negative_pairs_ordered_right():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=40), 1)  # rounded: ties, which count half
    labels = rng.random(40) < 0.4
    pairs = [(p, n) for p, n in itertools.product(scores[labels], scores[~labels])]
    count = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)
    assert F.auroc(scores, labels) == pytest.approx(count)
    assert F.auroc([0.1, 0.9, 0.5], [False, True, False]) == 1.0
    assert F.auroc([-np.inf, -np.inf, 0.0], [True, False, False]) == pytest.approx(0.25)
    assert F.auroc([0.3, 0.4], [True, True]) is None  # no negative


def test_features_of_a_hand_made_curve():
    step = np.arange(0, 1001, 10)
    m = dict(step=step, test_loss=10 ** (-step / 500), test_acc=step / 1000,
             train_loss=np.full(len(step), 1e-3), train_acc=np.minimum(1, step / 100),
             weight_norm=10 ** np.where(step < 200, step / 200, 1 - (step - 200) / 600),
             update_norm=np.r_[np.nan, np.full(len(step) - 1, 1e-2)])
    f = dict(zip(F.FEATURES, F.features(m, 500)))
    assert len(f) == len(F.FEATURES)
    want = {"log10 step": np.log10(500), "log10 test loss": -1, "log10 min test loss": -1,
            "test-loss trend": -1,  # log10 test loss falls by 1 every 500 steps
            "log10 train loss": -3, "train-loss trend": 0, "test acc": 0.5, "train acc": 1,
            "log10 weight norm / peak": -0.5,  # from 10^1 at step 200 to 10^0.5 at 500
            "weight-norm trend": -500 / 600, "log10 update norm": -2,
            "share of the window since train acc 0.99": 1 - 100 / 500}  # logged at step 100
    for k, v in want.items():
        assert f[k] == pytest.approx(v, abs=1e-9), k
    # 10^(-step / 500) reaches 0.01 at step 1000, from its trend over steps 250-500
    assert F.trend_step(step, m["test_loss"], 0.01, 500) == pytest.approx(1000)
    assert F.trend_step(step, m["test_loss"], 0.5, 500) == 500  # already below: now
    assert F.trend_step(step, 1 + 0 * step, 0.01, 500) == np.inf  # flat: never


def test_nothing_after_the_present_step_is_read():
    run, c = made_run(0, 1e-3, 600), 300
    before = F.features(run["metrics"], c)
    changed = {k: v.copy() for k, v in run["metrics"].items()}
    later = changed["step"] > c
    for k in changed:
        if k != "step":
            changed[k][later] = np.random.default_rng(1).random(later.sum()) * 7
    assert np.array_equal(F.features(changed, c), before)
    assert F.trend_step(changed["step"], changed["test_loss"], 0.01, c) == F.trend_step(
        run["metrics"]["step"], run["metrics"]["test_loss"], 0.01, c)
    # a run's whole forecast, every method's, is the same whatever its curve does after t x
    # budget: here it never generalizes instead of at step 600
    runs = made_runs()
    i = next(i for i, r in enumerate(runs) if r["grok"] and r["grok"] > 0.2 * r["budget"])
    out, pending = F.forecast_at(runs, 0.2)
    m = runs[i]["metrics"]
    after = m["step"] > 0.2 * runs[i]["budget"]
    m["test_loss"] = np.where(after, 1.0, m["test_loss"])
    m["weight_norm"] = np.where(after, 1e3, m["weight_norm"])
    runs[i]["grok"] = None
    out2, pending2 = F.forecast_at(runs, 0.2)
    j = next(j for j, r in enumerate(pending) if r is runs[i])
    for method in out:
        assert np.array_equal(out[method][0][j], out2[method][0][j], equal_nan=True), method
        assert np.array_equal(out[method][1][j], out2[method][1][j], equal_nan=True), method


def test_a_run_is_never_forecast_from_its_own_configuration(monkeypatch):
    """The models see ids in place of features (and no scaling): each fit's runs and each
    prediction's runs are recorded, and the nearest configuration is never the held-out one."""
    runs = made_runs()
    for n, r in enumerate(runs):
        r["metrics"]["id"] = np.full(len(r["metrics"]["step"]), float(n))
    events = []
    fit_logistic, fit_ridge, predict, nearest = F.fit_logistic, F.fit_ridge, F.predict, F.nearest

    def record(kind, f):
        def wrapped(X, *a):
            events.append((kind, {int(i) for i in X[:, 0]}))
            return f(X, *a)
        return wrapped
    monkeypatch.setattr(F, "features", lambda m, c: np.array([m["id"][0], m["id"][0] % 3]))
    monkeypatch.setattr(F, "standardise", lambda X, ref: X)
    monkeypatch.setattr(F, "fit_logistic", record("logistic", fit_logistic))
    monkeypatch.setattr(F, "fit_ridge", record("ridge", fit_ridge))
    monkeypatch.setattr(F, "predict", lambda w, X: (events.append(("predict", {
        int(i) for i in X[:, 0]})), predict(w, X))[1])

    def checked_nearest(key, keys):
        assert key not in keys
        return nearest(key, keys)
    monkeypatch.setattr(F, "nearest", checked_nearest)
    key = lambda n: runs[n]["key"]
    _, pending = F.forecast_at(runs, 0.1)
    ids = {n for n, r in enumerate(runs) if any(r is p for p in pending)}
    fits = {"logistic": 0, "ridge": 0}
    for (kind, trained), (_, forecast) in zip(events[::2], events[1::2]):
        fits[kind] += 1
        held = {key(n) for n in forecast}
        assert len(held) == 1  # one configuration at a time
        assert not {key(n) for n in trained} & held
        others = {n for n in ids if key(n) not in held}
        if kind == "logistic":  # every pending run of every other configuration
            assert trained == others
        else:  # those that generalize
            assert trained == {n for n in others if runs[n]["grok"] is not None}
    assert fits == {"logistic": 4, "ridge": 4}


def test_models_against_their_optimality_conditions():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] + rng.normal(size=60) > 0).astype(float)
    w = F.fit_logistic(X, y, penalty=0.5)
    A = np.hstack([np.ones((60, 1)), X])
    p = 1 / (1 + np.exp(-A @ w))
    # the gradient of the penalised log-loss (intercept unpenalised) is zero at the optimum
    assert np.allclose(A.T @ (p - y) + 0.5 * np.r_[0, w[1:]], 0, atol=1e-8)
    t = X @ [1.0, -2.0, 0.5] + 3
    w = F.fit_ridge(X, t, penalty=2.0)
    # ridge as least squares on rows augmented by sqrt(penalty) x identity (not the intercept)
    aug = np.vstack([A, np.hstack([np.zeros((3, 1)), np.sqrt(2.0) * np.eye(3)])])
    assert np.allclose(w, np.linalg.lstsq(aug, np.r_[t, np.zeros(3)], rcond=None)[0])


def test_configurations_and_the_nearest_one():
    a = dict(lr=1e-3, wd=1.0, ln="pre", seed=3, data_seed=7, steps=10000, eval_every=10)
    assert F.config_key(a) == F.config_key({**a, "seed": 4, "data_seed": 8, "steps": 40000})
    assert F.config_key(a) != F.config_key({**a, "wd": 0.5})
    keys = [F.config_key({**a, **kw}) for kw in (dict(wd=0.5), dict(wd=0.9),
                                                   dict(wd=0.9, ln="off"), dict(ln="off"))]
    assert F.nearest(F.config_key(a), keys) == [keys[1]]  # one field differs, the closer wd
    assert F.config_distance(json.loads(keys[2]), json.loads(F.config_key(a)))[0] == 2


def test_outcome_needs_the_budget():
    runs = [made_run(0, 1e-3, 400), made_run(1, 1e-3, None)]
    runs[0]["budget"] = 300  # generalized after its budget: counts as not
    y, share = F.outcome(runs)
    assert not y.any() and np.isnan(share).all()


def test_lead_is_from_the_first_fraction_that_stays_good():
    row = lambda err: ({"m": (0.5, err, 10, 5)}, {"m": (100.0, 0.5)}, None, None)
    done = {0.1: row(0.1), 0.2: row(0.3), 0.3: row(0.15), 0.5: row(0.05)}
    assert F.first_good(done, "m") == (0.3, (100.0, 0.5))  # 0.1 is good, 0.2 not again
    done[0.5] = row(None)  # no run that generalizes is pending any more
    assert F.first_good(done, "m") == (None, None)


def a_pack(config, analysis=None, **metrics):
    """The bytes of a pack of one run, r, of this config.json text and these metrics (and this
    analysis, {column: array})."""
    files = {"metrics.npz": metrics, **({"analysis.npz": analysis} if analysis else {})}
    index = {"r": {"config.json": "text", **{
        f: {k: [str(v.dtype), list(v.shape)] for k, v in cols.items()}
        for f, cols in files.items()}}}
    columns = {f"{f}/{k}": v for f, cols in files.items() for k, v in cols.items()}
    out = io.BytesIO()
    np.savez(out, index=np.array(json.dumps(index)), **{"config.json": np.array([config])},
             **columns)
    return out.getvalue()


RUN = Config(steps=20).to_dict()  # a config.json as train.py writes it
CFG = json.dumps(RUN)
GOOD = a_pack(CFG, **made_run(0, 1e-3, 400, budget=20)["metrics"])


@pytest.mark.parametrize("data,expected", [
    (b"", "runs.npz: not a pack of runs (EOFError"),
    (GOOD[:len(GOOD) // 2], "runs.npz: not a pack of runs (BadZipFile"),
    (a_pack(json.dumps({**RUN, "colour": 1}), step=np.arange(3)),
     "run r: not a run's config (ValueError: unknown"),
    (a_pack("[]", step=np.arange(3)), "run r: not a run's config (TypeError: a JSON list"),
    (a_pack(json.dumps({**RUN, "frac": 2}), step=np.arange(3)),
     "run r: not a run's config (Stop: --frac 2"),
    (a_pack("{}", step=np.arange(3)),
     "run r: not a run's config (ValueError: no model, op, p, seed, steps"),
    (a_pack(json.dumps({k: v for k, v in RUN.items() if k != "loss"}), step=np.arange(3)),
     "run r: not a run's config (ValueError: no steps or no loss"),
    (a_pack(CFG, step=np.arange(3)),
     "incomplete {path}: run r: metrics.npz: no test_loss"),
    (a_pack(CFG, **made_run(0, 1e-3, 400, budget=20)["metrics"],
            analysis=dict(step=np.arange(3), restricted_loss=np.ones(2))),
     "corrupt {path}: run r: analysis.npz: restricted_loss has no row a checkpoint"),
], ids=["empty", "cut short", "unknown key", "not an object", "bad option", "empty object",
        "no loss", "no test loss", "analysis rows"])
def test_a_corrupt_pack_is_one_line_naming_it(data, expected, tmp_path):
    path = tmp_path / "exp" / "runs.npz"
    path.parent.mkdir()
    path.write_bytes(data)
    with pytest.raises(Stop) as e:
        F.load_runs(str(tmp_path))
    assert expected.format(path=path) in str(e.value) and "\n" not in str(e.value), str(e.value)
    assert str(path) in str(e.value)


def test_a_run_without_metric_rows_is_left_out_saying_why(tmp_path):
    run = made_run(0, 1e-3, 400, budget=20)
    run["metrics"] = {k: v[:0] for k, v in run["metrics"].items()}
    assert F.unusable(run) == "no metric rows"
    path = tmp_path / "exp" / "runs.npz"
    path.parent.mkdir()
    path.write_bytes(a_pack(CFG, **run["metrics"]))
    with pytest.raises(Stop, match="^no runs to forecast in "):
        F.load_runs(str(tmp_path))
