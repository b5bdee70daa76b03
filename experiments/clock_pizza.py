"""
Clock or Pizza by LN placement: Zhong et al.'s distance irrelevance and gradient symmetricity
(measures.py) of the runs of experiments/clock_pizza.sh, per placement over its seeds, at
generalization (test loss <= 0.01, linear between checkpoints) and at the last checkpoint;
beside them Zhong et al.'s two saved models as anchors.

    python experiments/clock_pizza.py                      # runs/clock_pizza
    python experiments/clock_pizza.py runs/ln_placements   # any folder of such runs

model_a_values() measures Zhong et al.'s saved model A (reproduction/sources/pizza_model_a.npz)
with this project's measures, to set beside the numbers their notebook prints.

Beside them the entropy of the head-averaged attention weights at the last checkpoint (Singh et
al.'s, over the three query positions): ln 3 = 1.099 when every position attends to a, b and '='
alike, as in Zhong et al.'s attention rate 0, which gave Pizzas.

A seed counts as Pizza-like when its (distance irrelevance, gradient symmetricity) lies nearer
to their model A (a Pizza) than to their model B (a Clock). The Mann-Whitney test compares a
placement's gradient symmetricity at the last checkpoint with No LN's.
"""
import functools
import os
import random
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import analyze as A  # noqa: E402
import measures as M  # noqa: E402
import summary as S  # noqa: E402
from runfiles import KEYS, Stop, first_below, load_metrics, load_npz, printable  # noqa: E402
from singh_numbers import SINGH_LN  # noqa: E402
from stats import mann_whitney  # noqa: E402

MEASURED = ("distance_irrelevance", "gradient_symmetricity")
ATTENTION = "attn_entropy"  # measures.py: of the head-averaged weights, in nats
# their saved model A (fjzzq2002/pizza 4c7f2f3, code/save/model_p99zdpze5l.pt, MIT licence; p 59,
# attention rate 0): the weights its forward reads, in float32 as theirs; and what their
# code/eval-main.ipynb prints for it: distance irrelevance (the correct logit over every pair),
# gradient symmetricity (100 triples (a, b, c), random.Random(42).shuffle over all p^3)
MODEL_A = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reproduction",
                       "sources", "pizza_model_a.npz")
MODEL_A_P = 59
MODEL_A_PRINTED = {"distance irrelevance": 0.17173645661473538,
                   "gradient symmetricity": 0.9936651682853699}
MODEL_A_TRIPLES = 100   # their notebook's triples for gradient symmetricity
MODEL_A_SHUFFLE = 42    # the seed of their random.Random shuffle of the triples
# Zhong et al.'s saved models (fjzzq2002/pizza, code/save/), (distance irrelevance, gradient
# symmetricity) to 3 decimals: model A (attention rate 0) as their notebook prints it, and as
# this project's measures give it (test_measures); model B (rate 1) measured by this project's
# measures on their saved weights
ZHONG = {"their model A (Pizza, attention rate 0)":
         tuple(round(v, 3) for v in MODEL_A_PRINTED.values()),
         "their model B (Clock, attention rate 1)": (0.848, 0.334)}


class ZhongModel(torch.nn.Module):
    """Zhong et al.'s one-layer transformer (their eval-main.ipynb) at attention rate 0, where
    every attention weight is 1 (softmax x 0 + 1): tokens [a, b] -> logits over c at b."""
    SHAPES = {"embed.W_E": (128, MODEL_A_P), "pos_embed.W_pos": (2, 128),  # of model A's weights
              "blocks.0.attn.W_V": (4, 32, 128), "blocks.0.attn.W_O": (128, 128),
              "blocks.0.mlp.W_in": (512, 128), "blocks.0.mlp.b_in": (512,),
              "blocks.0.mlp.W_out": (128, 512), "blocks.0.mlp.b_out": (128,),
              "unembed.W_U": (128, MODEL_A_P)}
    NAMES = dict(embed="embed.W_E")  # as model.py's models: embedding_gradients hooks its module

    def __init__(self, w):
        super().__init__()
        self.w = {k: torch.from_numpy(v) for k, v in w.items()}
        self.embed = self.Embed(self.w["embed.W_E"])  # a module: embedding_gradients hooks it

    class Embed(torch.nn.Module):  # theirs: W_E (d, p)[:, x] -> (N, 2, d)
        def __init__(self, W_E):
            super().__init__()
            self.W_E = W_E

        def forward(self, x):
            return self.W_E[:, x].permute(1, 2, 0)

    def forward(self, x):
        w = self.w
        h = self.embed(x) + w["pos_embed.W_pos"]                            # (N, 2, d)
        v = torch.einsum("ihd,bpd->biph", w["blocks.0.attn.W_V"], h)        # (N, H, 2, dh)
        z = v.sum(2, keepdim=True).expand(-1, -1, 2, -1)                    # every weight 1
        h = h + z.transpose(1, 2).flatten(2) @ w["blocks.0.attn.W_O"].T
        hidden = torch.relu(h @ w["blocks.0.mlp.W_in"].T + w["blocks.0.mlp.b_in"])
        h = h + hidden @ w["blocks.0.mlp.W_out"].T + w["blocks.0.mlp.b_out"]
        return (h @ w["unembed.W_U"])[:, -1]                                # (N, p)


@functools.cache  # the table and both verdict rows read one computation (~2 s)
def model_a_values():
    """{measure: value} of their model A (MODEL_A) by measures.py's distance irrelevance and
    gradient symmetricity, on the pairs and triples their notebook uses."""
    p, w = MODEL_A_P, load_npz(MODEL_A)
    bad = [k for k, shape in ZhongModel.SHAPES.items() if k not in w or w[k].shape != shape
           or w[k].dtype != np.float32]
    if bad:
        raise Stop(f"{printable(MODEL_A)} is not their model A: {', '.join(bad)} missing or not "
                   "of its shape or float32")
    model = ZhongModel(w)
    x = torch.tensor([[a, b] for a in range(p) for b in range(p)])
    y = (x[:, 0] + x[:, 1]) % p
    with torch.no_grad():
        correct = model(x)[torch.arange(p * p), y]
    triples = [(a, b, c) for a in range(p) for b in range(p) for c in range(p)]
    random.Random(MODEL_A_SHUFFLE).shuffle(triples)
    t = torch.tensor(triples[:MODEL_A_TRIPLES])
    grads = M.embedding_gradients(model, t[:, :2], t[:, 2])
    return {"distance irrelevance": M.distance_irrelevance(correct, p),
            "gradient symmetricity": M.gradient_symmetricity(grads[:, 0], grads[:, 1])}


def model_a_table():
    """Header and rows: each measure of model A, ours beside their notebook's."""
    ours = model_a_values()
    rows = [[k, f"{ours[k]:.8f}", f"{v:.8f}", f"{abs(ours[k] - v) / v:.1e}"]
            for k, v in MODEL_A_PRINTED.items()]
    return ["their model A (p 59, attention rate 0)", "this project's measures",
            "their notebook prints", "relative difference"], rows


def seed_values(run):
    """(config, {measure: (at generalization or None, at the last checkpoint)}) of one run."""
    r = A.analysis_of(run, llc=False)  # an analysis with the LLC serves too
    missing = [k for k in ("step",) + MEASURED + (ATTENTION,) if k not in r]
    if missing:  # a copy's, of an older analyze.py
        raise Stop(f"incomplete {printable(os.path.join(run, 'analysis.npz'))}: no "
                   f"{', '.join(missing)}")
    m = load_metrics(os.path.join(run, "metrics.npz"), KEYS)
    grok = first_below(m["step"], m["test_loss"])
    values = {k: (None if grok is None else S.at(r, k, grok), float(r[k][-1]))
              for k in MEASURED + (ATTENTION,)}
    return A.run_config(run), values


def pizza_like(di, gs):
    """Whether (di, gs) lies nearer to model A than to model B."""
    (a, b) = ZHONG.values()
    return np.hypot(di - a[0], gs - a[1]) < np.hypot(di - b[0], gs - b[1])


def table(root):
    """The table's header and rows, one per placement in Singh et al.'s order."""
    runs = A.find_runs(root)
    if not runs:
        raise Stop(f"no runs in {root}: make them with bash experiments/clock_pizza.sh")
    by_ln = {}
    for run in runs:
        cfg, values = seed_values(run)
        by_ln.setdefault(cfg.ln, []).append((cfg.seed, values))
    gs_last = lambda ln: [v["gradient_symmetricity"][1] for _, v in by_ln[ln]]
    rows = []
    for ln in sorted(by_ln, key=lambda ln: list(SINGH_LN).index(ln) if ln in SINGH_LN else 99):
        seeds = sorted(by_ln[ln], key=lambda sv: sv[0])
        cells = [S.fmt([v[k][i] for _, v in seeds], 3) for i in (0, 1) for k in MEASURED]
        cells.append(S.fmt([v[ATTENTION][1] for _, v in seeds], 3))
        pizza = sum(pizza_like(*(v[k][1] for k in MEASURED)) for _, v in seeds)
        test = "-" if ln == "off" or "off" not in by_ln else \
            "U {:g} / p {:.3f}".format(*mann_whitney(gs_last(ln), gs_last("off")))
        rows.append([f"{ln} ({SINGH_LN.get(ln, ('not in the paper',))[0]})",
                     " ".join(str(s) for s, _ in seeds)] + cells + [f"{pizza}/{len(seeds)}", test])
    for name, (di, gs) in ZHONG.items():
        rows.append([name, "-", "-", "-", f"{di:.3f}", f"{gs:.3f}", "-", "-", "-"])
    header = ["placement", "seeds", "distance irrelevance at generalization",
              "gradient symmetricity at generalization", "distance irrelevance, last",
              "gradient symmetricity, last", "attention entropy, last (uniform: 1.099)",
              "Pizza-like seeds (last)",
              "gradient symmetricity vs No LN: Mann-Whitney U / p"]
    return header, rows


def main(argv):
    root = argv[0] if argv else "runs/clock_pizza"
    try:
        print(S.markdown(*table(root)))
    except Stop as e:
        sys.exit(f"error: {e}")


if __name__ == "__main__":
    main(sys.argv[1:])
