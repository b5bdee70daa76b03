"""
The local learning coefficient's calibration on one checkpoint: measures.sgld_llc at the
registry's settings (measures.LLC_*), and at other step sizes epsilon (--eps-factors), each with
its chains run past the registry's length; the estimate by the number of draws kept after the
burn-in (a calibrated setting changes little with either), and the seconds one SGLD step takes.

    python experiments/llc_calibration.py runs/ln-pre_s0 --step 2500

Each chain is the registry's own (chain i seeded i, a longer chain continues a shorter one), so
the row at LLC_DRAWS draws and factor 1 is the value analysis.npz holds at that step.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import analyze as A  # noqa: E402
import summary as S  # noqa: E402
import measures as M  # noqa: E402
from model import build_model  # noqa: E402
from runfiles import ArgumentParser, Stop  # noqa: E402


def checkpoint_context(run, step):
    """The measures' context c at the run's checkpoint of `step`."""
    cfg = A.run_config(run)
    cks = A.run_checkpoints(run, cfg, log=print)
    ck = next((k for k in cks if k["step"] == step), None)
    if ck is None:
        raise Stop(f"{run} has no checkpoint of step {step} (it has {[k['step'] for k in cks]})")
    model = build_model(cfg)
    c = M.run_context(cfg, model, cks[-1])
    M.load_checkpoint_into(c, model, ck)
    return c


def estimates(drawn, loss_star, n, burnin, lengths):
    """Per chain, the LLC from the draws burnin .. burnin + k of each length k:
    (chains, lengths)."""
    nbeta = n / np.log(n)
    return np.array([[nbeta * (chain[burnin:burnin + k].mean() - loss_star) for k in lengths]
                     for chain in drawn])


def main(argv=None):
    ap = ArgumentParser(description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="a run folder with checkpoints")
    ap.add_argument("--step", type=int, required=True, help="the checkpoint's step")
    ap.add_argument("--eps-factors", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0],
                    help="step sizes tried, as multiples of LLC_EPS")
    ap.add_argument("--lengths", type=int, nargs="+", default=[25, 50, 100, 200],
                    help="draws kept after the burn-in")
    args = ap.parse_args(argv)
    try:
        c = checkpoint_context(args.run, args.step)
    except Stop as e:
        sys.exit(f"error: {e}")
    loss, params, n = M.llc_problem(c)
    loss_star = float(loss().detach())
    print(f"{args.run}, step {args.step}: n {n}, n beta {n / np.log(n):.1f}, "
          f"gamma {M.LLC_GAMMA:g}, {M.LLC_CHAINS} chains, burn-in {M.LLC_BURNIN}; "
          f"train loss at w* {loss_star:.3g}")
    rows = []
    for f in args.eps_factors:
        eps = f * M.LLC_EPS
        t0 = time.time()
        _, _, drawn = M.sgld_llc(loss, params, n, burnin=0, draws=M.LLC_BURNIN + max(args.lengths),
                                 eps=eps)
        per_step = (time.time() - t0) / (M.LLC_CHAINS * drawn.shape[1])
        llc = estimates(drawn, loss_star, n, M.LLC_BURNIN, args.lengths)
        cells = [f"{m:.2f} ({' / '.join(f'{v:.2f}' for v in col)})"
                 for m, col in zip(llc.mean(0), llc.T)]
        rows.append([f"{eps:g}"] + cells + [f"{drawn.max():.3g}", f"{per_step:.3f}"])
    print(S.markdown(["epsilon"] + [f"LLC, {k} draws (per chain)" for k in args.lengths]
                     + ["largest drawn loss", "s per SGLD step"], rows))


if __name__ == "__main__":
    main()
