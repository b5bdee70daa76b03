"""
Full-batch training on modular arithmetic, writing checkpoints and a .npz of metrics.

    python train.py --ln pre --seed 0            # Singh et al.'s setup, M+A* placement
    python train.py --preset nanda               # Nanda et al.'s mainline (ReLU, causal, 40k steps)
    python train.py --preset alquabeh --embed onehot   # embedding-MLP without embeddings
    python train.py --ln pre --seed 0 --steps 20000 --resume   # continue a run

Writes runs/<name>/{config.json, metrics.npz, resume.pt, ckpt/step_XXXXXX.pt}.
"""
import argparse
import json
import math
import os
import signal
import sys
import time
from dataclasses import fields

import numpy as np
import torch
import torch.nn.functional as F

from model import Config, PRESETS, build_model

OPS = {  # name -> label of (a, b) mod p
    "add": lambda a, b, p: (a + b) % p,
    "sub": lambda a, b, p: (a - b) % p,
    "mul": lambda a, b, p: (a * b) % p,
    "div": lambda a, b, p: (a * torch.tensor([pow(int(x), p - 2, p) for x in b])) % p,  # b != 0
    "a2+b2": lambda a, b, p: (a * a + b * b) % p,
    "a2+ab+b2": lambda a, b, p: (a * a + a * b + b * b) % p,
    "a3+ab+b3": lambda a, b, p: (a ** 3 + a * b + b ** 3) % p,
}
GROK = 0.01  # "generalized" = first step with loss <= this (Singh et al.)

HELP = dict(
    p="modulus", op=f"operation: {', '.join(OPS)}", frac="fraction of pairs in train",
    split="random | balanced (every operand equally often) | square | strip (Gu et al.)",
    hole="size K of the dug-out square {a,b<=K} or strip {a<=K}", seed="seed of split and init",
    data_seed="seed of the split alone", model="transformer | mlp",
    embed="mlp: learned | onehot", n_layers="transformer blocks", d_model="width",
    n_heads="attention heads", d_mlp="MLP width", act="gelu | relu",
    causal="causal attention mask", ln="LayerNorm placement: " + ", ".join(
        ["off", "attn-pre", "pre", "mlp-pre", "attn-pre-qk", "attn-pre-v", "pre-v", "post"]),
    norm="layernorm | rmsnorm", ln_eps="norm epsilon", alpha="readout scale on the logits",
    init="singh | nanda", lr="AdamW learning rate", wd="AdamW weight decay",
    betas="AdamW betas", eps="AdamW eps", warmup="linear lr warmup steps",
    fix_wd="scale wd by 1e-3/lr (lr*wd fixed, Singh et al.'s lr sweep)",
    alpha_lr="divide lr by alpha^2", emb_lr_ratio="embedding lr / lr, a number or 'auto'",
    steps="optimizer steps (full batch)", dtype="float32 | float64",
    eval_every="steps between metric rows", ckpt_every="steps between checkpoints",
)


class Stop(Exception):
    """Bad input or an unusable run: main() prints it as one line."""


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="singh", choices=list(PRESETS), help="defaults to start from (default singh)")
    default = Config()
    for f in fields(Config):
        flag, d = "--" + f.name.replace("_", "-"), getattr(default, f.name)
        kw = dict(default=None, help=f"{HELP[f.name]} (default {d})")
        if isinstance(d, bool):
            ap.add_argument(flag, action=argparse.BooleanOptionalAction, **kw)
        elif isinstance(d, tuple):
            ap.add_argument(flag, type=float, nargs=2, **kw)
        else:
            ap.add_argument(flag, type=int if f.name == "data_seed" else type(d), **kw)
    ap.add_argument("--device", default="auto", help="auto | cpu | cuda | mps")
    ap.add_argument("--out", default="runs", help="folder of runs")
    ap.add_argument("--name", help="run name (default: built from the options given)")
    ap.add_argument("--resume", action="store_true", help="continue runs/<name>; may extend --steps")
    ap.add_argument("--stop-after-grok", type=int, metavar="N", help="stop N steps after test loss <= 0.01")
    args = ap.parse_args(argv)
    given = {f.name: getattr(args, f.name) for f in fields(Config) if getattr(args, f.name) is not None}
    cfg = Config.from_dict({**PRESETS[args.preset], **given})
    return cfg, args, given


def run_name(cfg, preset, given):
    """Readable and unique: preset, model, the options given explicitly, the seed."""
    parts = [] if preset == "singh" else [preset]
    parts.append(f"ln-{cfg.ln}" if cfg.model == "transformer" else f"mlp-{cfg.embed}")
    for k, v in given.items():
        if k not in ("ln", "embed", "seed", "model"):
            v = "-".join(map(str, v)) if isinstance(v, (tuple, list)) else v
            parts.append(f"{k.replace('_', '-')}-{v}")
    return "_".join(parts + [f"s{cfg.seed}"])


def check_task(cfg):
    p = cfg.p
    if cfg.op not in OPS:
        raise Stop(f"unknown --op {cfg.op!r}; choose from {', '.join(OPS)}")
    if p < 2:
        raise Stop(f"--p {p} must be at least 2")
    if cfg.op == "div" and any(p % q == 0 for q in range(2, int(p ** 0.5) + 1)):
        raise Stop(f"--op div needs a prime --p (b has no inverse mod {p})")
    if not 0 < cfg.frac < 1:
        raise Stop(f"--frac {cfg.frac} must be in (0, 1)")
    if cfg.split not in ("random", "balanced", "square", "strip"):
        raise Stop(f"unknown --split {cfg.split!r}; choose from random, balanced, square, strip")
    if cfg.split in ("square", "strip") and not 0 <= cfg.hole < p - 1:
        raise Stop(f"--hole {cfg.hole} must be in [0, {p - 2}] for p={p}: the hole may not cover every a")
    if cfg.split not in ("square", "strip") and cfg.hole:
        raise Stop("--hole needs --split square or strip")
    for k in ("steps", "eval_every", "ckpt_every"):
        if getattr(cfg, k) < 1:
            raise Stop(f"--{k.replace('_', '-')} must be positive")
    if cfg.lr <= 0 or cfg.wd < 0 or cfg.alpha <= 0:
        raise Stop("--lr and --alpha must be positive, --wd non-negative")
    if cfg.emb_lr_ratio != "auto":
        try:
            assert float(cfg.emb_lr_ratio) > 0
        except (ValueError, AssertionError):
            raise Stop(f"--emb-lr-ratio {cfg.emb_lr_ratio!r} must be a positive number or 'auto'")


def all_pairs(cfg):
    """Every pair [a, b, '='] (row a*p + b), its label, and whether it exists (div: b != 0)."""
    p = cfg.p
    a, b = (t.flatten() for t in torch.meshgrid(torch.arange(p), torch.arange(p), indexing="ij"))
    valid = b != 0 if cfg.op == "div" else torch.ones(p * p, dtype=torch.bool)
    y = torch.zeros(p * p, dtype=torch.long)
    y[valid] = OPS[cfg.op](a[valid], b[valid], p)
    return torch.stack([a, b, torch.full_like(a, p)], 1), y, valid


def train_mask(cfg, valid):
    """Which pairs are trained on: a seeded split of the valid pairs."""
    p = cfg.p
    a, b = torch.arange(p * p) // p, torch.arange(p * p) % p
    n_train = int(cfg.frac * int(valid.sum()))
    g = torch.Generator().manual_seed(cfg.seed if cfg.data_seed is None else cfg.data_seed)
    if cfg.split == "balanced":
        # Frequency-aware sampling (AlQuabeh et al.): pairs (a, pi(a + s)) for a random relabelling
        # pi and distinct shifts s. Each shift is a perfect matching, so whole shifts give every
        # operand the same count at both positions and the last, partial one adds at most 1.
        pi, shifts, order = torch.randperm(p, generator=g), torch.randperm(p, generator=g), torch.randperm(p, generator=g)
        cand = torch.cat([order * p + pi[(order + s) % p] for s in shifts])
        cand = cand[valid[cand]]
    else:
        hole = torch.zeros(p * p, dtype=torch.bool)
        if cfg.split == "square":
            hole = (a <= cfg.hole) & (b <= cfg.hole)
        elif cfg.split == "strip":
            hole = a <= cfg.hole
        cand = torch.nonzero(valid & ~hole).flatten()
        cand = cand[torch.randperm(len(cand), generator=g)]
    train = torch.zeros(p * p, dtype=torch.bool)
    train[cand[:n_train]] = True
    return train


def make_data(cfg):
    """(x_train, y_train, x_test, y_test); x rows are [a, b, '=']."""
    x, y, valid = all_pairs(cfg)
    train = train_mask(cfg, valid)
    test = valid & ~train
    return x[train], y[train], x[test], y[test]


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
    # Cross-entropy in float64: float32 softmax underflow causes loss spikes (Nanda et al.).
    return F.cross_entropy(logits.double(), y)


def accuracy(logits, y):
    return (logits.argmax(-1) == y).double().mean().item()


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


def lr_at(cfg, step):
    lr = cfg.lr / (cfg.alpha ** 2 if cfg.alpha_lr else 1)
    return lr * (min(step / cfg.warmup, 1.0) if cfg.warmup else 1.0)  # Nanda: step 0 has lr 0


def make_optimizer(model, cfg):
    wd = cfg.wd * (1e-3 / cfg.lr if cfg.fix_wd else 1.0)
    emb = [p for n, p in model.named_parameters() if n == "embed.weight"]
    rest = [p for n, p in model.named_parameters() if n != "embed.weight"]
    groups = [dict(params=rest, emb=False)] + ([dict(params=emb, emb=True)] if emb else [])
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=cfg.betas, eps=cfg.eps, weight_decay=wd)


def pick_device(name):
    if name == "auto":
        if torch.cuda.is_available():
            return "cuda"
        return "mps" if torch.backends.mps.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available() or name == "mps" and not torch.backends.mps.is_available():
        raise Stop(f"--device {name} is not available on this machine")
    if name not in ("cpu", "cuda", "mps"):
        raise Stop(f"unknown --device {name!r}; choose from auto, cpu, cuda, mps")
    return name


def first_below(steps, values, thr=GROK):
    hit = np.nonzero(np.asarray(values) <= thr)[0]
    return int(np.asarray(steps)[hit[0]]) if len(hit) else None


def train(cfg, run_dir, device="cpu", resume=False, stop_after_grok=None, log=print):
    """The one training loop. Returns the metrics dict (lists)."""
    check_task(cfg)
    x_tr, y_tr, x_te, y_te = (t.to(device) for t in make_data(cfg))
    if len(x_tr) == 0 or len(x_te) == 0:
        raise Stop(f"empty {'train' if len(x_tr) == 0 else 'test'} set for this --frac/--split/--hole")
    try:
        model = build_model(cfg).to(device)
    except ValueError as e:
        raise Stop(str(e))
    opt = make_optimizer(model, cfg)
    keys = ["step", "train_loss", "train_acc", "test_loss", "test_acc", "weight_norm",
            "update_norm", "lr", "emb_lr_ratio"]
    metrics, start = {k: [] for k in keys}, 0
    os.makedirs(os.path.join(run_dir, "ckpt"), exist_ok=True)
    if resume:
        ck = load_checkpoint(os.path.join(run_dir, "resume.pt"))
        old = Config.from_dict(ck["config"])
        diff = [f.name for f in fields(Config) if f.name != "steps" and getattr(old, f.name) != getattr(cfg, f.name)]
        if diff:
            raise Stop(f"--resume: {run_dir} was trained with a different config ({', '.join(diff)})")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        start = ck["step"]
        old_m = np.load(os.path.join(run_dir, "metrics.npz"))
        keep = old_m["step"] < start  # rows from `start` on are recomputed, as uninterrupted
        metrics = {k: list(old_m[k][keep]) for k in keys}
        log(f"resuming {run_dir} at step {start}")
    save_atomic(cfg.to_dict(), os.path.join(run_dir, "config.json"))
    ratio = emb_lr_ratio(model, cfg, x_tr)

    def save(step, resumable=True):
        ck = dict(step=step, config=cfg.to_dict(), model=model.state_dict())
        save_atomic(ck, os.path.join(run_dir, "ckpt", f"step_{step:06d}.pt"))
        if resumable:
            save_atomic(dict(ck, optim=opt.state_dict()), os.path.join(run_dir, "resume.pt"))
        save_atomic({k: np.array(v) for k, v in metrics.items()}, os.path.join(run_dir, "metrics.npz"))

    interrupted = []
    old_handler = signal.signal(signal.SIGINT, lambda *_: interrupted.append(1))  # stop between steps
    t0, last_print, grok_step, end = time.time(), 0.0, None, cfg.steps
    try:
        for step in range(start, cfg.steps + 1):
            if interrupted:
                save(step)
                log(f"interrupted at step {step}: saved; continue with --resume")
                break
            lr = lr_at(cfg, step)
            evaluate = step % cfg.eval_every == 0 or step % cfg.ckpt_every == 0 or step == end
            if evaluate and cfg.emb_lr_ratio == "auto":
                ratio = emb_lr_ratio(model, cfg, x_tr)
            for g in opt.param_groups:
                g["lr"] = lr * ratio if g["emb"] else lr
            logits = model(x_tr)
            loss = loss_fn(logits, y_tr)
            if evaluate:
                if not math.isfinite(loss.item()):
                    save_atomic({k: np.array(v) for k, v in metrics.items()}, os.path.join(run_dir, "metrics.npz"))
                    log(f"error: train loss is {loss.item()} at step {step}; stopped. The last good "
                        f"checkpoint is kept: change --lr or --dtype and start again")
                    break
                with torch.no_grad():
                    test_logits = model(x_te)
                    before = [p.detach().clone() for p in model.parameters()]
                row = dict(step=step, train_loss=loss.item(), train_acc=accuracy(logits, y_tr),
                           test_loss=loss_fn(test_logits, y_te).item(), test_acc=accuracy(test_logits, y_te),
                           weight_norm=sum(float((p.double() ** 2).sum()) for p in before),
                           update_norm=float("nan"), lr=lr, emb_lr_ratio=ratio)
                for k in keys:
                    metrics[k].append(row[k])
                if grok_step is None and row["test_loss"] <= GROK:
                    grok_step = step
                    if stop_after_grok is not None:
                        end = min(end, step + stop_after_grok)
                if step == end:
                    save(step)
                    break
                if step % cfg.ckpt_every == 0:
                    save(step)  # before the update: the checkpoint holds theta_step
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if evaluate:
                with torch.no_grad():  # ||theta_{t+1} - theta_t|| of this step
                    metrics["update_norm"][-1] = math.sqrt(sum(float(((p - q).double() ** 2).sum()) for p, q in zip(model.parameters(), before)))
                now = time.time()
                if now - last_print > 5:
                    last_print = now
                    done = step + 1 - start
                    ms = 1000 * (now - t0) / done
                    log(f"step {step:6d}/{end} | train {row['train_loss']:.2e} acc {row['train_acc']:.3f} | "
                        f"test {row['test_loss']:.2e} acc {row['test_acc']:.3f} | {ms:.1f} ms/step | "
                        f"{(end - step) * ms / 1000:.0f}s left")
    finally:
        signal.signal(signal.SIGINT, old_handler)
    tr, te = first_below(metrics["step"], metrics["train_loss"]), first_below(metrics["step"], metrics["test_loss"])
    log(f"done in {time.time() - t0:.1f}s | train loss <= {GROK} at step {tr if tr is not None else 'not reached'} | "
        f"test loss <= {GROK} at step {te if te is not None else 'not reached'}")
    return metrics


def main(argv=None):
    cfg, args, given = parse_args(argv)
    try:
        device = pick_device(args.device)
        name = args.name or run_name(cfg, args.preset, given)
        run_dir = os.path.join(args.out, name)
        if not args.resume and os.path.exists(os.path.join(run_dir, "resume.pt")):
            raise Stop(f"{run_dir} exists: add --resume to continue it, or pick another --name")
        print(f"run {run_dir} on {device}")
        train(cfg, run_dir, device, args.resume, args.stop_after_grok)
    except Stop as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main()
