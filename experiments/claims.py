"""
Every table of REPRODUCTION.md, printed from the run folders that made it (a reader re-derives it):

    python experiments/claims.py             # every section whose runs are here
    python experiments/claims.py coupling    # one section (names: --help)
    python experiments/claims.py coupling reproduction/seed_coupling    # from that folder
    python experiments/claims.py verdicts    # every claim's verdict (experiments/rule.py)
    python experiments/claims.py --paper singh   # one paper's verdict rows and sections

A section reads its runs/ folder or, where that has none, the repository's copy in reproduction/
(its Section's copy: a folder with the runs packed in runs.npz, see experiments/pack.py), else
says which command makes it. Sections of analysed runs analyse them first (analyze.py's cache:
only runs whose checkpoints or measures changed). Each paper's claims and sections live in its
module (PAPERS); this file only collects them.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import accelerators  # noqa: E402
import alquabeh  # noqa: E402
import beyond  # noqa: E402
import gu  # noqa: E402
import nanda  # noqa: E402
import pack  # noqa: E402
import singh  # noqa: E402
from render import Section, table, verdict_section  # noqa: E402
from rule import evaluate  # noqa: E402
from runfiles import Stop  # noqa: E402
from runsets import foreign, load  # noqa: E402

# --paper's names; the verdict table's order of papers is this order, each module's PAPERS
PAPERS = {"nanda": nanda, "singh": singh, "gu": gu, "alquabeh": alquabeh,
          "accelerators": accelerators, "beyond": beyond}
ORDER = [name for module in PAPERS.values() for name in module.PAPERS]
# in each paper the claims that no committed run tests (not addressed, with the reason) last;
# sorted is stable: otherwise each module's order
CLAIMS = sorted((c for module in PAPERS.values() for c in module.CLAIMS),
                key=lambda c: (ORDER.index(c.paper), not c.test.reads))
HEADLINES = [h for module in PAPERS.values() for h in module.HEADLINES]
SECTIONS = {name: s for module in PAPERS.values() for name, s in module.SECTIONS.items()}
SECTIONS["verdicts"] = Section("Verdicts, claim by claim", None,
                               "python experiments/claims.py verdicts",
                               lambda root: verdict_section(CLAIMS, HEADLINES))


def copy_root(copy):
    """A section's copy as it prints it: from the repository's root, where claims.py runs."""
    return os.path.join("reproduction", copy)


def paper_arg(argv):
    """(argv without --paper NAME, NAME or None)."""
    if "--paper" not in argv:
        return argv, None
    i = argv.index("--paper")
    if i + 1 == len(argv) or argv[i + 1] not in PAPERS:
        sys.exit(f"error: --paper takes one of {', '.join(PAPERS)}")
    return argv[:i] + argv[i + 2:], argv[i + 1]


def verdict_rows(paper):
    """Print the verdict rows of one paper's claims (the table's rows, the rule aside)."""
    claims = [c for c in CLAIMS if c.paper in PAPERS[paper].PAPERS]
    print(f"## Verdicts of {paper} ({', '.join(PAPERS[paper].PAPERS)})\n")
    print(table(evaluate(load, claims)))


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        return print(__doc__.strip() + "\n\npapers: " + ", ".join(PAPERS) + "\nsections: "
                     + ", ".join(SECTIONS))
    argv, paper = paper_arg(argv)
    flags = [a for a in argv if a.startswith("-")]
    if flags:  # no option but --help and --paper: a typo must not print the help and exit 0
        sys.exit(f"error: unknown option {flags[0]}; give section names (--help lists them)")
    if paper and argv:
        sys.exit("error: --paper takes no section names (it prints that paper's sections)")
    if paper:
        verdict_rows(paper)
        return show([[n, None] for n in PAPERS[paper].SECTIONS])
    asked = []  # [section, folder]: a word after a section's name that is not one is its folder
    for a in argv:
        if a in SECTIONS:
            asked.append([a, None])
        elif asked and asked[-1][1] is None:
            asked[-1][1] = a
        else:
            sys.exit(f"error: unknown section {a}; choose from {', '.join(SECTIONS)}")
    show(asked or [[n, None] for n in SECTIONS])


def note_foreign(root, copy):
    """Say so where root is not the section's copy and holds runs the copy's experiment does
    not make (the table is then of other runs)."""
    if copy is None or os.path.abspath(root) == os.path.abspath(copy_root(copy)):
        return
    others = foreign(root, copy_root(copy))
    if others:
        print(f"note: {len(others)} run{'s' * (len(others) > 1)} of {root} ({others[0]}"
              f"{', ...' * (len(others) > 1)}) match no run of reproduction/{copy} but in its "
              "seed: not this section's experiment as the repository holds it\n")


def show(asked):
    """Print each [section, folder or None] asked; exit 1 after them if any failed."""
    errors = []
    for n, folder in asked:
        heading, root, make, printer, copy = SECTIONS[n]
        if root is None:  # a section that reads the copies of several experiments itself
            print(f"## {heading}\n")
            if folder:
                errors.append(f"{n} reads the repository's copies, not a folder ({folder})")
                print(f"error: {errors[-1]}\n")
            else:
                printer(None)
            continue
        root = folder or (root if pack.has_runs(root) or copy is None else copy_root(copy))
        print(f"## {heading} ({root})\n")
        if pack.has_runs(root):
            try:
                note_foreign(root, copy)
                with pack.opened(root) as runs:
                    printer(runs)
            except Stop as e:  # a run it cannot read: say which, go on with the other sections
                errors.append(str(e))
                print(f"error: {e}\n")
        elif folder:
            errors.append(f"no runs in {folder}")
            print(f"error: no runs in {folder}\n")
        else:
            print(f"runs not committed; made by: {make}\n")
    if errors:
        sys.exit(f"error: {'; '.join(errors)}")


if __name__ == "__main__":
    main(sys.argv[1:])
