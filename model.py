"""
The models of the four grokking papers, built from one config: the readable reference.

    from model import Config, build_model
    model = build_model(Config(ln="pre"))  # one-layer transformer, LN before attention and MLP
    logits = model(tokens)                  # tokens (N, 3) = [a, b, '='] -> (N, n_out)

Two families share one interface:
- model="transformer": embed + learned positions, n_layers blocks of multi-head attention and an
  MLP, untied unembedding read at the last position (Singh et al.; Nanda et al.).
- model="mlp": the operand embeddings concatenated into an MLP with n_layers hidden layers
  (AlQuabeh et al.: 1; Gu et al.'s DNN: 2); embed="onehot": the operands go straight in.

This file is the maths. fast.py computes the same functions faster for training; every training
run checks it against this file first (train.py), so an edit here is never silently ignored.
"""
import math
from dataclasses import asdict, dataclass, field, fields
from typing import NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

from data import OPS, SPLITS
from runfiles import Stop


class LN(NamedTuple):
    qk: bool            # normalise the query/key input of attention
    v: bool             # normalise the value input of attention
    mlp: bool           # normalise the MLP input
    post: bool = False  # instead: normalise the residual stream after each sublayer


# Where LayerNorm sits. The one place to add a placement: a new row here (fast.py reads it too).
LN_PLACEMENTS = {
    "off":         LN(False, False, False),  # No LN
    "attn-pre":    LN(True,  True,  False),  # A*
    "pre":         LN(True,  True,  True),   # M+A*
    "mlp-pre":     LN(False, False, True),   # M
    "attn-pre-qk": LN(True,  False, False),  # A^qk
    "attn-pre-v":  LN(False, True,  False),  # A^v
    "pre-v":       LN(False, True,  True),   # M+A^v
    "post":        LN(False, False, False, post=True),  # not in the paper
}
ACTS = {"gelu": F.gelu, "relu": F.relu}
CHOICES = dict(op=tuple(OPS), split=SPLITS, model=("transformer", "mlp"),
               embed=("learned", "onehot"), act=tuple(ACTS), ln=tuple(LN_PLACEMENTS),
               norm=("layernorm", "rmsnorm"), init=("singh", "kaiming", "nanda", "gu", "torch"),
               dtype=("float32", "float64"), loss_dtype=("float16", "float32", "float64"),
               sampling=("random", "balanced"), optimizer=("adamw", "adam", "muon"),
               split_rng=("torch", "singh", "nanda"),
               grokfast=("none", "ema", "ma"), loss=("ce", "stablemax"))
# the least value of each integer option: p 2, a seed or an offset 0, the others 1
MINIMUMS = dict(p=2, n_layers=1, d_model=1, n_heads=1, d_mlp=1, steps=1, eval_every=1,
                ckpt_every=1, gf_window=1, schedule_steps=1, seed=0, data_seed=0,
                b_offset=0)


def option(default, help):
    """A Config field with its --help text beside it."""
    return field(default=default, metadata=dict(help=help))


@dataclass
class Config:
    # task
    p: int = option(113, "modulus; the vocabulary is p operands and '='")
    op: str = option("add", "operation: " + " | ".join(OPS))
    frac: float = option(0.3, "fraction of all pairs used for training")
    split: str = option("random", "random | balanced (every operand equally often) | square | "
                        "strip (a dug-out region, Gu et al.)")
    hole: int = option(0, "size K of the dug-out square {a,b<=K} or strip {a<=K}")
    b_offset: int = option(0, "token of the second operand b is b + this: 0 one vocabulary "
                           "for both operands; p their own ranges (Gu et al.'s strips: 60)")
    seed: int = option(0, "seed of the split and the initial weights")
    data_seed: Optional[int] = option(None, "split's seed (default --seed); one per --seed")
    split_rng: str = option("torch", "split drawn by: torch | singh | nanda (their code's shuffle)")
    # model
    model: str = option("transformer", "transformer | mlp")
    embed: str = option("learned", "mlp only: learned | onehot")
    mlp_eq: bool = option(False, "mlp: the '=' token's embedding is a third input (Gu et al.)")
    bias: bool = option(True, "mlp: biases in its layers (--no-bias: Prieto et al.)")
    n_layers: int = option(1, "transformer blocks; mlp: hidden layers (Gu et al.'s DNN: 2)")
    d_model: int = option(128, "width of the residual stream (mlp: of each embedding)")
    n_heads: int = option(4, "attention heads")
    d_mlp: int = option(512, "MLP width")
    act: str = option("gelu", "activation: " + " | ".join(ACTS))
    causal: bool = option(False, "causal attention mask")
    dropout: float = option(0.0, "transformer: dropout on the MLP neurons (Nanda et al.)")
    ln: str = option("pre", "LayerNorm placement: " + " | ".join(LN_PLACEMENTS))
    norm: str = option("layernorm", "layernorm | rmsnorm")
    ln_eps: float = option(0.0, "norm epsilon (Singh et al.: 0)")
    alpha: float = option(1.0, "readout scale: logits = alpha * h @ W_U")
    init: str = option("singh", "singh | kaiming | nanda | gu | torch (the modules' own)")
    eq_class: bool = option(True, "transformer: a class for '=' (p+1-way); --no-eq-class: p (Gu)")
    # optimization (AdamW)
    lr: float = option(1e-3, "AdamW learning rate")
    wd: float = option(1.0, "AdamW weight decay")
    betas: tuple = option((0.9, 0.98), "AdamW betas")
    eps: float = option(1e-8, "AdamW eps")
    warmup: int = option(0, "linear lr warm-up steps")
    fix_wd: bool = option(False, "wd *= 1e-3 / lr, so lr * wd stays as at lr 1e-3 (Singh et al.)")
    alpha_lr: bool = option(False, "lr /= alpha^2")
    emb_lr_ratio: str = option("1", "embedding lr / lr: a number, or 'auto' (AlQuabeh et al.)")
    optimizer: str = option("adamw", "adamw | adam (coupled L2) | muon (for hidden matrices)")
    grokfast: str = option("none", "gradient filter of Lee et al.: none | ema | ma")
    gf_alpha: float = option(0.98, "grokfast ema: decay of the average")
    gf_window: int = option(100, "grokfast ma: gradients averaged")
    gf_lamb: float = option(2.0, "grokfast: grad + lamb * filtered grad")
    orthograd: bool = option(False, "Prieto et al.'s ⊥Grad: no gradient along the weights")
    loss: str = option("ce", "ce (softmax cross-entropy) | stablemax (Prieto et al.)")
    l1: float = option(0.0, "L1 penalty: + l1 * sum |theta| to the loss stepped on (Nanda et al.)")
    steps: int = option(10000, "optimizer steps")
    schedule_steps: Optional[int] = option(None, "steps an lr schedule spans (default --steps; "
                                           "--resume keeps a run's first --steps)")
    batch_size: Optional[int] = option(None, "examples per step (default: all); data.Batches")
    sampling: str = option("random", "mini-batch order: random | balanced (tokens evenly)")
    dtype: str = option("float32", "float32 | float64")
    loss_dtype: str = option("float64", "loss dtype: float64 | float32 (Nanda: spikes) | float16")
    eval_every: int = option(10, "steps between metric rows")
    ckpt_every: int = option(100, "steps between checkpoints")

    @classmethod
    def from_dict(cls, d):
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown config keys {sorted(unknown)}")
        d = dict(d)
        if "betas" in d:  # JSON has no tuples: a saved config holds them as lists
            d["betas"] = tuple(d["betas"])
        return cls(**d)

    def to_dict(self):
        return asdict(self)

    @property
    def n_vocab(self):  # operands, then '=' as the last token
        return max(self.p, self.b_offset + self.p) + 1

    @property
    def n_out(self):
        # the transformer keeps the '=' class (p+1-way softmax, as Singh's and Nanda's code)
        # unless told not to; the embedding-MLP reads out p classes, as AlQuabeh et al.
        return self.p + (self.model == "transformer" and self.eq_class)

    def check(self):
        """Every option of a run, checked in one place: raise Stop naming the first bad one."""
        for k, allowed in CHOICES.items():
            if getattr(self, k) not in allowed:
                raise Stop(f"unknown --{flag(k)} {getattr(self, k)!r}; "
                           f"choose from {', '.join(allowed)}")
        p, d = self.p, self.d_model
        for k, least in MINIMUMS.items():
            v = getattr(self, k)
            if v is None:  # data_seed: the run's --seed; schedule_steps: --steps
                continue
            if v < least:
                raise Stop(f"--{flag(k)} {v} must be at least {least}")
            if v >= 2 ** 63:  # the seeds numpy and torch take
                raise Stop(f"--{flag(k)} {v} must be below 2^63")
        if self.op == "div" and any(p % q == 0 for q in range(2, int(p ** 0.5) + 1)):
            raise Stop(f"--op div needs a prime --p (b has no inverse mod {p})")
        if not 0 < self.frac < 1:
            raise Stop(f"--frac {self.frac} must be in (0, 1)")
        if self.split in ("square", "strip") and not 0 <= self.hole < p - 1:
            raise Stop(f"--hole {self.hole} must be in [0, {p - 2}] for p={p}: "
                       "the hole may not cover every a")
        # options of the other family would be silently ignored
        mlp_only = self.embed == "onehot" or self.mlp_eq or not self.bias
        if self.model == "transformer" and mlp_only:
            raise Stop("--embed, --mlp-eq and --no-bias need --model mlp")
        if self.model == "mlp" and self.dropout:
            raise Stop("--dropout needs a transformer: the embedding-MLP has no dropout")
        if self.mlp_eq and self.embed == "onehot" and self.n_vocab > d:
            raise Stop(f"--mlp-eq: {self.n_vocab} one-hot tokens do not fit in --d-model {d}")
        if self.model == "mlp" and self.embed == "onehot" and self.b_offset:
            raise Stop("--b-offset needs learned embeddings: one-hot inputs are apart already")
        if self.split_rng != "torch" and (self.split != "random" or self.op == "div"):
            raise Stop(f"--split-rng {self.split_rng} draws a random split of every pair")
        if self.split not in ("square", "strip") and self.hole:
            raise Stop("--hole needs --split square or strip")
        if self.model == "transformer" and d % self.n_heads:
            raise Stop(f"--d-model {d} is not divisible by --n-heads {self.n_heads}")
        for k in ("lr", "alpha", "wd", "warmup", "eps", "l1", "ln_eps", "gf_lamb"):
            v = getattr(self, k)
            if k in ("lr", "alpha"):
                ok, bound = 0 < v < math.inf, "> 0"
            else:
                ok, bound = 0 <= v < math.inf, ">= 0"
            if not ok:  # nan too: it fails every comparison
                raise Stop(f"--{flag(k)} {v} must be finite and {bound}")
        for k, values in (("betas", self.betas), ("gf-alpha", (self.gf_alpha,)),
                          ("dropout", (self.dropout,))):
            if not all(0 <= b < 1 for b in values):
                raise Stop(f"--{k} {' '.join(map(str, values))} must be in [0, 1)")
        if self.batch_size is not None and self.batch_size < 1:
            raise Stop(f"--batch-size {self.batch_size} must be at least 1")
        if self.sampling != "random" and self.batch_size is None:
            raise Stop(f"--sampling {self.sampling} orders mini-batches: it needs --batch-size")
        if self.emb_lr_ratio != "auto" and not is_positive_number(self.emb_lr_ratio):
            raise Stop(f"--emb-lr-ratio {self.emb_lr_ratio!r} must be a positive number or 'auto'")
        one_hot = self.model == "mlp" and self.embed == "onehot"
        if one_hot and (self.emb_lr_ratio == "auto" or float(self.emb_lr_ratio) != 1):
            raise Stop("--emb-lr-ratio needs learned embeddings (--embed learned)")


def is_positive_number(text):
    try:
        return 0 < float(text) < math.inf
    except ValueError:
        return False


def flag(name):
    return name.replace("_", "-")


# Presets: each is a set of overrides of the defaults above. An explicit flag wins over them.
PRESETS = {
    "singh": {},  # Singh et al.'s released code: GELU, non-causal, LN eps 0, no warmup
    "nanda": dict(act="relu", causal=True, ln="off", init="nanda", warmup=10, steps=40000,
                  ckpt_every=400),  # Nanda et al.'s mainline, 40k epochs
    # embedding-MLP of AlQuabeh et al.; their step budget is not in our notes, and at frac 0.3
    # this MLP reaches half test accuracy only after ~8.5k steps, so 20k rather than 10k
    "alquabeh": dict(model="mlp", act="relu", steps=20000),
    # Gu et al.'s code (transformer/rec.py, str.py): p 97, Nanda's model with a p-way readout,
    # 30k epochs, float32 loss; their strips add --b-offset 60
    "gu": dict(p=97, act="relu", causal=True, ln="off", init="gu", eq_class=False, warmup=10,
               steps=30000, loss_dtype="float32", ckpt_every=1000),
}


def make_norm(cfg):
    return (nn.LayerNorm if cfg.norm == "layernorm" else nn.RMSNorm)(cfg.d_model, eps=cfg.ln_eps)


class Attention(nn.Module):
    """Multi-head attention, written out. Parameter names and initialisation are those of
    nn.MultiheadAttention without biases (W_O drawn first, then W_QKV): a seed draws the weights
    nn.MultiheadAttention would, and checkpoints carry its parameter names."""

    def __init__(self, d, n_heads):
        super().__init__()
        self.n_heads = n_heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))  # W_Q, W_K, W_V stacked
        self.out_proj = nn.Linear(d, d, bias=False)                # W_O
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, q_in, k_in, v_in, mask=None, cache=None):
        """q_in (N, Q, d) input of the queries, k_in and v_in (N, K, d) of the keys and values;
        mask (K, K), True where a query may not look. Returns (N, Q, d)."""
        N, Q, d = q_in.shape
        H = self.n_heads
        Wq, Wk, Wv = self.in_proj_weight.chunk(3)
        q = (q_in @ Wq.T).view(N, Q, H, d // H).transpose(1, 2)    # (N, H, Q, dh)
        k = (k_in @ Wk.T).view(N, -1, H, d // H).transpose(1, 2)   # (N, H, K, dh)
        v = (v_in @ Wv.T).view(N, -1, H, d // H).transpose(1, 2)   # (N, H, K, dh)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // H)       # (N, H, Q, K)
        if mask is not None:
            scores = scores.masked_fill(mask[-Q:], float("-inf"))  # the last Q query rows
        w = scores.softmax(-1)                                     # (N, H, Q, K)
        if cache is not None:
            cache.setdefault("attn", []).append(w)
        z = (w @ v).transpose(1, 2).reshape(N, Q, d)               # (N, Q, d) heads side by side
        return self.out_proj(z)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.place = LN_PLACEMENTS[cfg.ln]
        self.act = ACTS[cfg.act]
        self.attn = Attention(cfg.d_model, cfg.n_heads)
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_mlp)
        self.fc2 = nn.Linear(cfg.d_mlp, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)  # identity at 0 and in eval mode
        # ln1 is the attention sublayer's norm: of its query/key/value input (qk, v) or, with
        # post, of its output; ln2 the MLP sublayer's: of its input (mlp) or, with post, of its
        # output. Both exist whenever LN is on, as in Singh et al.'s code, so that runs of every
        # placement have one parameter layout and train stacked (fast.Stacked). A norm the
        # placement leaves out gets no gradient: AdamW does not move it, and in a stack it
        # gets weight decay 0 (fast.unused), so it stays at its initial value.
        if cfg.ln != "off":
            self.ln1, self.ln2 = make_norm(cfg), make_norm(cfg)

    def forward(self, x, mask=None, cache=None, scale_free=False, last_only=False):
        """x (N, T, d) -> (N, T, d). last_only: only the last position queries and gets an MLP,
        (N, 1, d): enough for the last block, whose output is read only there."""
        place = self.place
        qk = self.ln1(x) if place.qk else x                 # (N, T, d) query and key input
        v = self.ln1(x) if place.v else x                   # (N, T, d) value input
        q, x = (qk[:, -1:], x[:, -1:]) if last_only else (qk, x)
        x = x + self.attn(q, qk, v, mask, cache)
        if place.post:
            x = self.ln1(x)
        u = self.ln2(x) if place.mlp else x                 # MLP input
        if scale_free:  # SR-train of Singh et al.: remove the feature norm the MLP could use
            u = u / u.norm(dim=-1, keepdim=True)
        h = self.drop(self.act(self.fc1(u)))                # (N, T, d_mlp) neurons
        if cache is not None:
            cache["mlp_in"], cache["mlp_act"] = u, h
        x = x + self.fc2(h)
        return self.ln2(x) if place.post else x


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg.d_model
        self.embed = nn.Embedding(cfg.n_vocab, d)
        self.pos = nn.Parameter(torch.zeros(3, d))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.unembed = nn.Parameter(torch.zeros(d, cfg.n_out))
        self.register_buffer("mask", torch.ones(3, 3).triu(1).bool() if cfg.causal else None,
                             persistent=False)
        # a buffer, not a float, so that runs batched with different alphas each use their own
        self.register_buffer("alpha", torch.tensor(cfg.alpha), persistent=False)

    def residuals(self, tokens, cache=None, scale_free=False, last_only=False):
        """The residual stream after the last block, (N, 3, d); last_only: the last block at
        the last position only, (N, 1, d). With a dict as cache: each block's attention
        weights (N, heads, queries, keys) in cache["attn"], the last MLP's input and output."""
        x = self.embed(tokens) + self.pos                   # (N, 3, d)
        for i, blk in enumerate(self.blocks):
            x = blk(x, self.mask, cache, scale_free, last_only and i == len(self.blocks) - 1)
        return x

    def forward(self, tokens, cache=None, scale_free=False):
        """Logits at the last position, (N, n_out): the loss is read only there, so the last
        block runs there only. A cache gets the final features cache["resid"] too."""
        x = self.residuals(tokens, cache, scale_free, last_only=True)[:, -1]   # (N, d)
        if cache is not None:
            cache["mlp_in"], cache["mlp_act"] = cache["mlp_in"][:, -1], cache["mlp_act"][:, -1]
            cache["resid"] = x
        return self.alpha * (x @ self.unembed)


class EmbedMLP(nn.Module):
    """AlQuabeh et al.: [E(a), E(b)] -> ReLU(W1 .) -> readout; embed='onehot': one-hot operands
    (a free lookup table, no E -> W coupling). Gu et al.'s DNN (mlp_eq, n_layers=2): [E(a), E(b),
    E('=')]; one-hot: their README's fixed identity, each one-hot padded to d_model (3 d inputs)."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d_in = cfg.d_model if cfg.embed == "learned" or cfg.mlp_eq else cfg.p
        if cfg.embed == "learned":
            self.embed = nn.Embedding(cfg.n_vocab, cfg.d_model)
        self.fc1 = nn.Linear((3 if cfg.mlp_eq else 2) * d_in, cfg.d_mlp, bias=cfg.bias)
        self.hidden = nn.ModuleList(nn.Linear(cfg.d_mlp, cfg.d_mlp, bias=cfg.bias)
                                    for _ in range(cfg.n_layers - 1))
        self.readout = nn.Linear(cfg.d_mlp, cfg.n_out, bias=cfg.bias)
        self.act = ACTS[cfg.act]
        self.register_buffer("alpha", torch.tensor(cfg.alpha), persistent=False)  # as Transformer

    def forward(self, tokens, cache=None, scale_free=False):
        x = tokens[:, :3 if self.cfg.mlp_eq else 2]
        if self.cfg.embed == "learned":
            u = self.embed(x).flatten(1)                                       # (N, 2d or 3d)
        else:  # one-hot by comparison (vmap-safe), p wide, or d_model wide with '=' (Gu et al.)
            ids = torch.arange(self.fc1.in_features // x.shape[1], device=x.device)
            u = (x[..., None] == ids).flatten(1).to(self.fc1.weight)          # (N, 2p or 3d)
        if scale_free:
            u = u / u.norm(dim=-1, keepdim=True)
        h = self.act(self.fc1(u))                                              # (N, d_mlp)
        if cache is not None:
            cache.update(mlp_in=u, mlp_act=h)
        for layer in self.hidden:
            h = self.act(layer(h))
        if cache is not None:
            cache["resid"] = h
        return self.alpha * self.readout(h)


def _init(model, cfg):
    if cfg.init == "torch":
        return
    if cfg.init == "gu" and cfg.model == "mlp":
        # Gu et al.'s DNN: nn.Linear's own init (weights and biases U(+-1/sqrt(fan_in))), as
        # constructed; the embedding randn / sqrt(d_model)
        if hasattr(model, "embed"):
            nn.init.normal_(model.embed.weight, std=1 / math.sqrt(cfg.d_model))
        return
    if cfg.init in ("nanda", "gu"):
        # Nanda et al.: every matrix randn / sqrt(d_model), W_U randn / sqrt(p+1), biases 0;
        # norms keep weight 1 and bias 0. Gu et al.'s code: the same with W_U / sqrt(d_model).
        for prm in model.parameters():
            if prm.dim() >= 2:
                nn.init.normal_(prm, std=1 / math.sqrt(cfg.d_model))
        for m in model.modules():
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
        if cfg.model == "transformer":
            fan = cfg.p + 1 if cfg.init == "nanda" else cfg.d_model
            nn.init.normal_(model.unembed, std=1 / math.sqrt(fan))
        return
    # Singh et al.'s code: every nn.Linear (the MLP's and attention's out_proj) truncated
    # normal std 1/sqrt(fan_in) cut at +-2 std ('kaiming', their appendix: kaiming_normal_,
    # std sqrt(2 / fan_in)), biases 0; the fused in_proj keeps its xavier-uniform; embedding
    # and unembedding N(0, 1/d); positions N(0, 0.02^2).
    for m in model.modules():
        if isinstance(m, nn.Linear):
            std = 1 / math.sqrt(m.weight.shape[1])
            if cfg.init == "kaiming":
                nn.init.kaiming_normal_(m.weight)
            else:
                nn.init.trunc_normal_(m.weight, std=std, a=-2 * std, b=2 * std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    if hasattr(model, "embed"):
        nn.init.normal_(model.embed.weight, std=1 / math.sqrt(cfg.d_model))
    if cfg.model == "transformer":
        nn.init.normal_(model.unembed, std=1 / math.sqrt(cfg.d_model))
        nn.init.normal_(model.pos, std=0.02)


def build_model(cfg):
    """The one way to build a model: from a Config, seeded by cfg.seed."""
    cfg.check()
    torch.manual_seed(cfg.seed)
    model = Transformer(cfg) if cfg.model == "transformer" else EmbedMLP(cfg)
    _init(model, cfg)
    return model.to(getattr(torch, cfg.dtype))
