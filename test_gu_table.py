"""
Tests of experiments/gu_table.py, the tables of Gu et al.'s runs (the dug-out sets, token
uniformity, the DNN's MED and depth), on made-up runs with their analysis.npz.

    python -m pytest -q test_gu_table.py
"""
import json
import os
import sys

import numpy as np

from config import Config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import gu_table  # noqa: E402
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
    gu_table.main(str(tmp_path))
    out = capsys.readouterr().out
    # square k=2 of p=7: 3 x 3 pairs; strip k=1: 2 rows of 7
    assert "| square k=2, one vocabulary | 0 | 9 | 200 | 0.990 | 0.980 | 0.800 / 0.900 | 0.950 " \
           "| 0.600 | - |" in out  # one vocabulary: every a's token is some b's
    assert "| strip k=1, b on tokens 9+ | 0 | 14 | - | 0.990 | 0.980 | 0.800 / 0.900 | - | " \
           "0.600 | 0.250 / - |" in out  # NaN: no such pairs
    assert sum(line.startswith("|") for line in out.splitlines()) == 4  # header, rule, 2 runs


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
    gu_table.uniformity(load(str(tmp_path), analysed=True))
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| wd")]
    # step 5000 lies between 2000 and 6000: 3/4 of the way
    assert rows == ["| wd 0, 1 layer(s), frac 0.3, p 7 | 0 | 6000 | 0.100 / 0.200 / 0.700 / "
                    "0.800 | 1.000 / 0.500 / 0.225 / 0.200 | 2.000 / 1.000 / 0.525 / 0.500 |",
                    "| wd 1, 1 layer(s), frac 0.3, p 7 | 0 | 1000 | 0.100 / 0.200 / - / 0.200 "
                    "| 1.000 / 0.500 / - / 0.500 | 2.000 / 1.000 / - / 1.000 |"]


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
    gu_table.uniformity(runs)
    assert capsys.readouterr().out == ""
    gu_table.dnn(runs)
    rows = [r for r in capsys.readouterr().out.splitlines() if "input" in r]
    # ranks of med_hidden 0 1 3 2 against test loss 3 2 1 0: sum d^2 18, 1 - 6 * 18 / 60 = -0.8
    assert rows == ["| learned input, random split | 0 | 1500 | 1000 | 0.500 | 1.00; 4.000 / "
                    "2.000 / 1.000 | -0.80; 1.000 / 3.000 / 2.500 |",
                    "| onehot input, random split | 0 | 1500 | 1000 | 0.500 | 1.00; 4.000 / "
                    "2.000 / 1.000 | -0.80; 1.000 / 3.000 / 2.500 |"]


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
    gu_table.depth(runs)
    rows = [r for r in capsys.readouterr().out.splitlines() if "layer" in r]
    # from step 100 on: 0.95, 0.5, 0.97, 0.99, 0.99, one of five below 0.9; MED ranks 1 2 0
    # against test loss 2 1 0: sum d^2 = 2, Spearman 1 - 6 * 2 / (3 * 8) = 0.5
    assert rows == ["| 2 layer(s), p 7 | 0 | 500 | 400 | 100 | 0.200 / 0.500 | 1.00 / 3.00 / "
                    "0.50 | 0.50 (3) |"]
    gu_table.uniformity(runs)  # the frac 0.5 run is depth's, not uniformity's
    assert [r.split(" | ")[0] for r in capsys.readouterr().out.splitlines()
            if "layer" in r] == ["| wd 1, 1 layer(s), frac 0.3, p 7"]
