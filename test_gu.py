"""
Tests of experiments/gu.py, the tables of Gu et al.'s runs (the dug-out sets, token
uniformity, the DNN's MED and depth), on made-up runs with their analysis.npz.

    python -m pytest -q test_gu.py
"""
import json
import os
import sys

import numpy as np
import pytest

from config import Config
from conftest import table_rows

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import gu  # noqa: E402
from runsets import load  # noqa: E402


def test_holes_prints_each_hole_run_seed_by_seed_from_its_analysis(tmp_path, capsys):
    steps = np.arange(0, 301, 100)
    for name, kw, loss in (("sq", dict(split="square", hole=2), [2.0, 1.0, 0.005, 0.004]),
                           ("st", dict(split="strip", hole=1, b_offset=9), [2.0, 1.5, 1.2, 1.1]),
                           ("rand", {}, [2.0, 0.1, 0.001, 0.001])):  # no hole: not listed
        run = tmp_path / name
        run.mkdir()
        (run / "config.json").write_text(json.dumps(Config(p=7, steps=300, **kw).to_dict()))
        np.savez(run / "metrics.npz", step=steps, test_loss=np.array(loss),
                 test_acc=np.array([0.1, 0.5, 0.99, 0.98]))
        np.savez(run / "analysis.npz", step=steps, hole_acc=np.array([0.0, 0.2, 0.9, 0.8]),
                 rest_acc=np.full(4, np.nan if name == "st" else 0.95), hole_bound=np.array(0.6),
                 hole_acc_shared=np.array(0.25), hole_acc_unshared=np.array(np.nan))
    gu.gu_tables(str(tmp_path))
    rows = table_rows(capsys.readouterr().out)
    assert [r["training set"] for r in rows] == ["square k=2, one vocabulary",
                                                 "strip k=1, b on tokens 9+"]  # 2 runs, no other
    sq, st = rows
    shared = "acc in hole, last: a's token also b's / no b's (--b-offset)"
    # square k=2 of p=7: 3 x 3 pairs; strip k=1: 2 rows of 7
    assert int(sq["pairs dug out"]) == 9 and int(st["pairs dug out"]) == 14
    assert int(sq["test loss <= 0.01 at"]) == 200 and st["test loss <= 0.01 at"] == "-"
    assert float(sq["acc, rest of test: last"]) == pytest.approx(0.95)
    assert st["acc, rest of test: last"] == "-"  # NaN: no such pairs
    assert sq[shared] == "-"  # one vocabulary: every a's token is some b's
    assert st[shared] == "0.250 / -"  # NaN: no such pairs
    for row in (sq, st):
        assert int(row["seed"]) == 0
        assert float(row["best test acc"]) == pytest.approx(0.99)
        assert float(row["final test acc"]) == pytest.approx(0.98)
        assert row["acc in hole: last / best checkpoint"] == "0.800 / 0.900"
        assert float(row["bound if the hole is never learned"]) == pytest.approx(0.6)


def test_uniformity_reads_each_spread_at_its_steps_for_runs_without_a_hole(tmp_path, capsys):
    steps = np.array([0, 1000, 2000, 6000])
    for name, kw, n in (("wd0", dict(wd=0.0), 4), ("sq", dict(split="square", hole=2), 4),
                        ("wd1", dict(wd=1.0), 2)):  # wd1 stopped at step 1000
        run = tmp_path / name
        run.mkdir()
        (run / "config.json").write_text(json.dumps(Config(p=7, steps=6000, **kw).to_dict()))
        np.savez(run / "metrics.npz", step=steps[:n], test_loss=np.ones(n), test_acc=np.zeros(n))
        np.savez(run / "analysis.npz", step=steps[:n],
                 norm_spread=np.array([0.1, 0.2, 0.4, 0.8])[:n],
                 diff_spread=np.array([1.0, 0.5, 0.3, 0.2])[:n],
                 med=np.array([2.0, 1.0, 0.6, 0.5])[:n],
                 hole_acc=np.zeros(n), rest_acc=np.zeros(n), hole_bound=np.array(0.5))
    gu.uniformity(load(str(tmp_path), analysed=True))
    rows = table_rows(capsys.readouterr().out)
    assert [r["setting"] for r in rows] == ["wd 0, 1 layer(s), frac 0.3, p 7",
                                            "wd 1, 1 layer(s), frac 0.3, p 7"]  # not the hole's
    assert [int(r["seed"]) for r in rows] == [0, 0]
    assert [int(r["last step"]) for r in rows] == [6000, 1000]
    at = " at 0 / 1000 / 5000 / last"
    # step 5000 lies between 2000 and 6000: 3/4 of the way
    assert [r["spread of norms" + at] for r in rows] == ["0.100 / 0.200 / 0.700 / 0.800",
                                                         "0.100 / 0.200 / - / 0.200"]
    assert [r["spread of differences" + at] for r in rows] == ["1.000 / 0.500 / 0.225 / 0.200",
                                                               "1.000 / 0.500 / - / 0.500"]
    assert [r["MED" + at] for r in rows] == ["2.000 / 1.000 / 0.525 / 0.500",
                                             "2.000 / 1.000 / - / 1.000"]


def test_dnn_table_ranks_med_against_test_loss_and_reads_it_at_generalization(tmp_path, capsys):
    steps = np.array([0, 500, 1000, 1500])
    loss = np.array([5.0, 2.0, 0.008, 0.001])  # test loss <= 0.01 first at step 1000
    for name, embed in (("learned", "learned"), ("onehot", "onehot")):
        run = tmp_path / name
        run.mkdir()
        cfg = Config(p=7, steps=1500, model="mlp", n_layers=2, mlp_eq=True, embed=embed)
        (run / "config.json").write_text(json.dumps(cfg.to_dict()))
        np.savez(run / "metrics.npz", step=steps, test_loss=loss, test_acc=np.full(4, 0.5))
        np.savez(run / "analysis.npz", step=steps, test_loss=loss,
                 med=np.array([4.0, 3.0, 2.0, 1.0]),  # falls with test loss: corr 1
                 med_hidden=np.array([1.0, 2.0, 3.0, 2.5]),  # rises, then falls a little
                 norm_spread=np.zeros(4))  # an MLP is not a row of the uniformity table
    runs = load(str(tmp_path), analysed=True)
    gu.uniformity(runs)
    assert capsys.readouterr().out == ""
    gu.dnn(runs)
    rows = table_rows(capsys.readouterr().out)
    assert [r["DNN"] for r in rows] == ["learned input, random split",
                                        "onehot input, random split"]
    for row in rows:
        assert int(row["seed"]) == 0 and int(row["last step"]) == 1500
        assert int(row["test loss <= 0.01 at"]) == 1000
        assert float(row["final test acc"]) == pytest.approx(0.5)
        assert row["MED: rank corr with test loss; at 0 / generalizing / last"] \
            == "1.00; 4.000 / 2.000 / 1.000"
        # ranks of med_hidden 0 1 3 2 against test loss 3 2 1 0: sum d^2 18, 1 - 6 * 18 / 60
        assert row["MED of the first hidden layer: the same"] == "-0.80; 1.000 / 3.000 / 2.500"


def test_depth_table_counts_falls_below_0_9_after_first_reaching_it(tmp_path, capsys):
    steps = np.arange(0, 600, 100)
    for name, kw in (("deep", dict(n_layers=2, frac=0.5)), ("base", {})):  # base: frac 0.3
        run = tmp_path / name
        run.mkdir()
        (run / "config.json").write_text(json.dumps(Config(p=7, steps=500, **kw).to_dict()))
        np.savez(run / "metrics.npz", step=steps,
                 test_loss=np.array([5.0, 0.5, 2.0, 0.3, 0.008, 0.005]),
                 test_acc=np.array([0.1, 0.95, 0.5, 0.97, 0.99, 0.99]))
        np.savez(run / "analysis.npz", step=steps[::2], test_loss=np.array([5.0, 2.0, 0.008]),
                 med=np.array([1.0, 3.0, 0.5]), norm_spread=np.zeros(3), diff_spread=np.zeros(3))
    runs = load(str(tmp_path), analysed=True)
    gu.depth(runs)
    rows = table_rows(capsys.readouterr().out)
    assert [r["setting (frac 0.5)"] for r in rows] == ["2 layer(s), p 7"]
    row = rows[0]
    assert int(row["seed"]) == 0 and int(row["last step"]) == 500
    assert int(row["test loss <= 0.01 at"]) == 400 and int(row["test acc >= 0.9 at"]) == 100
    # from step 100 on: 0.95, 0.5, 0.97, 0.99, 0.99, one of five below 0.9; MED ranks 1 2 0
    # against test loss 2 1 0: sum d^2 = 2, Spearman 1 - 6 * 2 / (3 * 8) = 0.5
    assert row["from then on: share of evaluations < 0.9 / min test acc"] == "0.200 / 0.500"
    assert row["MED at 0 / peak / last"] == "1.00 / 3.00 / 0.50"
    assert row["MED: rank corr with test loss (checkpoints)"] == "0.50 (3)"
    gu.uniformity(runs)  # the frac 0.5 run is depth's, not uniformity's
    assert [r["setting"] for r in table_rows(capsys.readouterr().out)] \
        == ["wd 1, 1 layer(s), frac 0.3, p 7"]
