"""
Tests of the Singh et al. tables that experiments/claims.py prints (their numbers beside each
placement and grid point, their measures through the run) and of the numbers read off their
released curves (experiments/singh_numbers.py, singh_released.py), on made-up runs.

    python -m pytest -q test_singh.py
"""
import csv
import json
import os
import sys

import numpy as np
import pytest

from config import Config
from conftest import table_rows

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import claims  # noqa: E402
import singh  # noqa: E402
import singh_released  # noqa: E402


PAPER = "paper (released mean curve): at 1000 / max / at their step / at 10k"


def sr_train(out):
    """The SR-train table of placement_measures: {placement: its seeds' cell}."""
    col = ("SR-train per seed: max before test loss <= 0.01 -> 1000 steps after (-: the run "
           "ended before)")
    return {r["placement"]: r[col] for r in table_rows(out) if col in r}


def test_claims_puts_singh_et_al_s_number_beside_each_placement(tmp_path, capsys):
    steps = np.arange(0, 1001, 100)
    for ln, seed, grok in (("pre", 1, 300), ("pre", 2, 500), ("off", 1, None)):
        run = tmp_path / f"ln-{ln}_s{seed}"
        run.mkdir()
        (run / "config.json").write_text(json.dumps(Config(ln=ln, seed=seed).to_dict()))
        loss = np.where(steps >= (grok or 10 ** 9), 0.005, 1.0)
        np.savez(run / "metrics.npz", step=steps, test_loss=loss, test_acc=1 - loss)
    singh.placements(str(tmp_path))
    rows = table_rows(capsys.readouterr().out, "configuration")
    assert list(rows) == ["off (No LN)", "pre (M+A*)"]  # the reference: first
    off, pre = rows["off (No LN)"], rows["pre (M+A*)"]
    assert off["test loss <= 0.01 at, per seed"] == "s1: - (stopped at 1000 of 10000)"
    assert pre["test loss <= 0.01 at, per seed"] == "s1: 300 / s2: 500"
    assert pre["mean +- std (reached)"] == "400 +- 100 (2/2)"
    assert int(pre["seed-mean curve <= 0.01 at"]) == 500
    assert pre["paper (seed-mean curve)"] == "3525 (first seed / all five: 2360 / 3934)"
    assert off["paper (seed-mean curve)"] == "7807 (first seed / all five: 6328 / 7935)"


def test_claims_finds_singh_et_al_s_number_for_the_lr_and_wd_a_run_trains_with():
    off = dict(ln="off")
    assert singh.singh_number(Config(**off, lr=1e-2, fix_wd=True)) \
        == "4470 (first seed / all five: 3026 / 4788)"  # wd 0.1
    assert singh.singh_number(Config(**off, alpha=0.5, alpha_lr=True)).startswith("2021 ")
    assert singh.singh_number(Config(**off, alpha=0.5)) \
        == "not reached (first seed / all five: 9155 / not all)"
    assert singh.singh_number(Config(**off, wd=0.1)).endswith(": none / not all)")
    assert singh.singh_number(Config(**off, wd=1.5)).startswith("6395 ")
    kaiming = dict(off, eps=0.0, init="kaiming")  # their appendix's sweep
    assert singh.singh_number(Config(**kaiming, alpha=0.5, alpha_lr=True)).startswith("1736 ")
    assert singh.singh_number(Config(**kaiming, wd=1.5)) == "-"  # not in that sweep
    assert singh.singh_number(Config(**off, eps=0.0)) == "-"  # eps 0 with their LeCun init
    assert singh.singh_number(Config(**off, wd=2.0)) == "-"  # not on their grid
    assert singh.singh_number(Config(ln="pre")) == "-"
    assert singh.singh_number(Config(**off, n_layers=3, d_model=64)) == "-"
    half = Config(**off, alpha=0.5, alpha_lr=True)
    assert singh.singh_label(half) == "lr 0.004, wd 1, alpha 0.5"
    assert singh.singh_label(Config(ln="pre", n_layers=3, d_model=64, d_mlp=256, lr=1e-2,
                                     fix_wd=True)) \
        == "ln pre, n_layers 3, d_model 64, d_mlp 256: lr 0.01, wd 0.1, alpha 1"
    assert singh.singh_label(Config(**off, alpha=2, eps=0.0, init="kaiming")) \
        == "eps 0, init kaiming: lr 0.001, wd 1, alpha 2"


def test_claims_early_prints_both_definitions_at_step_1000(monkeypatch, capsys):
    step = np.array([0, 500, 1500])  # step 1000 lies between two checkpoints: interpolated
    runs = {f"r/ln-{ln}_s{s}": (Config(ln=ln, seed=s), {}, dict(
        step=step, attn_entropy=np.array([1.0, 0.8 + s / 10, 0.4 + s / 10]),
        attn_entropy_per_head=np.full(3, 0.1), sr_train=np.full(3, 5.0),
        sr_train_ln=np.array([3.0, 3.0, 1.0]))) for ln in ("pre", "attn-pre-qk") for s in (0, 2)}
    monkeypatch.setattr(singh, "load", lambda root, *a, **k: runs)
    singh.early("r")
    row = table_rows(capsys.readouterr().out, "configuration")["ln=attn-pre-qk"]
    assert row["attn_entropy at step 1000"] == "0.700 +- 0.100"
    assert row["attn_entropy_per_head at step 1000"] == "0.100 +- 0.000"
    assert row["sr_train at step 1000"] == "5.000 +- 0.000"
    assert row["sr_train_ln at step 1000"] == "2.000 +- 0.000"


def test_curve_points_and_sr_train_fall_by_hand(monkeypatch, capsys):
    step = np.arange(0, 3001, 500)  # checkpoints; step 1000 and g = 1250 read off a straight line
    v = np.array([1.0, 2.0, 3.0, 5.0, 4.0, 2.0, 1.5])
    assert singh.curve_points(step, v, 1250) == (3.0, 5.0, 1500, 4.0, 1.5, 3000)
    assert singh.curve_points(step, v, None)[3] is None
    assert singh.rise_and_fall(step, v, 2000) == (5.0, 1.5)  # max up to 2000, then at 3000
    assert singh.rise_and_fall(step, v, None) is None
    assert singh.rise_and_fall(step, v, 2500) == (5.0, None)  # 1000 steps later: past the end
    assert singh.curve_points(step[:2], v[:2], 1250)[::3] == (None, None)  # ended at 500
    m = lambda g: dict(step=step, test_loss=np.where(step >= g, 0.001, 1.0))
    runs = {f"r/ln-off_s{s}": (Config(ln="off", seed=s), m(g), dict(
        step=step, c_fourier=v * s, attn_entropy=v, sr_train=v + s)) for s, g in ((1, 1000),
                                                                            (3, 2000))}
    monkeypatch.setattr(singh, "load", lambda root, *a, **k: runs)
    singh.placement_measures("r")
    out = capsys.readouterr().out
    row = table_rows(out, "placement", "measure")["off (No LN)", "c_fourier"]
    assert int(row["seed-mean test loss <= 0.01 at"]) == 2000  # once both seeds are
    assert float(row["at 1000"]) == 6 and row["max"] == "10 at 1500"
    assert float(row["at the seed-mean step"]) == 8 and row["last"] == "3 at 3000"
    assert row[PAPER] == "0.186 / 3.35 at 10000 / 2.39 / 3.35"
    assert sr_train(out) == {"off (No LN)": "s1: 4.00 -> 5 / s3: 8.00 -> 4.5"}
    runs = {f"r/ln-post_s{s}": (Config(ln="post", seed=s), m(g), dict(  # not in the paper
        step=step, c_fourier=v, attn_entropy=v, sr_train=v)) for s, g in ((1, 2500), (2, 10 ** 9))}
    singh.placement_measures("r")
    out = capsys.readouterr().out
    row = table_rows(out, "placement", "measure")["post (not in the paper)", "sr_train"]
    assert row["seed-mean test loss <= 0.01 at"] == "not reached"
    assert float(row["at 1000"]) == 3 and row["max"] == "5 at 1500"
    assert row["at the seed-mean step"] == "-" and row["last"] == "1.5 at 3000"
    assert row[PAPER] == "not in their data"
    assert sr_train(out) == {"post (not in the paper)": "s1: 5.00 -> - / s2: never"}
    runs = {f"r/ln-mlp-pre_s{s}": (Config(ln="mlp-pre", seed=s), m(g), dict(
        step=step, rank=v * 10, power_law_alpha=v, power_law_alpha_f64=v, eff_rank=v,
        sr_train=v)) for s, g in ((1, 1000), (3, 2000))}
    singh.placement_measures("r", singh.COMPRESSIBILITY)
    out = capsys.readouterr().out  # their released curves beside; no SR-train table
    row = table_rows(out, "placement", "measure")["mlp-pre (M)", "rank"]
    assert int(row["seed-mean test loss <= 0.01 at"]) == 2000
    assert float(row["at 1000"]) == 30 and row["max"] == "50 at 1500"
    assert float(row["at the seed-mean step"]) == 40 and row["last"] == "15 at 3000"
    assert row[PAPER] == "128 / 128 at 200 / 116 / 31.4" and "SR-train" not in out


def test_singh_curve_numbers_are_read_off_their_released_curves():
    # reproduction/sources/singh_released/: layernorm-grok 7ea0e10, notebooks/data/ln_*.csv,
    # wd_*.csv, data/trf-1l_lecun_fourier_colvar.csv, check_data/attn_ln_analysis.csv
    files = [(k, f"{s}_{n}.csv") for s in ("ln", "wd") for k, n in (
        ("rank", "rank"), ("power_law_alpha", "alpha"), ("eff_rank", "eff_rank"))]
    for key, name in files + [("c_fourier", "trf-1l_lecun_fourier_colvar.csv"),
                              ("attn_entropy", "attn_ln_analysis.csv")]:
        path = os.path.join(os.path.dirname(__file__), "reproduction", "sources",
                            "singh_released", name)
        head, *rows = list(csv.reader(open(path)))
        step = np.array([float(r[0]) for r in rows])
        for j, col in enumerate(head):
            if j == 0 or col.endswith(("__MIN", "__MAX", "eff_rank")):
                continue
            ln = col.split(": ")[1].split(" - ")[0] if ": " in col else col.split("__")[0]
            v = np.array([float(r[j]) for r in rows])
            if name.startswith("wd_"):  # a weight decay: its point of their No LN sweep
                stat = singh.SINGH[1e-8, "singh"][1e-3, float(ln), 1][0]
                ln = "off" if ln == "1" else f"wd {ln}"  # their wd 1 curve is No LN's
            else:
                stat = singh.SINGH_LN[ln][1][0]
            i = int(np.argmax(v))
            at = np.interp(stat, step, v) if stat else None  # A^qk: no step of theirs
            want = (np.interp(1000, step, v), v[i], step[i], at, v[-1])
            assert singh.SINGH_CURVES[(key, ln)] == pytest.approx(want, rel=5e-3), (key, ln)


def test_singh_released_reads_the_three_first_steps_of_each_curve(tmp_path, monkeypatch):
    # a W&B export as theirs: the seed-mean, its minimum and maximum over seeds, per curve
    head = ["Step"] + [f"opt.weight_decay: {w} - test/loss{x}" for w in (1, 2)
                       for x in ("", "__MIN", "__MAX")]
    rows = [[1, 5, 4, 6, 5, 4, 6], [2, 0.5, 0.009, 1, 0.02, 0.015, 0.03],
            [3, 0.01, 0.001, 0.02, 0.02, 0.01, 0.04], [4, 0.03, 0.001, 0.05, 0.02, 0.01, 0.04],
            [5, 0.002, 0.001, 0.005, "", "", ""]]  # wd 1: back above 0.01 at step 4
    path = tmp_path / "c.csv"
    path.write_text("\n".join(",".join(f'"{x}"' for x in r) for r in [head] + rows))
    assert singh_released.first_steps(str(path)) == {
        "opt.weight_decay: 1": (3, 2, 5, pytest.approx(2 / 3)), "opt.weight_decay: 2": (0, 3, 0, 0)}
    head = ["Step", "opt.learning_rate: 0.01 - grads/update_norm"]  # medians per window of steps
    path.write_text("\n".join(",".join(map(str, r)) for r in
                              [head, [0, 1], [1, 3], [2, 0.5], [3, 0.1], [4, 9]]))
    monkeypatch.setattr(singh_released, "WINDOWS", ((0, 2), (2, 4)))
    assert singh_released.update_medians(str(path)) == {"opt.learning_rate: 0.01": [2, 0.3]}


def test_compressibility_wd_reads_the_analysed_points_of_the_wd_sweep(monkeypatch, capsys):
    step = np.arange(0, 3001, 500)
    m = dict(step=step, test_loss=np.where(step >= 1000, 0.001, 1.0))
    their = lambda **kw: Config(split_rng="singh", **kw)  # the sweep's runs: on their split
    cfgs = [their(ln="off", wd=1.5, seed=1), their(ln="off", wd=1.5, seed=2),  # the sweep's
            their(ln="off", seed=1), their(ln="off", lr=1e-2, fix_wd=True),  # wd 1; lr sweep
            their(ln="off", wd=1.5, eps=0.0, init="kaiming"), their(ln="pre", wd=1.5),
            their(ln="off", wd=1.5, alpha=0.5), their(ln="off", wd=1.5, n_layers=3),
            their(ln="off", wd=0.1)]  # a point of the sweep the copy keeps unanalysed
    runs = {f"r/{i}": (c, m, dict(step=step, **{k: np.full(7, 40.0 + c.seed) for k in
                                                singh.COMPRESSIBILITY + ("sr_train",)}))
            for i, c in enumerate(cfgs)}
    seen = []
    monkeypatch.setattr(singh, "load", lambda root, analysed, keep: {
        r: v for r, v in runs.items() if keep(v[0]) and not seen.append(r)})
    claims.SECTIONS["compressibility_wd"].show("r")
    rows = table_rows(capsys.readouterr().out)  # only the two wd 1.5 runs (and analysed)
    assert seen == ["r/0", "r/1"] and [r["placement"] for r in rows] == ["wd 1.5"] * 4
    row = next(r for r in rows if r["measure"] == "rank")
    assert int(row["seed-mean test loss <= 0.01 at"]) == 1000
    assert float(row["at 1000"]) == 41.5 and row["max"] == "41.5 at 0"
    assert float(row["at the seed-mean step"]) == 41.5 and row["last"] == "41.5 at 3000"
    assert row[PAPER] == "128 / 128 at 200 / 35.8 / 25.4"
