"""
The local learning coefficient's calibration on checkpoints of one run: measures.run_llc at the
registry's settings (measures.LLC_*), and at other step sizes epsilon (--eps-factors),
localisations gamma (--gamma-factors) and batch sizes (--batches, 0: full batch), each with its
chains run past the registry's length; the estimate by the number of draws kept after the
burn-in (a calibrated setting changes little with either), the mean drawn loss over the burn-in
and over the draws (devinterp's diagnostic: the trace settles after the burn-in), the largest
drawn loss, and the seconds one SGLD step of one chain takes. Every setting's chains at every
--step run as one stacked model, as analyze.py runs them.

    python experiments/llc_calibration.py runs/ln-pre_s0 --step 1000 2500

Each chain is the registry's own (chain i seeded i, a longer chain continues a shorter one), so
the row at LLC_DRAWS draws and factors 1 is the value analysis.npz holds at that step.
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


def checkpoints_context(run, steps):
    """The measures' context c of the run (at its first checkpoint of `steps`) and the weights
    of its checkpoints of `steps`, in order."""
    cfg = A.run_config(run)
    cks = A.run_checkpoints(run, cfg, log=print)
    by_step = {k["step"]: k for k in cks}
    missing = [s for s in steps if s not in by_step]
    if missing:
        raise Stop(f"{run} has no checkpoint of step {missing} (it has {sorted(by_step)})")
    model = build_model(cfg)
    c = M.run_context(cfg, model, cks[-1])
    M.load_checkpoint_into(c, model, by_step[steps[0]])
    return c, [by_step[s]["model"] for s in steps]


def estimates(drawn, loss_star, n, burnin, lengths):
    """Per chain, the LLC from the draws burnin .. burnin + k of each length k: (chains,
    lengths)."""
    nbeta = n / np.log(n)
    return np.array([[nbeta * (chain[burnin:burnin + k].mean() - loss_star) for k in lengths]
                     for chain in drawn])


def main(argv=None):
    ap = ArgumentParser(description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", help="a run folder with checkpoints")
    ap.add_argument("--step", type=int, nargs="+", required=True, help="the checkpoints' steps")
    ap.add_argument("--eps-factors", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0],
                    help="step sizes tried, as multiples of LLC_EPS")
    ap.add_argument("--gamma-factors", type=float, nargs="+", default=[1.0],
                    help="localisations tried, as multiples of LLC_GAMMA")
    ap.add_argument("--batches", type=int, nargs="+", default=[M.LLC_BATCH or 0],
                    help="mini-batch sizes tried (0: full batch)")
    ap.add_argument("--lengths", type=int, nargs="+", default=[25, 50, 100, 200],
                    help="draws kept after the burn-in")
    args = ap.parse_args(argv)
    try:
        c, states = checkpoints_context(args.run, args.step)
    except Stop as e:
        sys.exit(f"error: {e}")
    loss, _, n, _ = M.llc_problem(c, states)
    losses_star = loss(None).detach().double().numpy()[::M.LLC_CHAINS]
    print(f"{args.run}: n {n}, n beta {n / np.log(n):.1f}, {M.LLC_CHAINS} chains, burn-in "
          f"{M.LLC_BURNIN}; registry: epsilon {M.LLC_EPS:g}, gamma {M.LLC_GAMMA:g}, batch "
          f"{M.LLC_BATCH}; train loss at w*: "
          + ", ".join(f"step {s} {v:.3g}" for s, v in zip(args.step, losses_star)))
    rows = []
    for batch in args.batches:
        for fg in args.gamma_factors:
            for f in args.eps_factors:
                eps, gamma = f * M.LLC_EPS, fg * M.LLC_GAMMA
                t0 = time.time()
                _, drawn = M.run_llc(c, states, burnin=0, draws=M.LLC_BURNIN + max(args.lengths),
                                     eps=eps, gamma=gamma, batch=batch or None)
                per_step = (time.time() - t0) / (drawn.shape[0] * drawn.shape[1]
                                                  * drawn.shape[2])
                for step, d, loss_star in zip(args.step, drawn, losses_star):
                    llc = estimates(d, loss_star, n, M.LLC_BURNIN, args.lengths)
                    cells = [f"{m:.2f} ({' / '.join(f'{v:.2f}' for v in col)})"
                             for m, col in zip(llc.mean(0), llc.T)]
                    rows.append([str(step), batch and str(batch) or "full", f"{gamma:g}",
                                 f"{eps:g}"] + cells
                                + [f"{d[:, :M.LLC_BURNIN].mean():.3g}",
                                   f"{d[:, M.LLC_BURNIN:].mean():.3g}", f"{d.max():.3g}",
                                   f"{per_step:.4f}"])
    print(S.markdown(["step", "batch", "gamma", "epsilon"]
                     + [f"LLC, {k} draws (per chain)" for k in args.lengths]
                     + ["mean loss, burn-in", "mean loss, draws", "largest drawn loss",
                        "s per chain step"], rows))


if __name__ == "__main__":
    main()
