"""
Nanda et al.'s numbers re-derived from their released runs, the source of NANDA_RELEASED in
experiments/nanda.py. Their repository keeps loss curves (one entry an epoch) and final weights:

    git clone https://github.com/mechanistic-interpretability-grokking/progress-measures-paper
    python experiments/nanda_released.py progress-measures-paper/saved_runs

Prints, per run of their training-fraction sweep, the first epoch with test loss <= 0.01; the
same for their wd 0.1 and wd 0.01 runs (the copy this project read lacks the latter's data); and
for their run without weight decay (mod_addition_no_wd.pth, which stores no fraction) the same,
and the largest test set its final weights allow: every test pair's loss is at least 0, so n_test
* (their mean test loss) <= the loss summed over all pairs, which our nanda model computes from
their weights (float64).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from data import all_pairs  # noqa: E402
from fourier import ce  # noqa: E402
from config import PRESETS, Config  # noqa: E402
from model import build_model  # noqa: E402
from runfiles import Stop, first_below, message, printable  # noqa: E402


def first_epoch(losses, level=0.01):
    """First index of a curve at or below level, None: never."""
    return first_below(np.arange(len(losses)), losses, level)


def largest_test_set(total, test_mean):
    """The most test pairs whose mean loss can be test_mean when all pairs sum to total."""
    return int(total // test_mean)


def their_weights(state):
    """Their transformers.py state dict in our model's parameter names (nanda preset)."""
    heads = lambda w: w.reshape(-1, w.shape[-1])  # (heads, d_head, d) -> (heads * d_head, d)
    return {"embed.weight": state["embed.W_E"].T, "pos": state["pos_embed.W_pos"],
            "blocks.0.attn.in_proj_weight": torch.cat([heads(state[f"blocks.0.attn.W_{x}"])
                                                       for x in "QKV"]),
            "blocks.0.attn.out_proj.weight": state["blocks.0.attn.W_O"],
            "blocks.0.fc1.weight": state["blocks.0.mlp.W_in"],
            "blocks.0.fc1.bias": state["blocks.0.mlp.b_in"],
            "blocks.0.fc2.weight": state["blocks.0.mlp.W_out"],
            "blocks.0.fc2.bias": state["blocks.0.mlp.b_out"], "unembed": state["unembed.W_U"]}


def loss_sum(state):
    """Their final weights' cross-entropy summed over all p^2 pairs (float64)."""
    cfg = Config(**PRESETS["nanda"])
    model = build_model(cfg).double()
    model.load_state_dict({k: v.double() for k, v in their_weights(state).items()})
    x, y, _ = all_pairs(cfg)
    with torch.no_grad():
        return ce(model(x), y) * len(y)


def load(folder, name):
    """One of their .pth files, read without running any code from it (weights_only: their
    lists, dicts, tensors and numbers load so)."""
    path = os.path.join(folder, name)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise Stop(f"missing {printable(path)}") from None
    except Exception as e:  # cut short, not a zip, or a pickle of something else
        raise Stop(f"{printable(path)} is not one of their saved runs ({message(e)})") from None


def main(folder):
    fracs, curves = load(folder, "mod_addition_frac_train_sweep.pth")
    for i, f in enumerate(fracs):
        print(f"frac {f}: test loss <= 0.01 at epoch {first_epoch(curves[2 * i + 1])} "
              f"(of {len(curves[2 * i + 1])})")
    for name in ("wd_10-1_mod_addition_loss_curve.pth", "wd_10-2_mod_addition_loss_curve.pth"):
        path = os.path.join(folder, name)
        if not os.path.isfile(path) or not os.path.getsize(path):  # a copy without its data
            print(f"{name}: no data in {folder}")
            continue
        # test loss every few epochs: as many as train losses per test loss
        run = load(folder, name)
        every = round(len(run["train_losses"]) / len(run["test_losses"]))
        step = first_epoch(run["test_losses"])
        print(f"{name} (optimizer wd {run['optimizer']['param_groups'][0]['weight_decay']}): "
              f"test loss <= 0.01 at epoch {None if step is None else every * step}")
    run = load(folder, "mod_addition_no_wd.pth")
    test = run["test_losses"]
    bound = largest_test_set(loss_sum(run["model"]), run["test_loss"].item())
    print(f"no wd (optimizer wd {run['optimizer']['param_groups'][0]['weight_decay']}): test "
          f"loss <= 0.01 at epoch {first_epoch(test)} of {len(test)}; its final weights allow "
          f"at most {bound} test pairs of 12769 (frac >= {1 - bound / 12769:.3f})")


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: python experiments/nanda_released.py progress-measures-paper/saved_runs")
    try:
        main(sys.argv[1])
    except Stop as e:
        sys.exit(f"error: {e}")
