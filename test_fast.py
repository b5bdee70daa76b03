"""
Tests of the speed layer (fast.py) as training uses it: batched runs against lone runs, the
GPU path against the CPU (where a GPU is), bench.py, the CPU settings.

    python -m pytest -q test_fast.py
"""
import math
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import bench
from conftest import BATCHED, DEVICES, HERE, quiet, small_cfg, train_alone
import train as train_module
from data import make_data
from fast import cuda_graph, flush_denormals
from optim import AdamW
from train import train


# ---------------------------------------------------------------- several runs, batched

@pytest.mark.parametrize("device", DEVICES)
def test_batched_runs_equal_separate_runs_and_resume(device, tmp_path):
    cfgs = [small_cfg(steps=30, **kw) for kw in BATCHED]
    dirs = [str(tmp_path / f"b{r}") for r in range(3)]
    batched = train(cfgs, dirs, device, log=quiet)
    # a CPU runs a stack run by run: the same arithmetic as alone (only the norms, summed over
    # the stack, round apart); a GPU vmaps it: batched products, rounded apart
    tol = dict(rtol=0, atol=0) if device == "cpu" else dict(rtol=1e-4, atol=1e-5)
    for r, cfg in enumerate(cfgs):
        alone = train_alone(cfg, str(tmp_path / f"s{r}"), device, log=quiet)
        for k in ("train_loss", "test_loss", "train_acc", "weight_norm", "update_norm"):
            exact = k.startswith(("train", "test")) and device == "cpu"
            np.testing.assert_allclose(batched[r][k], alone[k], **(tol if exact else dict(
                rtol=1e-4, atol=1e-6)), err_msg=k)
        a = torch.load(tmp_path / f"b{r}" / "ckpt" / "step_000030.pt", weights_only=True)["model"]
        b = torch.load(tmp_path / f"s{r}" / "ckpt" / "step_000030.pt", weights_only=True)["model"]
        assert a.keys() == b.keys()
        for n in a:
            torch.testing.assert_close(a[n], b[n], **tol)
        ck = torch.load(tmp_path / f"b{r}" / "resume.pt", weights_only=True)  # this run's only
        state = [v for st in ck["optim"]["state"].values() for v in st.values()]
        for t in [*ck["model"].values(), *state]:
            assert t.untyped_storage().nbytes() == t.numel() * t.element_size()
    half = [str(tmp_path / f"h{r}") for r in range(3)]
    train([small_cfg(steps=20, **kw) for kw in BATCHED], half, device, log=quiet)
    resumed = train(cfgs, half, device, resume=True, log=quiet)
    for r in range(3):
        np.testing.assert_array_equal(resumed[r]["test_loss"], batched[r]["test_loss"])


@pytest.mark.skipif("cuda" not in DEVICES, reason="synchronisation is a GPU matter; CI has none")
def test_no_host_synchronisation_in_the_step_but_at_evaluation(tmp_path):
    def syncs(steps):  # evaluations at step 0 and at the end only: the same count for any steps
        cfgs = [small_cfg(steps=steps, eval_every=1000, ckpt_every=1000, **kw) for kw in BATCHED]
        torch.cuda.set_sync_debug_mode("warn")  # CUDA warns at every synchronising call
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                train(cfgs, [str(tmp_path / f"{steps}_{r}") for r in range(3)], "cuda", log=quiet)
        finally:
            torch.cuda.set_sync_debug_mode(0)
        return sum("synchroniz" in str(w.message) for w in caught)
    few = syncs(10)
    assert few > 0 and syncs(40) == few  # > 0: the count sees the evaluations' synchronisations


@pytest.mark.skipif("cuda" not in DEVICES, reason="compares the GPU with the CPU; CI has no GPU")
@pytest.mark.parametrize("kw", [  # graphed from step 1: a warm-up and 'auto' set lr in place
    dict(), dict(init="nanda", ln="off", causal=True, act="relu", warmup=10),
    dict(model="mlp", emb_lr_ratio="auto")])
def test_gpu_run_equals_cpu_run(kw, tmp_path):
    runs = {dev: train_alone(small_cfg(steps=40, **kw), str(tmp_path / dev), dev, log=quiet)
            for dev in ("cpu", "cuda")}
    for k in ("train_loss", "test_loss", "weight_norm", "update_norm"):
        np.testing.assert_allclose(runs["cuda"][k], runs["cpu"][k], rtol=1e-4, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("argv,msg", [(["--device", "tpu"], "unknown --device"),
                                      (["--ln", "mid"], "unknown --ln"),
                                      (["--runs", "0"], "--runs"), (["--steps", "0"], "--steps"),
                                      (["--ln", "off", "pre"], "--ln off .no LayerNorm.")])
def test_bench_refuses_bad_input(argv, msg):
    with pytest.raises(SystemExit, match=msg):
        bench.main(argv)


@pytest.mark.parametrize("n_layers,lns", [(1, ["pre"]), (2, ["pre", "mlp-pre"])])  # 2 runs
def test_bench_times_every_variant(n_layers, lns, monkeypatch, capsys):
    cfg = small_cfg(n_layers=n_layers, ln=lns[0])
    data = make_data(cfg)
    got = bench.measure(cfg, lns, data, 1, [1, 2], "cpu")
    variants = ["straightforward + test forward", "straightforward", "this project"]
    assert list(got["ms"]) == variants and list(got["runs"]) == [1, 2]
    # the per-example matmuls are timed on their own for the one-layer transformer only
    assert (got["matmul_ms"] is not None) == (n_layers == 1)
    times = [*got["ms"].values(), *(ms for ms, _ in got["runs"].values()), got["gflops"],
             got["peak"]] + ([got["matmul_ms"]] if n_layers == 1 else [])
    assert all(0 < t < math.inf for t in times), got
    ours = got["ms"]["this project"]
    for name, ms in got["ms"].items():
        assert got["ratio"][name] == pytest.approx(ms / ours)
    assert got["gflop"] == pytest.approx(bench.useful_flops(cfg, len(data[0])) / 1e9)
    assert got["gflops"] == pytest.approx(got["gflop"] / (ours / 1000))
    for R, (ms, rate) in got["runs"].items():
        assert rate == pytest.approx(R * 1000 / ms)
    # main prints a line a variant and a run count (its own model measured here: these numbers)
    monkeypatch.setattr(bench, "measure", lambda *_: got)
    bench.main(["--steps", "1", "--n-layers", str(n_layers), "--runs", "1", "2", "--ln", *lns])
    lines = capsys.readouterr().out.splitlines()
    for name in variants:  # the name, then its time
        assert len([s for s in lines if re.match(re.escape(name) + r"\s+[0-9]", s)]) == 1, lines
    for R in (1, 2):
        assert sum(line.split()[:2] == [str(R), "runs"] for line in lines) == 1, lines


# 40 MB blocks: glibc adapts its own mmap threshold only up to 32 MB, so by default every such
# block is mapped afresh and faulted in page by page (10240 faults); after keep_freed_memory, a
# freed block stays in the heap, and after the heap has grown to fit the pattern (a few blocks)
# new ones reuse it. (The training step's own faults vary from step to step and machine to
# machine, and so does what they cost; bench.py measures the step.)
FAULTS = """
import resource, sys, torch
sys.path.insert(0, {here!r})
from fast import keep_freed_memory
def faults(n=5):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        torch.ones(10 << 20)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / n
before = faults()
keep_freed_memory()
faults(20)  # the heap grows to fit
print(before, faults())
"""


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc settings")
def test_keep_freed_memory_keeps_freed_memory_in_the_heap():
    out = subprocess.run([sys.executable, "-c", FAULTS.format(here=HERE)], capture_output=True,
                         text=True, check=True)
    before, after = map(float, out.stdout.split())
    assert after < before / 10, (before, after)


def flushed():
    return torch.tensor([1e-40]).mul(1.0).item() == 0  # a denormal times 1


def test_denormals_are_kept_in_adamw_with_eps_0_as_torch_does(tmp_path, monkeypatch):
    """One gradient, then exact zeros (a logit whose softmax has underflowed): with eps 0 the
    update is m / sqrt(v); flushed, both reach 0 (0/0, taken as no step); kept, they stop at
    the smallest denormal, as in torch's AdamW and on a GPU. So training flushes them (speed)
    but in AdamW's step when eps is 0, and leaves the process's own setting as it found it."""
    def zero_grads(steps=4000):
        p = torch.ones(3, requires_grad=True)
        opt = AdamW([p], (0.9, 0.98), 0.0)
        opt.set_lr_wd([[1e-3]], [[0.0]])
        for t in range(steps):
            p.grad = torch.full((3,), 1e-3 if t == 0 else 0.0)
            opt.step()
        assert torch.isfinite(p).all()
        return opt.state[p]["exp_avg_sq"]
    step, in_step = AdamW.step, []
    monkeypatch.setattr(AdamW, "step", lambda opt: (in_step.append(flushed()), step(opt))[1])
    loss_fn, in_loss = train_module.loss_fn, []  # the forward of every step and evaluation
    monkeypatch.setattr(train_module, "loss_fn",
                        lambda *a, **kw: (in_loss.append(flushed()), loss_fn(*a, **kw))[1])
    with flush_denormals(True):  # and the setting the other tests found, after
        assert flushed() and (zero_grads() == 0).all()
        torch.set_flush_denormal(False)
        assert not flushed() and (zero_grads() > 0).all()
        for eps, kept in ((0.0, True), (1e-8, False)):
            in_step.clear()
            in_loss.clear()
            train_alone(small_cfg(eps=eps, steps=3), str(tmp_path / f"eps{eps}"), log=quiet)
            assert in_step == [not kept] * 3, eps  # kept in AdamW's step with eps 0 alone
            assert len(in_loss) >= 3 and all(in_loss), eps  # flushed in the forward
            assert not flushed()  # the caller's setting, back after training


@pytest.mark.skipif("cuda" not in DEVICES, reason="CUDA graphs need a GPU; CI has none")
def test_lr_and_wd_set_in_place_take_effect_in_a_recorded_cuda_graph():
    torch.manual_seed(0)
    start, x = torch.randn(64, 32), torch.randn(128, 64)
    runs = {}
    for dev in ("cpu", "cuda"):
        p, xd = start.to(dev, copy=True).requires_grad_(), x.to(dev)  # start stays as it was
        opt = AdamW([p], (0.9, 0.98), 1e-8)

        def step():
            opt.zero_grad(set_to_none=False)
            (xd @ p).square().mean().backward()
            opt.step()
        opt.set_lr_wd([[1e-3]], [[0.1]])
        step()  # the optimizer state exists before recording
        replay = cuda_graph(step, [p], opt).replay if dev == "cuda" else step
        for lr, wd in ((3e-4, 0.1), (0.0, 0.0), (1e-2, 1.0), (1e-3, 0.5)):
            opt.set_lr_wd([[lr]], [[wd]])
            replay()
        runs[dev] = p.detach().cpu()
    torch.testing.assert_close(runs["cuda"], runs["cpu"], rtol=1e-4, atol=1e-6)
    assert not torch.allclose(runs["cpu"], start, atol=1e-3)
