"""
The verdict rule on hand-made results, the verdict table on made-up runs, and REPRODUCTION.md's
verdict table against what `python experiments/claims.py verdicts` prints.

    python -m pytest -q test_verdicts.py
"""
import inspect
import json
import os
import sys

import numpy as np
import pytest

from config import Config
from conftest import table_rows

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import claims  # noqa: E402
import nanda  # noqa: E402
import plots  # noqa: E402
import render  # noqa: E402
import rule as V  # noqa: E402
import runsets  # noqa: E402
from runsets import Runs, where  # noqa: E402
from seedstats import grok_step  # noqa: E402
from singh import placement  # noqa: E402


def interval(paper, lo, hi, seeds=20, size=5, method="crossing", within=0):
    return dict(kind="interval", ours=(lo + hi) / 2, lo=lo, hi=hi, paper=paper, seeds=[seeds],
                size=size, method=method, within=within)


def ordering(p, p_opposite, share=0.8, test="rank", seeds=(5, 5)):
    return dict(kind="order", p=p, p_opposite=p_opposite, share=share, test=test,
                seeds=list(seeds))


@pytest.fixture
def calibrated(tmp_path, monkeypatch):
    """A made-up calibration: the coverage of each method at 5 and 20 seeds."""
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"crossing 5": {"5": 0.4, "20": 0.7}, "mean 1": {"5": 0.66}}))
    monkeypatch.setattr(V, "CALIBRATION", str(path))


def test_rule_on_intervals(calibrated):
    assert V.verdict(interval(100, 90, 110))[0] == "reproduced"
    assert V.verdict(interval(100, 100, 100))[0] == "reproduced"  # ends included
    assert V.verdict(interval(np.inf, 900, np.inf))[0] == "reproduced"  # never, as theirs
    assert V.verdict(interval(120, 90, 110))[0] == "not reproduced"
    assert V.verdict(interval(np.inf, 90, 110))[0] == "not reproduced"
    assert V.verdict(interval(120, 90, 110, seeds=5))[0] == "not reproduced"  # the same bar
    assert V.verdict(interval(231, 220, 230, within=10))[0] == "reproduced"  # one evaluation
    assert V.verdict(interval(241, 220, 230, within=10))[0] == "not reproduced"
    v, why = V.verdict(interval(120, 90, 110, seeds=3))  # fewer seeds than any calibrated
    assert v == "inconclusive" and "no coverage measured for 3 seeds" in why
    v, why = V.verdict(interval(100, 90, 110, seeds=1, size=1, method="mean"))
    assert v == "inconclusive" and "one run against one" in why
    # a computation with no seeds decides at its own precision
    assert V.verdict(interval(0.5, 0.5, 0.5, seeds=1, size=1, method="exact"))[0] == "reproduced"
    assert V.verdict(interval(0.6, 0.5, 0.5, seeds=1, size=1, method="exact"))[0] == \
        "not reproduced"
    # the label: the coverage measured at the largest calibrated count at or below ours
    assert V.coverage("crossing", 5, 12) == 0.4 and V.coverage("crossing", 5, 25) == 0.7
    assert V.coverage("mean", 1, 4) is None and V.coverage("mean", 5, 20) is None
    assert render.ours(interval(100, 90, 110, seeds=12)) == "100 [90, 110] (5-seed draws, 40% " \
                                                            "coverage)"


def test_rule_on_orderings_both_ways():
    assert V.verdict(ordering(0.01, 0.99))[0] == "reproduced"
    assert V.verdict(ordering(0.99, 0.01, share=0.1))[0] == "not reproduced"
    # neither way at p < 0.05: the seeds that would decide an effect of this size
    v, why = V.verdict(ordering(0.05, 1.0, share=1.0))
    assert v == "inconclusive" and "~4 seeds a side would decide" in why
    v, why = V.verdict(ordering(0.125, 1.0, share=1.0, test="sign", seeds=(3,)))
    assert v == "inconclusive" and "~5 seeds would decide" in why
    v, why = V.verdict(ordering(0.6, 0.5, share=0.4))
    assert v == "inconclusive" and "no effect" in why
    assert V.verdict(dict(kind="none", reason="not run")) == ("not addressed", "not run")


def test_the_rule_is_the_same_bar_both_ways(calibrated):
    """An ordering's mirror (p and the opposite's p swapped) gets the mirrored verdict, and an
    interval's verdict turns on whether the paper's number is inside, nothing else: the
    setting is a column of the table, not an argument of the rule."""
    mirror = {"reproduced": "not reproduced", "not reproduced": "reproduced",
              "inconclusive": "inconclusive"}
    for p in (0.001, 0.04, 0.06, 0.5, 1.0):
        for q in (0.001, 0.04, 0.06, 0.5, 1.0):
            if p < 0.05 and q < 0.05:
                continue  # both sides at once: no real test gives that
            v = V.verdict(ordering(p, q, share=0.5))[0]
            assert V.verdict(ordering(q, p, share=0.5))[0] == mirror[v]
    for seeds in (5, 20, 40):
        assert V.verdict(interval(100, 90, 110, seeds))[0] == "reproduced"
        assert V.verdict(interval(80, 90, 110, seeds))[0] == "not reproduced"
        assert V.verdict(interval(120, 90, 110, seeds))[0] == "not reproduced"
    assert list(inspect.signature(V.verdict).parameters) == ["res"]


def made_up_runs(tmp_path):
    """reproduction/ with copies 'fast' (seeds groking at 1000-1400), 'slow' (5000-5400) and
    'short' (one run stopped early), each a folder (the loader below reads them from memory)."""
    runs = {}
    step = np.arange(0, 10001, 100)
    for copy, start in (("fast", 1000), ("slow", 5000)):
        os.makedirs(tmp_path / copy)
        for seed in range(5):
            cross = start + 100 * seed
            m = dict(step=step, test_loss=np.where(step < cross, 1.0, 0.001),
                     test_acc=np.where(step < cross, 0.1, 1.0))
            runs.setdefault(str(tmp_path / copy), {})[f"s{seed}"] = (Config(seed=seed), m, {})
    os.makedirs(tmp_path / "short")  # a run stopped at step 3000 of 10000, short of 0.01
    cut = dict(step=step[:31], test_loss=np.ones(31), test_acc=np.zeros(31))
    runs[str(tmp_path / "short")] = {"s0": (Config(seed=0, steps=10000), cut, {})}
    return lambda root, analysed=False, keep=lambda c: True: {
        k: v for k, v in runs[root].items() if keep(v[0])}


def test_table_on_made_up_runs(tmp_path, monkeypatch, calibrated):
    monkeypatch.setattr(runsets, "REPRO", str(tmp_path))
    load = made_up_runs(tmp_path)
    step = lambda m, r: grok_step(m)
    row = lambda claim, test, like=True: V.Claim(paper="P", claim=claim, value="-", source="S",
                                                 statistic="-", like=like, differs="-",
                                                 section="grids", test=test)
    made = [row("fast at 1400", V.crossing(Runs("fast"), 1400)),
            row("fast at 3000", V.crossing(Runs("fast"), 3000)),
            row("fast before slow", V.order([Runs("fast"), Runs("slow")], step)),
            row("slow before fast", V.order([Runs("slow"), Runs("fast")], step)),
            row("slow before fast, unlike", V.order([Runs("slow"), Runs("fast")], step),
                like=False),
            row("every seed groks", V.signs(Runs("slow"), lambda m, r: step(m, r) is not None)),
            row("a copy not committed", V.crossing(Runs("absent"), 100)),
            row("no run kept", V.crossing(Runs("fast", where("seed > 9", lambda c: c.seed > 9)),
                                          100)),
            row("a run stopped short", V.crossing(Runs("short"), 100))]
    done = V.evaluate(load, made)
    got = {c.claim: (v, res) for c, res, v, _ in done}
    # the seed-mean curve of the five crosses when the last seed does: 1400, in every draw at most
    assert got["fast at 1400"][1]["ours"] == 1400 and got["fast at 1400"][0] == "reproduced"
    assert got["fast at 3000"][0] == "not reproduced"  # outside: the same bar as inside
    assert got["fast before slow"][0] == "reproduced"
    assert got["fast before slow"][1]["p"] == pytest.approx(1 / 252)  # one split of 10 in 252
    assert got["slow before fast"][0] == "not reproduced"
    assert got["slow before fast, unlike"][0] == "not reproduced"  # the setting is a column
    assert got["every seed groks"][0] == "reproduced"  # 5 of 5: p 1/32
    assert got["a copy not committed"][0] == "not addressed"
    assert "reproduction/absent is not committed" in got["a copy not committed"][1]["reason"]
    assert got["no run kept"][0] == "not addressed"
    assert got["a run stopped short"][0] == "not addressed"  # never there, but stopped early
    assert "seeds [0] stopped before their budget" in got["a run stopped short"][1]["reason"]
    table = render.table(done)
    rows = table_rows(table)
    assert len(table.splitlines()) == 2 + len(made)  # header, rule line, a row a claim
    assert [(r["paper"], r["claim"]) for r in rows] == [("P", c.claim) for c in made]
    ours = "ours: value [interval, its measured coverage] or one-sided p"
    assert rows[0][ours].startswith("1400 [") and rows[0]["verdict"].startswith("**reproduced**")
    assert rows[0]["command"] == "`python experiments/claims.py grids`"
    assert rows[2][ours].startswith("p 0.00397")  # fast before slow
    reg = render.registry(made)
    rows = table_rows(reg, "claim")
    assert len(reg.splitlines()) == 2 + len(made) and list(rows) == [c.claim for c in made]
    row = rows["fast at 1400"]
    assert (row["paper"], row["runs (reproduction/)"], row["statistic"]) == ("P", "fast", "-")
    assert row["like for like, and what differs"] == "-"
    # the runs a test reads, as it selects them
    assert rows["fast before slow"]["runs (reproduction/)"] == "fast against slow"
    assert rows["no run kept"]["runs (reproduction/)"] == "fast (seed > 9)"
    assert rows["slow before fast, unlike"]["like for like, and what differs"] \
        == "not like for like: -"  # the row that is not like for like
    rows = render.forest_rows(done)
    assert [r[0] for r in rows] == ["P: fast at 1400", "P: fast at 3000"]
    plots.forest(str(tmp_path / "verdicts.png"), rows)
    assert os.path.getsize(tmp_path / "verdicts.png") > 0


def test_regularizer_claims_pick_their_runs(tmp_path, monkeypatch):
    """Appendix D's rows on made-up copies: every dropout run reaches test accuracy 0.95 and the
    L1 run does not (the paper's way); float32 jumps and float64 does not."""
    monkeypatch.setattr(runsets, "REPRO", str(tmp_path))
    step = np.arange(0, 40001, 1000)
    smooth = np.geomspace(1, 1e-6, len(step))
    jumpy = smooth.copy()
    jumpy[[10, 20]] *= 1e3  # two evaluations > 10x the one before
    made = {"nanda_cleanup": [Config(seed=s, steps=40000) for s in range(3)],
            "nanda_regularizers": [Config(seed=0, steps=40000, wd=0.0, dropout=p)
                                   for p in (0.1, 0.2)]
            + [Config(seed=0, steps=40000, wd=0.0, l1=1e-5),
               Config(seed=0, steps=40000, loss_dtype="float32")]}
    runs = {}
    for copy, cfgs in made.items():
        os.makedirs(tmp_path / copy)
        for i, c in enumerate(cfgs):
            acc = np.where(step >= 20000, 1.0, 0.1) if c.l1 == 0 else np.full(len(step), 0.3)
            m = dict(step=step, test_loss=1 - acc, test_acc=acc,
                     train_loss=jumpy if c.loss_dtype == "float32" else smooth)
            runs.setdefault(str(tmp_path / copy), {})[f"r{i}"] = (c, m, {})
    load = lambda root, analysed=False, keep=lambda c: True: {
        k: v for k, v in runs[root].items() if keep(v[0])}
    dropout, l1, float32 = [res for _, res, _, _ in
                            V.evaluate(load, nanda.regularizer_claims())]
    assert (dropout["share"], dropout["seeds"]) == (1.0, [2])  # both dropout runs grok
    assert dropout["p"] == pytest.approx(0.25)
    assert (l1["share"], l1["seeds"]) == (1.0, [1])  # L1 never does
    assert float32["seeds"] == [3, 1] and float32["p"] == pytest.approx(0.25)
    assert float32["p_opposite"] == pytest.approx(1.0)


def test_any_differs_is_bonferroni_over_the_subgroups_against_the_base():
    values = {"off": [0.3, 0.31, 0.32, 0.33, 0.34], "pre": [0.9, 0.91, 0.92, 0.93, 0.94],
              "mlp-pre": [0.295, 0.315, 0.325, 0.335, 0.345]}
    runs = [(Config(ln=ln, seed=s), {}, {"gs": v}) for ln, vs in values.items()
            for s, v in enumerate(vs)]
    group = type("G", (), {"get": lambda self, load: runs})()
    differs = lambda: V.any_differs(group, lambda c: c.ln, "off", lambda m, r: r["gs"])(None)
    res = differs()
    # pre above off in every pair: 2 of 252 splits as extreme, two-sided; x 2 subgroups
    assert res["p"] == pytest.approx(2 * 2 / 252) and res["weakest"] == "pre against off"
    assert res["seeds"] == [5, 5, 5]
    v, why = V.verdict(res)
    assert (v, why) == ("reproduced", "a difference at p 0.0159 (pre against off)")
    assert render.ours(res) == "p 0.0159"  # no paper direction, so no opposite
    runs[:] = [x for x in runs if x[0].ln != "pre"]  # mlp-pre interleaves with off
    assert V.verdict(differs()) == ("inconclusive", "neither way at p < 0.05")
    runs[:] = [x for x in runs if x[0].ln == "off"]
    with pytest.raises(runsets.Missing, match="no runs but off's"):
        differs()
    runs.clear()
    with pytest.raises(runsets.Missing, match="no runs of off"):
        differs()


def test_trend_tests_the_papers_direction_either_way():
    class Group:  # made-up runs whose statistic rises with x: seeds of x 1 / 2 / 3
        def get(self, load):
            return [(Config(frac=f), {"v": v}, {}) for f, v in
                    ((0.3, 1.0), (0.3, 2.0), (0.5, 3.0), (0.5, 4.0), (0.7, 5.0), (0.7, 6.0))]
    x, v = lambda c: c.frac, lambda m, r: m["v"]
    rising, falling = V.trend(Group(), x, v, paper_sign=1)(None), V.trend(Group(), x, v)(None)
    assert rising["rho"] == pytest.approx(falling["rho"]) and rising["rho"] > 0.9
    assert rising["p"] == falling["p_opposite"] < 0.05
    assert rising["p_opposite"] == falling["p"] > 0.9
    assert V.verdict(rising)[0] == "reproduced" and V.verdict(falling)[0] == \
        "not reproduced"


def test_calibration_of_identical_seeds_holds_every_time(tmp_path, monkeypatch):
    """Seeds that all cross at one step: every interval is that step, so it always holds."""
    monkeypatch.setattr(runsets, "REPRO", str(tmp_path))
    step = np.arange(0, 10001, 100)
    m = dict(step=step, test_loss=np.where(step < 3000, 1.0, 0.001))
    runs = {}
    for copy, seeds in (("ln_placements_singh", range(5)), ("seed_coupling", range(5, 12))):
        os.makedirs(tmp_path / copy)
        runs[str(tmp_path / copy)] = {s: (Config(ln="off", split_rng="singh", seed=s), m, {})
                                      for s in seeds}
    load = lambda root, analysed=False, keep=lambda c: True: {
        k: v for k, v in runs[root].items() if keep(v[0])}
    no_ln = placement("off")
    every = {5: 1.0, 7: 1.0}  # 8 of ours and 5 held out: more than the 12 seeds there are
    assert V.calibrate(load, no_ln, ours=(5, 7, 8), trials=5, resamples=50) == {
        "crossing 5": every, "mean 1": every, "mean 5": every}


def test_reproduction_md_shows_what_the_command_prints():
    block = render.doc_block()
    assert block is not None, f"REPRODUCTION.md has no {render.BEGIN} ... {render.END} block"
    printed = render.report(V.evaluate(runsets.load, claims.CLAIMS), claims.HEADLINES)
    assert block == printed, ("REPRODUCTION.md's verdict table differs from `python "
                              "experiments/claims.py verdicts`; `python experiments/verdicts.py "
                              "--write` puts the printed one in")
