"""
The mini-batch table of REPRODUCTION.md (AlQuabeh et al.), from the run folders of
experiments/minibatch.sh: steps to generalize per configuration, how often a token is in a
step's batch (recounted from the sampler, which is a function of seed and step), and the top
Hessian eigenvalue of the embedding and first-layer blocks at step 2000 (every run has memorized
most of its training set and none has generalized there).

    python experiments/minibatch_table.py runs/minibatch
"""
import glob
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from analyze import run_config  # noqa: E402
from data import make_data, token_shares  # noqa: E402
from measures import hessian_top  # noqa: E402
from model import build_model, param_name  # noqa: E402
from runfiles import (Stop, first_below, load_checkpoint, load_metrics,  # noqa: E402
                      save_atomic)
from summary import first_at_or_above  # noqa: E402
import pack  # noqa: E402
from runsets import folder_arg  # noqa: E402


def top_eigenvalues(run, cfg, x, y, step=2000):
    """Top Hessian eigenvalue of the train loss in the embedding and first-layer blocks, computed
    from the step's checkpoint and kept in the run's hessian.json: a copy of the run without its
    checkpoints (reproduction/minibatch) reads them from there."""
    path = os.path.join(run, "ckpt", f"step_{step:06d}.pt")
    cache = os.path.join(run, "hessian.json")
    if not os.path.exists(path):
        kept = json.load(open(cache)) if os.path.exists(cache) else {}
        if kept.get("step") != step:
            raise Stop(f"{run}: no step-{step} checkpoint, and no hessian.json of that step")
        return kept["top"]
    model = build_model(cfg).double()
    model.load_state_dict(load_checkpoint(path)["model"])
    torch.manual_seed(0)
    roles = ["embed", "first"] if cfg.embed == "learned" else ["first"]
    blocks = [param_name(model, role) for role in roles]
    top = [hessian_top(model, x, y, model.get_parameter(b), iters=20)[0] for b in blocks]
    save_atomic(dict(step=step, blocks=blocks, top=top), cache)
    return top


def main(root):
    groups = {}
    for run in sorted(glob.glob(os.path.join(root, "*", "config.json"))):
        run = os.path.dirname(run)
        cfg = run_config(run)
        m = load_metrics(os.path.join(run, "metrics.npz"))
        x, y = make_data(cfg)[:2]
        eig = top_eigenvalues(run, cfg, x, y)
        groups.setdefault((cfg.batch_size, cfg.embed, cfg.emb_lr_ratio, cfg.sampling), []).append(
            dict(seed=cfg.seed, grok=first_below(m["step"], m["test_loss"]),
                 acc=first_at_or_above(m["step"], m["test_acc"], 0.9), end=int(m["step"][-1]),
                 final=float(m["test_acc"][-1]), fit=first_below(m["step"], m["train_loss"]),
                 present=token_shares(cfg, x).numpy(), eig=eig))
    fmt = lambda v: "never" if v is None else str(v)
    mean = lambda vs: (f"{np.mean(vs):.0f} +- {np.std(vs):.0f}" if vs else "never")
    print("| batch | input | emb lr ratio | batches | train loss <= 0.01 at, per seed | test loss "
          "<= 0.01 at, per seed (reached) | test acc >= 0.9 at | final test acc | share of "
          "steps with a token in the batch: mean / rarest token | top Hessian eigenvalue at "
          "step 2000: embedding / first layer (their ratio) |")
    print("|" + "---|" * 10)
    for (B, embed, ratio, sampling), rs in groups.items():
        rs.sort(key=lambda r: r["seed"])
        got = [r["grok"] for r in rs if r["grok"] is not None]
        eig = np.array([r["eig"] for r in rs])
        print(f"| {B} | {embed} | {ratio} | {sampling} | "
              f"{' / '.join(fmt(r['fit']) for r in rs)} | "
              f"{' / '.join(fmt(r['grok']) for r in rs)} ({len(got)}/{len(rs)}) | "
              f"{mean([r['acc'] for r in rs if r['acc'] is not None])} "
              f"({sum(r['acc'] is not None for r in rs)}/{len(rs)}) | "
              f"{' / '.join(format(r['final'], '.3f') for r in rs)} | "
              f"{np.mean([r['present'].mean() for r in rs]):.3f} / "
              f"{np.mean([r['present'].min() for r in rs]):.3f} | "
              + " / ".join(f"{v:.3g}" for v in eig.mean(0))
              + (f" ({np.mean(eig[:, 0] / eig[:, 1]):.2f})" if eig.shape[1] == 2 else "") + " |")


if __name__ == "__main__":
    try:
        with pack.opened(folder_arg(__doc__, "runs/minibatch")) as root:  # runs, or their pack
            main(root)
    except Stop as e:  # a run without its checkpoint or cached eigenvalues: one line
        sys.exit(f"error: {e}")
