"""
The models of the four grokking papers, built from one config: the readable reference.

    from config import Config
    from model import build_model
    model = build_model(Config(ln="pre"))  # one-layer transformer, LN before attention and MLP
    logits = model(tokens)                  # tokens (N, 3) = [a, b, '='] -> (N, n_out)

Two families share one interface:
- model="transformer": embed + learned positions, n_layers blocks of multi-head attention and an
  MLP, untied unembedding read at the last position (Singh et al.; Nanda et al.).
- model="mlp": the operand embeddings concatenated into an MLP with n_layers hidden layers
  (AlQuabeh et al.: 1; Gu et al.'s DNN: 2); embed="onehot": the operands go straight in.

This file is the maths. fast.py computes the same functions faster for training; every training
run checks it against this file first (train.py), so an edit here is never silently ignored.
Each model class names its parameters by role in NAMES, the table that optim.py, measures.py
and fast.py read (param_name): rename or add a layer there too, or build_model says so.
"""
import math
import re
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from runfiles import Stop


class LN(NamedTuple):
    qk: bool            # normalise the query/key input of attention
    v: bool             # normalise the value input of attention
    mlp: bool           # normalise the MLP input
    post: bool = False  # instead: normalise the residual stream after each sublayer
    paper: str = ""     # its name in Singh et al. (train.py --help shows it)


# Where LayerNorm sits. The one place to add a placement: a new row here (fast.py reads it too).
LN_PLACEMENTS = {
    "off":         LN(False, False, False, paper="No LN"),
    "attn-pre":    LN(True,  True,  False, paper="A*"),
    "pre":         LN(True,  True,  True,  paper="M+A*"),
    "mlp-pre":     LN(False, False, True,  paper="M"),
    "attn-pre-qk": LN(True,  False, False, paper="A^qk"),
    "attn-pre-v":  LN(False, True,  False, paper="A^v"),
    "pre-v":       LN(False, True,  True,  paper="M+A^v"),
    "post":        LN(False, False, False, post=True),  # not in the paper
}
ACTS = {"gelu": F.gelu, "relu": F.relu}


def make_norm(cfg):
    """The norm module of --norm: LayerNorm (weight and bias) or RMSNorm (weight)."""
    if cfg.norm == "layernorm":
        return nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
    return nn.RMSNorm(cfg.d_model, eps=cfg.ln_eps)


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
        # output (named by sublayer, not by place: checkpoints carry these names). Both exist
        # whenever LN is on, as in Singh et al.'s code, so that runs of every placement have
        # one parameter layout and train stacked (fast.Stacked). A norm the placement leaves
        # out (ln2 under attn-pre, ln1 under mlp-pre) gets no gradient: AdamW does not move
        # it, and in a stack it gets weight decay 0 (fast.unused_params), so it stays at its initial
        # value.
        if cfg.ln != "off":
            self.ln1 = make_norm(cfg)
            self.ln2 = make_norm(cfg)

    def forward(self, x, mask=None, cache=None, scale_free=False, last_only=False):
        """x (N, T, d) -> (N, T, d). last_only: only the last position queries and gets an MLP,
        (N, 1, d): enough for the last block, whose output is read only there."""
        place = self.place
        qk = self.ln1(x) if place.qk else x                 # (N, T, d) query and key input
        v = self.ln1(x) if place.v else x                   # (N, T, d) value input
        q = qk                                              # query input
        if last_only:
            q, x = qk[:, -1:], x[:, -1:]
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
    # Its parameters' names by role, the one place besides __init__ that spells them: optim.py
    # (Muon's matrices, the embedding's lr), measures.py and fast.py read them here, so renaming a
    # layer is an edit of __init__ and of this table; a parameter no entry names stops
    # build_model in one line (check_names). {i}: a block's index; a module's name stands for
    # its .weight (and .bias).
    NAMES = dict(
        embed="embed.weight",                            # W_E (n_vocab, d)
        pos="pos",                                       # positions (3, d)
        readout="unembed",                               # W_U (d, n_out)
        ln1="blocks.{i}.ln1", ln2="blocks.{i}.ln2",      # block i's norms (modules; see Block)
        attn_in="blocks.{i}.attn.in_proj_weight",        # W_Q, W_K, W_V stacked (3d, d)
        attn_out="blocks.{i}.attn.out_proj.weight",      # W_O (d, d)
        fc1="blocks.{i}.fc1.weight", fc1_bias="blocks.{i}.fc1.bias",  # W_in (d_mlp, d), b_in
        fc2="blocks.{i}.fc2.weight", fc2_bias="blocks.{i}.fc2.bias",  # W_out (d, d_mlp), b_out
    )
    NAMES["first"] = NAMES["attn_in"].format(i=0)  # the first layer to read W_E: block 0's

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
    # Its parameters' names by role, as Transformer.NAMES ({i}: a hidden layer's index)
    NAMES = dict(
        embed="embed.weight",                                 # W_E (n_vocab, d): learned only
        first="fc1.weight", first_bias="fc1.bias",            # W (d_mlp, inputs x their width)
        hidden="hidden.{i}.weight", hidden_bias="hidden.{i}.bias",  # (d_mlp, d_mlp) each
        readout="readout.weight", readout_bias="readout.bias",      # W_U (n_out, d_mlp)
    )

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.n_inputs = 3 if cfg.mlp_eq else 2  # a, b (and '=')
        # each input's width: an embedding, or a one-hot p wide (d_model wide with '=')
        if cfg.embed == "learned" or cfg.mlp_eq:
            d_in = cfg.d_model
        else:
            d_in = cfg.p
        if cfg.embed == "learned":
            self.embed = nn.Embedding(cfg.n_vocab, cfg.d_model)
        self.fc1 = nn.Linear(self.n_inputs * d_in, cfg.d_mlp, bias=cfg.bias)
        self.hidden = nn.ModuleList(nn.Linear(cfg.d_mlp, cfg.d_mlp, bias=cfg.bias)
                                    for _ in range(cfg.n_layers - 1))
        self.readout = nn.Linear(cfg.d_mlp, cfg.n_out, bias=cfg.bias)
        self.act = ACTS[cfg.act]
        self.register_buffer("alpha", torch.tensor(cfg.alpha), persistent=False)  # as Transformer

    def forward(self, tokens, cache=None, scale_free=False):
        x = tokens[:, :self.n_inputs]
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
    check_names(model)
    _init(model, cfg)
    return model.to(getattr(torch, cfg.dtype))


def param_name(model, role, i=0):
    """The name of model's parameter (or module) of `role` in its NAMES, of block or layer i
    where the role has one per block. model: a model, its class, or anything that carries one's
    NAMES (a fast.Stacked module)."""
    return model.NAMES[role].format(i=i)


def get_param(model, role, i=0):
    """model's parameter of `role` (param_name), or None where it has none (an embedding of
    one-hot operands)."""
    return dict(model.named_parameters()).get(param_name(model, role, i))


def check_names(model):
    """Stop, in one line, at a parameter of model that no entry of its NAMES names: a layer
    renamed or added in __init__ alone, which optim.py, measures.py and fast.py, reading NAMES,
    would otherwise miss silently (Muon moving a renamed readout, an embedding losing its lr)."""
    # each entry a pattern: {i} any index, a module's name any parameter under it
    patterns = [re.escape(name).replace(re.escape("{i}"), r"\d+") + r"(\..+)?"
                for name in model.NAMES.values()]
    for name, _ in model.named_parameters():
        if not any(re.fullmatch(pattern, name) for pattern in patterns):
            raise Stop(f"parameter {name!r} of {type(model).__name__} has no entry in its NAMES: "
                       "name its role there (optim.py, measures.py and fast.py read them)")
