"""
Singh et al.'s step numbers re-derived from their released curves, the source of SINGH and
SINGH_LN in singh_numbers.py. Their notebooks' CSVs (W&B exports) hold per configuration the
5-seed mean test loss at every step and its minimum and maximum over the seeds (__MIN, __MAX).

    git clone https://github.com/jaisidhsingh/layernorm-grok
    git -C layernorm-grok checkout 7ea0e10
    python experiments/singh_released.py layernorm-grok/notebooks

Prints, per curve, the first step at which the seed-mean is <= 0.01 (the paper's statistic),
the minimum's (the first seed there) and the maximum's (all five there at once), 0: not in 10k;
and the share of the seed-mean's later steps at which it is still <= 0.01 (slingshots lift it).
Then the medians of their seed-mean update-norm curves over four windows of steps (Fig. 4b, 5b/d).
"""
import csv
import os
import sys

import numpy as np

FILES = {  # file under notebooks/: what it sweeps (their scripts/)
    "data/trf-1l_lecun_test_loss.csv": "LN placements",
    "check_data/attn_types.csv": "LN placements, value and query-key",
    "data/lr_test_loss.csv": "lr, lr * wd fixed",
    "data/weight_decay_test_loss.csv": "wd",
    "data/lazy_test_loss.csv": "alpha, lr fixed",
    "data/lazy_wrong_test_loss.csv": "alpha, lr / alpha^2",
    "data/eps_0_test_loss.csv": "eps 0 + Kaiming: alpha, lr fixed",
    "data/wrong_eps_0_test_loss.csv": "eps 0 + Kaiming: alpha, lr / alpha^2",
}
UPDATES = {"data/lr_update_norm.csv": "lr, lr * wd fixed",
           "data/lazy_update_norm.csv": "alpha, lr fixed",
           "data/lazy_wrong_update_norm.csv": "alpha, lr / alpha^2"}
WINDOWS = ((0, 1000), (1000, 2000), (3000, 4000), (9000, 10000))


def read(path):
    """A released CSV: its header and its rows as floats (NaN where empty)."""
    with open(path) as f:
        head, *rows = list(csv.reader(f))
    return head, np.array([[float(x) if x else np.nan for x in r] for r in rows])


def first_steps(path, level=0.01):
    """{curve name: (seed-mean step, first seed's, all five's, the seed-mean's share of steps
    <= level from its first one on)} of one released CSV."""
    head, a = read(path)
    first = lambda j: int(a[np.argmax(a[:, j] <= level), 0]) if (a[:, j] <= level).any() else 0
    share = lambda j: np.mean(a[np.argmax(a[:, j] <= level):, j] <= level) if first(j) else 0.0
    return {h.split(" - ")[0]: (first(j), first(head.index(h + "__MIN")),
                                first(head.index(h + "__MAX")), share(j))
            for j, h in enumerate(head) if h.endswith("test/loss")}


def update_medians(path):
    """{curve name: the seed-mean update norm's median in each of WINDOWS} of one released CSV."""
    head, a = read(path)
    return {h.split(" - ")[0]: [np.nanmedian(a[(a[:, 0] >= lo) & (a[:, 0] < hi), j])
                                for lo, hi in WINDOWS]
            for j, h in enumerate(head) if h.endswith("update_norm")}


def main(argv):
    if len(argv) != 1 or argv[0].startswith("-"):
        return print(__doc__.strip())
    missing = [f for f in {**FILES, **UPDATES} if not os.path.exists(os.path.join(argv[0], f))]
    if missing:
        sys.exit(f"singh_released.py: {argv[0]}/{missing[0]} not found (check out 7ea0e10)")
    print("| sweep | curve | seed-mean <= 0.01 at | first seed / all five at once | "
          "seed-mean <= 0.01 after, share of steps |\n|---|---|---|---|---|")
    for name, sweep in FILES.items():
        for curve, (mean, lo, hi, share) in first_steps(os.path.join(argv[0], name)).items():
            print(f"| {sweep} | {curve} | {mean} | {lo} / {hi} | {share:.3f} |")
    print("\n| sweep | curve | median update norm over steps "
          + " / ".join(f"{lo}-{hi - 1}" for lo, hi in WINDOWS) + " |\n|---|---|---|")
    for name, sweep in UPDATES.items():
        for curve, med in update_medians(os.path.join(argv[0], name)).items():
            print(f"| {sweep} | {curve} | " + " / ".join(f"{m:.2g}" for m in med) + " |")


if __name__ == "__main__":
    main(sys.argv[1:])
