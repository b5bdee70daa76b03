"""
Our LLC estimate against devinterp's own SGLD optimizer on the same checkpoints: devinterp's
estimate_learning_coeff_with_summary (its SGLD, its mini-batch loader, its LLCEstimator) on
model.py's float32 forward, at the registry's settings (measures.LLC_*: n beta = n / log n over
the n training pairs, epsilon, gamma, chains, burn-in, draws, batch), and ours (measures.run_llc:
the chains stacked, on the table forward) at the same settings. The two draw different noise
and batches (devinterp's torch.manual_seed per chain and a shuffled DataLoader that cycles
through epochs; ours a generator per chain and a fresh batch each step), so they agree within
the chains' spread, not bit for bit. Both start from the full-batch train loss at w* (passed to
devinterp as init_loss; its default averages a few batches). With devinterp's diagnostics: the
loss trace settling after the burn-in (mean drawn loss over the burn-in, the first half and the
second half of the draws), no chain negative, and the estimate at half and twice epsilon and
gamma (--factors).

devinterp is not a dependency of this project: `pip install devinterp==1.3.2` (its later 2.x
needs transformers, datasets, zarr) for this script alone.

    python experiments/llc_devinterp.py runs/ln-pre_s0 --step 1000 2500
"""
import argparse
import os
import sys
import time
import warnings

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import summary as S  # noqa: E402
import measures as M  # noqa: E402
from llc_calibration import checkpoints_context  # noqa: E402
from runfiles import ArgumentParser, Stop  # noqa: E402


def devinterp_llc(model, x, y, eps, gamma, batch, loss_star, seed=0):
    """devinterp's estimate at model's weights: (per-chain llc, loss trace (chains, burn-in +
    draws)), its SGLD on its DataLoader (shuffled, batch `batch`), n beta = n / log n."""
    from devinterp.optim.sgld import SGLD
    from devinterp.slt.sampler import estimate_learning_coeff_with_summary
    from torch.utils.data import DataLoader, TensorDataset
    n = len(y)
    loader = DataLoader(TensorDataset(x, y), batch_size=batch or n, shuffle=True)

    def evaluate(model, data):
        return F.cross_entropy(model(data[0]), data[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = estimate_learning_coeff_with_summary(
            model, loader=loader, evaluate=evaluate, sampling_method=SGLD,
            optimizer_kwargs=dict(lr=eps, localization=gamma, nbeta=n / np.log(n)),
            num_chains=M.LLC_CHAINS, num_draws=M.LLC_DRAWS, num_burnin_steps=M.LLC_BURNIN,
            init_loss=loss_star, seed=seed, device="cpu", verbose=False, online=False)
    per_chain = np.array([out[f"llc-chain/{i}"] for i in range(M.LLC_CHAINS)])
    return per_chain, out


def main(argv=None):
    ap = ArgumentParser(description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="a run folder with checkpoints")
    ap.add_argument("--step", type=int, nargs="+", required=True, help="the checkpoints' steps")
    ap.add_argument("--factors", type=float, nargs="+", default=[0.5, 1.0, 2.0],
                    help="epsilon and gamma tried (one at a time), as multiples of LLC_*")
    args = ap.parse_args(argv)
    try:
        from importlib.metadata import version
        devinterp_version = version("devinterp")
    except Exception:
        sys.exit("error: devinterp is not installed: pip install devinterp==1.3.2")
    try:
        c, states = checkpoints_context(args.run, args.step)
    except Stop as e:
        sys.exit(f"error: {e}")
    x, y = c.x[c.train], c.y[c.train]
    n = len(y)
    torch.manual_seed(0)
    print(f"{args.run}: n {n}, n beta {n / np.log(n):.1f}; registry: epsilon {M.LLC_EPS:g}, "
          f"gamma {M.LLC_GAMMA:g}, batch {M.LLC_BATCH}, {M.LLC_CHAINS} chains, burn-in "
          f"{M.LLC_BURNIN}, {M.LLC_DRAWS} draws; devinterp {devinterp_version}")
    settings = [(1.0, 1.0)] + [(f, 1.0) for f in args.factors if f != 1] + \
        [(1.0, f) for f in args.factors if f != 1]
    rows = []
    for fe, fg in settings:
        eps, gamma = fe * M.LLC_EPS, fg * M.LLC_GAMMA
        t0 = time.time()
        ours, ours_drawn = M.run_llc(c, states, eps=eps, gamma=gamma)
        t_ours = time.time() - t0
        for step, sd, llc, drawn in zip(args.step, states, ours, ours_drawn):
            model = M.copy.deepcopy(c.model).float()
            model.load_state_dict(sd)
            with torch.no_grad():
                loss_star = float(F.cross_entropy(model(x), y))
            t0 = time.time()
            theirs, out = devinterp_llc(model, x, y, eps, gamma, M.LLC_BATCH, loss_star)
            t_theirs = time.time() - t0
            trace = out["loss/trace"]  # (chains, draws): the draws after the burn-in
            half = trace.shape[1] // 2

            def cell(v):
                return f"{v.mean():.3f} ({' / '.join(f'{u:.2f}' for u in v)})"
            rows.append([str(step), f"{loss_star:.3g}", f"{eps:g}", f"{gamma:g}", cell(llc),
                         cell(theirs), f"{drawn[:, :half].mean():.3g} / "
                         f"{drawn[:, half:].mean():.3g}",
                         f"{trace[:, :half].mean():.3g} / {trace[:, half:].mean():.3g}",
                         "yes" if (theirs < 0).any() or (llc < 0).any() else "no",
                         f"{t_ours / len(args.step):.1f} / {t_theirs:.1f}"])
            print(" | ".join(rows[-1]), flush=True)
    print(S.markdown(["step", "train loss at w*", "epsilon", "gamma", "ours: LLC (per chain)",
                      "devinterp: LLC (per chain)", "ours: mean drawn loss, 1st / 2nd half",
                      "devinterp: the same", "a chain negative", "s, ours / devinterp"],
                     rows))


if __name__ == "__main__":
    main()
