"""
The models of the four grokking papers, built from one config.

    from model import Config, build_model
    model = build_model(Config(ln="pre"))        # one-layer transformer, LN before attn and MLP
    logits = model(tokens)                        # tokens (N, 3) = [a, b, '='] -> (N, n_out)

Two families share one interface:
- `model="transformer"`: embed + learned positions, `n_layers` blocks of multi-head attention
  and an MLP, untied unembedding read at the last position (Singh et al.; Nanda et al.).
- `model="mlp"`: the two operand embeddings concatenated into a one-hidden-layer MLP
  (AlQuabeh et al.); `embed="onehot"` feeds the operands straight into the first layer.
"""
import copy
import math
from dataclasses import dataclass, asdict, fields
from typing import NamedTuple, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap
from torch.nn.attention import SDPBackend, sdpa_kernel


@dataclass
class Config:
    # task
    p: int = 113                # modulus; vocabulary is p operands + '='
    op: str = "add"             # see OPS in data.py
    frac: float = 0.3           # fraction of all pairs used for training
    split: str = "random"       # random | balanced | square | strip
    hole: int = 0               # size of the dug-out square/strip (Gu et al.)
    seed: int = 0               # sets split and init
    data_seed: Optional[int] = None  # overrides the seed for the split only
    # model
    model: str = "transformer"  # transformer | mlp
    embed: str = "learned"      # mlp only: learned | onehot
    n_layers: int = 1
    d_model: int = 128
    n_heads: int = 4
    d_mlp: int = 512
    act: str = "gelu"           # gelu | relu
    causal: bool = False
    ln: str = "pre"             # a key of LN_PLACEMENTS
    norm: str = "layernorm"     # layernorm | rmsnorm
    ln_eps: float = 0.0         # Singh et al. use eps 0
    alpha: float = 1.0          # readout scale: logits = alpha * h @ W_U
    init: str = "singh"         # singh | nanda
    # optimization (AdamW, full batch)
    lr: float = 1e-3
    wd: float = 1.0
    betas: tuple = (0.9, 0.98)
    eps: float = 1e-8
    warmup: int = 0             # linear warmup steps
    fix_wd: bool = False        # wd *= 1e-3 / lr, so lr * wd stays what it is at lr 1e-3
    alpha_lr: bool = False      # lr /= alpha^2
    emb_lr_ratio: str = "1"     # embedding lr = ratio * lr; 'auto': AlQuabeh et al.'s rule
    steps: int = 10000
    dtype: str = "float32"      # float32 | float64
    eval_every: int = 10
    ckpt_every: int = 100

    @classmethod
    def from_dict(cls, d):
        names = {f.name for f in fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown config keys {sorted(unknown)}")
        d = dict(d)
        if "betas" in d:
            d["betas"] = tuple(d["betas"])  # JSON turns tuples into lists
        return cls(**d)

    def to_dict(self):
        return asdict(self)

    @property
    def n_out(self):
        # the transformer keeps the '=' class (p+1-way softmax, as both papers' code);
        # the embedding-MLP reads out p classes, as AlQuabeh et al.
        return self.p + 1 if self.model == "transformer" else self.p


# Presets: each is a set of overrides of the defaults above. An explicit flag wins over them.
PRESETS = {
    "singh": {},  # Singh et al.'s released code: GELU, non-causal, LN eps 0, no warmup
    "nanda": dict(act="relu", causal=True, ln="off", init="nanda", warmup=10, steps=40000,
                  ckpt_every=400),  # Nanda et al.'s mainline, 40k epochs
    # embedding-MLP of AlQuabeh et al.; their step budget is not in our notes, and at frac 0.3
    # this MLP reaches half test accuracy only after ~8.5k steps, so 20k rather than 10k
    "alquabeh": dict(model="mlp", act="relu", steps=20000),
}


class LN(NamedTuple):
    qk: bool     # normalise the query/key input of attention
    v: bool      # normalise the value input of attention
    mlp: bool    # normalise the MLP input
    post: bool = False  # instead: normalise the residual stream after each sublayer


# Where LayerNorm sits. The one place to add a placement: a new row here.
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


def make_norm(cfg):
    if cfg.norm == "layernorm":
        return nn.LayerNorm(cfg.d_model, eps=cfg.ln_eps)
    return nn.RMSNorm(cfg.d_model, eps=cfg.ln_eps)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.place = LN_PLACEMENTS[cfg.ln]
        self.act = ACTS[cfg.act]
        self.attn = nn.MultiheadAttention(cfg.d_model, cfg.n_heads, bias=False, batch_first=True)
        self.fc1 = nn.Linear(cfg.d_model, cfg.d_mlp)
        self.fc2 = nn.Linear(cfg.d_mlp, cfg.d_model)
        if cfg.ln != "off":  # both norms exist (trained, decayed) whenever LN is on, as Singh et al.
            self.ln1, self.ln2 = make_norm(cfg), make_norm(cfg)

    def attn_inputs(self, x):
        """(query/key input, value input) of attention for residual x."""
        qk = self.ln1(x) if self.place.qk else x
        v = self.ln1(x) if self.place.v else x
        return qk, v

    def after_attn(self, x):
        return self.ln1(x) if self.place.post else x

    def mlp(self, x, cache=None, scale_free=False):
        """x + MLP(x) (then LN when post). scale_free replaces the MLP input by u/||u||."""
        u = self.ln2(x) if self.place.mlp else x
        if scale_free:  # SR-train of Singh et al.: remove the feature norm the MLP could use
            u = u / u.norm(dim=-1, keepdim=True)
        h = self.act(self.fc1(u))
        if cache is not None:
            cache["mlp_in"], cache["mlp_act"] = u, h
        x = x + self.fc2(h)
        return self.ln2(x) if self.place.post else x

    def forward(self, x, mask, cache=None, scale_free=False, last=False):
        """last: only the last position gets a query and an MLP (returns (N, 1, d)). Enough for
        the last block, whose output is read only there, and 3x less MLP work. That query sees
        every key, causal or not, so it needs no mask."""
        qk, v = self.attn_inputs(x)
        q, x, mask = (qk[:, -1:], x[:, -1:], None) if last else (qk, x, mask)
        a, w = self.attn(q, qk, v, attn_mask=mask, need_weights=cache is not None,
                         average_attn_weights=False)
        if cache is not None:
            cache.setdefault("attn", []).append(w)
        return self.mlp(self.after_attn(x + a), cache, scale_free)


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        V, d = cfg.p + 1, cfg.d_model
        self.embed = nn.Embedding(V, d)
        self.pos = nn.Parameter(torch.zeros(3, d))
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.unembed = nn.Parameter(torch.zeros(d, cfg.n_out))
        self.register_buffer("mask", torch.ones(3, 3).triu(1).bool() if cfg.causal else None,
                             persistent=False)
        # a buffer, not a float, so that runs stacked with different alphas each use their own
        self.register_buffer("alpha", torch.tensor(cfg.alpha), persistent=False)

    def forward(self, tokens, cache=None, fast=None, scale_free=False):
        """Logits at the last position, (N, n_out). Pass a dict as `cache` to get back the
        attention weights (a list per layer, (N, heads, queries, keys)), the MLP input and
        activations of the last layer and the final features `resid`, all at the last position.
        fast=None picks the table path whenever the model has one layer."""
        if fast is None:
            fast = len(self.blocks) == 1
        x = self._last_fast(tokens, cache, scale_free) if fast else \
            self._last_general(tokens, cache, scale_free)
        if cache is not None:
            cache["resid"] = x
        return self.alpha * (x @ self.unembed)

    def residuals(self, tokens, cache=None, scale_free=False, last_only=False):
        """The residual stream after the last block, (N, 3, d): PyTorch multi-head attention
        over all positions in every block. last_only: the last block at the last position only,
        (N, 1, d)."""
        x = self.embed(tokens) + self.pos
        for i, blk in enumerate(self.blocks):
            x = blk(x, self.mask, cache, scale_free, last=last_only and i == len(self.blocks) - 1)
        return x

    def _last_general(self, tokens, cache, scale_free):
        # The general path: the correctness oracle of the fast path and the only path for
        # deeper models. The last block runs at the last position only (the loss is read there).
        x = self.residuals(tokens, cache, scale_free, last_only=True)
        if cache is not None:  # the last position only, like the fast path
            for k in ("mlp_in", "mlp_act"):
                cache[k] = cache[k][:, -1]
        return x[:, -1]

    def _last_fast(self, tokens, cache, scale_free):
        # One layer, loss read at the last position: only that position needs a query, MLP and
        # unembedding, and every value before the attention mix depends on (token, position)
        # alone. So keys, values and scores are computed once per step on the 3 x (p+1) table
        # of possible rows and gathered per example. F.embedding does the gather because its
        # backward is a fast dense scatter (advanced indexing's index_put_ backward is slow).
        # Position 2 always holds '=', so its query, key and value are single rows.
        blk, H = self.blocks[0], self.cfg.n_heads
        d = self.cfg.d_model
        dh = d // H
        E = self.embed.weight
        table = E.unsqueeze(0) + self.pos.unsqueeze(1)          # (3, V, d)
        qk_in, v_in = blk.attn_inputs(table)
        Wq, Wk, Wv = blk.attn.in_proj_weight.chunk(3)
        eq = E.shape[0] - 1                                     # the '=' token
        q = (qk_in[2, eq] @ Wq.T).view(H, dh) / math.sqrt(dh)   # the one query
        k = (qk_in @ Wk.T).view(3, -1, H, dh)
        scores = torch.einsum("hc,jvhc->jvh", q, k)            # (3, V, H) score table
        v = v_in @ Wv.T                                         # (3, V, d) value table
        a, b = tokens[:, 0], tokens[:, 1]
        s = torch.stack([F.embedding(a, scores[0]), F.embedding(b, scores[1]),
                         scores[2, eq].expand(len(a), H)], -1)  # (N, H, 3)
        w = s.softmax(-1)
        z = (w[..., 0, None] * F.embedding(a, v[0]).view(-1, H, dh)
             + w[..., 1, None] * F.embedding(b, v[1]).view(-1, H, dh)
             + w[..., 2, None] * v[2, eq].view(H, dh))           # (N, H, dh)
        x = table[2, eq] + z.reshape(-1, d) @ blk.attn.out_proj.weight.T
        if cache is not None:
            cache["attn"] = [w.unsqueeze(2)]                    # (N, H, 1 query, 3 keys)
        return blk.mlp(blk.after_attn(x), cache, scale_free)


class EmbedMLP(nn.Module):
    """AlQuabeh et al.: [E(a), E(b)] -> ReLU(W1 .) -> readout. With embed='onehot' the first
    layer sees one-hot operands, i.e. it is a free lookup table with no E -> W coupling."""

    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d_in = cfg.d_model if cfg.embed == "learned" else cfg.p
        if cfg.embed == "learned":
            self.embed = nn.Embedding(cfg.p + 1, cfg.d_model)
        self.fc1 = nn.Linear(2 * d_in, cfg.d_mlp)
        self.readout = nn.Linear(cfg.d_mlp, cfg.n_out)
        self.act = ACTS[cfg.act]
        self.register_buffer("alpha", torch.tensor(cfg.alpha), persistent=False)  # as Transformer's

    def forward(self, tokens, cache=None, fast=None, scale_free=False):
        """fast (default unless a cache is asked for): the first layer is linear in each operand's
        input, fc1([u_a, u_b]) = W_a u_a + W_b u_b + bias, so it is computed on the (p+1)-row
        tables E W_a^T and E W_b^T (one-hot input: the columns of W themselves) and gathered
        per example, instead of an (N, 2d) x (2d, d_mlp) product. fast=False is the oracle and
        the path for the analysis (cache, scale_free), which needs the input u itself."""
        a, b = tokens[:, 0], tokens[:, 1]
        learned = self.cfg.embed == "learned"
        if fast is None:
            fast = cache is None and not scale_free
        if fast:
            Wa, Wb = self.fc1.weight.chunk(2, dim=1)
            ta, tb = (self.embed.weight @ Wa.T, self.embed.weight @ Wb.T) if learned else (Wa.T, Wb.T)
            h = self.act(F.embedding(a, ta) + F.embedding(b, tb) + self.fc1.bias)
        else:
            if learned:
                u = torch.cat([self.embed(a), self.embed(b)], -1)
            else:
                u = torch.cat([F.one_hot(a, self.cfg.p), F.one_hot(b, self.cfg.p)], -1).to(self.fc1.weight)
            if scale_free:
                u = u / u.norm(dim=-1, keepdim=True)
            h = self.act(self.fc1(u))
            if cache is not None:
                cache.update(mlp_in=u, mlp_act=h, resid=h)
        return self.alpha * self.readout(h)


def _init(model, cfg):
    if cfg.init == "nanda":
        # Nanda et al.: every matrix randn / sqrt(d_model), W_U randn / sqrt(p+1), biases 0.
        for name, prm in model.named_parameters():
            if prm.dim() == 1 and "ln" not in name:
                nn.init.zeros_(prm)
            elif prm.dim() >= 2:
                nn.init.normal_(prm, std=1 / math.sqrt(cfg.d_model))
        if cfg.model == "transformer":
            nn.init.normal_(model.unembed, std=1 / math.sqrt(cfg.p + 1))
        return
    # Singh et al.'s code: every nn.Linear (the MLP's and attention's out_proj) truncated
    # normal std 1/sqrt(fan_in) cut at +-2 std, biases 0; the fused in_proj keeps PyTorch's
    # xavier-uniform; embedding and unembedding N(0, 1/d); positions N(0, 0.02^2).
    for m in model.modules():
        if isinstance(m, nn.Linear):
            std = 1 / math.sqrt(m.weight.shape[1])
            nn.init.trunc_normal_(m.weight, std=std, a=-2 * std, b=2 * std)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
    if hasattr(model, "embed"):
        nn.init.normal_(model.embed.weight, std=1 / math.sqrt(cfg.d_model))
    if cfg.model == "transformer":
        nn.init.normal_(model.unembed, std=1 / math.sqrt(cfg.d_model))
        nn.init.normal_(model.pos, std=0.02)


def check_config(cfg):
    """Raise ValueError naming the first bad model option."""
    choices = dict(model=("transformer", "mlp"), embed=("learned", "onehot"), act=tuple(ACTS),
                   ln=tuple(LN_PLACEMENTS), norm=("layernorm", "rmsnorm"), init=("singh", "nanda"),
                   dtype=("float32", "float64"))
    for k, allowed in choices.items():
        if getattr(cfg, k) not in allowed:
            raise ValueError(f"unknown --{k.replace('_', '-')} {getattr(cfg, k)!r}; "
                             f"choose from {', '.join(allowed)}")
    if cfg.model == "transformer" and cfg.d_model % cfg.n_heads:
        raise ValueError(f"--d-model {cfg.d_model} is not divisible by --n-heads {cfg.n_heads}")
    if cfg.n_layers < 1:
        raise ValueError("--n-layers must be at least 1")


def build_model(cfg):
    """The one way to build a model: from a Config, seeded by cfg.seed."""
    check_config(cfg)
    torch.manual_seed(cfg.seed)
    model = Transformer(cfg) if cfg.model == "transformer" else EmbedMLP(cfg)
    _init(model, cfg)
    return model.to(getattr(torch, cfg.dtype))


class Stacked(torch.nn.Module):
    """R models of one shape trained as one: parameters stacked on a leading run axis and the
    forward vmapped (torch.func), so a GPU runs R small models as one batch. AdamW is
    elementwise, so one step on the stack is R separate steps. An LN placement is code, not
    parameters: each group of consecutive runs with one placement has its own copy of the module."""

    def __init__(self, models):
        super().__init__()
        params, self.bufs = stack_module_state(models)
        self.names = list(params)
        self.flat = torch.nn.ParameterList(params.values())
        self.groups, self.unused = [], []  # [first run, end, module]; per run: parameters it never reads
        for r, m in enumerate(models):
            if not self.groups or m.cfg.ln != models[self.groups[-1][0]].cfg.ln:
                self.groups.append([r, r, copy.deepcopy(m).to("meta")])
                named = list(m.named_parameters())
                out = m(torch.zeros(1, 3, dtype=torch.long, device=named[0][1].device)).sum()
                grads = torch.autograd.grad(out, [p for _, p in named], allow_unused=True)
                unused = {n for (n, _), g in zip(named, grads) if g is None}
            self.groups[-1][1] = r + 1
            self.unused.append(unused)

    def forward(self, x):  # (R, N, 3) -> (R, N, n_out)
        # vmap has no batching rule for the fused attention kernel of deeper models (the
        # general path) and would loop over the runs; the math kernel is matmuls and softmax.
        with sdpa_kernel(SDPBackend.MATH):
            out = [vmap(lambda p, b, xr: functional_call(base, (p, b), (xr,)))(
                {n: p[s:e] for n, p in zip(self.names, self.flat)}, {n: b[s:e] for n, b in self.bufs.items()}, x[s:e])
                for s, e, base in self.groups]
        return out[0] if len(out) == 1 else torch.cat(out)


def named_params(model):
    return list(zip(model.names, model.flat)) if isinstance(model, Stacked) else list(model.named_parameters())


def run_states(model, opt):
    """Each run's model state_dict and AdamW state_dict on the CPU, sliced out of a stack.
    Copied to the CPU once (not per run and tensor), and each slice cloned: torch.save of a
    view would write the whole stack's storage into every run's file."""
    sd = opt.state_dict()
    state = {i: {k: v.cpu() for k, v in st.items()} for i, st in sd["state"].items()}
    if not isinstance(model, Stacked):
        return [({n: t.cpu() for n, t in model.state_dict().items()}, dict(sd, state=state))]
    params = {n: p.detach().cpu() for n, p in named_params(model)}
    return [({n: p[r].clone() for n, p in params.items()},
             dict(sd, state={i: {k: (v[r].clone() if v.dim() else v) for k, v in st.items()} for i, st in state.items()}))
            for r in range(len(model.flat[0]))]


def load_runs(model, opt, cks):
    """Inverse of run_states: load R runs' checkpoints into the (stacked) model and optimizer."""
    sd = cks[0]["optim"]
    if not isinstance(model, Stacked):
        model.load_state_dict(cks[0]["model"])
    else:
        with torch.no_grad():
            for n, p in named_params(model):
                p.copy_(torch.stack([ck["model"][n] for ck in cks]))
        sd["state"] = {i: {k: (torch.stack([ck["optim"]["state"][i][k] for ck in cks]) if v.dim() else v)
                           for k, v in st.items()} for i, st in sd["state"].items()}
    # 'capturable' (CUDA graphs) is this device's setting, not that of the one that saved the run
    sd["param_groups"] = [dict(g, capturable=opt.defaults["capturable"]) for g in sd["param_groups"]]
    opt.load_state_dict(sd)
