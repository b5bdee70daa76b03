"""
The analysis script end to end on tiny runs: folders of runs, bad runs skipped with a one-line
message, the summary, the cache stamp that follows the measures' code, and a new measure in one
place.

    python -m pytest -q test_analyze.py
"""
import csv
import errno
import os
import shutil
import subprocess
import sys

from dataclasses import replace

import numpy as np
import pytest
import torch

import analyze as A
import fourier
import measures as M
import runfiles
import summary as S
from config import Config
from conftest import HERE, train_alone
from data import make_data
from model import build_model
from runfiles import Stop

P = 23


def tiny_run(root, name, **kw):
    small = dict(p=P, d_model=32, d_mlp=64, frac=0.5, steps=40, eval_every=10, ckpt_every=20)
    cfg = Config(**{**small, **kw})
    train_alone(cfg, str(root / name), log=lambda *a: None)
    return root / name


def short_sgld(monkeypatch):
    """SGLD chains of 5 + 10 steps, for a test of the analysis around the LLC (test_measures
    tests its value, test_no_llc_... runs it at its settings): 150 steps at each of a tiny
    run's checkpoints were most of such a test's time."""
    monkeypatch.setattr(M, "LLC_BURNIN", 5)
    monkeypatch.setattr(M, "LLC_DRAWS", 10)


def test_analyze_folder_of_runs_and_skip_bad_ones(tmp_path, capsys, monkeypatch):
    short_sgld(monkeypatch)
    for s in (0, 1):
        tiny_run(tmp_path, f"pre_s{s}", seed=s)
        tiny_run(tmp_path, f"off_s{s}", seed=s, ln="off")
    tiny_run(tmp_path, "mlp_s0", model="mlp")
    tiny_run(tmp_path, "dnn_s0", model="mlp", embed="onehot", n_layers=2, mlp_eq=True)  # Gu et al.
    tiny_run(tmp_path, "lr_s0", lr=3e-3)
    tiny_run(tmp_path, "a_batch_s0", batch_size=16)  # first: --batch-size None elsewhere
    hole = tiny_run(tmp_path, "hole_s0", split="square", hole=4, steps=200, lr=1e-2, ckpt_every=100)
    offset = tiny_run(tmp_path, "offset_s0", split="strip", hole=4, b_offset=10)  # b on 10..32
    os.makedirs(tmp_path / "empty" / "ckpt")
    (tmp_path / "empty" / "config.json").write_text("{}")
    bad = tiny_run(tmp_path, "truncated")
    ck = bad / "ckpt" / "step_000040.pt"
    ck.write_bytes(ck.read_bytes()[:500])
    A.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "skipped: missing " in out and "empty/metrics.npz" in out and "corrupt checkpoint" in out
    r = dict(np.load(tmp_path / "pre_s0" / "analysis.npz"))
    m = np.load(tmp_path / "pre_s0" / "metrics.npz")
    assert list(r["step"]) == [0, 20, 40]
    logged = np.isin(m["step"], r["step"])
    np.testing.assert_allclose(r["train_loss"], m["train_loss"][logged], rtol=1e-5)
    np.testing.assert_allclose(r["test_loss"], m["test_loss"][logged], rtol=1e-5)
    assert r["ntk_distance"][0] == 0 and r["ntk_distance"][-1] > 0
    assert r["fourier_embed"].shape == (3, P // 2 + 1)
    assert r["attn_entropy_heads"].shape == (3, 4)
    # the LLC at the multiples of llc_every (here every checkpoint: 40 steps), the Clock /
    # Pizza signatures at every checkpoint
    assert np.isfinite(r["llc"]).tolist() == [True, True, True]
    assert r["llc_chains"].shape == (3, M.LLC_CHAINS)
    assert np.isfinite(r["distance_irrelevance"]).all()
    assert np.isfinite(r["gradient_symmetricity"]).all()
    dnn = dict(np.load(tmp_path / "dnn_s0" / "analysis.npz"))
    assert np.isfinite(dnn["ntk_distance"]).all() and np.isfinite(dnn["med_hidden"]).all()
    assert np.isnan(dnn["gradient_symmetricity"]).all()  # one-hot operands: no embedding
    r = dict(np.load(offset / "analysis.npz"))  # the strip's a <= 4 are no b's tokens
    assert all(np.isfinite(r[k]).all() for k in ("med", "c_fourier", "gini_embed", "hole_acc"))
    assert np.isnan(r["hole_acc_shared"]) and np.isfinite(r["hole_acc_unshared"])
    for f in ("curves", "fourier_embed", "progress", "med_cfourier_entropy", "heatmaps"):
        assert (tmp_path / "pre_s0" / "figures" / f"{f}.png").stat().st_size > 10000
    for f in ("loss_by_config", "steps_to_generalize", "c_fourier_by_config",
              "sr_train_by_config", "sweep_lr", "update_norm_by_config", "llc_by_config",
              "distance_irrelevance_by_config", "gradient_symmetricity_by_config"):
        assert (tmp_path / "figures" / f"{f}.png").exists()
    # test accuracy in and out of the hole a, b <= 4, by hand
    ck = torch.load(hole / "ckpt" / "step_000200.pt", weights_only=True)
    cfg = Config.from_dict(ck["config"])
    model = build_model(cfg).double()
    model.load_state_dict(ck["model"])
    _, _, x, y = make_data(cfg)
    right, in_hole = model(x).argmax(-1) == y, (x[:, 0] <= 4) & (x[:, 1] <= 4)
    r = dict(np.load(hole / "analysis.npz"))
    assert r["hole_acc"][-1] == pytest.approx(right[in_hole].double().mean().item())
    assert r["rest_acc"][-1] == pytest.approx(right[~in_hole].double().mean().item())
    assert r["rest_acc"][-1] > 0.2
    assert r["hole_bound"] == pytest.approx((~in_hole).double().mean().item())
    # test pairs whose swap is a train pair
    train = {(int(a), int(b)) for a, b in make_data(cfg)[0][:, :2]}
    swapped = torch.tensor([(int(b), int(a)) in train for a, b in x[:, :2]])
    assert r["swap_acc"] == pytest.approx(right[swapped].double().mean().item())
    assert r["noswap_acc"] == pytest.approx(right[~swapped].double().mean().item())
    assert r["swap_share"] == pytest.approx(swapped.double().mean().item())
    assert 0 < r["swap_share"] < 1
    summary = (tmp_path / "summary.md").read_text()
    for s in ("0 1", "ln=pre", "ln=off", "acc in hole", "without their swap"):
        assert s in summary
    rows = list(csv.reader(open(tmp_path / "summary.csv")))
    # 40-step runs have nothing at step 1000: the csv keeps the column, summary.md leaves it out
    assert "SR-train at 1000" in rows[0] and "SR-train at 1000" not in summary
    assert {r[rows[0].index("SR-train at 1000")] for r in rows[1:]} == {"not reached"}
    peak, at_grok = (rows[0].index(f"eff. rank {s}") for s in ("peak", "at generalization"))
    mlp = [r for r in rows if "model=mlp, embed=learned" in r[0]]
    top = np.load(tmp_path / "mlp_s0" / "analysis.npz")["eff_rank"].max()
    assert len(mlp) == 1 and mlp[0][peak] == f"{top:.2f} +- 0.00"
    assert mlp[0][at_grok] == "not reached"
    # unchanged checkpoints: not recomputed
    mtime = os.path.getmtime(tmp_path / "pre_s0" / "analysis.npz")
    A.analyse_run(str(tmp_path / "pre_s0"))
    assert os.path.getmtime(tmp_path / "pre_s0" / "analysis.npz") == mtime


def test_analyze_skips_the_one_bad_file_or_run_says_which_and_goes_on(tmp_path, capsys,
                                                                      monkeypatch):
    short_sgld(monkeypatch)
    first = tiny_run(tmp_path, "files")
    for name in ("cache", "metrics", "name"):
        shutil.copytree(first, tmp_path / name)
    # in one run: a bad last checkpoint, a stray file, another model's weights: those files alone
    ck = torch.load(first / "ckpt" / "step_000020.pt", weights_only=True)
    (first / "ckpt" / "step_000040.pt").write_bytes(b"")
    torch.save(ck, first / "ckpt" / "step_final.pt")
    other = Config(p=P, d_model=16, n_heads=4, d_mlp=64)
    torch.save(dict(ck, step=30, model=build_model(other).state_dict()),
               first / "ckpt" / "step_000030.pt")
    (tmp_path / "cache" / "analysis.npz").write_bytes(b"PK\x03\x04 cut short")  # made again
    metrics = tmp_path / "metrics" / "metrics.npz"
    metrics.write_bytes(metrics.read_bytes()[:300])  # truncated: that run is skipped
    os.rename(tmp_path / "name", os.fsdecode(bytes(tmp_path) + b"/name\xff"))  # not UTF-8
    A.main([str(tmp_path)])
    out = capsys.readouterr().out
    for line in (f"skipped corrupt checkpoint {first}/ckpt/step_000040.pt (EOFError",
                 f"skipped {first}/ckpt/step_final.pt: not a checkpoint",
                 f"skipped {first}/ckpt/step_000030.pt: the checkpoint of step 30 does not fit",
                 f"{tmp_path}/cache/analysis.npz cannot be read",
                 f"skipped: corrupt {metrics}", f"skipped: {tmp_path}/name\\xff: the name is not"):
        assert line in out
    assert list(np.load(first / "analysis.npz")["step"]) == [0, 20]
    assert list(np.load(tmp_path / "cache" / "analysis.npz")["step"]) == [0, 20, 40]
    assert not (tmp_path / "metrics" / "analysis.npz").exists()
    assert (tmp_path / "summary.md").exists()  # the runs that could be analysed, together
    assert not [f for _, _, fs in os.walk(tmp_path) for f in fs if f.endswith(".tmp")]


def test_analyze_on_a_full_disk_is_one_line_and_leaves_no_temp_file(tmp_path, capsys,
                                                                    monkeypatch):
    run = tiny_run(tmp_path, "r")

    def full(*a, **kw):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(runfiles.np, "savez_compressed", full)
    with pytest.raises(SystemExit, match="error: no run could be analysed"):
        A.main([str(run)])
    assert "skipped: no space left on the disk" in capsys.readouterr().out
    assert sorted(os.listdir(run)) == ["ckpt", "config.json", "metrics.npz", "resume.pt"]


def test_analyze_help_exits_0(capsys):
    with pytest.raises(SystemExit) as e:
        A.main(["--help"])
    assert e.value.code == 0 and "RUNS_DIR_OR_RUN" in capsys.readouterr().out


def test_summary_measures_at_a_common_step():
    r = dict(step=np.array([0, 500, 1500]), sr_train=np.array([4.0, 2.0, 0.0]),
             attn_entropy=np.full(3, np.nan))
    assert S.at(r, "sr_train", 1000) == 1.0  # linear between checkpoints
    assert S.at(r, "sr_train", 2000) is None and S.at(r, "c_fourier", 0) is None
    assert S.fmt([1, 3, None]) == "2 +- 1" and S.fmt([None]) == "not reached"
    assert S.fmt([S.at(r, "attn_entropy", 0)], 3) == "-"
    m = dict(step=np.arange(0, 3000, 500), test_loss=np.array([5, 1, 0.005, 0.5, 0.001, 3]),
             test_acc=np.array([0, 0.5, 0.95, 0.7, 1, 0.2]))
    assert S.after_grok(m, "test_acc", np.min) == 0.7  # steps 1000-2000 only
    assert S.after_grok(m, "test_loss", np.max, window=2000) == 3
    assert S.after_grok(m, "test_acc", lambda a: np.mean(a < 0.9)) == 1 / 3
    assert S.after_grok(dict(m, test_acc=np.full(6, 0.8)), "test_acc", np.min) is None


def test_phases_on_hand_made_curves():
    # test loss peaks at 1400, falls below 1 at 9000 and to 0.01 at 9500; the sum of squared
    # weights falls 500 per 1000 steps from 9000 to 1000 at 13000, then stays: it falls by
    # less than 1% in the next 1000 steps from 1000 / 0.99 = 3000 - 0.5 (s - 9000), s = 12980.
    step = np.arange(0, 20001, 10)
    loss = np.where(step <= 1400, 5 + step / 100, 19.0)
    loss = np.where(step >= 9000, 0.5, loss)
    loss = np.where(step >= 9500, 0.001, loss)
    wn = np.clip(3000 - 0.5 * np.clip(step - 9000, 0, None), 1000, None)
    m = dict(step=step, test_loss=loss, weight_norm=wn)
    assert A.phases(m) == (1400, 9000, 12980)
    assert A.phases({k: v[step <= 12500] for k, v in m.items()}) == (1400, 9000, None)
    assert A.phases(dict(m, test_loss=np.where(step >= 9000, 0.5, loss))) == (1400, 9000, None)
    never = dict(m, test_loss=np.where(step >= 9000, 19.0, loss))
    assert A.phases(never) == (1400, None, None)


def test_checkpoints_of_another_model_shape_stop_in_one_line_naming_the_run(tmp_path):
    run = tiny_run(tmp_path, "old", steps=20)
    for f in os.listdir(run / "ckpt"):  # as if trained by a model.py with a wider first layer
        ck = torch.load(run / "ckpt" / f, weights_only=True)
        ck["model"]["blocks.0.fc1.weight"] = torch.zeros(65, 32)
        torch.save(ck, run / "ckpt" / f)
    with pytest.raises(Stop) as e:
        A.analyse_run(str(run))
    msg = str(e.value)
    assert msg.startswith(f"{run}: the checkpoint of step 20 does not fit this model.py")
    assert "blocks.0.fc1.weight" in msg and "\n" not in msg


def test_checkpoints_before_a_resume_are_of_the_same_run():
    first = Config(steps=1000)  # what a run's first checkpoints hold
    extended = replace(first, steps=3000)  # --resume --steps 3000
    assert A.same_run(first, extended)
    # an older run's saved config holds --schedule-steps, an option no code reads now
    older = Config.from_dict({**first.to_dict(), "schedule_steps": 1000})
    assert older == first and A.same_run(first, older)
    assert not A.same_run(first, replace(first, lr=3e-3))


def test_analyze_bad_argument_is_one_line(tmp_path):
    with pytest.raises(SystemExit, match="is not a folder"):
        A.main([str(tmp_path / "nope")])
    with pytest.raises(SystemExit, match="no runs"):
        A.main([str(tmp_path)])


# ---------------------------------------------------------------- the registry and the stamp

def test_stamp_follows_the_code_of_the_measures(tmp_path, monkeypatch):
    ck = tmp_path / "step_000000.pt"
    ck.write_bytes(b"x")
    paths = [str(ck)]
    s = A.stamp(paths)
    assert A.stamp(paths) == s
    monkeypatch.setattr(A, "find_runs", lambda path: [])  # code no measure calls
    monkeypatch.setattr(S, "fmt", lambda values, digits=0: "")
    assert A.stamp(paths) == s
    changes = [(M.MEASURES, "med", M.Measure(lambda c: 2 * M.med(c.E))),  # its own code
               (M.FINAL, "cos_r2", lambda c: 0.0),
               (M, "med", lambda E: 0.0),  # a function a measure calls
               (fourier, "sum_directions", lambda p, keys: None),  # in another file, through
               (M, "fourier_basis", lambda p: None),  # restricted_loss; through run_context
               (fourier, "KEY_SHARE", 2.0)]  # a constant, via run_context -> key_frequencies
    for where, name, new in changes:
        with monkeypatch.context() as mp:
            (mp.setitem if isinstance(where, dict) else mp.setattr)(where, name, new)
            assert A.stamp(paths) != s, name
        assert A.stamp(paths) == s
    os.utime(ck, (1, 1))  # and the checkpoints, as before
    assert A.stamp(paths) != s


def test_no_llc_skips_only_the_llc_and_a_full_analysis_serves_it(tmp_path, capsys):
    run = tiny_run(tmp_path, "pre_s0")
    A.main(["--no-llc", str(run)])
    skipped = dict(np.load(run / "analysis.npz"))
    assert skipped["llc_skipped"] and np.isnan(skipped["llc"]).all()
    assert skipped["llc_chains"].shape == (3, M.LLC_CHAINS)
    assert np.isnan(skipped["llc_chains"]).all()
    logged = []
    full = A.analyse_run(str(run), log=logged.append)  # asked with the LLC: computed again
    assert len(logged) == 1 and not full["llc_skipped"] and np.isfinite(full["llc"]).all()
    for k in set(full) - {"llc", "llc_chains", "llc_skipped"}:
        np.testing.assert_array_equal(skipped[k], full[k], err_msg=k)
    assert A.analyse_run(str(run), log=logged.append, llc=False)["llc_skipped"] == False
    assert len(logged) == 1  # the full analysis kept, not computed again without the LLC


SCALES = {"embed": 1.0}  # a module-level constant a measure reads


def test_the_stamp_follows_a_dict_constant_a_measure_reads(monkeypatch):
    monkeypatch.setitem(M.MEASURES, "scaled", M.Measure(lambda c: SCALES["embed"] * c.E.max()))
    s = A.stamp([])
    monkeypatch.setitem(SCALES, "embed", 2.0)
    assert A.stamp([]) != s


def test_the_stamp_follows_what_a_measure_reaches_through_a_module(monkeypatch):
    # a measure that calls a function of this project as module.function (fourier.ce), and
    # that function reaches a constant the same way: an edit to either remakes the cache
    monkeypatch.setitem(M.MEASURES, "via_module", M.Measure(
        lambda c: fourier.ce(c.logits, c.y)))
    s = A.stamp([])
    with monkeypatch.context() as mp:
        mp.setattr(fourier, "ce", lambda logits, y: 0.0)
        assert A.stamp([]) != s
    assert A.stamp([]) == s
    monkeypatch.setattr(fourier, "ce", lambda logits, y: M.LLC_EPS * logits.sum())
    s = A.stamp([])
    monkeypatch.setattr(M, "LLC_EPS", 2 * M.LLC_EPS)
    assert A.stamp([]) != s


def stamp_of(folder):
    code = "import analyze; print(analyze.stamp([]))"
    return subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True,
                          text=True, check=True).stdout


def test_the_stamp_keeps_for_a_config_edit_and_follows_the_model_code(tmp_path):
    for f in os.listdir(HERE):
        if f.endswith(".py") and not f.startswith(("test_", "conftest")):
            shutil.copy(os.path.join(HERE, f), tmp_path / f)
    config_py = (tmp_path / "config.py").read_text()
    model_py = (tmp_path / "model.py").read_text()
    s = stamp_of(tmp_path)
    field = '    ckpt_every: int = option(100, "steps between checkpoints")\n'
    assert field in config_py
    (tmp_path / "config.py").write_text(config_py.replace(
        field, field + '    note: str = option("", "a new option no measure reads")\n'))
    assert stamp_of(tmp_path) == s  # not every analysis.npz recomputed for a new option
    forward = "        return self.ln2(x) if place.post else x\n"
    assert forward in model_py
    (tmp_path / "model.py").write_text(model_py.replace(forward, forward.replace("x\n", "2 * x\n")))
    assert stamp_of(tmp_path) != s  # Block.forward: what every measure reads


def embed_max(E):
    """A new measure: the largest embedding entry."""
    return float(E.abs().max())


def test_a_new_measure_is_one_registry_entry_in_analysis_summary_and_figure(tmp_path,
                                                                           monkeypatch):
    short_sgld(monkeypatch)
    run = tiny_run(tmp_path, "mlp_s0", model="mlp")
    before = A.analyse_run(str(run), log=lambda *a: None)
    monkeypatch.setitem(M.MEASURES, "embed_max", M.Measure(
        lambda c: embed_max(c.E), "max |W_E|", ("peak",), figure="largest embedding entry"))
    monkeypatch.setitem(M.FINAL, "n_keys", lambda c: len(c.keys))
    logged = []
    A.analyse_run(str(run), log=logged.append)
    assert len(logged) == 1  # recomputed: the registry changed
    r = dict(np.load(run / "analysis.npz"))
    assert set(r) == set(before) | {"embed_max", "n_keys"} and r["n_keys"] == len(before["keys"])
    final = torch.load(run / "ckpt" / "step_000040.pt", weights_only=True)["model"]
    assert r["embed_max"].shape == (3,)
    assert r["embed_max"][-1] == embed_max(final["embed.weight"][:P].double())
    for k in set(before) - {"stamp"}:  # and every other key as it was
        np.testing.assert_allclose(r[k], before[k], rtol=1e-12)
    A.main([str(tmp_path)])  # the folder: the summary and the cross-run figures
    rows = list(csv.reader(open(tmp_path / "summary.csv")))
    assert rows[1][rows[0].index("max |W_E| peak")] == f"{r['embed_max'].max():.2f} +- 0.00"
    assert "max |W_E| peak" in (tmp_path / "summary.md").read_text()
    assert (tmp_path / "figures" / "embed_max_by_config.png").stat().st_size > 10000


def test_a_dropout_run_is_measured_without_dropout(tmp_path, monkeypatch):
    """The measures read the trained function: the analysis's test loss at each checkpoint is
    the one training evaluated (no mask), the same whatever the random state."""
    short_sgld(monkeypatch)
    run = str(tiny_run(tmp_path, "drop", dropout=0.5))
    m = dict(np.load(os.path.join(run, "metrics.npz")))
    torch.manual_seed(1)
    a = A.analyse_run(run, log=lambda *_: None)
    np.testing.assert_allclose(a["test_loss"], m["test_loss"][np.isin(m["step"], a["step"])],
                               rtol=1e-5)
    os.remove(os.path.join(run, "analysis.npz"))
    torch.manual_seed(2)
    np.testing.assert_array_equal(A.analyse_run(run, log=lambda *_: None)["test_loss"],
                                  a["test_loss"])


@pytest.mark.parametrize("kw", [dict(), dict(ln="post", dropout=0.5),
                                dict(model="mlp", embed="onehot", n_layers=2, mlp_eq=True)])
def test_the_table_forward_over_every_pair_measures_what_model_py_s_does(tmp_path, monkeypatch,
                                                                          kw):
    """Every column of an analysis, the grid's forward on fast.py's table forward (one layer, or
    the MLP) and on model.py's, on a trained tiny run."""
    run = str(tiny_run(tmp_path, "r", **kw))
    cfg = A.run_config(run)
    cks = A.run_checkpoints(run, cfg, print)
    with torch.no_grad():
        fast_res = A.measure(cfg, cks, llc=False)
        monkeypatch.setattr(M.fast, "has_table", lambda cfg: False)
        ref = A.measure(cfg, cks, llc=False)
    assert fast_res.keys() == ref.keys()
    for k in ref:
        np.testing.assert_allclose(fast_res[k], ref[k], rtol=1e-9, atol=1e-12, err_msg=k)


def test_the_grid_forward_is_model_py_s_where_the_table_caches_otherwise(monkeypatch):
    cfg = Config(p=P, d_model=32, d_mlp=64)
    model = build_model(cfg)
    x, y, _ = M.all_pairs(cfg)
    P_, B = dict(model.double().named_parameters()), dict(model.named_buffers())
    table = M.fast.transformer_table

    def edited(*args):  # its logits and gradients model.py's, its features not
        out = table(*args)
        if args[-1] is not None:
            args[-1]["resid"] = 2 * args[-1]["resid"]
        return out
    for f in (table, edited):
        monkeypatch.setattr(M.fast, "transformer_table", f)
        got, want = {}, {}
        M.grid_forward(model, x[:64], y[:64])(P_, B, x[:64], got)
        model(x[:64], cache=want)
        torch.testing.assert_close(got["resid"], want["resid"])  # edited: model.py's forward


def test_baseline_lr_on_a_tie_is_the_default():
    cfg = lambda **kw: [(None, Config(**kw), None, None)]  # one run per lr: a three-way tie
    groups = {"ma-lr": cfg(grokfast="ma", lr=1.6e-4), "lr6": cfg(lr=6e-3), "base": cfg()}
    assert all(b is groups["base"] for b in S.baselines(groups).values())


def test_summary_md_leaves_out_the_columns_no_run_has_and_the_csv_keeps_them():
    header = ["configuration", "seeds", "train<=0.01 (mean +- std)", "test<=0.01 (mean +- std)",
              "reached", "final test acc", "acc in hole", "swaps", "C_Fourier at 1000",
              "vs baseline", "key frequencies"]
    rows = [["a", "0", "120 +- 0", "not reached", "0/1", "0.300", "-", "- / -", "not reached",
             "-", "[]"],
            ["b", "0", "130 +- 0", "not reached", "0/1", "0.400", "-", "0.500 / -",
             "not reached", "-", "[3, 7]"]]
    kept, kept_rows = S.shown(header, rows)
    assert kept == header[:6] + ["swaps", "key frequencies"]
    assert kept_rows[1] == rows[1][:6] + ["0.500 / -", "[3, 7]"]


def test_progress_through_the_sgld_steps_then_after_each_checkpoint(tmp_path, monkeypatch):
    run = tiny_run(tmp_path, "pre_s0", steps=60)  # checkpoints 0, 20, 40, 60
    cfg = A.run_config(str(run))
    cks = A.run_checkpoints(str(run), cfg, print)
    for module in (A, M):
        monkeypatch.setattr(module, "llc_every", lambda cfg: 40)  # the LLC at steps 0 and 40
    monkeypatch.setattr(M, "LLC_BURNIN", 1)
    monkeypatch.setattr(M, "LLC_DRAWS", 2)
    clock = iter(range(100000))  # each time.time() a second later: measured, not slept
    monkeypatch.setattr(A.time, "time", lambda: next(clock))
    ran = []
    real = M.run_llc

    def run_llc(c, states, progress=None, **kw):  # every LLC checkpoint in one call
        ran.append(len(states))
        return real(c, states, progress, **kw)
    monkeypatch.setattr(A, "run_llc", run_llc)
    seen = []
    with torch.no_grad():
        res = A.measure(cfg, cks, llc=True, progress=lambda *a: seen.append(a))
    assert ran == [2] and np.isfinite(res["llc"]).tolist() == [True, False, True, False]
    assert [what for what, _, _ in seen] == [
        f"LLC at 2 checkpoints, SGLD step {t}/3" for t in (1, 2, 3)] + [
        f"checkpoint {i}/4" for i in (1, 2, 3, 4)]
    # an SGLD step takes 1 s of the fake clock (one time() call a step), the 4 checkpoints
    # guessed at CHECKPOINT_S each until timed; then each checkpoint 1 s
    assert [left for _, _, left in seen] == [2 + 4 * A.CHECKPOINT_S, 1 + 4 * A.CHECKPOINT_S,
                                             4 * A.CHECKPOINT_S, 3, 2, 1, 0]
