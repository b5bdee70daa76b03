"""
Helpers shared by the test files: plain names imported with `from conftest import ...` (not
fixtures: DEVICES parametrizes tests, and small_cfg takes the options a test sets).
"""
import os
import re

import torch

from config import Config
from train import train

HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = dict(p=23, d_model=32, n_heads=4, d_mlp=64, frac=0.5, eval_every=5, ckpt_every=10)
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])  # CI has no GPU
# three LN placements too: pre uses both LNs, attn-pre not the MLP's, mlp-pre not attention's
BATCHED = (dict(seed=0),
           dict(seed=1, lr=3e-3, fix_wd=True, alpha=2.0, emb_lr_ratio="10", ln="attn-pre"),
           dict(seed=2, op="a2+ab+b2", wd=0.3, alpha_lr=True, ln="mlp-pre"))


def quiet(*_):
    """A log that prints nothing."""


def small_cfg(**kw):
    """A config that trains in a fraction of a second a step: p 23, d_model 32."""
    return Config(**{**SMALL, **kw})


def train_alone(cfg, run_dir, *args, **kw):
    """One run trained alone (train.train of a list of one); its metrics."""
    return train([cfg], [run_dir], *args, **kw)[0]


def table_rows(text, *key):
    """The rows of every markdown table in printed text (a header line, a |---| rule, the rows;
    prose between tables skipped), each a dict {column header: cell}, the tables one after the
    other. Given column names: those rows that have the columns, by their cells there (a tuple
    for several names); a key met twice is an error, so a test never reads the wrong row."""
    rows, block = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip()[1:-1].split("|")])
            continue
        if len(block) >= 2 and all(re.fullmatch(r":?-+:?", c) for c in block[1]):
            head = block[0]
            assert len(set(head)) == len(head), f"a column name twice: {head}"
            for cells in block[2:]:
                assert len(cells) == len(head), f"{len(cells)} cells under {len(head)}: {cells}"
                rows.append(dict(zip(head, cells)))
        block = []
    if not key:
        return rows
    keyed = {}
    for row in rows:
        if all(k in row for k in key):
            k = row[key[0]] if len(key) == 1 else tuple(row[k] for k in key)
            assert k not in keyed, f"two rows with {key} {k}"
            keyed[k] = row
    return keyed
