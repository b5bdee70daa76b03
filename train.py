"""
Full-batch training on modular arithmetic, writing checkpoints and a .npz of metrics.

    python train.py --ln pre --seed 0            # Singh et al.'s setup, M+A* placement
    python train.py --preset nanda               # Nanda et al.'s mainline (ReLU, causal, 40k steps)
    python train.py --preset alquabeh --embed onehot   # embedding-MLP without embeddings
    python train.py --ln pre --seed 0 --steps 20000 --resume   # continue a run
    python train.py --ln pre mlp-pre --seed 456 789 111 222 333   # 10 runs batched in one process
    python train.py --ln off --lr 3e-4 1e-3 3e-3 --fix-wd --seed 456 789 111   # 9 runs, batched

Writes runs/<name>/{config.json, metrics.npz, resume.pt, ckpt/step_XXXXXX.pt}.
"""
import argparse
import ctypes
import itertools
import json
import os
import signal
import sys
import time
from dataclasses import fields

import numpy as np
import torch
import torch.nn.functional as F

from data import OPS, Stop, check_task, make_data
from model import Config, LN_PLACEMENTS, PRESETS, Stacked, build_model, load_runs, named_params, run_states

GROK = 0.01  # "generalized" = first step with loss <= this (Singh et al.)

HELP = dict(
    p="modulus", op=f"operation: {', '.join(OPS)}", frac="fraction of pairs in train", seed="seed of split and init",
    split="random | balanced (every operand equally often) | square | strip (Gu et al.)",
    hole="size K of the dug-out square {a,b<=K} or strip {a<=K}", data_seed="seed of the split alone",
    model="transformer | mlp", embed="mlp: learned | onehot", n_layers="transformer blocks", d_model="width",
    n_heads="attention heads", d_mlp="MLP width", act="gelu | relu", causal="causal attention mask",
    ln="LayerNorm placement: " + ", ".join(LN_PLACEMENTS), norm="layernorm | rmsnorm", ln_eps="norm epsilon",
    alpha="readout scale on the logits", init="singh | nanda", lr="AdamW learning rate", wd="AdamW weight decay",
    betas="AdamW betas", eps="AdamW eps", warmup="linear lr warmup steps", dtype="float32 | float64",
    fix_wd="scale wd by 1e-3/lr (lr*wd fixed, Singh et al.'s lr sweep)", alpha_lr="divide lr by alpha^2",
    emb_lr_ratio="embedding lr / lr, a number or 'auto'", steps="optimizer steps (full batch)",
    eval_every="steps between metric rows", ckpt_every="steps between checkpoints")


MULTI = ("ln", "seed", "lr", "wd", "alpha")  # several values: each combination a run, all batched (Stacked)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="singh", choices=list(PRESETS), help="defaults to start from (default singh)")
    default = Config()
    for f in fields(Config):
        flag, d = "--" + f.name.replace("_", "-"), getattr(default, f.name)
        kw = dict(default=None, help=f"{HELP[f.name]} (default {d}){'; several: batched runs' if f.name in MULTI else ''}")
        if isinstance(d, bool):
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, **kw)
        elif isinstance(d, tuple):
            ap.add_argument(flag, type=float, nargs=2, **kw)
        elif f.name in MULTI:
            ap.add_argument(flag, type=type(d), nargs="+", **kw)
        else:
            ap.add_argument(flag, type=int if f.name == "data_seed" else type(d), **kw)
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | mps")
    ap.add_argument("--out", default="runs", help="folder of runs")
    ap.add_argument("--name", help="run name (default: built from the options given)")
    ap.add_argument("--resume", action="store_true", help="continue runs/<name>; may extend --steps")
    ap.add_argument("--stop-after-grok", type=int, metavar="N", help="stop N steps after test loss <= 0.01")
    args = ap.parse_args(argv)
    given = {f.name: getattr(args, f.name) for f in fields(Config) if getattr(args, f.name) is not None}
    multi = {k: given[k] for k in MULTI if k in given}
    base = {**PRESETS[args.preset], **given}
    cfgs = [Config.from_dict({**base, **dict(zip(multi, vals))}) for vals in itertools.product(*multi.values())]
    return cfgs, args, given


def run_name(cfg, preset, given):
    """Readable and unique: preset, model, the options given explicitly (not --steps, a budget
    that --resume may extend), the seed."""
    parts = [] if preset == "singh" else [preset]
    parts.append(f"ln-{cfg.ln}" if cfg.model == "transformer" else f"mlp-{cfg.embed}")
    for k in given:
        if k not in ("ln", "embed", "seed", "model", "steps"):
            v = getattr(cfg, k)
            parts.append(f"{k.replace('_', '-')}-{'-'.join(map(str, v)) if isinstance(v, tuple) else v}")
    return "_".join(parts + [f"s{cfg.seed}"])


def save_atomic(obj, path):
    """Write to a temp file and rename, so a crash never leaves a half-written file."""
    tmp = f"{path}.tmp"
    if path.endswith(".npz"):
        with open(tmp, "wb") as f:
            np.savez(f, **obj)
    elif path.endswith(".json"):
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1)
    else:
        torch.save(obj, tmp)
    os.replace(tmp, path)


def load_checkpoint(path):
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise Stop(f"missing checkpoint {path}")
    except Exception as e:
        raise Stop(f"corrupt checkpoint {path}: {type(e).__name__}: {str(e).splitlines()[0][:120]}")


def loss_fn(logits, y):
    """Mean cross-entropy over the last axis of y: (..., N, C), (..., N) -> (...).
    In float64: float32 softmax underflow causes loss spikes (Nanda et al.)."""
    ce = F.cross_entropy(logits.double().flatten(0, -2), y.flatten(), reduction="none")
    return ce.view(y.shape).mean(-1)


def accuracy(logits, y):
    return (logits.argmax(-1) == y).double().mean(-1)


def emb_lr_ratio(model, cfg, x_train):
    """Embedding lr / lr. 'auto' is AlQuabeh et al.'s rule c = s_max(E)/s_max(W) * f_W/f_E:
    W is the first layer after the embedding, f_W = 1 (it sees every example) and f_E the mean
    fraction of train examples in which an operand token appears."""
    if cfg.emb_lr_ratio != "auto":
        return float(cfg.emb_lr_ratio)
    W = model.fc1.weight if cfg.model == "mlp" else model.blocks[0].attn.in_proj_weight
    E = model.embed.weight[:cfg.p]
    f_E = F.one_hot(x_train[:, :2], cfg.p).amax(1).double().mean()
    return float(torch.linalg.matrix_norm(E, 2) / torch.linalg.matrix_norm(W, 2) / f_E)


def base_lr(cfg):
    return cfg.lr / (cfg.alpha ** 2 if cfg.alpha_lr else 1)


def weight_decay(cfg):
    return cfg.wd * (1e-3 / cfg.lr if cfg.fix_wd else 1.0)


def make_optimizer(named, cfg, capturable=False):
    emb = [p for n, p in named if n == "embed.weight"]
    groups = [dict(params=[p for n, p in named if n != "embed.weight"], emb=False)] + ([dict(params=emb, emb=True)] if emb else [])
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=weight_decay(cfg),
                             capturable=capturable)


def cuda_graph(step, params, opt):
    """Record step() (forward, backward, AdamW) as a CUDA graph, replayed by graph.replay().
    A small model's eager GPU step is bound by launching its hundreds of small kernels (5.3 ms
    on an H100 against 1.2 ms replayed: bench.py --device cuda --runs 1), and the full batch
    never changes, so the step is recorded once. The warm-up runs that CUDA graphs need (on
    a side stream: lazy state, cuBLAS) are undone, so training goes on from where it was."""
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    saved = [t.detach().clone() for t in params + state]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    with torch.no_grad():
        for t, v in zip(params + state, saved):
            t.copy_(v)
    return graph


def build_runs(cfgs, device):
    """The model of R runs of one shape (one model, or a Stacked one) and its forward on
    (R, N, 3) batches -> (R, N, n_out): what train() steps, and what bench.py times."""
    try:
        models = [build_model(c).to(device) for c in cfgs]
    except ValueError as e:
        raise Stop(str(e))
    if len({tuple((n, p.shape) for n, p in m.named_parameters()) for m in models}) > 1:
        raise Stop("runs trained together need the same parameters: train --ln off (no LayerNorm) on its own")
    model = models[0] if len(models) == 1 else Stacked(models)
    return model, (lambda x: model(x[0])[None]) if len(models) == 1 else model


def make_update(cfgs, model, opt, graphing=False):
    """update(losses, f): backward and AdamW for every run (f: lr warm-up factor), and by_hand.
    Runs trained together may differ in lr and wd. AdamW's step is p <- p (1 - lr wd) - lr u, and
    u depends on neither; so, by_hand, the runs share one AdamW with lr 1 and wd 0 (p -> p - u)
    and each run's lr and wd are applied after it. An LN unused by a run's placement gets no
    gradient in a lone run, so AdamW skips it; in a stack its rows get zeros, so their wd is 0."""
    names, params = zip(*named_params(model))
    by_hand = len({(base_lr(c), weight_decay(c), c.emb_lr_ratio, c.ln) for c in cfgs}) > 1
    if by_hand:
        col = lambda v, p: torch.tensor(v, dtype=p.dtype, device=p.device).view(-1, *[1] * (p.dim() - 1))
        emb = lambda n, c: float(c.emb_lr_ratio) if n == "embed.weight" else 1
        run_lr = [col([base_lr(c) * emb(n, c) for c in cfgs], p) for n, p in zip(names, params)]
        run_wd = [col([weight_decay(c) * (n not in model.unused[r]) for r, c in enumerate(cfgs)], p) for n, p in zip(names, params)]

    def update(losses, f):
        opt.zero_grad(set_to_none=not graphing)  # graphing: in place, the graph reads the .grad it recorded
        losses.sum().backward()  # runs share no parameter: each gets its own gradient
        prev = [p.detach().clone() for p in params] if by_hand else None
        opt.step()
        if by_hand:
            with torch.no_grad():  # p - u  ->  p * (1 - lr * wd) - lr * u, each run its own lr, wd
                for p, q, lr_p, wd_p in zip(params, prev, run_lr, run_wd):
                    p.copy_(q * (1 - f * lr_p * wd_p) - f * lr_p * (q - p))
    return update, by_hand


def tune_cpu():
    """Process-wide CPU settings that speed training up and change no value that matters:
    after grokking AdamW's squared-gradient state falls below float32's normal range, and x86
    CPUs compute on such denormals several times slower, so flush values below 1.2e-38 to 0;
    a step allocates its ~8 MB activations anew, and glibc maps blocks that large afresh and
    unmaps them at free (hundreds to thousands of page faults a step), so keep freed memory in
    the heap (mallopt M_MMAP_THRESHOLD = -3 and M_TRIM_THRESHOLD = -1, in bytes)."""
    torch.set_flush_denormal(True)
    if sys.platform == "linux":
        for option in (-3, -1):
            getattr(ctypes.CDLL(None), "mallopt", lambda *_: 0)(option, 1 << 30)


def pick_device(name):
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available() or name == "mps" and not torch.backends.mps.is_available():
        raise Stop(f"--device {name} is not available on this machine")
    if name not in ("cpu", "cuda", "mps"):
        raise Stop(f"unknown --device {name!r}; choose from auto, cpu, cuda, mps")
    return name


def first_below(steps, values, thr=GROK):
    hit = np.nonzero(np.asarray(values) <= thr)[0]
    return int(np.asarray(steps)[hit[0]]) if len(hit) else None


STACKABLE = ("ln", "seed", "data_seed", "op", "split", "hole", "lr", "wd", "fix_wd", "alpha", "alpha_lr", "emb_lr_ratio")


def train(cfgs, run_dirs, device="cpu", resume=False, stop_after_grok=None, log=print):
    """The one training loop, for one run (a Config and a folder) or several runs of one shape
    (lists, differing only in STACKABLE options) trained together. Returns the metrics (for
    several runs, a list of them)."""
    tune_cpu()
    single = isinstance(cfgs, Config)
    cfgs, run_dirs = ([cfgs], [run_dirs]) if single else (list(cfgs), list(run_dirs))
    cfg, R = cfgs[0], len(cfgs)
    for c in cfgs:
        check_task(c)
        other = [f.name for f in fields(Config) if f.name not in STACKABLE and getattr(c, f.name) != getattr(cfg, f.name)]
        if other:
            raise Stop(f"runs trained together may differ only in {', '.join(STACKABLE)}, not {', '.join(other)}")
    data = [make_data(c) for c in cfgs]
    if any(len(d[0]) == 0 or len(d[2]) == 0 for d in data):
        raise Stop("empty train or test set for this --frac/--split/--hole")
    if len({(len(d[0]), len(d[2])) for d in data}) > 1:
        raise Stop("runs trained together need train and test sets of one size")
    x_tr, y_tr, x_te, y_te = (torch.stack(t).to(device) for t in zip(*data))  # (R, N, ...)
    if cfg.model == "mlp" and cfg.embed == "onehot" and any(c.emb_lr_ratio == "auto" or float(c.emb_lr_ratio) != 1 for c in cfgs):
        raise Stop("--emb-lr-ratio needs learned embeddings (--embed learned)")
    if R > 1 and any(c.emb_lr_ratio == "auto" for c in cfgs):
        raise Stop("--emb-lr-ratio auto differs per run: train such runs one at a time")
    model, forward = build_runs(cfgs, device)
    named = named_params(model)
    params = [p for _, p in named]
    # GPU: the step is replayed as a CUDA graph once lr is constant ('auto' changes it at evaluations)
    graphing, graph = device == "cuda" and cfg.emb_lr_ratio != "auto", None
    opt = make_optimizer(named, cfg, capturable=graphing)
    update, by_hand = make_update(cfgs, model, opt, graphing)
    keys = ["step", "train_loss", "train_acc", "test_loss", "test_acc", "weight_norm", "update_norm", "lr", "emb_lr_ratio"]
    metrics, start = [{k: [] for k in keys} for _ in range(R)], 0
    if resume:
        cks = [load_checkpoint(os.path.join(d, "resume.pt")) for d in run_dirs]
        for c, d, ck in zip(cfgs, run_dirs, cks):
            old = Config.from_dict(ck["config"])
            diff = [f.name for f in fields(Config) if f.name != "steps" and getattr(old, f.name) != getattr(c, f.name)]
            if diff:
                raise Stop(f"--resume: {d} was trained with a different config ({', '.join(diff)})")
        if len({ck["step"] for ck in cks}) > 1:
            raise Stop("--resume: the runs stopped at different steps; resume them one at a time")
        load_runs(model, opt, cks)
        start = cks[0]["step"]
        for m, d in zip(metrics, run_dirs):
            old_m = np.load(os.path.join(d, "metrics.npz"))
            keep = old_m["step"] < start  # rows from `start` on are recomputed, as uninterrupted
            m.update({k: list(old_m[k][keep]) for k in keys})
        log(f"resuming {', '.join(run_dirs)} at step {start}")
    for c, d in zip(cfgs, run_dirs):  # only now: a refused --resume leaves no folder behind
        os.makedirs(os.path.join(d, "ckpt"), exist_ok=True)
        save_atomic(c.to_dict(), os.path.join(d, "config.json"))
    ratios = [emb_lr_ratio(model, c, x_tr[0]) for c in cfgs]  # several runs: never 'auto'

    def save_metrics():
        for m, d in zip(metrics, run_dirs):
            save_atomic({k: np.array(v) for k, v in m.items()}, os.path.join(d, "metrics.npz"))

    def save(step):
        for c, d, (state, optim) in zip(cfgs, run_dirs, run_states(model, opt)):
            ck = dict(step=step, config=c.to_dict(), model=state)
            save_atomic(ck, os.path.join(d, "ckpt", f"step_{step:06d}.pt"))
            save_atomic(dict(ck, optim=optim), os.path.join(d, "resume.pt"))
        save_metrics()

    interrupted = []
    old_handler = signal.signal(signal.SIGINT, lambda *_: interrupted.append(1))  # stop between steps
    t0, last_print, grok, end = time.time(), 0.0, [None] * R, cfg.steps
    try:
        for step in range(start, cfg.steps + 1):
            if interrupted:
                save(step)
                log(f"interrupted at step {step}: saved; continue with --resume")
                break
            f = min(step / cfg.warmup, 1.0) if cfg.warmup else 1.0  # lr factor; Nanda: step 0 has lr 0
            evaluate = step % cfg.eval_every == 0 or step % cfg.ckpt_every == 0 or step == end
            if evaluate and cfg.emb_lr_ratio == "auto":
                ratios = [emb_lr_ratio(model, cfg, x_tr[0])]
            for g in opt.param_groups:  # set every step: a resumed optimizer brings saved values
                g["lr"], g["weight_decay"] = (1.0, 0.0) if by_hand else \
                    (base_lr(cfg) * f * (ratios[0] if g["emb"] else 1), weight_decay(cfg))
            if graph is not None and not evaluate:
                graph.replay()
                continue
            logits = forward(x_tr)
            losses = loss_fn(logits, y_tr)
            if evaluate:  # the only host synchronisation: once per evaluation
                if not torch.isfinite(losses).all():
                    save_metrics()
                    log(f"error: train loss is {losses.tolist() if R > 1 else losses.item()} at step {step}; stopped. The last good "
                        f"checkpoint is kept: change --lr or --dtype and start again")
                    break
                with torch.no_grad():
                    test_logits = forward(x_te)
                    before = [p.detach().clone() for p in params]
                    cols = dict(train_loss=losses, train_acc=accuracy(logits, y_tr),
                                test_loss=loss_fn(test_logits, y_te), test_acc=accuracy(test_logits, y_te),
                                weight_norm=sum((p.double() ** 2).reshape(R, -1).sum(1) for p in before))
                    cols = {k: v.tolist() for k, v in cols.items()}
                for r, m in enumerate(metrics):
                    row = dict(step=step, update_norm=float("nan"), lr=base_lr(cfgs[r]) * f, emb_lr_ratio=ratios[r],
                               **{k: v[r] for k, v in cols.items()})
                    for k in keys:
                        m[k].append(row[k])
                    if grok[r] is None and row["test_loss"] <= GROK:
                        grok[r] = step
                if stop_after_grok is not None and None not in grok:
                    end = min(end, max(grok) + stop_after_grok)
                if step == end:
                    save(step)
                    break
                if step % cfg.ckpt_every == 0:
                    save(step)  # before the update: the checkpoint holds theta_step
            update(losses, f)
            if graphing and graph is None and f == 1.0:
                logits = losses = None  # free this step's autograd graph: capture needs fresh grad nodes
                graph = cuda_graph(lambda: update(loss_fn(forward(x_tr), y_tr), 1.0), params, opt)
            if evaluate:
                with torch.no_grad():  # ||theta_{t+1} - theta_t|| of this step
                    upd = sum(((p - q).double() ** 2).reshape(R, -1).sum(1) for p, q in zip(params, before)).sqrt()
                    for m, u in zip(metrics, upd.tolist()):
                        m["update_norm"][-1] = u
                now = time.time()
                if now - last_print > 5:
                    last_print = now
                    ms = 1000 * (now - t0) / (step + 1 - start)
                    mean = lambda k: np.mean([m[k][-1] for m in metrics])
                    log(f"step {step:6d}/{end} | train {mean('train_loss'):.2e} acc {mean('train_acc'):.3f} | "
                        f"test {mean('test_loss'):.2e} acc {mean('test_acc'):.3f} | {ms:.1f} ms/step | "
                        f"{(end - step) * ms / 1000:.0f}s left" + (f" | means of {R} runs" if R > 1 else ""))
    finally:
        signal.signal(signal.SIGINT, old_handler)
    for d, m in zip(run_dirs, metrics):
        tr, te = first_below(m["step"], m["train_loss"]), first_below(m["step"], m["test_loss"])
        log(f"{d}: done in {time.time() - t0:.1f}s | train loss <= {GROK} at step {tr if tr is not None else 'not reached'} | "
            f"test loss <= {GROK} at step {te if te is not None else 'not reached'}")
    return metrics[0] if single else metrics


def main(argv=None):
    cfgs, args, given = parse_args(argv)
    try:
        device = pick_device(args.device)
        if args.name and len(cfgs) > 1:
            raise Stop("--name names one run; several seeds get names of their own")
        run_dirs = [os.path.join(args.out, args.name or run_name(c, args.preset, given)) for c in cfgs]
        for d in run_dirs:
            if not args.resume and os.path.exists(os.path.join(d, "resume.pt")):
                raise Stop(f"{d} exists: add --resume to continue it, or pick another --name")
        print(f"run {', '.join(run_dirs)} on {device}")
        train(cfgs[0] if len(cfgs) == 1 else cfgs, run_dirs[0] if len(cfgs) == 1 else run_dirs,
              device, args.resume, args.stop_after_grok)
    except Stop as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
