"""
Training on modular arithmetic (full batch, or mini-batches with --batch-size), writing
checkpoints and a .npz of metrics.

    python train.py --ln pre --seed 0            # Singh et al.'s setup, M+A* placement
    python train.py --preset nanda               # Nanda et al.'s mainline (ReLU, causal, 40k steps)
    python train.py --preset alquabeh --embed onehot   # embedding-MLP without embeddings
    python train.py --ln pre --seed 0 --steps 20000 --resume   # continue a run
    python train.py --ln pre --seed 0 --auto-resume   # safe to repeat: resume, start or do nothing
    python train.py --ln pre mlp-pre --seed 456 789 111 222 333   # 10 runs batched in one process
    python train.py --ln pre --no-fast           # train on model.py's forward (after editing it)

Writes runs/<name>/{config.json, metrics.npz, resume.pt, ckpt/step_XXXXXX.pt}.
"""
import functools
import json
import os
import shlex
import signal
import sys
import time


def interrupted_at_start(*_):
    print("interrupted before training began: nothing saved", file=sys.stderr)
    sys.exit(128 + signal.SIGINT)


if __name__ == "__main__":  # a Ctrl-C while torch loads (seconds) is one line too
    signal.signal(signal.SIGINT, interrupted_at_start)
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from cli import AUTO, parse_args
from config import Config
from data import Batches, make_data, token_frequency
from fast import (GraphedStep, adamw_step, build_runs, cpu_settings, load_runs, named_params,
                  run_states)
from model import build_model
from optim import emb_lr_ratio, make_optimizer, set_hyper
from runfiles import (GROK, KEYS, Stop, first_below, load_checkpoint, load_metrics, lock_run,
                      message, printable, run_files, run_state, save_atomic, save_metrics,
                      unlock_run)

# the options in which runs trained together (one process, one Stacked model) may differ: the
# swept ones (cli.SWEPT_OPTIONS), and more that a caller of train() may vary
PER_RUN_OPTIONS = ("ln", "seed", "data_seed", "op", "split", "hole", "lr", "wd", "fix_wd",
                   "alpha", "alpha_lr", "emb_lr_ratio", "sampling")


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



def check_options(cfgs, run_dirs, device, resume):
    """Every option, checked in one place before anything is written: raise Stop naming the
    first bad one. Returns the device to train on."""
    for cfg in cfgs:
        cfg.check()
        other = [f.name for f in fields(Config) if f.name not in PER_RUN_OPTIONS
                 and getattr(cfg, f.name) != getattr(cfgs[0], f.name)]
        if other:
            raise Stop(f"runs trained together may differ only in {', '.join(PER_RUN_OPTIONS)}, "
                       f"not {', '.join(other)}")
    placements = {cfg.ln for cfg in cfgs}
    if "off" in placements and len(placements) > 1:
        raise Stop("runs trained together need the same parameters: train --ln off "
                   "(no LayerNorm) on its own")
    try:
        sizes = {(len(x_train), len(x_test)) for x_train, _, x_test, _ in map(make_data, cfgs)}
    except (MemoryError, RuntimeError) as e:
        raise too_big(e, "the task (--p squared pairs)", "a smaller --p")
    if any(0 in s for s in sizes):
        raise Stop("empty train or test set for this --frac/--split/--hole")
    if len(sizes) > 1:
        raise Stop("runs trained together need train and test sets of one size")
    n_train = sizes.pop()[0]
    if cfgs[0].batch_size is not None and cfgs[0].batch_size > n_train:
        raise Stop(f"--batch-size {cfgs[0].batch_size} is larger than the training set "
                   f"({n_train} pairs)")
    if len(set(run_dirs)) < len(run_dirs):
        raise Stop("--name names one run; several runs get names of their own")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "mps":  # Apple's GPUs have no float64, which the loss and optimizer use
        raise Stop("--device mps has no float64, which training needs; use cpu")
    if device not in ("cpu", "cuda"):
        raise Stop(f"unknown --device {device!r}; choose from auto, cpu, cuda")
    if device == "cuda" and not torch.cuda.is_available():
        raise Stop("--device cuda is not available on this machine")
    return device


def plan_runs(cfgs, run_dirs, resume, stop_after_grok):
    """How the runs go, from what their folders hold (runfiles.run_state) and resume (False,
    True: --resume, AUTO: --auto-resume): "start", "resume", or "done" (trained as far as
    this command asks: nothing to do). Runs trained together go one way, all of them, or
    Stop."""
    states = [run_state(run_dir) for run_dir in run_dirs]
    new = [run_dir for run_dir, state in zip(run_dirs, states) if state == "new"]
    if resume == AUTO and 0 < len(new) < len(run_dirs):
        held = next(d for d in run_dirs if d not in new)
        raise Stop(f"{len(run_dirs) - len(new)} of these {len(run_dirs)} runs hold a run "
                   f"({held}) and {len(new)} do not ({new[0]}): run them apart, or remove one "
                   "kind")
    for run_dir, state in zip(run_dirs, states):
        if state != "new" and not resume:
            raise Stop(holds_a_run(run_dir))
        if state == "new" and resume is True:
            raise Stop(nothing_to_resume(run_dir))
    if new:
        return "start"
    if finished(cfgs, run_dirs, stop_after_grok):
        return "done"
    for run_dir, state in zip(run_dirs, states):
        if state == "copy":
            raise Stop(f"{run_dir} holds a run with no resume.pt to go on from (a copy, or "
                       "unpacked?): pick another --name or --out")
    return "resume"


def holds_a_run(run_dir):
    return (f"{run_dir} holds a run ({', '.join(run_files(run_dir))}): add --resume (or "
            "--auto-resume) to continue it, or pick another --name or --out")


def nothing_to_resume(run_dir):
    why = f"missing checkpoint {run_dir}/resume.pt"
    if run_files(run_dir):
        why += ": the run stopped before its first save"
    return why + "; run the same command without --resume (or with --auto-resume) to start it"


def finished(cfgs, run_dirs, stop_after_grok):
    """Whether the runs have trained to the step this command would stop at (last_step):
    resume.pt, where there is one, and each metrics.npz end there. A run trained with other
    options is refused, as by --resume."""
    saved = []  # each run's (saved config, resume.pt's step or None)
    for run_dir in run_dirs:
        path = os.path.join(run_dir, "resume.pt")
        if os.path.lexists(path):
            ck = load_checkpoint(path)
            saved.append((ck["config"], ck["step"]))
        else:
            saved.append((read_config(os.path.join(run_dir, "config.json")), None))
    metrics = [load_metrics(os.path.join(run_dir, "metrics.npz")) for run_dir in run_dirs]
    end = last_step(cfgs[0].steps, stop_after_grok, metrics)
    if any(len(m["step"]) == 0 or m["step"][-1] != end for m in metrics):
        return False
    if any(step not in (None, end) for _, step in saved):
        return False
    for cfg, run_dir, (config, _) in zip(cfgs, run_dirs, saved):
        check_same_run(config, cfg, run_dir)
    return True


def read_config(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise Stop(f"cannot read {printable(path)} ({message(e)})") from None


def check_same_run(saved, cfg, run_dir):
    """Refuse cfg for run_dir if its saved config (a dict) differs but in --steps, which a
    resume may extend."""
    try:
        old = Config.saved(saved)
    except (TypeError, ValueError) as e:
        raise Stop(f"--resume: {run_dir}: {e}") from None
    diff = [f.name for f in fields(Config)
            if f.name != "steps" and getattr(old, f.name) != getattr(cfg, f.name)]
    if diff:
        raise Stop(f"--resume: {run_dir} was trained with a different config "
                   f"({', '.join(diff)})")


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
        for run_dir in run_dirs:
            try:
                os.makedirs(run_dir, exist_ok=True)
            except OSError as e:
                raise Stop(f"cannot create {printable(run_dir)}: {e.strerror}") from None
            locks.append((run_dir, lock_run(run_dir)))
            if not resume and run_state(run_dir) != "new":
                raise Stop(holds_a_run(run_dir))
    except BaseException:
        release_folders(locks)
        raise
    return locks


def release_folders(locks):
    for run_dir, fd in locks:
        unlock_run(run_dir, fd)


def resume_runs(cfgs, run_dirs, model, opt):
    """Load the runs' resume.pt into model and optimizer. Returns each run's metrics before
    that step, and the step."""
    cks = [load_checkpoint(os.path.join(run_dir, "resume.pt")) for run_dir in run_dirs]
    for cfg, run_dir, ck in zip(cfgs, run_dirs, cks):
        if not isinstance(ck.get("optim"), dict):
            raise Stop(f"--resume: {run_dir}/resume.pt has no optimizer state (a ckpt/ file "
                       "copied over it?): start again")
        check_same_run(ck["config"], cfg, run_dir)
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
    for run_dir in run_dirs:
        try:
            old = load_metrics(os.path.join(run_dir, "metrics.npz"))
        except Stop as e:
            raise Stop(f"--resume: {e}") from None
        keep = old["step"] < start
        if not np.array_equal(old["step"][keep], evaluated):
            last = old["step"][keep][-1] if keep.any() else "no step"
            raise Stop(f"--resume: {run_dir}/metrics.npz ends at step {last}, older than "
                       f"resume.pt (step {start}): they are not of one run; start again")
        columns = {}
        for k in KEYS:  # a column newer than the run: NaN before the resume
            columns[k] = list(old[k][keep]) if k in old else [np.nan] * int(keep.sum())
        metrics.append(columns)
    return metrics, start


class Interrupted(Exception):
    """Training stopped by a signal (Ctrl-C, SIGTERM) after saving resume.pt at `step`."""

    def __init__(self, signum, step):
        super().__init__(f"interrupted by {signal.Signals(signum).name} at step {step}")
        self.signum, self.step = signum, step


class CaughtSignals:
    """Within the block, Ctrl-C and SIGTERM (timeout, Slurm, docker stop) are noted in
    `caught` instead of raised, so that the loop stops between two steps; after it, the
    handlers it found."""

    def __enter__(self):
        self.caught = []
        self.handlers = {s: signal.signal(s, self.note) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def note(self, signum, frame):
        self.caught.append(signum)

    def __exit__(self, *exc):
        for s, handler in self.handlers.items():
            signal.signal(s, handler)


def last_step(steps, stop_after_grok, metrics):
    """The step training stops at: --steps, or stop_after_grok steps past the step when the
    last run to generalize did (test loss <= GROK) in its metrics so far."""
    if stop_after_grok is None:
        return steps
    grok_steps = [first_below(m["step"], m["test_loss"]) for m in metrics]
    if None in grok_steps:
        return steps
    return min(steps, max(grok_steps) + stop_after_grok)


@dataclass
class Progress:
    """What the loop keeps of its runs besides weights and optimizer state: each run's config,
    folder and metrics rows, the step to stop at, and when the last status line was shown."""
    cfgs: list                # one Config per run, differing only in PER_RUN_OPTIONS
    dirs: list                # one run folder per run
    metrics: list             # per run, {column of KEYS: [a value per evaluation]}
    start: int                # the step this process began at: 0, or the step resumed
    stop_after_grok: int | None = None  # steps to go on after the last run generalized
    began: float = field(default_factory=time.time)  # when the loop began, wall time
    shown: float = 0.0        # when the last status line was shown, wall time
    end: int = field(init=False)  # the last step: last_step()

    def __post_init__(self):
        self.end = self.last_step()

    def last_step(self):
        return last_step(self.cfgs[0].steps, self.stop_after_grok, self.metrics)

    def record(self, step, **columns):
        """Append one row per run: columns are KEYS but step and update_norm, each a value per
        run (update_norm follows after the step: set_update_norms)."""
        for r, m in enumerate(self.metrics):
            row = dict(step=step, update_norm=float("nan"),
                       **{k: values[r] for k, values in columns.items()})
            for k in KEYS:
                m[k].append(row[k])
        self.end = self.last_step()

    def set_update_norms(self, norms):
        for m, norm in zip(self.metrics, norms):
            m["update_norm"][-1] = norm

    def save(self, step, model, opt, checkpoint=True):
        """metrics.npz, then each run's resume.pt (and ckpt/ at a checkpoint step) at `step`:
        metrics first, as a resume drops rows past its step."""
        save_metrics(self.metrics, self.dirs)
        for cfg, run_dir, (state, optim) in zip(self.cfgs, self.dirs, run_states(model, opt)):
            ck = dict(step=step, config=cfg.to_dict(), model=state)
            if checkpoint:  # ckpt/ holds the steps of the grid alone, interrupted or not
                save_atomic(ck, os.path.join(run_dir, "ckpt", f"step_{step:06d}.pt"))
            # and the random state (dropout masks), so that --resume goes on exactly
            save_atomic(dict(ck, optim=optim, rng=rng_state()),
                        os.path.join(run_dir, "resume.pt"))

    def stop_at_nan(self, step, losses):
        """Stop for training losses that are not finite at `step`, metrics.npz kept whole."""
        if step > self.start:  # else the file holds every row there is
            save_metrics(self.metrics, self.dirs)
        bad = losses.tolist() if len(losses) > 1 else losses.item()
        kept = "the last good checkpoint kept" if step else "no checkpoint yet"
        raise Stop(f"train loss is {bad} at step {step}: stopped, {kept}; change --lr or "
                   "--dtype and start again")

    def show(self, step, log):
        """A status line at most every 5 s: means over the runs, ms/step, time left."""
        now = time.time()
        if now - self.shown < 5:
            return
        self.shown = now
        ms = 1000 * (now - self.began) / (step + 1 - self.start)
        mean = {k: np.mean([m[k][-1] for m in self.metrics])
                for k in ("train_loss", "train_acc", "test_loss", "test_acc")}
        line = (f"step {step:6d}/{self.end} | train {mean['train_loss']:.2e} acc "
                f"{mean['train_acc']:.3f} | test {mean['test_loss']:.2e} acc "
                f"{mean['test_acc']:.3f} | {ms:.1f} ms/step | "
                f"{(self.end - step) * ms / 1000:.0f}s left")
        if len(self.metrics) > 1:
            line += f" | means of {len(self.metrics)} runs"
        log(line)

    def report(self, log):
        """A line per run: its time, and the steps at which train and test loss reached GROK."""
        for run_dir, m in zip(self.dirs, self.metrics):
            parts = [f"{run_dir}: done in {time.time() - self.began:.1f}s"]
            for k in ("train", "test"):
                grok_step = first_below(m["step"], m[k + "_loss"])
                if grok_step is None:
                    parts.append(f"{k} loss <= {GROK} at step not reached")
                else:
                    parts.append(f"{k} loss <= {GROK} at step {grok_step}")
            log(" | ".join(parts))


def train(cfgs, run_dirs, device="cpu", resume=False, stop_after_grok=None, fast=True,
          log=print):
    """The one training loop, for a list of runs of one shape trained together (Configs
    differing only in PER_RUN_OPTIONS, and a folder each; a list of one for a lone run).
    Returns each run's metrics, {column of KEYS: [a value per evaluation]}, in order."""
    cfgs, run_dirs = list(cfgs), list(run_dirs)
    if len(cfgs) != len(run_dirs):
        raise ValueError(f"train() takes a run folder per config, not {len(run_dirs)} for "
                         f"{len(cfgs)}")
    if stop_after_grok is not None and stop_after_grok < 0:
        raise Stop(f"--stop-after-grok {stop_after_grok} must be non-negative")
    device = check_options(cfgs, run_dirs, device, resume)
    mode = plan_runs(cfgs, run_dirs, resume, stop_after_grok)
    if mode == "done":
        return finished_metrics(run_dirs, log)
    resume = mode == "resume"
    shared = cfgs[0]  # the options every run has (all but PER_RUN_OPTIONS)
    data = stack_data(cfgs, device)
    model, forward, unused = build_stack(cfgs, device, fast, data, log)
    names, params = zip(*named_params(model))
    opt = make_optimizer(shared, list(zip(names, params)), len(cfgs), model.NAMES)
    # only now, all checked: a refused run leaves no folder behind
    locks = claim_folders(run_dirs, resume)
    try:
        runs = open_runs(cfgs, run_dirs, model, opt, resume, stop_after_grok, log)
        # a step descends the evaluation's loss unless it sees a mini-batch or dropout
        descend_evaluation_loss = shared.batch_size is None and shared.dropout == 0
        batches = MiniBatches(cfgs, data.x_train) if shared.batch_size else None
        batch = batches.indices if batches else None  # what a step's loss reads: (R, B) or all
        token_freqs = [token_frequency(cfg, x) for cfg, x in zip(cfgs, data.x_train)]
        ratios = ratios_at_start(cfgs, runs.metrics, model.NAMES, names, params, token_freqs)
        # on a GPU the step between evaluations is a CUDA graph, which reads the .grad tensors
        # it recorded: every step keeps them
        keep_grads = device == "cuda"
        step_between = step_between_evaluations(forward, data, batch, opt, params, shared,
                                                graphed=keep_grads)
    except BaseException:  # the folders stay locked by nothing but a loop that runs
        release_folders(locks)
        raise

    try:
        with cpu_settings(), CaughtSignals() as signals:
            for step in range(runs.start, shared.steps + 1):
                if signals.caught:
                    runs.save(step, model, opt, checkpoint=False)  # resume.pt at this step
                    raise Interrupted(signals.caught[0], step)
                evaluation = (step % shared.eval_every == 0 or step % shared.ckpt_every == 0
                              or step >= runs.end)
                if evaluation:  # 'auto' follows the weights
                    ratios = [run_ratio(cfgs, r, model.NAMES, names, params, token_freqs)
                              for r in range(len(cfgs))]
                lr_wd = set_hyper(opt, names, cfgs, step, ratios, unused, model.NAMES)
                if batches:
                    batches.load(step)
                if not evaluation:
                    step_between()
                    continue
                # an evaluation: the loop's only host synchronisations
                losses, columns = evaluate(forward, data, params, shared,
                                           grad=descend_evaluation_loss)
                if not torch.isfinite(losses).all():
                    runs.stop_at_nan(step, losses)
                runs.record(step, lr=[lr for lr, _ in lr_wd], emb_lr_ratio=ratios, **columns)
                if step >= runs.end or step % shared.ckpt_every == 0:
                    runs.save(step, model, opt)  # before the update: it holds theta_step
                if step >= runs.end:
                    break
                norms = step_at_evaluation(forward, data, batch, opt, params, shared, keep_grads,
                                           losses if descend_evaluation_loss else None)
                # no autograd graph of this step stays referenced: GraphedStep records fresh
                del losses
                runs.set_update_norms(norms)
                runs.show(step, log)
    finally:
        release_folders(locks)
    runs.report(log)
    return runs.metrics


def finished_metrics(run_dirs, log):
    """The metrics of runs trained as far as asked already (plan_runs' "done"), said so."""
    metrics = [load_metrics(os.path.join(run_dir, "metrics.npz")) for run_dir in run_dirs]
    for run_dir, m in zip(run_dirs, metrics):
        log(f"{run_dir}: finished at step {m['step'][-1]}; nothing to do")
    return [{k: m[k].tolist() for k in m} for m in metrics]


class Data(NamedTuple):
    """The runs' task, each part stacked on a run axis: (R, N, 3) inputs, (R, N) labels."""
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def stack_data(cfgs, device):
    """Each run's task (data.make_data), stacked part by part on a run axis."""
    datasets = [make_data(cfg) for cfg in cfgs]
    return Data(*(torch.stack(part).to(device) for part in zip(*datasets)))


def build_stack(cfgs, device, fast, data, log):
    """The runs' models, built and stacked (fast.build_runs: their module, forward, and per
    run the parameters it never reads), the fast forward checked on a probe batch of run 0's
    training set; Stop if they do not fit in memory."""
    try:
        models = [build_model(cfg).to(device) for cfg in cfgs]
        return build_runs(models, fast, (data.x_train[0, :64], data.y_train[0, :64]), log)
    except (MemoryError, RuntimeError) as e:
        raise too_big(e, "the model", "a smaller --d-model, --d-mlp or --p")


def open_runs(cfgs, run_dirs, model, opt, resume, stop_after_grok, log):
    """The runs' Progress at their first step: resumed from resume.pt into model and opt, or
    fresh; their folders made (config.json written) and a line said."""
    if resume:
        metrics, start = resume_runs(cfgs, run_dirs, model, opt)
    else:
        metrics = [{k: [] for k in KEYS} for _ in cfgs]
        start = 0
    make_folders(cfgs, run_dirs)
    if resume:
        log(f"run {', '.join(run_dirs)}: resumed at step {start}")
    else:
        log(f"run {', '.join(run_dirs)}")
    return Progress(cfgs, run_dirs, metrics, start, stop_after_grok)


class MiniBatches:
    """Each run's own seeded order of mini-batches (data.Batches), and `indices` (R, B), the
    tensor that holds the current step's: a recorded CUDA graph reads that tensor, so each
    step's batch is copied into it, not made anew."""

    def __init__(self, cfgs, x_train):
        self.orders = [Batches(cfg, x) for cfg, x in zip(cfgs, x_train)]
        self.indices = torch.zeros(len(cfgs), cfgs[0].batch_size, dtype=torch.long,
                                   device=x_train.device)

    def load(self, step):
        """Step `step`'s batches into `indices`; to a GPU from pinned memory, so the copy does
        not wait for the GPU."""
        indices = torch.from_numpy(np.stack([b(step) for b in self.orders]))
        self.indices.copy_(indices.pin_memory() if self.indices.is_cuda else indices,
                           non_blocking=True)


def ratios_at_start(cfgs, metrics, roles, names, params, token_freqs):
    """Each run's embedding lr ratio at its last evaluation, as uninterrupted: the one
    metrics recorded where a run resumes between evaluations, else at its weights now."""
    ratios = []
    for r, m in enumerate(metrics):
        if m["step"] and np.isfinite(m["emb_lr_ratio"][-1]):  # resumed between evaluations
            ratios.append(m["emb_lr_ratio"][-1])
        else:
            ratios.append(run_ratio(cfgs, r, roles, names, params, token_freqs))
    return ratios


def run_ratio(cfgs, r, roles, names, params, token_freqs):
    """Run r's embedding lr ratio at its weights now (optim.emb_lr_ratio; roles: the model's
    NAMES)."""
    if len(cfgs) == 1:
        run_params = dict(zip(names, params))
    else:
        run_params = {n: p[r] for n, p in zip(names, params)}
    return emb_lr_ratio(run_params, cfgs[r], token_freqs[r], roles)


def step_between_evaluations(forward, data, batch, opt, params, cfg, graphed):
    """The step between evaluations as a call of no arguments: the step's loss, descended.
    graphed (a GPU): recorded once as a CUDA graph and replayed (fast.GraphedStep), as a small
    model's eager step is bound by launching its many small kernels; it keeps the .grad
    tensors the graph reads."""
    step = functools.partial(train_step, forward, data, batch, opt, params, cfg,
                             keep_grads=graphed)
    if graphed:
        return GraphedStep(step, params, opt)
    return step


def step_at_evaluation(forward, data, batch, opt, params, cfg, keep_grads, losses=None):
    """The step after an evaluation, eager. It descends the evaluation's training losses
    (with their autograd graph) when given, instead of a second forward of the same function
    (full batch, no dropout); else the step's own loss. Returns each run's step length."""
    before = [p.detach().clone() for p in params]  # for the step's length
    if losses is None:
        losses = step_loss(forward, data, batch, cfg)
    update(opt, params, losses, cfg, keep_grads)
    return distances(params, before, len(losses))


def step_loss(forward, data, batch, cfg):
    """What a step descends, per run: the loss on the training set or, with mini-batches, on
    the examples that batch (R, B) indexes."""
    x_train, y_train = data.x_train, data.y_train
    if batch is None:
        return loss_fn(forward(x_train), y_train, cfg.loss_dtype, cfg.loss)
    x = x_train.gather(1, batch[..., None].expand(-1, -1, x_train.shape[-1]))
    return loss_fn(forward(x), y_train.gather(1, batch), cfg.loss_dtype, cfg.loss)


def update(opt, params, losses, cfg, keep_grads):
    """One optimizer step on the runs' losses (R,). keep_grads: zero the .grad tensors in
    place instead of dropping them."""
    opt.zero_grad(set_to_none=not keep_grads)
    if cfg.l1:  # Nanda et al.'s L1 penalty on every parameter, each run its own
        penalty = sum(p.abs().reshape(len(losses), -1).sum(1) for p in params)
        losses = losses + cfg.l1 * penalty
    losses.sum().backward()  # runs share no parameter: each gets its own gradient
    adamw_step(opt, keep_denormals=cfg.eps == 0)


def train_step(forward, data, batch, opt, params, cfg, keep_grads):
    """A step between evaluations: the step's loss, descended."""
    update(opt, params, step_loss(forward, data, batch, cfg), cfg, keep_grads)


def evaluate(forward, data, params, cfg, grad):
    """The runs' training losses (R,), with their autograd graph when grad (the step then
    descends them), and this evaluation's metrics columns, each a list of R values. A stack's
    forward and losses always have the run axis, a lone run's too (R 1)."""
    with torch.set_grad_enabled(grad):
        logits = forward(data.x_train, train=False)
        losses = loss_fn(logits, data.y_train, cfg.loss_dtype, cfg.loss)
    with torch.no_grad():
        test_logits = forward(data.x_test, train=False)
        ones, zero = collapse(logits, data.y_train, cfg.loss_dtype)
        columns = dict(train_loss=losses, train_acc=accuracy(logits, data.y_train),
                       test_loss=loss_fn(test_logits, data.y_test, cfg.loss_dtype, cfg.loss),
                       test_acc=accuracy(test_logits, data.y_test), collapse=ones,
                       zero_loss=zero, weight_norm=squared_norms(params, len(losses)))
    return losses, {k: v.tolist() for k, v in columns.items()}


def squared_norms(tensors, runs):
    """Per run, the sum of squares of the tensors' entries in float64: (runs,). A stack's
    tensors have the run axis first; a lone run's (runs 1) have none."""
    return sum((t.double() ** 2).reshape(runs, -1).sum(1) for t in tensors)


def distances(params, before, runs):
    """Per run, ||params - before||: the length of a step."""
    with torch.no_grad():
        return squared_norms([p - q for p, q in zip(params, before)], runs).sqrt().tolist()


def rng_state(state=None):
    """torch's random state (CPU, and the GPUs'), or set it from `state` when one is given."""
    if state is None:
        return dict(cpu=torch.get_rng_state(),
                    cuda=torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [])
    torch.set_rng_state(state["cpu"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def make_folders(cfgs, run_dirs):
    for cfg, run_dir in zip(cfgs, run_dirs):
        os.makedirs(os.path.join(run_dir, "ckpt"), exist_ok=True)
        save_atomic(cfg.to_dict(), os.path.join(run_dir, "config.json"))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    signal.signal(signal.SIGINT, signal.default_int_handler)  # now a KeyboardInterrupt below
    try:
        cfgs, run_dirs, args = parse_args(argv, __doc__)
        # each line at once, into a log file too (a Slurm task's): print buffers a file
        train(cfgs, run_dirs, args.device, args.resume, args.stop_after_grok, args.fast,
              log=functools.partial(print, flush=True))
    except Stop as e:
        sys.exit(f"error: {e}")
    except Interrupted as e:  # non-zero, as a shell expects: a sweep stops here
        again = ["python", "train.py", *argv]
        if args.resume is False:
            again.append("--resume")
        print(f"{e}: saved; continue with: {' '.join(map(shlex.quote, again))}",
              file=sys.stderr)
        sys.exit(128 + e.signum)
    except KeyboardInterrupt:  # before training began
        interrupted_at_start()


if __name__ == "__main__":
    main()
