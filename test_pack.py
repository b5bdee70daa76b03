"""
Tests of experiments/pack.py: a folder of made-up runs packed and unpacked gives back every file
(text exactly, integers exactly, floats rounded as the pack says and in their own dtype), and a
table printed from the pack is the table printed from the run folders.

    python -m pytest -q test_pack.py
"""
import json
import os
import shutil
import sys

import numpy as np
import pytest

from config import Config
from conftest import table_rows
from runfiles import Stop

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import claims  # noqa: E402
import metrics_table  # noqa: E402
import pack  # noqa: E402


def made_up_runs(root):
    """Runs of the coupling study (two arms, three seeds) with float64 curves that float32 does
    not hold exactly, of two lengths; but one, an analysis.npz (curves, a 0-d value, a string,
    a heatmap) and a JSON cache beside config.json; and a checkpoint folder that a pack leaves
    out. Returns the names of the runs that have no analysis."""
    rng, bare = np.random.default_rng(0), []
    steps = np.arange(0, 2001, 100)
    for seed, data_seed, grok in ((0, None, 700), (1, None, 1500), (2, None, 900),
                                  (0, 10000, 400), (1, 10001, 600), (2, 10002, None)):
        run = root / f"ln-off_{data_seed}_s{seed}"
        (run / "ckpt").mkdir(parents=True)
        (run / "ckpt" / "step_000000.pt").write_bytes(b"not packed")
        cfg = Config(ln="off", seed=seed, data_seed=data_seed, steps=2000)
        (run / "config.json").write_text(json.dumps(cfg.to_dict(), indent=1))
        st = steps if grok else steps[:15]  # a run stopped early: shorter curves
        loss = np.where(st >= (grok or 10 ** 9), 0.004, 1.0) * np.exp(rng.normal(0, 0.3, len(st)))
        np.savez_compressed(run / "metrics.npz", step=st, test_loss=loss, train_loss=loss / 3,
                            test_acc=np.clip(1 - loss, 0, 1), collapse=rng.uniform(0, 1, len(st)))
        if seed == 1 and data_seed is None:
            bare.append(run.name)
            continue
        (run / "hessian.json").write_text('{"step": 2000, "top": [1.25, 3.5]}')
        np.savez_compressed(run / "analysis.npz", step=st[::5], c_fourier=rng.uniform(0, 3, 3),
                            one_freq_share=np.array(rng.uniform()), stamp=np.array("abc" * seed),
                            final_attn_a=rng.uniform(0, 1, (4, 7, 7)), neuron_freq=np.arange(9))
    return bare


def test_unpack_gives_back_every_file_integers_and_text_exactly_floats_rounded(tmp_path,
                                                                              monkeypatch):
    bare = made_up_runs(tmp_path / "runs")
    monkeypatch.setattr(pack, "FLOAT64", ("train_loss",))  # one key kept whole
    assert pack.pack(str(tmp_path / "runs"), str(tmp_path / "p.npz")) == sorted(
        os.listdir(tmp_path / "runs"))
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]  # save_atomic's
    assert pack.unpack(str(tmp_path / "p.npz"), str(tmp_path / "back")) == sorted(
        os.listdir(tmp_path / "runs"))
    for run in os.listdir(tmp_path / "runs"):
        a, b = tmp_path / "runs" / run, tmp_path / "back" / run
        files = ["config.json", "metrics.npz"] if run in bare else [
            "analysis.npz", "config.json", "hessian.json", "metrics.npz"]
        assert sorted(os.listdir(b)) == files  # no ckpt/
        for name in [f for f in files if f.endswith(".json")]:
            assert (b / name).read_text() == (a / name).read_text()
        for name in [f for f in files if f.endswith(".npz")]:
            want, got = np.load(a / name), np.load(b / name)
            assert sorted(got.files) == sorted(want.files)
            for k in want.files:
                w, g = want[k], got[k]
                assert g.dtype == w.dtype and g.shape == w.shape
                if w.dtype.kind == "f" and k in ("final_attn_a",):
                    assert np.array_equal(g, w.astype(np.float16).astype(w.dtype))
                    assert not np.array_equal(g, w)
                elif w.dtype.kind == "f" and k != "train_loss":
                    assert np.array_equal(g, w.astype(np.float32).astype(w.dtype))
                    assert w.ndim == 0 or not np.array_equal(g, w)  # it was rounded
                else:  # integers, strings and FLOAT64's keys: exactly
                    assert np.array_equal(g, w)


def test_a_table_prints_the_same_from_the_pack_as_from_the_run_folders(tmp_path, capsys):
    made_up_runs(tmp_path / "runs")
    claims.main(["coupling", str(tmp_path / "runs")])
    from_folders = capsys.readouterr().out
    row = table_rows(from_folders, "configuration")["coupled: split and init from one seed"]
    # the curves cross 0.01 where they were made to
    assert row["test loss <= 0.01 at, per seed"] == "s0: 700 / s1: 1500 / s2: 900"
    pack.pack(str(tmp_path / "runs"), str(tmp_path / "packed.npz"))
    shutil.rmtree(tmp_path / "runs")  # the same folder, now holding the pack only
    (tmp_path / "runs").mkdir()
    os.rename(tmp_path / "packed.npz", tmp_path / "runs" / pack.PACK)
    claims.main(["coupling", str(tmp_path / "runs")])
    assert capsys.readouterr().out == from_folders


def test_a_table_on_a_pack_draws_its_figure_beside_it_and_names_no_temporary_folder(
        tmp_path, capsys, monkeypatch):
    made_up_runs(tmp_path / "runs")
    metrics_table.main(str(tmp_path / "runs"))
    from_folders = capsys.readouterr().out
    figure = tmp_path / "runs" / "figures" / "steps_to_generalize.png"
    assert f"figure: {figure}" in from_folders and figure.stat().st_size > 10000
    (tmp_path / "exp").mkdir()
    pack.pack(str(tmp_path / "runs"), str(tmp_path / "exp" / pack.PACK))
    temporary, mkdtemp = [], pack.tempfile.mkdtemp

    def recorded(**kw):
        temporary.append(mkdtemp(**kw))
        return temporary[-1]

    monkeypatch.setattr(pack.tempfile, "mkdtemp", recorded)
    with pack.opened(str(tmp_path / "exp")) as root:
        assert root == temporary[0] and pack.run_folders(root) == pack.run_folders(
            str(tmp_path / "runs"))
        metrics_table.main(root)
    assert capsys.readouterr().out == from_folders.replace(str(tmp_path / "runs"),
                                                           str(tmp_path / "exp"))
    assert (tmp_path / "exp" / "figures" / "steps_to_generalize.png").stat().st_size > 10000
    assert sorted(os.listdir(tmp_path / "exp")) == ["figures", "runs.npz"]  # no run folder
    assert not os.path.exists(temporary[0])  # removed on leaving
    with pytest.raises(Stop, match=f"^{tmp_path / 'exp'}/ln-off_None_s0: gone$"):
        with pack.opened(str(tmp_path / "exp")) as root:
            raise Stop(f"{root}/ln-off_None_s0: gone")  # a table's error names the pack's folder
    assert not os.path.exists(temporary[1])


def test_pack_command_line_both_ways_and_bad_input_in_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="^error: no run folders .* in .*empty$"):
        pack.main([str(tmp_path / "empty"), str(tmp_path / "p.npz")])
    with pytest.raises(SystemExit, match="^error: .*p.zip: a pack's name ends in .npz$"):
        pack.main([str(tmp_path / "empty"), str(tmp_path / "p.zip")])
    with pytest.raises(SystemExit) as e:
        pack.main(["--help"])
    assert not e.value.code and "pack.py runs/" in capsys.readouterr().out  # exit 0
    with pytest.raises(SystemExit, match="^error: no pack .*none.npz$"):
        pack.main([str(tmp_path / "none.npz"), str(tmp_path / "out")])
    made_up_runs(tmp_path / "runs")  # the command line both ways
    pack.main([str(tmp_path / "runs"), str(tmp_path / "p.npz")])
    pack.main([str(tmp_path / "p.npz"), str(tmp_path / "back")])
    assert "p.npz: 6 runs, " in capsys.readouterr().out
    assert pack.run_folders(str(tmp_path / "back")) == pack.run_folders(str(tmp_path / "runs"))
    # --drop leaves those arrays out of every run, and only those
    pack.main([str(tmp_path / "runs"), str(tmp_path / "d.npz"), "--drop", "final_attn_a", "x"])
    full, dropped = pack.read(str(tmp_path / "p.npz")), pack.read(str(tmp_path / "d.npz"))
    for run, files in full.items():
        if "analysis.npz" in files:
            kept = set(files["analysis.npz"])
            assert "final_attn_a" in kept
            assert set(dropped[run]["analysis.npz"]) == kept - {"final_attn_a"}
        assert set(dropped[run]["metrics.npz"]) == set(files["metrics.npz"])
    for bad in ([str(tmp_path / "runs"), str(tmp_path / "e.npz"), "--drop"],  # names none
                [str(tmp_path / "p.npz"), str(tmp_path / "out"), "--drop", "x"]):  # unpacking
        with pytest.raises(SystemExit, match="^error: --drop comes after SRC DEST.npz"):
            pack.main(bad)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(Stop, match="bad.npz: not a pack of runs"):
        pack.unpack(str(tmp_path / "bad.npz"), str(tmp_path / "out"))
    np.savez(tmp_path / "other.npz", step=np.arange(3))  # a npz, but no index
    with pytest.raises(Stop, match="other.npz: not a pack of runs"):
        pack.unpack(str(tmp_path / "other.npz"), str(tmp_path / "out"))
