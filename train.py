"""
Full-batch training on modular arithmetic, writing checkpoints and a .npz of metrics.

    python train.py --ln pre --seed 0            # Singh et al.'s setup, M+A* placement
    python train.py --preset nanda               # Nanda et al.'s mainline (ReLU, causal, 40k steps)
    python train.py --preset alquabeh --embed onehot   # embedding-MLP without embeddings
    python train.py --ln pre --seed 0 --steps 20000 --resume   # continue a run
    python train.py --ln pre mlp-pre --seed 456 789 111 222 333   # 10 runs batched in one process
    python train.py --ln pre --no-fast           # train on model.py's forward (after editing it)

Writes runs/<name>/{config.json, metrics.npz, resume.pt, ckpt/step_XXXXXX.pt}.
"""
import argparse
import itertools
import os
import shlex
import signal
import sys
import time
from dataclasses import fields, replace

import numpy as np
import torch
import torch.nn.functional as F

from config import PRESETS, Config, flag
from data import Batches, make_data, token_frequency
from fast import build_runs, cuda_graph, load_runs, named_params, run_states, tune_cpu
from model import build_model
from optim import emb_lr_ratio, make_optimizer, set_hyper
from runfiles import (GROK, KEYS, ArgumentParser, Stop, check_name, first_below, load_checkpoint,
                      load_metrics, lock_run, printable, run_files, save_atomic, save_metrics,
                      unlock_run)

MULTI = ("ln", "seed", "lr", "wd", "alpha")  # several values: every combination a run, batched
# what runs trained together (one process, one Stacked model) may differ in
STACKABLE = ("ln", "seed", "data_seed", "op", "split", "hole", "lr", "wd", "fix_wd", "alpha",
             "alpha_lr", "emb_lr_ratio", "sampling")


def loss_fn(logits, y, dtype="float64", kind="ce"):
    """Mean cross-entropy over the last axis of y: (..., N, C), (..., N) -> (...). In float64
    by default: float32 softmax underflow causes loss spikes (Nanda et al.). kind 'stablemax':
    Prieto et al.'s StableMax, s(x) = x + 1 for x >= 0 and 1 / (1 - x) below, in place of exp."""
    z = logits.to(getattr(torch, dtype)).flatten(0, -2)
    if kind == "stablemax":
        s = torch.where(z >= 0, z + 1, 1 / (1 - z.clamp(max=0)))
        z = s.log()  # then softmax(log s) = s / sum s
    ce = F.cross_entropy(z, y.flatten(), reduction="none")
    return ce.view(y.shape).mean(-1).double()


def collapse(logits, y, dtype):
    """Prieto et al.'s softmax collapse, per run: the share of rows whose sum of
    exp(logit - max) rounds to 1 in the loss dtype (only the top class counts), and the share
    whose softmax cross-entropy is exactly 0 (no gradient). Both are of softmax, StableMax runs
    too: they say whether softmax would have collapsed on those logits."""
    z = logits.to(getattr(torch, dtype))
    z = z - z.amax(-1, keepdim=True)
    ones = (z.exp().sum(-1) == 1).double().mean(-1)
    zero = (-z.log_softmax(-1).gather(-1, y[..., None])[..., 0] == 0).double().mean(-1)
    return ones, zero


def accuracy(logits, y):
    return (logits.argmax(-1) == y).double().mean(-1)


def parse_args(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="singh", choices=list(PRESETS),
                    help="defaults to start from (default singh)")
    for f in fields(Config):
        d = f.default
        help = f"{f.metadata['help']} (default {d})" + \
            ("; several: batched runs" if f.name in MULTI else "")
        kw = dict(default=None, help=help.replace("%", "%%"))
        if isinstance(d, bool):
            ap.add_argument("--" + flag(f.name), action=argparse.BooleanOptionalAction, **kw)
        elif isinstance(d, tuple):
            ap.add_argument("--" + flag(f.name), type=float, nargs=2, **kw)
        else:
            ap.add_argument("--" + flag(f.name), type=int if d is None else type(d),
                            nargs="+" if f.name in MULTI + ("data_seed",) else None, **kw)
    ap.add_argument("--device", default="auto", help="auto (cuda if there is one) | cpu | cuda")
    ap.add_argument("--out", default="runs", help="folder of runs")
    ap.add_argument("--name", help="run name (default: built from the options given)")
    ap.add_argument("--resume", action="store_true",
                    help="continue runs/<name>; may extend --steps")
    ap.add_argument("--stop-after-grok", type=int, metavar="N",
                    help="stop N steps after test loss <= 0.01")
    ap.add_argument("--fast", default=True, action=argparse.BooleanOptionalAction,
                    help="train on fast.py's forward, checked against model.py at start; "
                         "--no-fast: on model.py's own forward")
    args = ap.parse_args(argv)
    given = {f.name: getattr(args, f.name) for f in fields(Config)
             if getattr(args, f.name) is not None}
    multi = {k: given[k] for k in MULTI if k in given}
    for k, v in multi.items():
        if len(set(v)) < len(v):
            raise Stop(f"--{flag(k)}: a value is given twice")
    # several data seeds: one per --seed, paired in order (a split drawn apart from the init)
    seeds, data_seeds = given.get("seed", [None]), given.get("data_seed", [None])
    if len(data_seeds) not in (1, len(seeds)):
        raise Stop(f"--data-seed: give one, or one per --seed ({len(seeds)})")
    base = {**PRESETS[args.preset], **given, "data_seed": None}
    cfgs = [Config.from_dict({**base, **dict(zip(multi, vals))})
            for vals in itertools.product(*multi.values())]
    for c in cfgs:
        c.data_seed = data_seeds[seeds.index(c.seed) if len(data_seeds) > 1 else 0]
    try:
        args.out.encode("utf-8")
    except UnicodeEncodeError:
        raise Stop(f"--out {printable(args.out)} is not UTF-8") from None
    names = [args.name or run_name(c, args.preset, given) for c in cfgs]
    for n in names:
        check_name(n, "--name" if args.name else "the run name (set one with --name)")
    return cfgs, [os.path.join(args.out, n) for n in names], args


def run_name(cfg, preset, given):
    """Readable and unique: preset, model, the options given explicitly (not --steps, a budget
    that --resume may extend), the seed."""
    parts = [] if preset == "singh" else [preset]
    parts.append(f"ln-{cfg.ln}" if cfg.model == "transformer" else f"mlp-{cfg.embed}")
    for k in given:
        if k not in ("ln", "embed", "seed", "model", "steps"):
            v = getattr(cfg, k)
            parts.append(f"{flag(k)}-{'-'.join(map(str, v)) if isinstance(v, tuple) else v}")
    return "_".join(parts + [f"s{cfg.seed}"])


def check_options(cfgs, run_dirs, device, resume):
    """Every option, checked in one place before anything is written: raise Stop naming the
    first bad one. Returns the device to train on."""
    for c in cfgs:
        c.check()
        other = [f.name for f in fields(Config)
                 if f.name not in STACKABLE and getattr(c, f.name) != getattr(cfgs[0], f.name)]
        if other:
            raise Stop(f"runs trained together may differ only in {', '.join(STACKABLE)}, "
                       f"not {', '.join(other)}")
    if len(cfgs) > 1 and "off" in {c.ln for c in cfgs} and len({c.ln for c in cfgs}) > 1:
        raise Stop("runs trained together need the same parameters: train --ln off "
                   "(no LayerNorm) on its own")
    try:
        sizes = {(len(d[0]), len(d[2])) for d in map(make_data, cfgs)}
    except (MemoryError, RuntimeError) as e:
        raise too_big(e, "the task (--p squared pairs)", "a smaller --p")
    if any(0 in s for s in sizes):
        raise Stop("empty train or test set for this --frac/--split/--hole")
    if len(sizes) > 1:
        raise Stop("runs trained together need train and test sets of one size")
    n_train = sizes.pop()[0]
    if (cfgs[0].batch_size or 0) > n_train:
        raise Stop(f"--batch-size {cfgs[0].batch_size} is larger than the training set "
                   f"({n_train} pairs)")
    if len(set(run_dirs)) < len(run_dirs):
        raise Stop("--name names one run; several runs get names of their own")
    for d in run_dirs:
        if not resume and run_files(d):
            raise Stop(holds_a_run(d))
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "mps":  # Apple's GPUs have no float64, which the loss and optimizer use
        raise Stop("--device mps has no float64, which training needs; use cpu")
    if device not in ("cpu", "cuda"):
        raise Stop(f"unknown --device {device!r}; choose from auto, cpu, cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise Stop("--device cuda is not available on this machine")
    return device


def holds_a_run(run_dir):
    return (f"{run_dir} holds a run ({', '.join(run_files(run_dir))}): add --resume to continue "
            "it, or pick another --name or --out")


def too_big(e, what, instead):
    """Stop for an allocation that failed (out of memory: torch's RuntimeError), else e."""
    if isinstance(e, MemoryError) or "alloc" in str(e):
        return Stop(f"{what} does not fit in memory: {instead}")
    return e


def claim_folders(run_dirs, resume):
    """Lock each run folder against other writers (made first for a fresh run), and check
    again under the lock that a fresh run's folder holds no run: another process may have
    begun one there since check_options. Returns the locks, for release_folders."""
    locks = []
    try:
        for d in run_dirs:
            if resume and not os.path.exists(os.path.join(d, "resume.pt")):
                raise Stop(f"missing checkpoint {d}/resume.pt" + (
                    f": the run stopped before its first save; remove {d} and start again"
                    if os.path.isdir(d) else ""))
            try:
                os.makedirs(d, exist_ok=True)
            except OSError as e:
                raise Stop(f"cannot create {printable(d)}: {e.strerror}") from None
            locks.append((d, lock_run(d)))
            if not resume and run_files(d):
                raise Stop(holds_a_run(d))
    except BaseException:
        release_folders(locks)
        raise
    return locks


def release_folders(locks):
    for d, fd in locks:
        unlock_run(d, fd)


def resume_runs(cfgs, run_dirs, model, opt, log):
    """Load the runs' resume.pt into model and optimizer; their metrics before that step."""
    cks = [load_checkpoint(os.path.join(d, "resume.pt")) for d in run_dirs]
    for i, (c, d, ck) in enumerate(zip(cfgs, run_dirs, cks)):
        if not isinstance(ck.get("optim"), dict):
            raise Stop(f"--resume: {d}/resume.pt has no optimizer state (a ckpt/ file copied "
                       "over it?): start again")
        try:
            old = Config.from_dict(ck["config"])
        except (TypeError, ValueError) as e:
            raise Stop(f"--resume: {d}/resume.pt: {e}") from None
        # a schedule spans the run's first --steps, however far --resume extends them: the
        # resumed run's config (a copy: the caller's is left as it is) keeps that length
        old.schedule_steps = old.schedule_steps or old.steps
        cfgs[i] = c = replace(c, schedule_steps=c.schedule_steps or old.schedule_steps)
        diff = [f.name for f in fields(Config)
                if f.name != "steps" and getattr(old, f.name) != getattr(c, f.name)]
        if diff:
            raise Stop(f"--resume: {d} was trained with a different config ({', '.join(diff)})")
    if len({ck["step"] for ck in cks}) > 1:
        raise Stop("--resume: the runs stopped at different steps; resume them one at a time")
    try:
        load_runs(model, opt, cks)
        if "rng" in cks[0]:
            rng_state(cks[0]["rng"])
    except (KeyError, ValueError, RuntimeError, TypeError, AttributeError) as e:
        raise Stop(f"--resume: {run_dirs[0]}/resume.pt does not fit this code or these runs "
                   f"({type(e).__name__}): resume the runs one at a time, or start again")
    start = cks[0]["step"]
    if cfgs[0].steps < start:
        raise Stop(f"--resume: {run_dirs[0]} is at step {start}, past --steps {cfgs[0].steps}")
    # the evaluations before `start`, which metrics.npz must hold: rows from `start` on (written
    # before a kill stopped the save of resume.pt) are dropped and made again, as uninterrupted
    t = np.arange(start)
    evaluated = t[(t % cfgs[0].eval_every == 0) | (t % cfgs[0].ckpt_every == 0)]
    metrics = []
    for d in run_dirs:
        try:
            old = load_metrics(os.path.join(d, "metrics.npz"))
        except Stop as e:
            raise Stop(f"--resume: {e}") from None
        keep = old["step"] < start
        if not np.array_equal(old["step"][keep], evaluated):
            last = old["step"][keep][-1] if keep.any() else "no step"
            raise Stop(f"--resume: {d}/metrics.npz ends at step {last}, older than resume.pt "
                       f"(step {start}): they are not of one run; start again")
        # a column newer than the run: NaN before the resume
        metrics.append({k: list(old[k][keep]) if k in old else [np.nan] * int(keep.sum())
                        for k in KEYS})
    log(f"resuming {', '.join(run_dirs)} at step {start}")
    return metrics, start


class Interrupted(Exception):
    """Training stopped by a signal (Ctrl-C, SIGTERM) after saving resume.pt at `step`."""

    def __init__(self, signum, step):
        super().__init__(f"interrupted by {signal.Signals(signum).name} at step {step}")
        self.signum, self.step = signum, step


def train(cfgs, run_dirs, device="cpu", resume=False, stop_after_grok=None, fast=True,
          log=print):
    """The one training loop, for one run (a Config and a folder) or several runs of one shape
    (lists, differing only in STACKABLE options) trained together. Returns the metrics (for
    several runs, a list of them)."""
    single = isinstance(cfgs, Config)
    cfgs, run_dirs = ([cfgs], [run_dirs]) if single else (list(cfgs), list(run_dirs))
    if (stop_after_grok or 0) < 0:
        raise Stop(f"--stop-after-grok {stop_after_grok} must be non-negative")
    device = check_options(cfgs, run_dirs, device, resume)
    tune_cpu()
    cfg, R = cfgs[0], len(cfgs)
    x_tr, y_tr, x_te, y_te = (torch.stack(t).to(device) for t in zip(*map(make_data, cfgs)))
    try:
        models = [build_model(c).to(device) for c in cfgs]
        model, forward, skip = build_runs(models, fast, probe=(x_tr[0, :64], y_tr[0, :64]))
    except (MemoryError, RuntimeError) as e:
        raise too_big(e, "the model", "a smaller --d-model, --d-mlp or --p")
    names, params = zip(*named_params(model))
    opt = make_optimizer(cfg, list(zip(names, params)), R)
    # only now, all checked: a refused run leaves no folder behind
    locks = claim_folders(run_dirs, resume)
    try:
        metrics, start = resume_runs(cfgs, run_dirs, model, opt, log) if resume else \
            ([{k: [] for k in KEYS} for _ in cfgs], 0)
        make_folders(cfgs, run_dirs)
    except BaseException:
        release_folders(locks)
        raise
    # the evaluation's forward is the step's unless a step sees a batch or dropout
    same = cfg.batch_size is None and cfg.dropout == 0
    # mini-batches: each run's own seeded order; idx holds the current batch's indices
    batches = [Batches(c, x) for c, x in zip(cfgs, x_tr)] if cfg.batch_size else None
    idx = torch.zeros(R, cfg.batch_size or 0, dtype=torch.long, device=device)
    f_E = [token_frequency(c, x) for c, x in zip(cfgs, x_tr)]
    run_params = lambda r: {n: p[r] if R > 1 else p for n, p in zip(names, params)}
    # after a resume between two evaluations (Ctrl-C), the ratio of the last one, as uninterrupted
    ratios = [m["emb_lr_ratio"][-1] if m["step"] and np.isfinite(m["emb_lr_ratio"][-1]) else
              emb_lr_ratio(run_params(r), c, f_E[r]) for r, (c, m) in enumerate(zip(cfgs, metrics))]
    graphing, graph = device == "cuda", None  # GPU: the step is recorded once, then replayed

    def step_loss():  # what a step descends: the loss on the training set or on the batch
        if batches is None:
            return loss_fn(forward(x_tr), y_tr, cfg.loss_dtype, cfg.loss)
        x = x_tr.gather(1, idx[..., None].expand(-1, -1, x_tr.shape[-1]))
        return loss_fn(forward(x), y_tr.gather(1, idx), cfg.loss_dtype, cfg.loss)

    def update(losses):
        opt.zero_grad(set_to_none=not graphing)  # a graph reads the .grad tensors it recorded
        if cfg.l1:  # Nanda et al.'s L1 penalty on every parameter, each run its own
            losses = losses + cfg.l1 * sum(p.abs().reshape(R, -1).sum(1) for p in params)
        losses.sum().backward()  # runs share no parameter: each gets its own gradient
        # AdamW eps 0 divides m by sqrt(v): where a gradient stays exactly 0, flushed moments
        # reach 0 (no step); kept, they stop at the smallest denormal, as torch's AdamW and a GPU
        torch.set_flush_denormal(cfg.eps > 0)
        opt.step()
        torch.set_flush_denormal(True)  # the forward and backward: tune_cpu

    def save(step, checkpoint=True):  # metrics first: a resume drops rows past its step
        save_metrics(metrics, run_dirs)
        for c, d, (state, optim) in zip(cfgs, run_dirs, run_states(model, opt)):
            ck = dict(step=step, config=c.to_dict(), model=state)
            if checkpoint:  # ckpt/ holds the steps of the grid alone, interrupted or not
                save_atomic(ck, os.path.join(d, "ckpt", f"step_{step:06d}.pt"))
            # and the random state (dropout masks), so that --resume goes on exactly
            save_atomic(dict(ck, optim=optim, rng=rng_state()), os.path.join(d, "resume.pt"))

    interrupted, stopped = [], None  # Ctrl-C, SIGTERM (timeout, Slurm, docker stop): between steps
    handlers = {s: signal.signal(s, lambda signum, _: interrupted.append(signum))
                for s in (signal.SIGINT, signal.SIGTERM)}
    t0, shown, end = time.time(), [0.0], stop_step(metrics, cfg.steps, stop_after_grok)
    try:
        for step in range(start, cfg.steps + 1):
            if interrupted:
                save(step, checkpoint=False)  # resume.pt at this step: no step is lost
                stopped = step
                break
            evaluate = step % cfg.eval_every == 0 or step % cfg.ckpt_every == 0 or step >= end
            if evaluate:  # 'auto' follows the weights
                ratios = [emb_lr_ratio(run_params(r), c, f_E[r]) for r, c in enumerate(cfgs)]
            hyper = set_hyper(opt, names, cfgs, step, ratios, skip)
            if batches:  # into the tensor a recorded graph reads
                src = torch.from_numpy(np.stack([b(step) for b in batches]))
                idx.copy_(src.pin_memory() if idx.is_cuda else src, non_blocking=True)
            if not evaluate:
                graph.replay() if graph else update(step_loss())
                continue
            with torch.set_grad_enabled(same):  # full batch, no dropout: stepped on, too
                logits = forward(x_tr, train=False)
                losses = loss_fn(logits, y_tr, cfg.loss_dtype, cfg.loss)
            with torch.no_grad():
                test_logits = forward(x_te, train=False)
                before = [p.detach().clone() for p in params]
            if not torch.isfinite(losses).all():  # the only host synchronisations: here
                if step > start:  # else the file holds every row there is
                    save_metrics(metrics, run_dirs)
                bad = losses.tolist() if R > 1 else losses.item()
                raise Stop(f"train loss is {bad} at step {step}: stopped, "
                           f"{'the last good checkpoint kept' if step else 'no checkpoint yet'}; "
                           "change --lr or --dtype and start again")
            record(metrics, step, (logits, y_tr), (test_logits, y_te), losses, before, hyper,
                   ratios, (cfg.loss_dtype, cfg.loss))
            end = stop_step(metrics, cfg.steps, stop_after_grok)
            if step >= end or step % cfg.ckpt_every == 0:
                save(step)  # before the update: the checkpoint holds theta_step
                if step >= end:
                    break
            update(losses if same else step_loss())
            with torch.no_grad():  # ||theta_{t+1} - theta_t|| of this step
                upd = sum(((p - q).double() ** 2).reshape(R, -1).sum(1)
                          for p, q in zip(params, before)).sqrt().tolist()
            for m, u in zip(metrics, upd):
                m["update_norm"][-1] = u
            if graphing and graph is None:
                logits = losses = None  # free this step's graph: capture needs fresh grad nodes
                graph = cuda_graph(lambda: update(step_loss()), list(params), opt)
            progress(metrics, step, end, start, t0, shown, log)
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
        release_folders(locks)
    if stopped is not None:
        raise Interrupted(interrupted[0], stopped)
    for d, m in zip(run_dirs, metrics):
        log(f"{d}: done in {time.time() - t0:.1f}s | " + " | ".join(
            f"{k} loss <= {GROK} at step {first_below(m['step'], m[k + '_loss']) or 'not reached'}"
            for k in ("train", "test")))
    return metrics[0] if single else metrics


def rng_state(state=None):
    """torch's random state (CPU, and the GPUs'), or set it from `state` when one is given."""
    if state is None:
        return dict(cpu=torch.get_rng_state(),
                    cuda=torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [])
    torch.set_rng_state(state["cpu"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def record(metrics, step, train, test, losses, params, hyper, ratios, loss):
    """Append one metrics row per run (update_norm follows after the step)."""
    R = len(metrics)
    with torch.no_grad():
        ones, zero = collapse(*train, loss[0])
        cols = dict(train_loss=losses, train_acc=accuracy(*train), test_loss=loss_fn(*test, *loss),
                    test_acc=accuracy(*test), collapse=ones, zero_loss=zero,
                    weight_norm=sum((p.double() ** 2).reshape(R, -1).sum(1) for p in params))
    cols = {k: v.tolist() for k, v in cols.items()}
    for r, m in enumerate(metrics):
        row = dict(step=step, update_norm=float("nan"), lr=hyper[r][0],
                   emb_lr_ratio=ratios[r], **{k: v[r] for k, v in cols.items()})
        for k in KEYS:
            m[k].append(row[k])


def stop_step(metrics, steps, after):
    """The last step: --steps, or `after` steps past the step when every run has generalized."""
    grok = [first_below(m["step"], m["test_loss"]) for m in metrics]
    return steps if after is None or None in grok else min(steps, max(grok) + after)


def make_folders(cfgs, run_dirs):
    for c, d in zip(cfgs, run_dirs):
        os.makedirs(os.path.join(d, "ckpt"), exist_ok=True)
        save_atomic(c.to_dict(), os.path.join(d, "config.json"))


def progress(metrics, step, end, start, t0, shown, log):
    """A status line at most every 5 s (shown[0]: when the last one was): means over the runs,
    ms/step, time left."""
    now = time.time()
    if now - shown[0] < 5:
        return
    shown[0] = now
    ms = 1000 * (now - t0) / (step + 1 - start)
    mean = lambda k: np.mean([m[k][-1] for m in metrics])
    log(f"step {step:6d}/{end} | train {mean('train_loss'):.2e} acc {mean('train_acc'):.3f} | "
        f"test {mean('test_loss'):.2e} acc {mean('test_acc'):.3f} | {ms:.1f} ms/step | "
        f"{(end - step) * ms / 1000:.0f}s left"
        + (f" | means of {len(metrics)} runs" if len(metrics) > 1 else ""))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        cfgs, run_dirs, args = parse_args(argv)
        print(f"run {', '.join(run_dirs)}")
        train(cfgs[0] if len(cfgs) == 1 else cfgs, run_dirs[0] if len(cfgs) == 1 else run_dirs,
              args.device, args.resume, args.stop_after_grok, args.fast)
    except Stop as e:
        sys.exit(f"error: {e}")
    except Interrupted as e:  # non-zero, as a shell expects: a sweep stops here
        again = " ".join(map(shlex.quote, ["python", "train.py", *argv]
                             + ([] if args.resume else ["--resume"])))
        print(f"{e}: saved; continue with: {again}", file=sys.stderr)
        sys.exit(128 + e.signum)
    except KeyboardInterrupt:  # before training began
        print("interrupted before training began: nothing saved", file=sys.stderr)
        sys.exit(128 + signal.SIGINT)


if __name__ == "__main__":
    main()
