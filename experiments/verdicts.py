"""
The verdict table into the document, and what stands behind it:

    python experiments/claims.py verdicts        # the table, the rule, reproduction/verdicts.png
    python experiments/verdicts.py --write       # the same table into REPRODUCTION.md
    python experiments/verdicts.py --registry    # each claim's runs, statistic, like for like
    python experiments/verdicts.py --calibrate   # how often our intervals hold a 5-seed statistic

REPRODUCTION.md opens with this table (between its verdicts markers; test_verdicts.py fails when
the two differ). A claim reads copies only, never runs/: the table is what the repository holds.
The rule is experiments/rule.py's; the claims are the papers' modules' (claims.PAPERS).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import claims  # noqa: E402
import stats  # noqa: E402
from render import registry, report, write_doc  # noqa: E402
from rule import CALIBRATION, CALIBRATION_TRIALS, calibrate, evaluate  # noqa: E402
from runfiles import Stop, save_atomic  # noqa: E402
from runsets import load  # noqa: E402
from singh import placement  # noqa: E402


def cli(args, load, claims, no_ln, headlines=()):
    """python experiments/verdicts.py --write | --registry | --calibrate; claims: the registry's,
    no_ln: the runs --calibrate splits (No LN on their split, 25 seeds)."""
    if args == ["--write"]:  # the table into the document
        write_doc(report(evaluate(load, claims), headlines))
    elif args == ["--registry"]:
        print(registry(claims))
    elif args == ["--calibrate"]:  # the coverage the table labels its intervals with
        measured = calibrate(load, no_ln)
        for method, shares in measured.items():
            for n, share in shares.items():
                print(f"No LN on their split, {n} seeds of ours: the {stats.LEVEL:.0%} interval "
                      f"({method}) holds the held-out seeds' statistic in {share:.0%} of "
                      f"{CALIBRATION_TRIALS} splits")
        save_atomic(measured, CALIBRATION)
    else:
        sys.exit("usage: python experiments/verdicts.py --write | --registry | --calibrate\n"
                 "  --write: put the verdict table into REPRODUCTION.md\n"
                 "  --registry: each claim's runs, statistic and what is like for like\n"
                 "  --calibrate: how often an interval of n of our seeds holds the statistic "
                 "of others (into reproduction/calibration.json, which the table reads)")


if __name__ == "__main__":
    try:
        cli(sys.argv[1:], load, claims.CLAIMS, placement("off"), claims.HEADLINES)
    except Stop as e:  # a copy it cannot read or a file it cannot write: one line
        sys.exit(f"error: {e}")
