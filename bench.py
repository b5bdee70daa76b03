"""
Benchmark one full-batch training step: this project's step against the straightforward one.

    python bench.py                  # default model (M+A*, p 113, frac 0.3), float32
    python bench.py --ln off --steps 50 --device cuda
    python bench.py --preset alquabeh    # the embedding-MLP: tables against concatenation
    python bench.py --n-layers 2 --steps 5   # a deeper model: the general path of model.py
    python bench.py --device cuda --runs 1 5 35   # also R seeds batched in one process (GPU)
    python bench.py --device cuda --runs 30 --ln attn-pre pre mlp-pre attn-pre-qk attn-pre-v pre-v

Prints ms/step of
  straightforward: model.py's transformer with every position through every block and logits
                   at every position (the loss still reads the last one), torch.optim.AdamW,
                   plus the test-set forward every step as the public code does;
  straightforward, no test forward;
  this project: train.py's step: fast.py's table forward (one layer; deeper models: model.py's,
                the last block at the last position only), loss in float64, train.py's AdamW
(for the embedding-MLP: model.py's concatenated input against fast.py's tables),
the ratio, the useful GFLOP/s of our step (matmul FLOPs of the math it must do) and a large
fp32 matmul's GFLOP/s measured in the same run, as the machine's practical peak, and (one
layer) the time of the step's per-example matmuls alone, a floor for any step of this math.
With --runs, also the step of train.py for R runs (seeds; with several --ln, split over the
placements) trained together, in model-steps/s.
"""
import argparse
import sys
import time
from dataclasses import replace

import torch

from config import PRESETS, Config
from data import make_data
from fast import build_runs, cpu_settings, cuda_graph, named_params
from model import build_model
from optim import AdamW, set_hyper
from runfiles import ArgumentParser, Stop
from train import check_options, loss_fn


def straightforward_logits(model, x):
    """Every position through every block, logits at every position; the last is returned."""
    return (model.alpha * (model.residuals(x) @ model.unembed))[:, -1]


def step_fn(model, opt, x, y, forward, x_test=None):
    def step():
        loss = loss_fn(forward(model, x), y)
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()  # several runs: one loss each
        opt.step()
        if x_test is not None:
            with torch.no_grad():
                forward(model, x_test)
    return step


def timeit(fn, steps, device):
    for _ in range(3):
        fn()
    times = []
    for _ in range(steps):
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t)
    return 1000 * sorted(times)[len(times) // 2]  # median, ms


def useful_flops(cfg, n):
    """Matmul FLOPs that one step must do (forward + backward = 3x forward): the last position's
    query, MLP and unembedding per example, keys/values on the (3, p+1) table (deeper models:
    the general path's products; embedding-MLP:
    the readout per example, the first layer on the two (p+1)-row tables)."""
    d, m, V = cfg.d_model, cfg.d_mlp, cfg.p + 1
    if cfg.model == "mlp":
        return 3 * 2 * (n * m * cfg.n_out + (2 * V * d * m if cfg.embed == "learned" else 0))
    per_example = d * d + d * m + m * d + d * cfg.n_out       # out_proj, fc1, fc2, unembed
    if cfg.n_layers > 1:  # general path: earlier blocks at all 3 positions, keys/values of the last
        lower = (cfg.n_layers - 1) * 3 * n * (4 * d * d + 2 * d * m)
        return 3 * 2 * (lower + 3 * n * 2 * d * d + n * (per_example + d * d))
    table = 3 * V * 3 * d * d                                 # q/k/v projections of the table
    return 3 * 2 * (n * per_example + table)


def runs_step(cfg, lns, R, device, graph=True):
    """train.py's step (fast forward, its AdamW) for R seeds of cfg trained together (R == 1:
    the plain model), the runs split into consecutive groups over the LN placements lns; on a
    GPU (graph) replayed as a CUDA graph, as train.py does between evaluations."""
    cfgs = [replace(cfg, seed=cfg.seed + r, ln=lns[r * len(lns) // R]) for r in range(R)]
    x, y = (torch.stack(t).to(device) for t in list(zip(*map(make_data, cfgs)))[:2])
    models = [build_model(c).to(device) for c in cfgs]
    model, forward, skip = build_runs(models)
    names, params = zip(*named_params(model))
    opt = AdamW(list(params), cfg.betas, cfg.eps, R)
    set_hyper(opt, names, cfgs, cfg.warmup, [1.0] * R, skip, model.NAMES)

    def step():
        opt.zero_grad(set_to_none=device != "cuda")
        loss_fn(forward(x), y).sum().backward()
        opt.step()
    if device != "cuda" or not graph:
        return step
    step()  # the optimizer state exists before recording
    return cuda_graph(step, list(params), opt).replay


def matmul_ms(cfg, n, device, steps):
    """ms of the per-example matrix products of a one-layer step alone, each timed on its own:
    out_proj, fc1, fc2 and unembedding, forward and both backward products. No step of this
    math can take less, whatever is done with the rest."""
    d, m, total = cfg.d_model, cfg.d_mlp, 0.0
    for k, j in ((d, d), (d, m), (m, d), (d, cfg.n_out)):
        x, w, g = (torch.randn(*shape, device=device) for shape in ((n, k), (k, j), (n, j)))
        for a, b in ((x, w), (g, w.T), (x.T, g)):  # output, input's gradient, weight's gradient
            total += timeit(lambda: a @ b, steps, device)
    return total


def peak_gflops(device, size=2048, reps=10):
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    ms = timeit(lambda: a @ b, reps, device)
    return 2 * size ** 3 / (ms / 1000) / 1e9


def main(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ln", nargs="+", help="LN placement (default: the preset's); several: the "
                    "--runs are split over them (the comparison uses the first)")
    ap.add_argument("--preset", default="singh", choices=list(PRESETS))
    ap.add_argument("--n-layers", type=int, help="transformer blocks (default: the preset's); "
                    "more than one times the general path")
    ap.add_argument("--steps", type=int, default=30,
                    help="timed steps per variant (median reported)")
    ap.add_argument("--device", default="cpu", help="cpu | cuda")
    ap.add_argument("--runs", type=int, nargs="+", default=[], metavar="R",
                    help="also time train.py's step for R runs (seeds) batched, for each R given")
    args, extra = ap.parse_known_args(argv)
    if extra:  # bench.py --p 31, bench.py nanda: say what it takes
        sys.exit(f"error: unrecognized arguments: {' '.join(extra)}: " + (
            f"name a preset with --preset {extra[0]}" if extra[0] in PRESETS else
            "bench.py times a preset's model (--preset, --ln, --n-layers; see --help)"))
    over = {k: v for k, v in (("ln", args.ln and args.ln[0]), ("n_layers", args.n_layers))
            if v is not None}
    cfg = Config(**{**PRESETS[args.preset], **over})
    lns = args.ln or [cfg.ln]
    try:
        if args.steps < 1 or min(args.runs, default=1) < 1:
            raise Stop("--steps and --runs take counts of at least 1")
        device = check_options([replace(cfg, ln=ln) for ln in lns], [], args.device, False)
    except Stop as e:
        sys.exit(f"error: {e}")
    with cpu_settings():  # as train.py's loop runs
        data = [t.to(device) for t in make_data(cfg)]
        print(f"device {device}, {torch.get_num_threads()} threads, torch {torch.__version__}, "
              f"{args.preset} {cfg.model}, ln {' '.join(lns)}, {cfg.n_layers} layers, p {cfg.p}, "
              f"{len(data[0])} train / {len(data[2])} test examples, float32, median of "
              f"{args.steps} steps")
        report(measure(cfg, lns, data, args.steps, args.runs, device), device)


def measure(cfg, lns, data, steps, runs, device):
    """Time each variant of the step on data (make_data's x, y, x_test, y_test on device), the
    median of `steps`. Returns a dict: ms {variant: ms/step}, ratio {variant: its ms / ours},
    gflop (useful GFLOP per step), gflops (ours, useful GFLOP/s), peak (a large fp32 matmul's
    GFLOP/s), matmul_ms (the per-example matmuls alone; None but for a one-layer transformer),
    runs {R: (ms/step, model-steps/s)} for each R in runs."""
    x, y, xt, _ = data
    ms = {}
    slow = straightforward_logits if cfg.model == "transformer" else lambda m, x: m(x)
    for name, test in [("straightforward + test forward", xt), ("straightforward", None)]:
        model = build_model(cfg).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=cfg.betas, eps=cfg.eps,
                                weight_decay=cfg.wd)
        ms[name] = timeit(step_fn(model, opt, x, y, slow, test), steps, device)
    # eager, like the straightforward steps (--runs: as train.py, a CUDA graph on a GPU)
    ms["this project"] = ours = timeit(runs_step(cfg, lns[:1], 1, device, graph=False),
                                       steps, device)
    peak = peak_gflops(device)
    gflop = useful_flops(cfg, len(x)) / 1e9
    alone = (matmul_ms(cfg, len(x), device, steps)
             if cfg.model == "transformer" and cfg.n_layers == 1 else None)
    batched = {R: timeit(runs_step(cfg, lns, R, device), steps, device) for R in runs}
    return dict(ms=ms, ratio={name: t / ours for name, t in ms.items()}, gflop=gflop,
                gflops=gflop / (ours / 1000), peak=peak, matmul_ms=alone,
                runs={R: (t, 1000 * R / t) for R, t in batched.items()})


def report(bench, device):
    """Print measure's numbers, a line each."""
    for name, ms in bench["ms"].items():
        print(f"{name:32s} {ms:8.1f} ms/step   {bench['ratio'][name]:5.2f}x ours")
    print(f"this project: {bench['gflop']:.2f} useful GFLOP per step = "
          f"{bench['gflops']:.0f} GFLOP/s; large fp32 matmul: {bench['peak']:.0f} GFLOP/s (the "
          f"step runs at {100 * bench['gflops'] / bench['peak']:.0f}% of it)")
    if bench["matmul_ms"] is not None:
        print(f"its per-example matmuls alone: {bench['matmul_ms']:.1f} "
              f"ms (a step 5x faster than the straightforward one: "
              f"{bench['ms']['straightforward'] / 5:.1f} ms)")
    for R, (ms, rate) in bench["runs"].items():
        print(f"{R:3d} runs batched (train.py's step) {ms:8.2f} ms/step = "
              f"{rate:8.0f} model-steps/s" + (" (CUDA graph)" if device == "cuda" else ""))


if __name__ == "__main__":
    main()
