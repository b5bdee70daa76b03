"""
Tests of train.py: bad input gives one line, checkpoints and resume, Ctrl-C and NaN, every
family trains, a small config really groks, batched runs equal separate runs, the experiment
scripts list valid runs.

    python -m pytest -q test_train.py
"""
import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import fields

import numpy as np
import pytest
import torch

import optim
import runfiles
import train as train_module
from cli import AUTO, parse_args
from config import PRESETS, Config
from conftest import BATCHED, HERE, quiet, small_cfg, train_alone
from data import make_data
from model import LN_PLACEMENTS, build_model
from optim import AdamW
from runfiles import Stop, load_checkpoint
from train import Interrupted, check_options, main, train


# ---------------------------------------------------------------- bad input: one line, no traceback

@pytest.mark.parametrize("argv,msg", [
    (["--ln", "sideways"], "argument --ln: invalid choice: 'sideways' (choose from 'off'"),
    (["--frac", "1.5"], "--frac 1.5 must be in (0, 1)"),
    (["--frac", "0"], "must be in (0, 1)"),
    (["--split", "square", "--hole", "200"], "--hole 200"),
    (["--op", "div", "--p", "12"], "needs a prime --p"),
    (["--op", "pow"], "argument --op: invalid choice: 'pow'"),
    (["--act", "tanh"], "argument --act: invalid choice: 'tanh'"),
    (["--emb-lr-ratio", "fast"], "--emb-lr-ratio"),
    (["--hole", "3"], "--hole needs --split"),
    (["--device", "tpu"], "unknown --device"),
    (["--norm", "bad"], "argument --norm: invalid choice: 'bad'"),
    (["--eps", "-1"], "--eps -1.0 must be finite and >= 0"),
    (["--eps", "nan"], "--eps nan must be finite"),
    (["--split-rng", "foo"], "argument --split-rng: invalid choice: 'foo'"),
    (["--data-seed", "-1"], "--data-seed -1 must be at least 0"),
    (["--device", "mps"], "no float64"),
    (["--seed", "0", "1", "--data-seed", "3", "4", "5"], "one per --seed (2)"),
    (["--preset", "alquabeh", "--embed", "onehot", "--emb-lr-ratio", "auto"],
     "needs learned embeddings"),
    (["--seed", "-1"], "--seed -1 must be at least 0"), (["--seed", "0", "0"], "given twice"),
    (["--lr", "nan"], "--lr nan must be finite"), (["--alpha", "inf"], "--alpha inf must be"),
    (["--ln-eps", "-1"], "--ln-eps -1.0 must be finite and >= 0"), (["--gf-lamb", "nan"], "lamb"),
    (["--emb-lr-ratio", "inf"], "--emb-lr-ratio 'inf' must be"), (["--no-bias"], "--model mlp"),
    (["--embed", "onehot"], "need --model mlp"), (["--preset", "alquabeh", "--dropout", "0.1"],
                                                  "--dropout needs a transformer"),
    (["--stop-after-grok", "-5"], "--stop-after-grok -5 must be non-negative"),
])
def test_bad_input_is_refused(argv, msg, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv + ["--out", str(tmp_path), "--steps", "2"])
    assert msg in str(e.value) and "\n" not in str(e.value)


def help_text(argv, capsys):
    with pytest.raises(SystemExit) as e:
        parse_args(argv + ["--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


def test_train_py_help_opens_with_its_usage_examples(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "python train.py --ln pre --seed 0 " in capsys.readouterr().out


def test_help_is_grouped_with_one_default_each_and_each_presets_own(capsys):
    text = help_text([], capsys)
    titles = ["task:", "model:", "optimization:", "steps and precision:", "run:", "output:"]
    starts = [text.index("\n" + t + "\n") for t in titles]
    assert starts == sorted(starts)
    entries = re.split(r"\n  (?=--)", text[starts[0]:text.index("\npresets")])
    for f in fields(Config):  # each option once, in its section, with at most one default
        entry = next(e for e in entries if re.match(f"--{f.name.replace('_', '-')}[ ,]", e))
        assert " ".join(entry.split()).count("(default") <= 1, entry
    assert "mlp-pre (M)" in " ".join(text.split()) and "attn-pre (A*)" in " ".join(text.split())
    assert "--act {gelu,relu}" in text and "(default gelu)" in text
    for name in PRESETS:
        assert re.search(rf"\n  {name} +\S", text), name
    assert "nanda    --act relu --causal --ln off --init nanda" in text
    nanda = " ".join(help_text(["--preset", "nanda"], capsys).split())
    assert "activation (default relu)" in nanda and "optimizer steps (default 40000)" in nanda


def test_bad_input_from_the_shell_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "train.py", "--ln", "sideways", "--out", str(tmp_path)],
                       cwd=HERE, capture_output=True, text=True)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "argument --ln: invalid choice" in r.stderr


def test_resume_refuses_missing_corrupt_and_different(tmp_path):
    args = ["--p", "23", "--d-model", "32", "--d-mlp", "64", "--steps", "10", "--out",
            str(tmp_path), "--name", "r"]
    with pytest.raises(SystemExit, match="missing checkpoint"):
        main(args + ["--resume"])
    main(args)
    with pytest.raises(SystemExit, match="holds a run .*: add --resume"):
        main(args)
    with pytest.raises(SystemExit, match="different config \\(lr\\)"):
        main(args + ["--resume", "--lr", "0.01"])
    with pytest.raises(SystemExit, match="at step 10, past --steps 5"):
        main(args + ["--resume", "--steps", "5"])
    os.remove(tmp_path / "r" / "metrics.npz")
    with pytest.raises(SystemExit, match="missing .*metrics.npz"):
        main(args + ["--resume", "--steps", "20"])
    path = tmp_path / "r" / "resume.pt"
    path.write_bytes(path.read_bytes()[:1000])  # truncated
    with pytest.raises(SystemExit, match="corrupt checkpoint"):
        main(args + ["--resume", "--steps", "20"])


def test_resume_may_extend_steps_under_the_default_name(tmp_path):
    args = ["--p", "23", "--d-model", "32", "--d-mlp", "64", "--eval-every", "5", "--out",
            str(tmp_path)]
    with pytest.raises(SystemExit, match="missing checkpoint"):
        main(args + ["--steps", "10", "--resume"])
    assert not tmp_path.exists() or not os.listdir(tmp_path)  # a refused --resume leaves no folder
    main(args + ["--steps", "10"])
    main(args + ["--steps", "20", "--resume"])  # --steps names no run: the same folder goes on
    assert os.listdir(tmp_path) == ["ln-pre_p-23_d-model-32_d-mlp-64_eval-every-5_s0"]
    assert np.load(tmp_path / os.listdir(tmp_path)[0] / "metrics.npz")["step"][-1] == 20


# ---------------------------------------------------------------- checkpoints, resume, determinism

def test_checkpoint_round_trip(tmp_path):
    cfg = small_cfg(steps=10)
    train_alone(cfg, str(tmp_path / "r"), log=quiet)
    ck = torch.load(tmp_path / "r" / "ckpt" / "step_000010.pt", weights_only=True)
    assert set(ck) == {"step", "config", "model"} and ck["step"] == 10
    model = build_model(Config.from_dict(ck["config"]))
    model.load_state_dict(ck["model"])
    m = np.load(tmp_path / "r" / "metrics.npz")
    xtr, ytr = make_data(cfg)[:2]
    loss = torch.nn.functional.cross_entropy(model(xtr).double(), ytr).item()
    assert loss == pytest.approx(m["train_loss"][-1], rel=1e-6)
    assert sorted(os.listdir(tmp_path / "r" / "ckpt")) == ["step_000000.pt", "step_000010.pt"]
    assert not [f for f in os.listdir(tmp_path / "r") if f.endswith(".tmp")]


def test_resume_continues_to_the_same_metrics_and_runs_are_deterministic(tmp_path):
    full = train_alone(small_cfg(steps=40), str(tmp_path / "a"), log=quiet)
    again = train_alone(small_cfg(steps=40), str(tmp_path / "b"), log=quiet)
    train_alone(small_cfg(steps=20), str(tmp_path / "c"), log=quiet)
    resumed = train_alone(small_cfg(steps=40), str(tmp_path / "c"), resume=True, log=quiet)
    for k in full:
        np.testing.assert_array_equal(np.array(full[k]), np.array(again[k]))
        np.testing.assert_array_equal(np.array(full[k]), np.array(resumed[k]), err_msg=k)


def adamw_pair(steps, lrs, wds=(0.0, 0.5)):
    """Parameters trained by this project's AdamW and by torch.optim.AdamW from the same start,
    on the same gradients; lrs[t] is the lr of step t, set in place in ours."""
    torch.manual_seed(0)
    start = [torch.randn(7, 5), torch.randn(5), torch.randn(3)]  # the last gets no gradient
    ours, ref = [[t.clone().requires_grad_() for t in start] for _ in range(2)]
    opt = AdamW(ours, (0.9, 0.98), 1e-8)
    torch_opt = torch.optim.AdamW([{"params": [p], "weight_decay": wd} for p, wd in
                                   zip(ref, (wds[0], wds[1], 0.0))], lr=lrs[0],
                                  betas=(0.9, 0.98), eps=1e-8)
    for w, wd in zip(opt.wd, (wds[0], wds[1], 0.0)):
        w.fill_(wd)
    step = opt.step  # one bound step, as a recorded CUDA graph would be: it must read new lrs
    for t in range(steps):
        g = [torch.randn(7, 5), torch.randn(5)]
        for params, o in ((ours, None), (ref, torch_opt)):
            params[0].grad, params[1].grad = g[0].clone(), g[1].clone()
        for lr in opt.lr:
            lr.fill_(lrs[t])
        for grp in torch_opt.param_groups:
            grp["lr"] = lrs[t]
        step()
        torch_opt.step()
    return ours, ref, opt


def test_adamw_equals_torch_adamw_bit_for_bit_and_reads_lr_set_in_place():
    lrs = [1e-3 * min(t / 5, 1) for t in range(30)]  # a warm-up: lr changes between steps
    ours, ref, opt = adamw_pair(30, lrs)
    for a, b in zip(ours, ref):
        assert torch.equal(a, b)
    assert set(opt.state) == {ours[0], ours[1]}  # no gradient, no state, as torch's
    assert set(opt.state[ours[0]]) == {"step", "exp_avg", "exp_avg_sq"}


def test_adamw_runs_of_a_stack_take_their_own_lr_and_wd():
    p = torch.zeros(3, 4, requires_grad=True)  # 3 runs stacked on the first axis
    opt = AdamW([p], (0.9, 0.98), 1e-8, runs=3)
    opt.lr[0].copy_(torch.tensor([0.0, 1e-3, 1e-2], dtype=torch.float64))
    with torch.no_grad():
        p += 1
    p.grad = torch.ones(3, 4)
    opt.step()  # the first step of Adam moves each weight by lr (bias-corrected m / sqrt(v) = 1)
    torch.testing.assert_close(p.detach()[:, 0], torch.tensor([1.0, 1 - 1e-3, 1 - 1e-2]))
    opt.wd[0].copy_(torch.tensor([0.0, 0.0, 10.0], dtype=torch.float64))
    opt.lr[0].fill_(1e-2)
    before = p.detach().clone()
    p.grad = torch.zeros(3, 4)
    opt.step()
    shrink = p.detach()[:, 0] / before[:, 0]
    assert shrink[0] != shrink[2] and shrink[2] == pytest.approx(0.9, abs=0.02)


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_and_sigterm_save_at_the_step_and_resume_as_uninterrupted(sig, status, tmp_path):
    common = ["--p", "23", "--d-model", "32", "--d-mlp", "64", "--eval-every", "5",
              "--ckpt-every", "10", "--device", "cpu", "--out", str(tmp_path)]
    args = common + ["--name", "r"]
    proc = subprocess.Popen([sys.executable, "train.py", *args, "--steps", "100000"], cwd=HERE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not os.path.exists(tmp_path / "r" / "ckpt" / "step_000010.pt") and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    # non-zero, as a shell expects (a sweep stops), one line saying how to go on
    assert proc.returncode == status and "Traceback" not in err
    step = load_checkpoint(str(tmp_path / "r" / "resume.pt"))["step"]
    assert err.strip() == (f"interrupted by {signal.Signals(sig).name} at step {step}: saved; "
                           f"continue with: python train.py {' '.join(args)} --steps 100000 "
                           "--resume")
    assert step > 10 and np.load(tmp_path / "r" / "metrics.npz")["step"][-1] < step
    # ckpt/ holds the grid alone: the resumed run has the uninterrupted one's checkpoints
    end = str(step + 12)
    main(args + ["--steps", end, "--resume"])
    main(common + ["--name", "r0", "--steps", end])
    full = np.load(tmp_path / "r0" / "metrics.npz")
    resumed = np.load(tmp_path / "r" / "metrics.npz")
    for k in full.files:
        np.testing.assert_array_equal(resumed[k], full[k], err_msg=k)
    assert os.listdir(tmp_path / "r" / "ckpt") == os.listdir(tmp_path / "r0" / "ckpt")
    assert sorted(os.listdir(tmp_path / "r")) == ["ckpt", "config.json", "metrics.npz",
                                                  "resume.pt"]  # no lock, no temp file


TINY = ["--p", "7", "--d-model", "16", "--n-heads", "2", "--d-mlp", "32", "--frac", "0.5",
        "--eval-every", "5", "--ckpt-every", "10", "--device", "cpu"]


def test_a_second_writer_is_kept_out_naming_the_first_and_a_dead_ones_lock_is_taken_over(
        tmp_path):
    args = TINY + ["--out", str(tmp_path), "--name", "r"]
    main(args + ["--steps", "10"])
    lock = str(tmp_path / "r" / "lock")
    holder = subprocess.Popen(  # another process writing the run: it holds the lock
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
         "os.write(fd, str(os.getpid()).encode())\nprint('locked', flush=True)\ntime.sleep(120)",
         lock], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "locked\n"
    with pytest.raises(SystemExit, match=f"being written by process {holder.pid}: wait"):
        main(args + ["--steps", "20", "--resume"])
    holder.kill()  # kill -9: its lock file stays behind, naming a dead process
    holder.wait()
    dead, live = (tmp_path / "r" / f"resume.pt.{pid}.tmp" for pid in (holder.pid, os.getppid()))
    dead.write_bytes(b"half")  # what a writer killed in the middle of a save leaves
    live.write_bytes(b"half")  # a living process's: never touched
    assert os.path.exists(lock)
    main(args + ["--steps", "20", "--resume"])
    assert not os.path.exists(lock) and not dead.exists() and live.read_bytes() == b"half"
    assert np.load(tmp_path / "r" / "metrics.npz")["step"][-1] == 20


def test_save_atomic_writes_a_temp_file_of_its_own_and_removes_it_on_failure(tmp_path,
                                                                           monkeypatch):
    path = str(tmp_path / "m.npz")
    others = [path + ".tmp", path + ".222.tmp"]  # another writer's, half written
    for q in others:
        open(q, "wb").write(b"half")
    monkeypatch.setattr(os, "getpid", lambda: 111)
    runfiles.save_atomic(dict(a=np.arange(3)), path)
    np.testing.assert_array_equal(np.load(path)["a"], np.arange(3))
    with pytest.raises(TypeError):  # a failure: no temp file of this writer stays
        runfiles.save_atomic(dict(a=object()), str(tmp_path / "c.json"))
    assert sorted(os.listdir(tmp_path)) == sorted(["m.npz", "m.npz.tmp", "m.npz.222.tmp"])
    assert all(open(q, "rb").read() == b"half" for q in others)


@pytest.mark.parametrize("writer,fail_at", [("torch", 4), ("numpy", 2)])
def test_a_full_disk_is_one_line_leaves_no_temp_file_and_resume_goes_on(writer, fail_at,
                                                                       tmp_path, monkeypatch):
    args = TINY + ["--steps", "30", "--out", str(tmp_path)]
    main(args + ["--name", "full"])
    module = runfiles.torch if writer == "torch" else runfiles.np
    name = "save" if writer == "torch" else "savez_compressed"
    write, calls = getattr(module, name), []

    def short_write(*a, **kw):  # the disk fills up at the fail_at-th write of this kind
        calls.append(1)
        if len(calls) < fail_at:
            return write(*a, **kw)
        if writer == "torch":  # torch's zip writer: part of the file (obj, path), then this
            open(a[1], "wb").write(b"PK\x03\x04")
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 64")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(module, name, short_write)
    with pytest.raises(SystemExit) as e:
        main(args + ["--name", "r"])
    assert str(e.value).startswith("error: no space left on the disk")
    assert "--resume" in str(e.value)
    assert not [f for _, _, fs in os.walk(tmp_path) for f in fs if f.endswith(".tmp")]
    monkeypatch.setattr(module, name, write)
    main(args + ["--name", "r", "--resume"])
    full = np.load(tmp_path / "full" / "metrics.npz")
    resumed = np.load(tmp_path / "r" / "metrics.npz")
    for k in full.files:
        np.testing.assert_array_equal(resumed[k], full[k], err_msg=k)


def test_a_resume_to_nan_weights_keeps_every_metrics_row(tmp_path):
    train_alone(small_cfg(steps=10), str(tmp_path / "r"), log=quiet)
    path = tmp_path / "r" / "resume.pt"
    ck = torch.load(path, weights_only=True)
    ck["model"] = {k: torch.full_like(v, float("nan")) for k, v in ck["model"].items()}
    torch.save(ck, path)
    before = np.load(tmp_path / "r" / "metrics.npz")
    with pytest.raises(Stop, match="train loss is nan at step 10"):
        train_alone(small_cfg(steps=20), str(tmp_path / "r"), resume=True, log=quiet)
    after = np.load(tmp_path / "r" / "metrics.npz")
    assert list(after["step"]) == [0, 5, 10]
    for k in before.files:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)


def test_nan_stops_and_keeps_the_last_good_checkpoint(tmp_path):
    with pytest.raises(Stop, match="train loss is (nan|inf) at step [1-9].*last good checkpoint"):
        train_alone(small_cfg(steps=200, lr=1e30, eps=1e-30, eval_every=1), str(tmp_path / "r"),
                    log=quiet)
    ck = load_checkpoint(str(tmp_path / "r" / "resume.pt"))
    assert all(torch.isfinite(v).all() for v in ck["model"].values())


def test_resume_is_exact_after_ctrl_c_between_evaluations_or_a_crash_in_save(tmp_path,
                                                                            monkeypatch):
    cfg = lambda: small_cfg(steps=30, emb_lr_ratio="auto")  # the ratio follows the weights
    full = train_alone(cfg(), str(tmp_path / "full"), log=quiet)
    hyper, save_metrics = train_module.set_hyper, train_module.save_metrics
    monkeypatch.setattr(train_module, "set_hyper", lambda opt, n, c, step, *a: (
        step == 12 and os.kill(os.getpid(), signal.SIGINT), hyper(opt, n, c, step, *a))[1])
    with pytest.raises(Interrupted, match="SIGINT at step 13"):  # Ctrl-C at step 12
        train_alone(cfg(), str(tmp_path / "c"), log=quiet)
    calls = []  # a crash (a kill) in the second save, the step-10 one
    monkeypatch.setattr(train_module, "save_metrics", lambda *a: (
        calls.append(1), len(calls) == 2 and 1 / 0, save_metrics(*a)))
    monkeypatch.setattr(train_module, "set_hyper", hyper)
    with pytest.raises(ZeroDivisionError):
        train_alone(cfg(), str(tmp_path / "k"), log=quiet)
    monkeypatch.setattr(train_module, "save_metrics", save_metrics)
    for run in ("c", "k"):
        resumed = train_alone(cfg(), str(tmp_path / run), resume=True, log=quiet)
        for k in train_module.KEYS:
            np.testing.assert_array_equal(resumed[k], full[k], err_msg=f"{run}: {k}")


def files_of(folder):
    """Every file below folder: its bytes."""
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(folder) for f in files}


def assert_same_run_files(a, b):
    """Run folders a and b hold the same files: metrics equal, every checkpoint's config,
    weights, optimizer and random state equal bit for bit."""
    assert sorted(files_of(a)) == sorted(files_of(b))
    for name in files_of(a):
        if name.endswith(".pt"):
            x, y = (load_checkpoint(str(folder / name)) for folder in (a, b))
            assert x.pop("config") == y.pop("config")
            torch.testing.assert_close(x, y, rtol=0, atol=0)
        elif name == "metrics.npz":
            np.testing.assert_equal(dict(np.load(a / name)), dict(np.load(b / name)))


def test_auto_resume_starts_resumes_as_uninterrupted_and_leaves_a_finished_run(tmp_path,
                                                                               monkeypatch):
    cfg = lambda: small_cfg(steps=30)
    full = train_alone(cfg(), str(tmp_path / "full"), log=quiet)
    hyper = train_module.set_hyper
    monkeypatch.setattr(train_module, "set_hyper", lambda opt, n, c, step, *a: (
        step == 17 and os.kill(os.getpid(), signal.SIGTERM), hyper(opt, n, c, step, *a))[1])
    with pytest.raises(Interrupted, match="SIGTERM at step 18"):  # a requeue's SIGTERM
        train_alone(cfg(), str(tmp_path / "r"), resume=AUTO, log=quiet)  # nothing there: starts
    monkeypatch.setattr(train_module, "set_hyper", hyper)
    resumed = train_alone(cfg(), str(tmp_path / "r"), resume=AUTO, log=quiet)  # goes on
    np.testing.assert_equal(resumed, full)
    assert_same_run_files(tmp_path / "r", tmp_path / "full")
    lines, before = [], files_of(tmp_path / "r")
    again = train_alone(cfg(), str(tmp_path / "r"), resume=AUTO, log=lines.append)
    np.testing.assert_equal(again, full)
    assert lines == [f"{tmp_path / 'r'}: finished at step 30; nothing to do"]
    assert files_of(tmp_path / "r") == before  # not even rewritten
    with pytest.raises(Stop, match="different config \\(lr\\)"):  # another run by that name
        train_alone(small_cfg(steps=30, lr=3e-3), str(tmp_path / "r"), resume=AUTO, log=quiet)
    longer = train_alone(small_cfg(steps=40), str(tmp_path / "r"), resume=AUTO, log=quiet)
    assert longer["step"][-1] == 40  # a larger --steps goes on


def test_auto_resume_takes_batched_runs_all_or_none(tmp_path):
    cfgs = [small_cfg(steps=20, seed=s) for s in (0, 1)]
    dirs = [str(tmp_path / f"s{s}") for s in (0, 1)]
    train_alone(cfgs[0], dirs[0], log=quiet)
    with pytest.raises(Stop, match="1 of these 2 runs hold a run .*s0.* and 1 do not .*s1"):
        train(cfgs, dirs, resume=AUTO, log=quiet)
    assert not os.path.exists(dirs[1])
    both = train(cfgs, [str(tmp_path / f"b{s}") for s in (0, 1)], resume=AUTO, log=quiet)
    lines = []
    again = train(cfgs, [str(tmp_path / f"b{s}") for s in (0, 1)], resume=AUTO, log=lines.append)
    np.testing.assert_equal(again, both)
    assert len(lines) == 2 and "nothing to do" in lines[1]


@pytest.mark.parametrize("left", [("config.json",), ("config.json", "metrics.npz", "ckpt")])
@pytest.mark.parametrize("resume", [False, AUTO])
def test_a_run_stopped_before_its_first_save_starts_again(left, resume, tmp_path):
    cfg = small_cfg(steps=20)
    full = train_alone(cfg, str(tmp_path / "full"), log=quiet)
    # what Ctrl-C after config.json, NaN at step 0 or kill -9 in the step-0 save leaves: at
    # most step 0's files, no resume.pt
    dead = tmp_path / "dead"
    os.makedirs(dead / "ckpt")
    for name in left:
        if name == "metrics.npz":
            np.savez(dead / name, **{k: v[:1] for k, v in
                                     np.load(tmp_path / "full" / name).items()})
        elif name == "ckpt":
            shutil.copy(tmp_path / "full" / "ckpt" / "step_000000.pt", dead / "ckpt")
        else:
            shutil.copy(tmp_path / "full" / name, dead / name)
    assert runfiles.run_state(str(tmp_path / "dead")) == "new"
    with pytest.raises(Stop, match="stopped before its first save; run the same command "
                                   "without --resume"):
        train_alone(cfg, str(tmp_path / "dead"), resume=True, log=quiet)
    np.testing.assert_equal(train_alone(cfg, str(tmp_path / "dead"), resume=resume, log=quiet),
                            full)


@pytest.mark.parametrize("after", [0.3, 1.5])  # while torch loads; while the run is set up
def test_ctrl_c_before_training_is_one_line(after, tmp_path):
    proc = subprocess.Popen([sys.executable, "train.py", "--p", "113", "--out", str(tmp_path)],
                            cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.count("\n") == 1, err
    # the loop may have begun on a fast machine: then it saved, as Ctrl-C's other test checks
    assert err.startswith(("interrupted before training began: nothing saved",
                           "interrupted by SIGINT at step")), err


def test_a_name_made_from_long_flags_is_shortened_unique_and_the_same_each_time(tmp_path):
    long = ["--preset", "nanda", "--grokfast", "ema", "--gf-alpha", "0.98", "--gf-lamb", "5.0",
            "--lr", "0.001", "--wd", "0.005", "--betas", "0.9", "0.98", "--warmup", "10",
            "--frac", "0.3", "--d-model", "128", "--d-mlp", "512", "--n-heads", "4", "--eval-every",
            "10", "--ckpt-every", "100", "--loss-dtype", "float64", "--dtype", "float32",
            "--ln-eps", "1e-05", "--gf-window", "100", "--out", str(tmp_path)]
    names = [os.path.basename(parse_args(long + ["--seed", s])[1][0]) for s in ("0", "1")]
    assert names[0] != names[1] and all(len(n.encode()) <= runfiles.MAX_NAME for n in names)
    assert names[0].startswith("nanda_ln-off_frac-0.3_d-model-128_") and names[1].endswith("_s1")
    assert re.fullmatch(r".{150,}_[0-9a-f]{10}_s0", names[0])  # shortened: a digest of the whole
    assert os.path.basename(parse_args(long + ["--seed", "0"])[1][0]) == names[0]
    other = long[:-2] + ["--frac", "0.4", "--out", str(tmp_path), "--seed", "0"]
    assert os.path.basename(parse_args(other)[1][0]) != names[0]


def test_stop_after_grok_holds_after_a_resume(tmp_path, monkeypatch):
    monkeypatch.setattr(train_module, "first_below", lambda steps, v: 0 if len(steps) else None)
    full = train_alone(small_cfg(steps=60), str(tmp_path / "full"), stop_after_grok=13, log=quiet)
    train_alone(small_cfg(steps=12), str(tmp_path / "r"), log=quiet)
    resumed = train_alone(small_cfg(steps=60), str(tmp_path / "r"), resume=True,
                          stop_after_grok=13, log=quiet)
    assert full["step"] == resumed["step"] == [0, 5, 10, 13]
    np.testing.assert_array_equal(resumed["test_loss"], full["test_loss"])


# ---------------------------------------------------------------- training works

@pytest.mark.parametrize("ln", list(LN_PLACEMENTS))
def test_every_ln_placement_trains(ln, tmp_path):
    m = train_alone(small_cfg(steps=100, lr=3e-3, ln=ln), str(tmp_path / "r"), log=quiet)
    assert m["train_loss"][-1] < 0.8 * m["train_loss"][0]


@pytest.mark.parametrize("kw", [dict(model="mlp"), dict(model="mlp", embed="onehot"),
                                dict(init="nanda", ln="off", causal=True, act="relu", warmup=10)])
def test_other_families_train(kw, tmp_path):
    m = train_alone(small_cfg(steps=100, lr=3e-3, **kw), str(tmp_path / "r"), log=quiet)
    assert m["train_loss"][-1] < 0.8 * m["train_loss"][0]


def test_a_default_run_of_10000_steps_writes_under_100_mb(tmp_path):
    # its 101 checkpoints (--ckpt-every 100) and resume.pt, measured on the files one step writes
    train_alone(Config(steps=1, eval_every=1, ckpt_every=1), str(tmp_path / "r"), log=quiet)
    ckpt = os.path.getsize(tmp_path / "r" / "ckpt" / "step_000001.pt")
    resume = os.path.getsize(tmp_path / "r" / "resume.pt")
    assert 101 * ckpt + resume < 100e6


def test_a_small_config_really_groks(tmp_path):
    # Train fits first, test follows much later: the grokking curve, in seconds. Small-p runs
    # are seed-sensitive (with this config seed 0 does not reach 0.01 in 3000 steps, seed 1
    # does at ~740); the seed is fixed, and runs are deterministic on one machine.
    cfg = Config(p=31, frac=0.5, d_model=64, d_mlp=256, ln="mlp-pre", seed=2, steps=3000,
                 eval_every=10, ckpt_every=1000)
    m = train_alone(cfg, str(tmp_path / "g"), stop_after_grok=0, log=quiet)
    s, tr, te = np.array(m["step"]), np.array(m["train_loss"]), np.array(m["test_loss"])
    t_train, t_test = s[np.argmax(tr <= 0.01)], s[np.argmax(te <= 0.01)]
    assert (tr <= 0.01).any() and (te <= 0.01).any()
    assert t_test >= 3 * t_train
    assert te[s == t_train][0] > 1.0  # memorised first: test loss still high when train fits


# ---------------------------------------------------------------- several runs, batched

def test_batched_runs_are_every_combination_and_share_shape(tmp_path):
    cfgs, names, _ = parse_args(["--lr", "1e-3", "3e-3", "--seed", "0", "1"])
    assert [(c.seed, c.lr) for c in cfgs] == [(0, 1e-3), (0, 3e-3), (1, 1e-3), (1, 3e-3)]
    assert len(set(names)) == 4
    cfgs, names, _ = parse_args(["--seed", "0", "1", "--data-seed", "7", "9"])  # paired
    assert [(c.seed, c.data_seed) for c in cfgs] == [(0, 7), (1, 9)] and "data-seed-9" in names[1]
    cfgs, _, _ = parse_args(["--ln", "pre", "mlp-pre", "--seed", "0", "1"])
    assert [(c.ln, c.seed) for c in cfgs] == [("pre", 0), ("pre", 1), ("mlp-pre", 0),
                                              ("mlp-pre", 1)]
    with pytest.raises(Stop, match="not d_mlp"):
        train([small_cfg(), small_cfg(d_mlp=48)], [str(tmp_path / "a"), str(tmp_path / "b")],
              log=quiet)
    with pytest.raises(Stop, match="train --ln off .no LayerNorm. on its own"):
        train([small_cfg(), small_cfg(ln="off")], [str(tmp_path / "a"), str(tmp_path / "b")],
              log=quiet)
    with pytest.raises(SystemExit, match="--name names one run"):
        main(["--seed", "0", "1", "--name", "x", "--out", str(tmp_path)])
    with pytest.raises(ValueError, match=r"a run folder per config, not \d+ for 1"):
        train([small_cfg()], str(tmp_path / "a"), log=quiet)  # a str: a list of its letters


@pytest.mark.parametrize("script", sorted(f for f in os.listdir(os.path.join(HERE, "experiments"))
                                           if f.endswith(".sh") and f != "jobs.sh"))
def test_experiment_scripts_list_valid_distinct_runs(script, tmp_path):
    def runs(mode):  # the run folders that the commands `script mode` prints would write
        out = subprocess.run(["bash", os.path.join(HERE, "experiments", script), mode],
                             capture_output=True, text=True, check=True).stdout.splitlines()
        assert out[-1].startswith("python analyze.py ")
        names = []
        for line in out[:-1]:
            assert line.startswith("python train.py ")
            cfgs, dirs, _ = parse_args(line.split()[2:] + ["--out", str(tmp_path)])
            check_options(cfgs, dirs, "cpu", False)  # raises on a bad option or batch
            # every paper's transformer has an MLP 4x as wide as its stream (d_mlp is no ratio)
            assert all(c.d_mlp == 4 * c.d_model for c in cfgs if c.model == "transformer"), line
            names += dirs
        return names
    names = runs("--list")
    assert names and len(set(names)) == len(names)  # no two jobs write one folder
    assert sorted(runs("--batched")) == sorted(names)  # the batched commands train the same runs


# ---------------------------------------------------------------- forking: edits take effect

def test_an_edit_to_block_forward_trains_on_model_py_saying_so(tmp_path, monkeypatch, capsys):
    args = ["--p", "23", "--d-model", "32", "--d-mlp", "64", "--steps", "20", "--out",
            str(tmp_path)]
    main(args + ["--name", "plain"])
    forward = type(build_model(small_cfg()).blocks[0]).forward
    monkeypatch.setattr(type(build_model(small_cfg()).blocks[0]), "forward",
                        lambda self, *a, **k: 1.5 * forward(self, *a, **k))
    capsys.readouterr()
    main(args + ["--name", "edited"])
    assert capsys.readouterr().out.startswith("model.py differs from fast.transformer_table")
    main(args + ["--name", "edited_no_fast", "--no-fast"])
    assert "differs" not in capsys.readouterr().out
    plain, edited, no_fast = (np.load(tmp_path / n / "metrics.npz")
                              for n in ("plain", "edited", "edited_no_fast"))
    assert not np.allclose(plain["train_loss"][1:], edited["train_loss"][1:])
    np.testing.assert_array_equal(edited["train_loss"], no_fast["train_loss"])  # the edit trained


def filtered_direction(self, p, grad, state):
    """A Grokfast-style EMA gradient filter as the body of AdamW.direction, its state shaped
    like the parameter (the state rule)."""
    ema = state.setdefault("grad_ema", torch.zeros_like(p))
    ema.lerp_(grad, 1 - 0.9)
    return grad + 2.0 * ema


def test_a_gradient_filter_with_state_resumes_and_batches_like_lone_runs(tmp_path, monkeypatch):
    plain = train_alone(small_cfg(steps=30), str(tmp_path / "plain"), log=quiet)
    monkeypatch.setattr(AdamW, "direction", filtered_direction)  # the one edit
    cfgs = [small_cfg(steps=30, **kw) for kw in BATCHED[:2]]
    alone = [train_alone(c, str(tmp_path / f"a{r}"), log=quiet) for r, c in enumerate(cfgs)]
    assert not np.allclose(plain["train_loss"][1:], alone[0]["train_loss"][1:])  # it filters
    ck = torch.load(tmp_path / "a0" / "resume.pt", weights_only=True)
    assert all("grad_ema" in st for st in ck["optim"]["state"].values())
    train_alone(small_cfg(steps=15), str(tmp_path / "r"), log=quiet)
    resumed = train_alone(small_cfg(steps=30), str(tmp_path / "r"), resume=True, log=quiet)
    batched = train(cfgs, [str(tmp_path / f"b{r}") for r in range(2)], log=quiet)
    for k in ("train_loss", "test_loss", "weight_norm", "update_norm"):
        np.testing.assert_array_equal(resumed[k], alone[0][k], err_msg=k)
        for r in range(2):
            np.testing.assert_allclose(batched[r][k], alone[r][k], rtol=1e-4, atol=1e-6)


def test_a_schedule_takes_effect(tmp_path, monkeypatch):
    halve = lambda cfg, step: (cfg.lr * 0.5 ** (step // 10), cfg.wd)  # a forker's step decay
    monkeypatch.setattr(optim, "schedule", halve)
    m = train_alone(small_cfg(steps=30), str(tmp_path / "r"), log=quiet)
    assert [m["lr"][i] for i in (0, 2, 4)] == [1e-3, 5e-4, 2.5e-4]
    monkeypatch.undo()
    plain = train_alone(small_cfg(steps=30), str(tmp_path / "p"), log=quiet)
    assert plain["update_norm"][0] == m["update_norm"][0]  # same first step, lr 1e-3 both
    assert plain["update_norm"][4] > 3 * m["update_norm"][4]  # a quarter of the lr later
