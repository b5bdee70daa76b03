"""
Tests of the statistics that compare runs (Mann-Whitney U, Fisher's exact and sign tests, the
baseline of a configuration, Singh et al.'s seed-mean curve) and of the tables that
experiments/claims.py and metrics_table.py print from run folders, on made-up runs.

    python -m pytest -q test_claims.py
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import stats
import summary as S
from config import Config
from conftest import quiet, small_cfg, table_rows, train_alone
from data import make_data
from model import build_model
from runfiles import Stop, save_atomic

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import accelerators  # noqa: E402
import beyond  # noqa: E402
import claims  # noqa: E402
import gu  # noqa: E402
import metrics_table  # noqa: E402
import minibatch_table  # noqa: E402
import nanda  # noqa: E402
import rule  # noqa: E402
import seedstats  # noqa: E402
import singh  # noqa: E402
from render import Section, per_seed  # noqa: E402
import runsets  # noqa: E402
from runsets import load  # noqa: E402


def test_table_rows_reads_every_table_by_its_column_names():
    text = ("## a section\n\nprose | with a bar\n\n| arm | steps (reached) | p |\n"
            "|---|---|:-:|\n| one seed | 300 +- 0 (1/2) | 0.5 |\n| two seeds |  | - |\n"
            "prose between\n| arm | none yet |\n|---|---|\n\n| step | loss |\n|---|---|\n"
            "| 100 | 0.25 |\n\n| not | a table |\n| no | rule |\n")
    assert table_rows(text) == [  # the header-only table has no row, nor the one without a rule
        {"arm": "one seed", "steps (reached)": "300 +- 0 (1/2)", "p": "0.5"},
        {"arm": "two seeds", "steps (reached)": "", "p": "-"}, {"step": "100", "loss": "0.25"}]
    rows = table_rows(text, "arm")  # the rows with the column, by their cell in it
    assert list(rows) == ["one seed", "two seeds"] and rows["one seed"]["p"] == "0.5"
    assert table_rows(text, "arm", "p")[("two seeds", "-")]["steps (reached)"] == ""
    assert float(table_rows(text, "step")["100"]["loss"]) == pytest.approx(0.25)
    with pytest.raises(AssertionError, match="two rows"):
        table_rows(text + "\n| arm | p |\n|---|---|\n| one seed | 1 |\n", "arm")
    with pytest.raises(AssertionError, match="3 cells under 2"):
        table_rows("| a | b |\n|---|---|\n| 1 | 2 | 3 |\n")


def test_baseline_is_the_same_setting_without_intervention():
    cfg = lambda **kw: Config(**kw)
    groups = {"base": [(None, cfg(), None, None)], "ema": [(None, cfg(grokfast="ema"), None, None)],
              "lr3": [(None, cfg(lr=3e-3), None, None)], "off": [(None, cfg(ln="off"), None, None)],
              "ema-lr": [(None, cfg(grokfast="ema", lr=3e-4), None, None)]}
    b = S.baselines(groups)
    assert all(b[k] is groups["base"] for k in ("base", "ema", "lr3", "ema-lr"))
    assert b["off"] is groups["off"]  # its own baseline: no other No LN configuration
    # a setting trained with Adam (Grokfast's): its baseline is Adam without a filter, and a
    # Muon arm there is an intervention against it
    adam = {k: [(None, cfg(wd=0.005, optimizer=o, grokfast=g), None, None)] * n
            for k, o, g, n in (("adam", "adam", "none", 2), ("adam-ema", "adam", "ema", 2),
                               ("muon", "muon", "none", 1))}
    b = S.baselines(adam)
    assert all(b[k] is adam["adam"] for k in adam)


def test_seed_mean_curve_statistic_against_per_seed_steps():
    steps = np.arange(0, 100, 10)
    curve = lambda drop: np.where(steps >= drop, 0.001, 1.0)  # test loss falls at `drop`
    runs = [(None, None, dict(step=steps, test_loss=curve(d)), None) for d in (20, 40, 90)]
    # the mean is <= 0.01 only once every seed is below: (1 + 2 * 0.001) / 3 > 0.01 before
    assert S.mean_curve_step(runs) == 90 and S.grok_steps(runs) == [20, 40, 90]
    short = dict(step=steps[:4], test_loss=curve(20)[:4])  # stopped early: keeps its last value
    assert S.mean_curve_step([(None, None, short, None), runs[1]]) == 40
    never = (None, None, dict(step=steps, test_loss=curve(10 ** 9)), None)
    assert singh.subsets(runs, 2) == [40, 90, 90]  # {20, 40}, {20, 90}, {40, 90}
    assert singh.subsets(runs + [never], 3) == [90, None, None, None]


def test_claims_prints_each_arm_seed_by_seed_from_the_run_folders(tmp_path, capsys, monkeypatch):
    steps = np.arange(0, 1001, 100)
    for seed, data_seed, grok in ((0, None, 300), (1, None, None), (0, 10000, 200),
                                  (1, 10001, 700)):  # made-up runs: the step test loss hits 0.01
        run = tmp_path / f"ln-off_{data_seed}_s{seed}"
        run.mkdir()
        (run / "config.json").write_text(json.dumps(
            Config(ln="off", seed=seed, data_seed=data_seed, steps=1000).to_dict()))
        loss = np.where(steps >= (grok or 10 ** 9), 0.005, 1.0)
        np.savez(run / "metrics.npz", step=steps, test_loss=loss, test_acc=1 - loss)
    # coupling's runs/ has none: its copy is read
    monkeypatch.setitem(claims.SECTIONS, "coupling", Section("c", str(tmp_path / "no"), "-",
                                                             singh.coupling, str(tmp_path)))
    monkeypatch.setitem(claims.SECTIONS, "grids", Section("g", str(tmp_path / "no"), "make it",
                                                          print))
    claims.main(["coupling", "grids"])
    out = capsys.readouterr().out
    rows = table_rows(out, "configuration")
    row = rows["coupled: split and init from one seed"]
    assert row["test loss <= 0.01 at, per seed"] == "s0: 300 / s1: -"
    assert row["mean +- std (reached)"] == "300 +- 0 (1/2)"
    assert row["seed-mean curve <= 0.01 at"] == "not reached"
    assert row["first seed / all seeds <= 0.01 at"] == "300 / not all"  # one never gets there
    row = rows["independent: split from --data-seed"]
    assert row["test loss <= 0.01 at, per seed"] == "s0: 200 / s1: 700"
    assert row["mean +- std (reached)"] == "450 +- 250 (2/2)"
    assert int(row["seed-mean curve <= 0.01 at"]) == 700  # <= 0.01 only once both are
    assert row["first seed / all seeds <= 0.01 at"] == "200 / 700"
    assert "coupled first in 0, later in 2, tied in 0 of 2 seeds (sign test p 0.500); reached " \
        "0.01: 1 of 2 against 2 of 2 (Fisher exact p 1.000)" in out
    assert "runs not committed; made by: make it\n" in out
    claims.main(["grids", str(tmp_path)])  # a folder after a section's name: that one is read
    assert capsys.readouterr().out == f"## g ({tmp_path})\n\n{tmp_path}\n"
    with pytest.raises(SystemExit, match=f"^error: no runs in {tmp_path / 'no'}$"):
        claims.main(["coupling", str(tmp_path / "no")])
    per_seed(str(tmp_path), lambda c: f"seed {c.seed}", ref="centre")  # ref not run here
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert [r["vs centre (not among these runs): Mann-Whitney U / p"] for r in rows] == ["-", "-"] \
        and out.count(" / p ") == 1  # in the header only: no test
    for lr, grok in ((1e-3, 300), (3e-3, 100)):  # summary's grouping, against a named group
        run = tmp_path / "lr" / f"lr{lr}"
        run.mkdir(parents=True)
        (run / "config.json").write_text(json.dumps(Config(lr=lr, steps=1000).to_dict()))
        loss = np.where(steps >= grok, 0.005, 1.0)
        np.savez(run / "metrics.npz", step=steps, test_loss=loss, test_acc=1 - loss)
    for ref, other in (("lr=0.001", "lr=0.003"), ("lr=0.003", "lr=0.001")):
        per_seed(str(tmp_path / "lr"), ref=ref)
        rows = table_rows(capsys.readouterr().out)
        vs = f"vs {ref}: Mann-Whitney U / p"  # the reference first, then tested against it
        assert [r["configuration"] for r in rows] == [ref, other]
        assert rows[0][vs] == "-" and rows[1][vs].startswith("U ")
    cut = dict(step=np.arange(0, 301, 100))  # a run interrupted before its budget
    assert S.unfinished(Config(steps=1000), cut) == "- (stopped at 300 of 1000)"
    loss = np.array([1.0, 0.5, 6.0, 0.1, 0.9, 20.0])  # > 10x the evaluation before: 2
    assert seedstats.jumps(np.arange(6) * 10, loss) == (2, 20)
    assert seedstats.jumps(np.arange(3) * 10, np.array([1e-10, 1e-8, 1e-5])) == (0, None)


def test_per_seed_flags_a_seed_mean_step_that_holds_a_stopped_run(tmp_path, capsys):
    steps = np.arange(0, 1001, 100)
    for seed, grok, last in ((0, 200, 500), (1, 700, 1000), (2, 300, 1000)):
        (run := tmp_path / f"r_s{seed}").mkdir()
        (run / "config.json").write_text(json.dumps(Config(seed=seed, steps=1000).to_dict()))
        st = steps[steps <= last]  # seed 0 stopped at 500, 300 steps after its test loss 0.01
        loss = np.where(st >= grok, 0.005, 1.0)
        np.savez(run / "metrics.npz", step=st, test_loss=loss, test_acc=1 - loss)
    per_seed(str(tmp_path))
    row = table_rows(capsys.readouterr().out, "configuration")["all runs"]
    assert row["seed-mean curve <= 0.01 at"] == "700 (held: a seed stopped at 500)"
    assert row["first seed / all seeds <= 0.01 at"] == "200 / 700"
    shutil.rmtree(tmp_path / "r_s1")  # without seed 1 the mean is low at 300
    per_seed(str(tmp_path))
    row = table_rows(capsys.readouterr().out, "configuration")["all runs"]
    assert int(row["seed-mean curve <= 0.01 at"]) == 300
    assert row["first seed / all seeds <= 0.01 at"] == "200 / 300"


def test_metrics_table_tests_both_step_counts_against_the_setting_baseline(tmp_path, capsys):
    steps = np.arange(0, 1001, 100)
    arms = {"base": ({}, (500, 600, 700), 100), "ema": (dict(grokfast="ema"), (100, 200, 300), 600)}
    for name, (kw, at, lag) in arms.items():  # made-up: acc >= 0.95 at t, loss <= 0.01 at t+lag
        for seed, t in enumerate(at):
            run = tmp_path / f"{name}_s{seed}"
            run.mkdir()
            (run / "config.json").write_text(json.dumps(Config(seed=seed, **kw).to_dict()))
            np.savez(run / "metrics.npz", step=steps, test_acc=np.where(steps >= t, 1.0, 0.0),
                     test_loss=np.where(steps >= t + lag, 0.005, 1.0), collapse=0 * steps)
    metrics_table.main(str(tmp_path))
    rows = table_rows(capsys.readouterr().out, "configuration")
    ema, base = rows["grokfast=ema"], rows["grokfast=none"]
    vs = "vs baseline: Mann-Whitney U / p, steps to acc 0.95 ; to loss 0.01"
    # accuracy: every EMA seed before every baseline seed, U = 0, p = 2 / C(6, 3); loss: EMA at
    # 700 / 800 / 900 against 600 / 700 / 800, U = 1.5 + 2.5 + 3 = 7 (ties count a half)
    assert ema["test acc >= 0.95 at (reached)"] == "200 +- 82 (3/3)"
    assert ema["test loss <= 0.01 at (reached)"] == "800 +- 82 (3/3)"
    assert ema[vs].startswith("U 0 / p 0.100 ; U 7 / p ") and base[vs] == "-"
    assert (tmp_path / "figures" / "steps_to_generalize.png").stat().st_size > 10000


def test_table_scripts_answer_help_and_a_missing_folder_without_touching_the_disk(
        tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for argv, code in ((["--help"], False), (["-h"], False), (["a", "b"], True), (["-x"], True)):
        monkeypatch.setattr(sys, "argv", ["metrics_table.py"] + argv)
        with pytest.raises(SystemExit) as e:
            runsets.folder_arg(metrics_table.__doc__, "runs/interventions")
        assert e.value.code == code and "metrics_table.py runs/" in capsys.readouterr().out
    monkeypatch.setattr(sys, "argv", ["metrics_table.py", "nowhere"])
    with pytest.raises(SystemExit, match="^error: no folder nowhere$"):
        runsets.folder_arg("doc")
    monkeypatch.setattr(sys, "argv", ["metrics_table.py"])  # no default: the folder is required
    with pytest.raises(SystemExit) as e:
        runsets.folder_arg("doc")
    assert e.value.code is True and os.listdir(tmp_path) == []  # nothing written (no '--help/')


def test_metrics_table_recomputes_a_stablemax_runs_test_loss_as_softmax_cross_entropy(tmp_path):
    cfg = small_cfg(steps=20, ckpt_every=10, loss="stablemax")
    train_alone(cfg, str(tmp_path / "sm"), log=quiet)
    steps, loss = metrics_table.softmax_test_loss(str(tmp_path / "sm"), cfg)
    (_, _, x_te, y_te), model = make_data(cfg), build_model(cfg).double()
    for s, got in zip(steps, loss):  # independent: a plain forward and torch's cross-entropy
        ck = torch.load(tmp_path / "sm" / "ckpt" / f"step_{s:06d}.pt", weights_only=True)
        model.load_state_dict(ck["model"])
        with torch.no_grad():
            want = torch.nn.functional.cross_entropy(model(x_te), y_te)
        assert abs(got - float(want)) < 1e-9 * max(1, float(want))
    assert list(steps) == [0, 10, 20]
    m = np.load(tmp_path / "sm" / "metrics.npz")  # what it trained on: StableMax, not softmax
    assert abs(m["test_loss"][-1] - loss[-1]) > 1e-6
    shutil.rmtree(tmp_path / "sm" / "ckpt")  # a copy brings the curve in its analysis.npz
    np.savez(tmp_path / "sm" / "analysis.npz", step=steps, test_loss=loss + 1)
    assert metrics_table.softmax_test_loss(str(tmp_path / "sm"), cfg)[1][-1] == loss[-1] + 1


def test_a_copied_run_brings_its_analysis_and_a_bare_one_says_it_has_no_checkpoints(
        tmp_path, monkeypatch, capsys):
    run = tmp_path / "ln-off_s1"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(Config(ln="off", seed=1).to_dict()))
    np.savez(run / "metrics.npz", step=np.arange(3), test_loss=np.ones(3))
    with pytest.raises(Stop, match="no checkpoints"):  # nothing to analyse, nothing kept
        load(str(tmp_path), analysed=True)
    monkeypatch.setitem(claims.SECTIONS, "placement_measures",
                        Section("m", str(tmp_path), "-", singh.placement_measures))
    with pytest.raises(SystemExit, match="^error: .*ln-off_s1: no checkpoints$"):  # one line
        claims.main(["placement_measures"])
    np.savez(run / "analysis.npz", step=np.arange(3), sr_train=np.full(3, 4.0))
    _, _, r = load(str(tmp_path), analysed=True)[str(run)]
    assert list(r["sr_train"]) == [4.0] * 3


def test_regularizers_counts_jumps_and_reads_the_fits_at_the_last_checkpoint(tmp_path, capsys):
    steps = np.arange(0, 50, 10)
    for seed, loss in ((0, [3.0, 0.1, 2.0, 0.01, 0.2]), (1, [3.0, 1.0, 0.5, 0.1, 0.05])):
        run = tmp_path / f"s{seed}"
        run.mkdir()
        (run / "config.json").write_text(json.dumps(Config(seed=seed, steps=40).to_dict()))
        np.savez(run / "metrics.npz", step=steps, train_loss=np.array(loss),
                 test_loss=np.array([5.0, 4.0, 0.009, 0.5, 0.001]),
                 test_acc=np.array([0.0, 0.2, 0.96, 0.9, 0.97]),
                 collapse=np.array([0, 0.2, 0.7, 0.1, 0]))
        np.savez(run / "analysis.npz", step=steps[::2], gini_embed=np.array([0.1, 0.2, 0.3]),
                 gini_logit=np.array([0.1, 0.5, 0.6]), keys=np.array([4, 17]), keys_embed=[4],
                 cos_r2_per_freq=np.array(0.9512), one_freq_share=np.array(0.8457))
    nanda.regularizers(str(tmp_path))
    rows = table_rows(capsys.readouterr().out, "configuration", "seed")
    jumps = "train-loss jumps > 10x, to > 1e-3 (first at)"
    for seed in ("0", "1"):
        row = rows["all runs", seed]
        assert int(row["test loss <= 0.01 at"]) == 20 and int(row["test acc >= 0.95 at"]) == 20
        assert row["final test acc / loss"] == "0.970 / 0.001"
    # seed 0: 0.1 -> 2.0 and 0.01 -> 0.2 are jumps of more than 10x (the first at step 20)
    row = rows["all runs", "0"]
    assert row[jumps] == "2 (20)" and rows["all runs", "1"][jumps] == "0 (-)"
    assert float(row["max softmax-collapse share"]) == pytest.approx(0.7)
    assert int(row["steps run"]) == 40 and row["Gini W_E / W_L"] == "0.30 / 0.60"
    assert row["key frequencies (W_L)"] == "[4, 17]" and row["logit FVE"] == "95.1%"
    assert float(row["one-frequency neurons"]) == pytest.approx(0.846)


def test_collapse_reads_the_first_evaluation_more_than_half_collapsed(tmp_path, capsys):
    for dtype, sc in (("float32", [0, 0.3, 0.6, 0.9]), ("float64", [0, 0.1, 0.2, 0.5])):
        (d := tmp_path / dtype).mkdir()  # made-up Fig. 2 runs: float64 never passes 0.5
        (d / "config.json").write_text(json.dumps(Config(loss_dtype=dtype, frac=0.7).to_dict()))
        np.savez(d / "metrics.npz", step=np.arange(4) * 100, collapse=np.array(sc),
                 test_acc=np.array([0.0, 0.4, 0.5, 0.45]), train_acc=np.ones(4))
    metrics_table.collapse(str(tmp_path))
    rows = table_rows(capsys.readouterr().out, "configuration")
    f32, f64 = rows["frac 0.7, float32"], rows["frac 0.7, float64"]
    assert int(f32["seed"]) == 0 and int(f64["seed"]) == 0
    assert f32["collapse share > 0.5 at (test acc)"] == "200 (0.500)"
    assert f32["> 0.4 at"] == "200 (0.500)" and f32["max test acc"] == "0.500 at 200"
    assert f32["final test / train acc"] == "0.450 / 1.000"
    assert float(f32["max collapse share"]) == pytest.approx(0.9)
    assert f64["collapse share > 0.5 at (test acc)"] == "never"
    assert f64["> 0.4 at"] == "300 (0.450)" and f64["max test acc"] == "0.500 at 200"


def test_gu_quadratic_counts_the_test_pairs_answered_from_the_runs_split(tmp_path, capsys):
    for frac, acc, share, swap, noswap in ((0.3, [0.0, 0.25, 0.3], 0.31, 0.98, 0.01),
                                           (0.5, [0.0, 0.6, 0.5], 0.52, 1.0, 0.02)):
        (run := tmp_path / f"f{frac}").mkdir()  # p 7: 49 pairs, 14 / 24 trained, 35 / 25 tested
        (run / "config.json").write_text(json.dumps(
            Config(p=7, op="a2+ab+b2", frac=frac, seed=1).to_dict()))
        np.savez(run / "metrics.npz", step=np.arange(3) * 100, test_acc=np.array(acc))
        np.savez(run / "analysis.npz", step=np.array([0, 200]), swap_share=np.array(share),
                 swap_acc=np.array(swap), noswap_acc=np.array(noswap))
    gu.gu_quadratic(str(tmp_path))
    rows = table_rows(capsys.readouterr().out, "frac")
    for frac, pairs, best, final, answered, share, on_them in (
            ("0.3", 35, 0.3, 0.3, 10, 0.31, "0.980 / 0.010"),
            ("0.5", 25, 0.6, 0.5, 12, 0.52, "1.000 / 0.020")):  # 0.5: 12.5 -> 12
        row = rows[frac]
        assert int(row["seed"]) == 1 and int(row["test pairs"]) == pairs
        assert float(row["best test acc"]) == pytest.approx(best)
        assert float(row["final test acc"]) == pytest.approx(final)
        assert int(row["test pairs answered at the end"]) == answered
        assert float(row["share of test pairs whose swap is trained"]) == pytest.approx(share)
        assert row["final acc on them / on the rest"] == on_them


def test_cleanup_prints_the_mainline_fits_and_measures_every_1600_steps_to_16k(tmp_path, capsys):
    steps = np.arange(0, 40001, 400)
    for name, kw in (("main", {}), ("drop", dict(wd=0.0, dropout=0.1)),
                     ("f32", dict(loss_dtype="float32"))):
        run = tmp_path / name
        run.mkdir()
        (run / "config.json").write_text(json.dumps(Config(steps=40000, **kw).to_dict()))
        # test loss 0.01 at 10000; analysis.npz in the layout before 2026-11-28 (keys_logit)
        np.savez(run / "metrics.npz", step=steps, test_loss=1 - steps / 1e4)
        np.savez(run / "analysis.npz", step=steps, keys=np.array([7, 13]), keys_logit=[7],
                 keys_neurons=[7, 9], one_freq_share=0.5, cos_r2_per_freq=0.98, cos_r2=0.7,
                 **{k: steps / 1e4 for k in ("test_loss", "restricted_loss", "excluded_loss",
                                             "gini_embed", "gini_logit", "weight_norm")})
    nanda.cleanup(str(tmp_path))
    rows = table_rows(capsys.readouterr().out)
    row = next(r for r in rows if "seed" in r)
    assert int(row["seed"]) == 0 and int(row["test loss <= 0.01 at"]) == 10000
    assert row["key frequencies: W_L's norms (the paper's rule) / the per-neuron rule / W_E's "
               "norms"] == "[7] / [7, 9] / [7, 13]"
    assert row["MLP neurons with > 85% of their variance at one frequency"] == "256 of 512"
    assert row["logit fit (FVE): a coefficient per key frequency / one shared"] \
        == "98.0% / 70.0%"
    steps = [int(r["step"]) for r in rows if "step" in r]  # one run's: the mainline
    assert steps == sorted({*range(0, 16001, 1600), *range(0, 40001, 10000)})


def test_minibatch_table_reads_a_copys_hessian_from_the_json_its_checkpoint_wrote(tmp_path,
                                                                                  capsys):
    for embed in ("learned", "onehot"):
        cfg = small_cfg(model="mlp", act="relu", embed=embed, batch_size=8, seed=1)
        run = tmp_path / f"mlp-{embed}"
        (run / "ckpt").mkdir(parents=True)
        (run / "config.json").write_text(json.dumps(cfg.to_dict()))
        np.savez(run / "metrics.npz", step=np.array([0, 2000]), train_loss=np.array([5.0, 1e-3]),
                 test_loss=np.array([5.0, 2.0]), test_acc=np.array([0.0, 0.5]))
        save_atomic(dict(step=2000, config=cfg.to_dict(), model=build_model(cfg).state_dict()),
                    str(run / "ckpt" / "step_002000.pt"))
    minibatch_table.main(str(tmp_path))
    table = capsys.readouterr().out
    for embed, n in (("learned", 2), ("onehot", 1)):  # one eigenvalue a block: onehot has no embed
        cache = json.load(open(tmp_path / f"mlp-{embed}" / "hessian.json"))
        assert cache["step"] == 2000 and len(cache["top"]) == n and min(cache["top"]) > 0
        shutil.rmtree(tmp_path / f"mlp-{embed}" / "ckpt")
    minibatch_table.main(str(tmp_path))
    assert capsys.readouterr().out == table
    with pytest.raises(Stop, match="mlp-learned: no step-1000 checkpoint"):  # a cache of 2000
        minibatch_table.top_eigenvalues(str(tmp_path / "mlp-learned"), None, None, None, 1000)


def test_held_reads_first_and_last_evaluation_at_095_and_the_share_that_stays(tmp_path, capsys):
    (run := tmp_path / "s0").mkdir()
    (run / "config.json").write_text(json.dumps(Config(seed=0).to_dict()))
    np.savez(run / "metrics.npz", step=np.arange(5) * 10,
             test_acc=np.array([0.0, 0.96, 0.5, 0.97, 0.98]))
    metrics_table.held(str(tmp_path))
    row = table_rows(capsys.readouterr().out, "configuration", "seed")["all runs", "0"]
    assert int(row["test acc >= 0.95 first at"]) == 10 and int(row["last at"]) == 40
    # from step 10 on, 3 of the 4 evaluations are >= 0.95
    assert float(row["share of evaluations >= it from the first on"]) == pytest.approx(0.75)
    assert row["best test acc"] == "0.980 at 40"
    assert float(row["final test acc"]) == pytest.approx(0.98) and int(row["steps run"]) == 40


def test_phases_reads_gini_and_weight_norm_at_each_phase_end(tmp_path, capsys):
    steps = np.arange(0, 3001, 100)
    # test loss peaks at 100, is below 1 from 300 and below 0.01 from 400; the sum of squared
    # weights falls to 10 by step 500 and stays: cleanup ends at 500
    loss = np.select([steps == 100, steps < 300, steps < 400], [5.0, 2.0, 0.5], 0.001)
    wn = np.maximum(10.0, 60.0 - steps / 10)
    (run := tmp_path / "main").mkdir()
    (run / "config.json").write_text(json.dumps(Config(steps=3000).to_dict()))
    np.savez(run / "metrics.npz", step=steps, test_loss=loss, weight_norm=wn)
    np.savez(run / "analysis.npz", step=steps, gini_embed=steps / 1000, gini_logit=steps / 2000,
             weight_norm=wn)
    nanda.phases(str(tmp_path))
    row = table_rows(capsys.readouterr().out, "seed")["0"]
    assert int(row["memorization ends (test-loss peak)"]) == 100
    assert int(row["circuit formation ends (test loss < 1)"]) == 300
    assert int(row["cleanup ends (weight norm flat)"]) == 500
    at = "Gini W_E / W_L / sum of squared weights at the end of "
    assert row[at + "memorization"] == "100: 0.1 / 0.05 / 50"
    assert row[at + "circuit formation"] == "300: 0.3 / 0.15 / 30"
    assert row[at + "cleanup"] == "500: 0.5 / 0.25 / 10"
    assert row["the same at the last checkpoint"] == "3000: 3 / 1.5 / 10"


def test_c_fourier_gives_each_seed_and_their_mean_at_each_step(tmp_path, capsys):
    steps = np.arange(0, 3001, 100)
    for ln, seed, scale, last in (("off", 1, 1.0, 3000), ("off", 2, 3.0, 1500),
                                  ("pre", 1, 0.1, 3000), ("pre", 2, 0.3, 3000)):
        (run := tmp_path / f"{ln}_s{seed}").mkdir()
        (run / "config.json").write_text(json.dumps(Config(ln=ln, seed=seed).to_dict()))
        np.savez(run / "metrics.npz", step=steps, test_loss=np.ones(len(steps)))
        keep = steps <= last  # seed 2 of No LN stopped at 1500: no value at 2000
        np.savez(run / "analysis.npz", step=steps[keep], c_fourier=scale * steps[keep] / 1000)
    singh.c_fourier(str(tmp_path), steps=(500, 2000))
    rows = table_rows(capsys.readouterr().out, "placement")
    at = "C_Fourier at {}: seed mean (s1 / s2)".format
    assert list(rows) == ["pre (M+A*)", "off (No LN)"]  # M+A* before No LN
    assert rows["pre (M+A*)"][at(500)] == "0.1 (0.05 / 0.15)"
    assert rows["pre (M+A*)"][at(2000)] == "0.4 (0.2 / 0.6)"
    off = rows["off (No LN)"]
    assert off[at(500)] == "1 (0.5 / 1.5)" and off[at(2000)] == "2 (2 / -)"
    assert float(off["released mean curve at 1000"]) == pytest.approx(0.186)


def test_every_section_reads_a_committed_copy_or_says_what_makes_its_runs(tmp_path, capsys,
                                                                         monkeypatch):
    for name, section in claims.SECTIONS.items():
        assert section.folder is None or section.copy, name
        if section.copy:
            here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reproduction",
                                section.copy, "runs.npz")
            assert os.path.isfile(here), section.copy
    section = claims.SECTIONS["regularizers"]  # neither runs/ nor a copy
    monkeypatch.setitem(claims.SECTIONS, "regularizers",
                        section._replace(folder=str(tmp_path / "none"), copy=None))
    claims.main(["regularizers"])
    made = "runs not committed; made by: bash experiments/nanda_regularizers.sh --batched | bash\n"
    assert made in capsys.readouterr().out


def test_head_wave_fit_finds_the_frequency_and_its_share_of_variance():
    p, a = 31, np.arange(31)
    wave = lambda k: 2 * np.pi * k * a / p
    sigmoid = lambda s: 1 / (1 + np.exp(-s))
    # the score a wave at k 5 (amplitude 2) plus one at k 9 (amplitude 1): over the whole grid
    # the two are orthogonal, so k 5 alone explains 2^2 / (2^2 + 1^2) of the variance of s(a) -
    # s(b), whose logit the attention weight to a is
    score = 2 * np.cos(wave(5)) + np.sin(wave(9))
    k, fve = seedstats.head_wave_fit(sigmoid(score[:, None] - score[None, :]))
    assert k == 5 and fve == pytest.approx(0.8)
    phased = np.cos(wave(3) + 1)
    k, fve = seedstats.head_wave_fit(sigmoid(phased[:, None] - phased[None]))
    assert k == 3 and fve == pytest.approx(1.0)  # any phase: a cos and a sin coefficient
    r = dict(final_attn_a=np.stack([sigmoid(score[:, None] - score[None, :])] * 2))
    assert seedstats.heads_fit(None, r) == pytest.approx(0.8)


def test_largest_rise_and_largest_move_share_on_hand_made_curves():
    assert seedstats.largest_rise([5, 1, 3, 2, 6, 0]) == 5  # from 1 up to 6
    assert seedstats.largest_rise([5, 4, 4, 1e-3, 1e-9]) == 0  # never rises
    # the curve's own steps are not the grid's: linear between them, 0 / 0.5 / 1 / 4 / 2 on the
    # grid 0..400 every 100, changes 0.5, 0.5, 3, 2: the largest 3 of 6
    step, v = np.array([0, 200, 300, 400]), np.array([0.0, 1.0, 4.0, 2.0])
    assert seedstats.largest_move_share(step, v, grid=np.arange(0, 401, 100)) == pytest.approx(0.5)
    assert seedstats.largest_move_share(np.arange(5), np.arange(5.0), grid=np.arange(5)) == 0.25


def test_med_beats_a_measure_only_above_its_correlation_in_either_direction():
    loss = np.array([5.0, 4, 3, 2, 1])
    r = dict(test_loss=loss, med=loss + 0.1, half=np.array([1.0, 3, 2, 5, 4]),
             anti=-loss, gone=np.full(5, np.nan))
    # Spearman of half with the loss: rank differences 4, 1, 1, -3, -3, 1 - 6 * 36 / (5 * 24)
    assert seedstats.tracking(r, ("half",)) == pytest.approx(0.8)
    assert seedstats.tracking(r, ("half", "anti")) == pytest.approx(1.0)  # the better of two keys
    assert seedstats.med_beats(("half",))(None, r) is True
    assert seedstats.med_beats(("anti",))(None, r) is None  # |-1| ties MED's 1
    assert seedstats.med_beats(("gone",))(None, r) is None
    r["med"] = -loss  # MED going against test loss loses to any measure that follows it
    assert seedstats.med_beats(("half",))(None, r) is False


def test_llc_shape_asks_for_the_rise_by_the_end_of_memorising_and_a_fall_after_grokking(
        tmp_path, capsys):
    steps = np.arange(0, 3001, 100)
    # train loss <= 0.01 from 200, test loss from 2500: the memorised stretch holds the LLC
    # checkpoint 1000 (and 2000), the first after generalizing is 3000
    m = dict(step=steps, train_loss=np.where(steps < 200, 1.0, 1e-3),
             test_loss=np.where(steps < 2500, 5.0, 1e-3))
    llc_at = lambda *v: dict(step=steps, llc=np.interp(steps, [0, 1000, 2000, 3000], v)
                             * np.where(steps % 1000 == 0, 1.0, np.nan))
    shape = seedstats.llc_shape
    assert shape(m, llc_at(0, 10, 12, 5)) is True       # devinterp's: up by 1000, then down
    assert shape(m, llc_at(0, 5, 12, 5)) is False       # 5 of 12: not half-way by 1000
    assert shape(m, llc_at(2, 7, 12, 5)) is True        # half-way from step 0's 2: 7
    assert shape(m, llc_at(0, 10, 12, 13)) is False     # no fall after generalizing
    r = llc_at(0, 10, 12, 5)
    assert shape(dict(m, test_loss=np.full(len(steps), 5.0)), r) is None  # never groks
    short = {k: v[steps <= 2400] for k, v in r.items()}       # no LLC checkpoint after 2500
    assert shape({k: v[steps <= 2400] for k, v in m.items()}, short) is None
    (run := tmp_path / "ln-pre_s0").mkdir()
    (run / "config.json").write_text(json.dumps(Config().to_dict()))
    np.savez(run / "metrics.npz", **m)
    np.savez(run / "analysis.npz", **r, train_loss=m["train_loss"], test_loss=m["test_loss"],
             llc_chains=np.stack([r["llc"] - 1, r["llc"] + 1], 1),
             distance_irrelevance=steps / 3000, gradient_symmetricity=1 - steps / 3000)
    beyond.llc(str(tmp_path))
    out = capsys.readouterr().out
    assert "train loss <= 0.01 at 200, test loss at 2500; devinterp's shape: yes" in out
    rows = table_rows(out, "step")
    row = rows["1000"]
    assert float(row["train loss"]) == pytest.approx(0.001) and float(row["test loss"]) == 5
    assert row["LLC (per chain)"] == "10.00 (9.00 / 11.00)"
    assert float(row["distance irrelevance"]) == pytest.approx(0.333)
    assert float(row["gradient symmetricity"]) == pytest.approx(0.667)
    assert list(rows) == ["0", "1000", "2000", "3000"]  # not 1100: a checkpoint without the LLC


def test_pizza_check_prints_model_a_by_our_measures_beside_their_notebook(capsys):
    claims.main(["pizza_check"])
    rows = table_rows(capsys.readouterr().out, "their model A (p 59, attention rate 0)")
    # their notebook's values (test_measures checks ours against them to 1e-6); ours to the
    # 7 digits 0.1717364 and 0.9936651
    for name, ours, theirs in (("distance irrelevance", 0.17173645, 0.17173646),
                               ("gradient symmetricity", 0.99366515, 0.99366517)):
        assert float(rows[name]["this project's measures"]) == pytest.approx(ours, abs=5e-8)
        assert float(rows[name]["their notebook prints"]) == theirs


def test_seed_mean_curve_reads_the_mean_of_the_seeds_curves(monkeypatch):
    step = np.arange(0, 500, 100)
    runs = [(Config(seed=s), {}, dict(step=step, v=s * np.ones(5))) for s in range(4)]
    group = type("G", (), {"get": lambda self, load: runs})()
    res = rule.seed_mean_curve(group, "v", lambda step, v: v[-1], 1.2, paper_seeds=2)(None)
    assert res["ours"] == 1.5 and res["paper"] == 1.2 and res["seeds"] == [4]
    # seed s's curve ends at s: the interval is of the mean of 2 seeds drawn from 0-3, each
    # draw's mean computed here directly
    rng = np.random.default_rng(stats.RNG_SEED)
    means = rng.integers(0, 4, (stats.RESAMPLES, 2)).mean(1)
    assert (res["lo"], res["hi"]) == stats.percentile_interval(means)


def test_their_weights_load_into_our_nanda_model_and_sum_the_loss():
    import nanda_released as N
    from data import all_pairs
    from config import PRESETS
    cfg = Config(**PRESETS["nanda"])
    torch.manual_seed(0)
    ours = build_model(cfg).double()
    P = dict(ours.named_parameters())
    heads = lambda w: w.detach().reshape(4, 32, 128)  # their (heads, d_head, d_model)
    Wq, Wk, Wv = P["blocks.0.attn.in_proj_weight"].chunk(3)
    theirs = {"embed.W_E": P["embed.weight"].T, "pos_embed.W_pos": P["pos"],
              "blocks.0.attn.W_Q": heads(Wq), "blocks.0.attn.W_K": heads(Wk),
              "blocks.0.attn.W_V": heads(Wv),
              "blocks.0.attn.W_O": P["blocks.0.attn.out_proj.weight"],
              "blocks.0.mlp.W_in": P["blocks.0.fc1.weight"],
              "blocks.0.mlp.b_in": P["blocks.0.fc1.bias"],
              "blocks.0.mlp.W_out": P["blocks.0.fc2.weight"],
              "blocks.0.mlp.b_out": P["blocks.0.fc2.bias"], "unembed.W_U": P["unembed"]}
    x, y, _ = all_pairs(cfg)
    with torch.no_grad():
        want = torch.nn.functional.cross_entropy(ours(x), y, reduction="sum").item()
    assert N.loss_sum({k: v.detach().float() for k, v in theirs.items()}) == pytest.approx(
        want, rel=1e-5)
    assert N.largest_test_set(10.0, 0.3) == 33 and N.first_epoch([3, 0.5, 0.01, 0.2]) == 2


def test_tuned_adamw_sh_runs_its_tuning_stage_choice():
    """tuned_adamw.sh's stage 2 runs, on the compared seeds, the cell its stage 1 chose."""
    import pack
    with pack.opened(os.path.join("reproduction", "tuned_adamw")) as folder:
        runs = load(folder)
    listed = subprocess.run(["bash", "experiments/tuned_adamw.sh", "--list"], check=True,
                            capture_output=True, text=True).stdout.splitlines()
    for ln in ("pre", "off"):
        mine = {r: v for r, v in runs.items() if v[0].ln == ln}
        lr, wd = accelerators.tuning_grid(mine, accelerators.GRID)[2]
        stage2 = sorted(line for line in listed if f"--ln {ln} " in line
                        and " --seed 5 " not in line and line.startswith("python train.py"))
        assert stage2 == sorted(f"python train.py --ln {ln} --lr {lr:g} --wd {wd:g} --seed {s} "
                                "--stop-after-grok 1000 --out runs/tuned_adamw --auto-resume"
                                for s in accelerators.COMPARED_SEEDS)


def test_the_tuned_cells_are_their_tuning_stage_choice():
    """TUNED holds each arm's choice once its grid is done, and only then; the script's stage 2
    runs exactly those cells on the compared seeds."""
    import pack
    copy = os.path.join("reproduction", "tuned_methods")
    runs = {}
    if os.path.isdir(copy):
        with pack.opened(copy) as folder:
            runs = load(folder)
    for ln in ("pre", "off"):
        for name, keep in accelerators.TUNED_ARMS.items():
            mine = {r: v for r, v in runs.items() if keep(v[0]) and v[0].ln == ln}
            chosen = accelerators.tuning_grid(mine, accelerators.CELLS[name])[2]
            assert accelerators.TUNED.get((ln, name)) == chosen, (ln, name)
    listed = subprocess.run(["bash", "experiments/tuned_methods.sh", "--list"], check=True,
                            capture_output=True, text=True).stdout.splitlines()
    stage2 = sorted(line for line in listed if " --seed 5 " not in line
                    and line.startswith("python train.py"))
    flags = {"AdamW": "", "Grokfast EMA": " --grokfast ema --gf-alpha 0.98 --gf-lamb 2",
             "⊥AdamW": " --orthograd", "Muon": " --optimizer muon"}
    want = sorted(f"python train.py --ln {ln}{flags[name]} --lr {lr:g} --wd {wd:g} --seed {s} "
                  "--stop-after-grok 1000 --out runs/tuned_methods --auto-resume"
                  for (ln, name), (lr, wd) in accelerators.TUNED.items()
                  for s in accelerators.COMPARED_SEEDS)
    assert stage2 == want


def test_tuning_grid_chooses_the_first_cell_to_generalize_once_every_cell_is_decided():

    def run(ln, lr, wd, grok, last=10000):
        step = np.arange(0, last + 1, 10)
        loss = np.where(step >= grok, 0.001, 1.0) if grok else np.ones(len(step))
        cfg = Config(ln=ln, lr=lr, wd=wd, seed=accelerators.TUNING_SEED, steps=10000)
        return cfg, dict(step=step, test_loss=loss), {}
    cells = [(1e-3, 1.0), (1e-3, 3.0), (3e-3, 1.0), (3e-3, 3.0)]
    runs = {"a": run("pre", 1e-3, 1.0, 3000), "b": run("pre", 3e-3, 1.0, None),
            "c": run("pre", 1e-3, 3.0, 2000), "d": run("pre", 3e-3, 3.0, 2000)}
    header, rows, chosen = accelerators.tuning_grid(runs, cells)
    assert chosen == (1e-3, 3.0)  # 2000 twice: the smaller lr
    assert rows == [["0.001", "3000", "2000"], ["0.003", "not reached in 10000", "2000"]]
    runs["b"] = run("pre", 3e-3, 1.0, None, last=1500)  # running short of 2000: no choice yet
    assert accelerators.tuning_grid(runs, cells)[2] is None
    assert accelerators.tuning_grid(runs, cells)[1][1][1] == "running (step 1500 of 10000)"
    # stopped past the first crossing (2000) without crossing: out, the choice as at its budget
    runs["b"] = run("pre", 3e-3, 1.0, None, last=2000)
    header, rows, chosen = accelerators.tuning_grid(runs, cells)
    assert chosen == (1e-3, 3.0) and rows[1][1] == "not by 2000 (stopped: past 2000)"
    runs["c"] = run("pre", 1e-3, 3.0, None, last=3000)  # then 3000 is not the first: 2000 is
    assert accelerators.tuning_grid(runs, cells)[2] == (3e-3, 3.0)
    # a paper's own cell off the grid: a row and a column of its own, "-" where no cell is
    runs["b"], runs["c"] = run("pre", 3e-3, 1.0, None), run("pre", 1e-3, 3.0, 2000)
    runs["e"] = run("pre", 1e-3, 0.0, 1500)
    header, rows, chosen = accelerators.tuning_grid(runs, cells[:2] + [(1e-3, 0.0)])
    assert header == ["lr \\ wd", "0", "1", "3"] and chosen == (1e-3, 0.0)
    assert rows == [["0.001", "1500", "3000", "2000"]]  # lr 3e-3 is off this grid
    assert accelerators.tuning_grid(runs, cells + [(6e-3, 1.0)])[1][-1] == [
        "0.006", "not yet run", "-"]


def test_a_section_given_another_experiments_runs_says_so(tmp_path, capsys, monkeypatch):
    steps = np.arange(0, 1001, 100)

    def run(folder, name, **kw):
        (r := tmp_path / folder / name).mkdir(parents=True)
        (r / "config.json").write_text(json.dumps(Config(steps=1000, **kw).to_dict()))
        np.savez(r / "metrics.npz", step=steps, test_loss=np.ones(len(steps)),
                 test_acc=np.zeros(len(steps)))
    run("copy", "a_s0", seed=0)
    run("same", "a_s7", seed=7)  # the copy's configuration on another seed: its experiment
    run("other", "b_s0", seed=0, lr=3e-3)
    monkeypatch.setitem(claims.SECTIONS, "grids", Section("g", "runs/none", "-", lambda root: None,
                                                          str(tmp_path / "copy")))
    claims.main(["grids", str(tmp_path / "same")])
    assert "note:" not in capsys.readouterr().out
    claims.main(["grids", str(tmp_path / "other")])
    out = capsys.readouterr().out
    assert f"note: 1 run of {tmp_path / 'other'} (b_s0) match no run of reproduction/" in out


def test_paper_prints_its_verdict_rows_and_only_its_sections(capsys, monkeypatch):
    shown = []
    for name in claims.SECTIONS:
        monkeypatch.setitem(claims.SECTIONS, name, claims.SECTIONS[name]._replace(
            folder=None, show=lambda root, name=name: shown.append(name)))
    monkeypatch.setattr(claims, "table", lambda done: f"{len(done)} rows")
    monkeypatch.setattr(claims, "evaluate", lambda load, claims: claims)  # no runs read
    claims.main(["--paper", "gu"])
    out = capsys.readouterr().out
    assert shown == list(gu.SECTIONS)
    gu_claims = [c for c in claims.CLAIMS if c.paper == "Gu et al."]
    assert f"{len(gu_claims)} rows" in out and len(gu_claims) == len(gu.CLAIMS) > 0
    assert {c.paper for m in claims.PAPERS.values() for c in m.CLAIMS} == set(claims.ORDER)
    for argv, said in ((["--paper"], "--paper takes one of"), (["--paper", "x"], "takes one of"),
                       (["--paper", "gu", "med"], "takes no section names")):
        with pytest.raises(SystemExit, match=said):
            claims.main(argv)


def test_metrics_table_on_a_stablemax_copy_with_a_bad_analysis_is_one_stop(tmp_path):
    """A StableMax copy's softmax test loss is its analysis.npz's: one that cannot be read, or
    lacks the curve, stops in one line naming it (never unpickled)."""
    run = tmp_path / "r"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(Config(loss="stablemax").to_dict()))
    steps = np.arange(0, 101, 10)
    np.savez(run / "metrics.npz", step=steps, test_loss=np.ones(11), test_acc=np.zeros(11),
             train_loss=np.ones(11), train_acc=np.zeros(11))
    for content, said in ((b"", "corrupt"), (b"PK\x03\x04 cut short", "corrupt")):
        (run / "analysis.npz").write_bytes(content)
        with pytest.raises(Stop, match=f"^{said} {run / 'analysis.npz'}"):
            metrics_table.softmax_test_loss(str(run), Config(loss="stablemax"))
    np.savez(run / "analysis.npz", step=steps)
    with pytest.raises(Stop, match="^incomplete .*: no step or test_loss$"):
        metrics_table.softmax_test_loss(str(run), Config(loss="stablemax"))
    np.savez(run / "analysis.npz", step=steps, test_loss=np.full(11, 2.0))
    got = metrics_table.softmax_test_loss(str(run), Config(loss="stablemax"))
    assert list(got[0]) == list(steps) and list(got[1]) == [2.0] * 11
