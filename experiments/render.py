"""
What the results layer prints: the verdict table and the registry of REPRODUCTION.md, the
forest plot, the document's verdicts block, and the per-seed tables several papers' sections
share. A section of claims.py is a Section: its heading, its runs, what makes them, its printer.
"""
import os
import sys
from typing import Callable, NamedTuple, Optional

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import plots  # noqa: E402
import summary as S  # noqa: E402
from rule import RULE, evaluate, interval_coverage  # noqa: E402
from runsets import HERE, REPRO, load  # noqa: E402
from stats import mann_whitney  # noqa: E402

FIGURE = os.path.join(REPRO, "verdicts.png")
DOC = os.path.join(HERE, "REPRODUCTION.md")
BEGIN, END = "<!-- verdicts:begin -->", "<!-- verdicts:end -->"


class Section(NamedTuple):
    """A section of REPRODUCTION.md as claims.py prints it: its heading, the runs/ folder it
    reads (None: it reads the copies it needs itself), the command that makes them, its printer
    (show(folder)), and the copy in reproduction/ it reads where that folder has no runs."""
    heading: str
    folder: Optional[str]
    make: str
    show: Callable
    copy: Optional[str] = None


# ---------------------------------------------------------------- the verdict table

def num(x):
    """A number as the table prints it: 'never' for np.inf, steps as integers."""
    if x is None or x == np.inf:
        return "never"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def ours(res):
    if res["kind"] == "none":
        return "-"
    if res["kind"] == "interval":
        notes = []
        if res["size"] != res["seeds"][0]:  # drawn at the paper's seed count, not ours
            notes.append("one seed's spread" if res["size"] == 1 else
                         f"{res['size']}-seed draws")
        cov = interval_coverage(res)
        if res["method"] == "exact":
            notes.append("an exact computation")
        else:
            notes.append("coverage not measured" if cov is None else f"{cov:.0%} coverage")
        return f"{num(res['ours'])} [{num(res['lo'])}, {num(res['hi'])}] ({', '.join(notes)})"
    rho = f"rho {res['rho']:.2f}, " if "rho" in res else ""
    if res["p_opposite"] is None:
        return f"{rho}p {res['p']:.3g}"
    return f"{rho}p {res['p']:.3g} (opposite {res['p_opposite']:.3g})"


def setting(c):
    """The setting column: like for like, or what differs."""
    return "like for like" if c.like else f"differs: {c.differs}"


def table(done):
    """The verdict table, markdown, one row a claim."""
    head = ["paper", "claim", "paper's value (source)", "ours: value [interval, its measured "
            "coverage] or one-sided p", "seeds", "verdict", "setting", "command"]
    rows = []
    for c, res, v, why in done:
        cmd = c.command or (f"`python experiments/claims.py {c.section}`" if c.section else "-")
        paper = num(c.value) if isinstance(c.value, (int, float)) else c.value
        rows.append([c.paper, c.claim, f"{paper} ({c.source})" if c.source else paper,
                     ours(res), " / ".join(map(str, res.get("seeds", []))) or "-",
                     f"**{v}**: {why}", setting(c), cmd])
    return S.markdown(head, rows)


def registry(claims):
    """What tests each claim: its runs, the statistic, what is like for like and what differs."""
    return S.markdown(["paper", "claim", "runs (reproduction/)", "statistic",
                       "like for like, and what differs"],
                      [[c.paper, c.claim, str(c.test), c.statistic,
                        ("" if c.like else "not like for like: ") + c.differs]
                       for c in claims if c.test.reads])  # none: no runs test it


VERDICTS = ("reproduced", "not reproduced", "inconclusive", "not addressed")


def counts(done):
    """The verdicts counted by paper, each cell "n (m like for like)", and a total row."""
    papers = list(dict.fromkeys(c.paper for c, *_ in done))
    rows = []
    for paper in papers + ["all"]:
        mine = [(c, v) for c, _, v, _ in done if paper in ("all", c.paper)]
        cell = lambda v: (f"{sum(x == v for _, x in mine)} "
                          f"({sum(x == v and c.like for c, x in mine)})")
        rows.append([paper if paper != "all" else "**all**", str(len(mine))]
                    + [cell(v) for v in VERDICTS])
    return S.markdown(["paper", "claims"] + [f"{v} (like for like)" for v in VERDICTS], rows)


def headline(c, res, v, why):
    """One finding in one line: the claim, its verdict and why, our number, the row's paper."""
    return f"- {c.paper}: {c.claim}. **{v}**: {why}; ours {ours(res)}."


def at_a_glance(done, headlines):
    """What a reader needs first: the counts, the headline findings (the claims named in
    headlines, each paper module's HEADLINES) and what is left open."""
    by_claim = {c.claim: (c, res, v, why) for c, res, v, why in done}
    open_rows = [why for _, _, v, why in done if v == "inconclusive"]
    kinds = {"seeds would decide": "would decide", "one run against one": "one run against one",
             "fewer seeds than any measured coverage": "no coverage measured",
             "no effect the claimed way in these seeds": "no effect",
             "a question of our own with no difference at p < 0.05": "neither way"}
    found = ", ".join(f"{sum(key in why for why in open_rows)} {name}"
                      for name, key in kinds.items())
    return "\n".join([
        "**The verdicts at a glance** (`python experiments/claims.py verdicts` prints this and "
        "the table below from the committed runs):", "", counts(done),
        "**Headline findings**, each a row of the table below:", ""]
        + [headline(*by_claim[h]) for h in headlines]
        + ["", f"**Open**: {len(open_rows)} rows are inconclusive: {found} (each row's verdict "
           "column says which, and how many seeds would decide it).", ""])


def report(done, headlines=()):
    """What REPRODUCTION.md shows between its verdicts markers: the summary, the table, then
    the rule."""
    return at_a_glance(done, headlines) + "\n" + table(done) + "\n" + RULE + "\n"


def forest_rows(done):
    """The numeric claims whose paper number is finite, as plots.forest draws them."""
    return [(f"{c.paper.split()[0]}: {c.label or c.claim}", res["paper"], res["ours"],
             res["lo"], res["hi"], v) for c, res, v, _ in done
            if res["kind"] == "interval" and np.isfinite(res["paper"])]


def verdict_section(claims, headlines=(), figure=FIGURE, load=load):
    """The verdicts section of claims.py: print the report, draw the forest plot."""
    done = evaluate(load, claims)
    print(report(done, headlines))
    if figure:
        plots.forest(figure, forest_rows(done))


def write_doc(text, path=DOC):
    """Put text between REPRODUCTION.md's verdicts markers (atomically)."""
    doc = open(path).read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"error: {path} has no {BEGIN} ... {END} block")
    head, rest = doc.split(BEGIN, 1)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(head + BEGIN + "\n" + text + rest[rest.index(END):])
    os.replace(tmp, path)


def doc_block(path=DOC):
    """The text between REPRODUCTION.md's verdicts markers, None if it has none."""
    doc = open(path).read()
    if BEGIN not in doc or END not in doc:
        return None
    return doc.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")



# ---------------------------------------------------------------- tables of runs

def summary(root, runs=None):
    """analyze.py's summary table (runs/summary.md); runs: load(root)'s, if the caller has it."""
    groups, _ = S.group_runs(runs or load(root, analysed=True))
    print(S.markdown(*S.summary_table(groups)))


def per_seed(root, arm=None, paper=None, ref=None):
    """Steps to test loss <= 0.01 seed by seed, their mean, the seed-mean curve's step (Singh
    et al.'s statistic; "held" where a seed that stopped earlier counts with its last value) and
    a Mann-Whitney U test against `ref` (a label as printed), else the first group. arm: a label
    per config, groups sorted by label (default: analyze's grouping); paper: cfg -> theirs."""
    done = load(root)
    if arm is None:
        groups, _ = S.group_runs(done)
    else:
        groups = {}
        for run, (cfg, m, r) in done.items():
            groups.setdefault(arm(cfg), []).append((run, cfg, m, r))
        groups = dict(sorted(groups.items()))
    groups = dict(sorted(groups.items(), key=lambda kv: kv[0] != ref))  # stable: ref, then the rest
    groups = {lab: sorted(runs, key=lambda r: r[1].seed) for lab, runs in groups.items()}  # s2, s10
    first = groups.get(ref) if ref else next(iter(groups.values()))
    rows = []
    for lab, runs in groups.items():
        te = S.grok_steps(runs)
        hit = [s for s in te if s is not None]  # the bounds on the seed-mean curve's step
        bounds = f"{min(hit)} / {max(hit) if len(hit) == len(te) else 'not all'}" if hit else "none"
        mw = "-" if runs is first or first is None else "U {:g} / p {:.3f}".format(
            *mann_whitney(te, S.grok_steps(first)))
        mc, stop = S.mean_curve_step(runs), min(int(m["step"][-1]) for _, _, m, _ in runs)
        rows.append([lab, " / ".join(f"s{c.seed}: {s or S.unfinished(c, m)}"
                                     for (_, c, m, _), s in zip(runs, te)),
                     f"{S.fmt(te)} ({sum(s is not None for s in te)}/{len(te)})",
                     f"{mc} (held: a seed stopped at {stop})" if mc and mc > stop
                     else str(mc or "not reached"), bounds,
                     S.fmt([float(np.max(m["test_acc"])) for _, _, m, _ in runs], 3), mw]
                    + ([paper(runs[0][1])] if paper else []))
    print(S.markdown(["configuration", "test loss <= 0.01 at, per seed", "mean +- std (reached)",
                      "seed-mean curve <= 0.01 at", "first seed / all seeds <= 0.01 at",
                      "best test acc", f"vs {ref or next(iter(groups))}"
                      + ("" if first else " (not among these runs)") + ": Mann-Whitney U / p"]
                     + (["paper (seed-mean curve)"] if paper else []), rows))
