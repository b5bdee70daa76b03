"""
AlQuabeh et al. (the embedding layer): the embedding-MLP with and without learned embeddings,
an embedding-specific learning rate, frequency-aware sampling, full batch and mini-batches: the
claims (CLAIMS), the tables of REPRODUCTION.md that show them (SECTIONS) and the runs they read.

    python experiments/claims.py --paper alquabeh   # its verdict rows and tables
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import minibatch_table  # noqa: E402
from render import Section, per_seed, summary  # noqa: E402
from rule import Claim, not_addressed, order  # noqa: E402
from runsets import Runs, field  # noqa: E402
from seedstats import grok_step  # noqa: E402

PAPERS = ("AlQuabeh et al.",)
ALQ = PAPERS[0]

ALQ_LIKE = "the paper gives no p, fraction, width or optimizer; ours: frac 0.3, width 512, " \
           "AdamW lr 1e-3, wd 1"


def alquabeh_claims():
    emb = lambda **kw: Runs("embedding", field(**kw))
    mb = lambda **kw: Runs("minibatch", field(**kw))
    # each arm against the plain arm of its experiment: learned embeddings, ratio 1, random
    emb_base = emb(embed="learned", op="add", emb_lr_ratio="1", split="random")
    mb_base = lambda B: mb(embed="learned", batch_size=B, emb_lr_ratio="1", sampling="random")
    step = lambda m, r: grok_step(m)
    rows = []
    full = (("without embeddings (one-hot input) the MLP generalizes sooner, a+b",
             [emb(embed="onehot", op="add"), emb_base]),
            ("without embeddings the MLP generalizes sooner, a^2+b^2",
             [emb(embed="onehot", op="a2+b2"), emb(embed="learned", op="a2+b2")]),
            ("an embedding lr ratio of 10 speeds grokking",
             [emb(embed="learned", emb_lr_ratio="10"), emb_base]),
            ("balanced sampling speeds grokking",
             [emb(embed="learned", split="balanced"), emb_base]))
    batches = (("mini-batches (512): without embeddings the MLP generalizes sooner",
                [mb(embed="onehot", batch_size=512), mb_base(512)]),
               ("mini-batches (512): an embedding lr ratio of 10 speeds grokking",
                [mb(emb_lr_ratio="10", batch_size=512), mb_base(512)]),
               ("mini-batches (64): an embedding lr ratio of 10 speeds grokking",
                [mb(emb_lr_ratio="10", batch_size=64), mb_base(64)]),
               ("mini-batches (512): the ratio rule (`auto`) speeds grokking",
                [mb(emb_lr_ratio="auto", batch_size=512), mb_base(512)]),
               ("mini-batches (64): frequency-aware sampling speeds grokking",
                [mb(sampling="balanced", batch_size=64), mb_base(64)]))
    for section, arms in (("embedding", full), ("minibatch", batches)):
        for claim, groups in arms:
            rows.append(Claim(
                paper=ALQ, claim=claim, value="the first arm sooner", source="abstract",
                statistic="per-seed step to test loss 0.01, the paper's faster arm first",
                like=False, differs=ALQ_LIKE, section=section, test=order(groups, step)))
    return rows


def unaddressed_claims():
    return [Claim(paper=ALQ, claim="a ratio of 10 balances the curvature of the embedding and "
                  "the next layer", value="-", source=None, statistic="-", like=False,
                  differs="-", section=None, test=not_addressed(
                      "the top eigenvalues are cached beside the runs (hessian.json), not read "
                      "here"))]


CLAIMS = alquabeh_claims() + unaddressed_claims()
# the claims the verdicts' summary opens with (claims.py verdicts), as written above
HEADLINES = ["without embeddings (one-hot input) the MLP generalizes sooner, a+b"]
SECTIONS = {
    "embedding": Section("Embedding-MLP (AlQuabeh et al.)", "runs/embedding",
                         "bash experiments/embedding.sh --list | bash", lambda root: (
                             summary(root), per_seed(root, ref="op=add, split=random, "
                                                                "embed=learned, emb_lr_ratio=1")),
                         "embedding"),
    "minibatch": Section("Embedding-MLP with mini-batches (AlQuabeh et al.)", "runs/minibatch",
                         "bash experiments/minibatch.sh --list | bash", minibatch_table.main,
                         "minibatch"),
}

