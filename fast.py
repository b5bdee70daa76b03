"""
The speed layer: model.py's functions computed faster, and many runs trained as one.

- Table forwards: a one-layer transformer and the embedding-MLP computed on tables of the
  (token, position) rows they can see, gathered per example (bench.py times them).
- Stacked: R runs of one shape as one module, their forwards vmapped (GPU).
- check_forward(): a table forward against model.py's on a probe batch, at the start of every
  training run: after an edit to model.py that the tables do not have, the run trains on
  model.py's own forward (saying so), so an edit is never silently bypassed.
- cuda_graph(), GraphedStep: a whole training step recorded once and replayed (GPU);
  cpu_settings(), adamw_step(): the CPU settings training runs under.

Everything here is a function of a parameter dict P (name -> tensor, model.py's names, read
from the model's NAMES by role), so a single run and a stack of runs (vmapped, or run by run)
share one code path.
"""
import contextlib
import copy
import ctypes
import functools
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, stack_module_state, vmap

from model import ACTS, LN_PLACEMENTS, param_name


def norm(cfg, P, name, x):
    """model.py's norm module `name` (make_norm) as a function of its parameters."""
    if cfg.norm == "layernorm":
        return F.layer_norm(x, (cfg.d_model,), P[name + ".weight"], P[name + ".bias"], cfg.ln_eps)
    return F.rms_norm(x, (cfg.d_model,), P[name + ".weight"], cfg.ln_eps)


def transformer_table(cfg, name, P, alpha, tokens, train=True, cache=None):
    """model.Transformer's logits for one layer. The loss is read at the last position, so
    only that position needs a query, MLP and unembedding, and every value before the
    attention mix depends on (token, position) alone: keys, values and scores are computed
    once per step on the 3 x (p+1) table of possible rows and gathered per example.
    F.embedding gathers, because its backward is a fast dense scatter (advanced indexing's
    index_put_ backward is slow). Position 2 always holds '=': one query, key and value row.
    name(role): the name of the parameter of that role (the model's NAMES; block 0's). A dict
    as cache gets what model.py's forward puts there that the measures read: "attn" (N, H, 1,
    3), "mlp_act", "resid"."""
    place, act = LN_PLACEMENTS[cfg.ln], ACTS[cfg.act]
    H, d = cfg.n_heads, cfg.d_model
    dh = d // H
    E = P[name("embed")]
    table = E.unsqueeze(0) + P[name("pos")].unsqueeze(1)                # (3, V, d)
    qk_in = norm(cfg, P, name("ln1"), table) if place.qk else table
    v_in = norm(cfg, P, name("ln1"), table) if place.v else table
    Wq, Wk, Wv = P[name("attn_in")].chunk(3)
    eq = E.shape[0] - 1                                                 # the '=' token
    q = (qk_in[2, eq] @ Wq.T).view(H, dh) / math.sqrt(dh)               # the one query
    k = (qk_in @ Wk.T).view(3, -1, H, dh)
    scores = torch.einsum("hc,jvhc->jvh", q, k)                        # (3, V, H) score table
    v = v_in @ Wv.T                                                     # (3, V, d) value table
    a, b = tokens[:, 0], tokens[:, 1]
    s = torch.stack([F.embedding(a, scores[0]), F.embedding(b, scores[1]),
                     scores[2, eq].expand(len(a), H)], -1)              # (N, H, 3)
    w = s.softmax(-1)
    if cache is not None:
        cache["attn"] = [w[:, :, None]]                                 # the one query row
    z = (w[..., 0, None] * F.embedding(a, v[0]).view(-1, H, dh)
         + w[..., 1, None] * F.embedding(b, v[1]).view(-1, H, dh)
         + w[..., 2, None] * v[2, eq].view(H, dh))                      # (N, H, dh)
    x = table[2, eq] + z.reshape(-1, d) @ P[name("attn_out")].T       # (N, d)
    if place.post:
        x = norm(cfg, P, name("ln1"), x)
    u = norm(cfg, P, name("ln2"), x) if place.mlp else x
    h = act(F.linear(u, P[name("fc1")], P[name("fc1_bias")]))
    if cfg.dropout:
        h = F.dropout(h, cfg.dropout, train)                            # model.Block's mask
    x = x + F.linear(h, P[name("fc2")], P[name("fc2_bias")])
    if place.post:
        x = norm(cfg, P, name("ln2"), x)
    if cache is not None:
        cache["mlp_act"], cache["resid"] = h, x
    return alpha * (x @ P[name("readout")])


def mlp_table(cfg, name, P, alpha, tokens, train=True, cache=None):
    """model.EmbedMLP's logits. The first layer is linear in each input token's vector,
    fc1([u_a, u_b]) = W_a u_a + W_b u_b + bias, so it runs on the tables E W_a^T and E W_b^T
    (one-hot input: the columns of W themselves) gathered per example, instead of an
    (N, 2d) x (2d, d_mlp) product. With --mlp-eq, '=' is a third input and W a third block.
    name(role, i): the name of the parameter of that role (the model's NAMES; layer i's).
    A dict as cache gets "mlp_act" and "resid" as model.py's forward puts them there."""
    n_in = 3 if cfg.mlp_eq else 2
    W = P[name("first")].chunk(n_in, dim=1)                 # one block of columns per input
    if cfg.embed == "learned":
        tables = [P[name("embed")] @ w.T for w in W]        # (V, d_mlp) each
    else:
        tables = [w.T for w in W]
    act = ACTS[cfg.act]
    h = sum(F.embedding(tokens[:, i], t) for i, t in enumerate(tables))
    if cfg.bias:
        h = h + P[name("first_bias")]
    h = act(h)
    if cache is not None:
        cache["mlp_act"] = h
    for i in range(cfg.n_layers - 1):
        h = act(F.linear(h, P[name("hidden", i)], P.get(name("hidden_bias", i))))
    if cache is not None:
        cache["resid"] = h
    return alpha * F.linear(h, P[name("readout")], P.get(name("readout_bias")))


def has_table(cfg):
    return cfg.model == "mlp" or cfg.n_layers == 1


def forward_fn(model, fast=True):
    """f(P, buffers, tokens, train=True, cache=None) -> logits: the table forward of the
    model's family where it has one and fast is on (one layer, or the MLP), else model.py's
    forward itself (train=False: in eval mode, no dropout; a dict as cache: model.py's cache,
    or what of it the table forward has)."""
    cfg = model.cfg
    if fast and has_table(cfg):
        table = mlp_table if cfg.model == "mlp" else transformer_table
        name = functools.partial(param_name, model)
        return lambda P, buffers, x, train=True, cache=None: table(
            cfg, name, P, buffers["alpha"], x, train, cache)
    base = copy.deepcopy(model).to("meta")  # the code; the parameters come in P

    def reference(P, buffers, x, train=True, cache=None):
        return functional_call(base.train(train), (P, buffers), (x,), dict(cache=cache))
    return reference


MATCHES = 1e-9  # the relative difference in float64 under which two forwards are one function


def check_forward(model, fn, x, y):
    """The relative difference between fn, a forward that would train, and model.py in logits
    and gradients on the probe batch (x, y): above MATCHES, fn is not model.py's function. In
    float64, so rounding cannot hide a real difference; each from one seed, so dropout draws
    the same masks in both, and training's random state is untouched."""
    ref = copy.deepcopy(model).double()
    P, buffers = dict(ref.named_parameters()), dict(ref.named_buffers())

    def seeded(f):
        with torch.random.fork_rng(devices=[x.device.index] if x.is_cuda else []):
            torch.manual_seed(0)
            return f()
    want = seeded(lambda: ref(x))
    got = seeded(lambda: fn(P, buffers, x))
    err = float((got - want).detach().abs().max() / want.detach().abs().max())
    grads = [torch.autograd.grad(F.cross_entropy(out, y), list(P.values()), allow_unused=True)
             for out in (want, got)]
    for gw, gg in zip(*grads):
        if (gw is None) != (gg is None):
            err = max(err, 1.0)
        elif gw is not None:
            err = max(err, float((gg - gw).norm() / gw.norm().clamp_min(1e-300)))
    return err


def unused_params(model, fn):
    """Names of the parameters the forward never reads (an LN that a placement leaves out):
    a lone run's AdamW skips them (no gradient), so in a stack they get weight decay 0."""
    P = dict(model.named_parameters())
    x = torch.zeros(1, 3, dtype=torch.long, device=next(iter(P.values())).device)
    out = fn(P, dict(model.named_buffers()), x).sum()
    grads = torch.autograd.grad(out, list(P.values()), allow_unused=True)
    return {n for n, g in zip(P, grads) if g is None}


class Stacked(nn.Module):
    """R models of one shape trained as one: parameters stacked on a leading run axis and, on a
    GPU, the forward vmapped (torch.func), so it runs R small models as one batch; on a CPU
    run by run, each computed as it would be alone (dropout masks aside: the runs draw them in
    turn from torch's one generator). An LN placement is
    code, not parameters: each group of consecutive runs with one placement has its own
    forward. AdamW is elementwise, so one step on the stack is R separate steps."""

    def __init__(self, models, fast=True, fns=None):
        super().__init__()
        self.NAMES = models[0].NAMES  # the runs' parameter names by role (model.py)
        params, self.bufs = stack_module_state(models)
        self.names = list(params)
        self.flat = nn.ParameterList(params.values())
        if fns is None:
            fns = [forward_fn(m, fast) for m in models]
        # (first run, end, forward) of each stretch of consecutive runs with one placement
        self.groups = []
        first = 0
        for end in range(1, len(models) + 1):
            if end == len(models) or models[end].cfg.ln != models[first].cfg.ln:
                self.groups.append((first, end, fns[first]))
                first = end

    def forward(self, x, train=True):  # (R, N, 3) -> (R, N, n_out)
        if not x.is_cuda:  # a CPU gains nothing from vmap's batched products (bench.py --runs:
            # they copy, and model.py's forward runs ~1.7x slower so): run by run, as alone
            cols = [p.unbind(0) for p in self.flat]  # views; unbind's backward is one stack
            bufs = {n: b.unbind(0) for n, b in self.bufs.items()}
            outs = []
            for first, end, fn in self.groups:
                for r in range(first, end):
                    params = {n: col[r] for n, col in zip(self.names, cols)}
                    outs.append(fn(params, {n: b[r] for n, b in bufs.items()}, x[r], train))
            return torch.stack(outs)
        outs = []
        for first, end, fn in self.groups:
            params = {n: p[first:end] for n, p in zip(self.names, self.flat)}
            bufs = {n: b[first:end] for n, b in self.bufs.items()}
            # dropout: each run its own masks, all from torch's one generator
            batched = vmap(functools.partial(fn, train=train), randomness="different")
            outs.append(batched(params, bufs, x[first:end]))
        if len(outs) == 1:
            return outs[0]
        return torch.cat(outs)


def build_runs(models, fast=True, probe=None, log=print):
    """What train.py steps: the module holding every run's parameters (the model itself, or a
    Stacked one), its forward on (R, N, 3) -> (R, N, n_out), and per run the parameters it
    never reads. probe (x, y): check every distinct table forward against model.py first; where
    one differs (model.py was edited), every run trains on model.py's forward, said in a line."""
    fns = [forward_fn(m, fast) for m in models]
    if probe is not None and fast and has_table(models[0].cfg):
        one_per_placement = {m.cfg.ln: (m, fn) for m, fn in zip(models, fns)}
        err = max(check_forward(m, fn, *probe) for m, fn in one_per_placement.values())
        if err > MATCHES:
            table = "mlp_table" if models[0].cfg.model == "mlp" else "transformer_table"
            log(f"model.py differs from fast.{table} (relative difference {err:.1e} on a probe "
                "batch): training on model.py's own forward, slower a step (the default model: "
                f"~1.7x on a 2-vCPU CPU, BENCHMARKS.md); port the change to fast.{table} for "
                "the speed")
            fns = [forward_fn(m, fast=False) for m in models]
    unused = [unused_params(m, fn) for m, fn in zip(models, fns)]
    if len(models) > 1:
        model = Stacked(models, fast, fns)
        return model, model, unused
    m, fn = models[0], fns[0]

    def forward(x, train=True):  # (1, N, 3) -> (1, N, n_out), as a stack of one
        return fn(dict(m.named_parameters()), dict(m.named_buffers()), x[0], train)[None]
    return m, forward, unused


def named_params(model):
    if isinstance(model, Stacked):
        return list(zip(model.names, model.flat))
    return list(model.named_parameters())


def run_states(model, opt):
    """Each run's model state_dict and optimizer state_dict on the CPU, sliced out of a stack
    (every optimizer state tensor has the run axis first: optim.py's state rule).
    Copied to the CPU once (not per run and tensor), and each slice cloned: torch.save of a
    view would write the whole stack's storage into every run's file."""
    sd = opt.state_dict()
    state = {i: {k: v.cpu() for k, v in st.items()} for i, st in sd["state"].items()}
    if not isinstance(model, Stacked):
        return [({n: t.cpu() for n, t in model.state_dict().items()}, dict(sd, state=state))]
    params = {n: p.detach().cpu() for n, p in named_params(model)}
    runs = []
    for r in range(len(model.flat[0])):
        run_params = {n: p[r].clone() for n, p in params.items()}
        run_state = {i: {k: v[r].clone() for k, v in st.items()} for i, st in state.items()}
        runs.append((run_params, dict(sd, state=run_state)))
    return runs


def load_runs(model, opt, cks):
    """Inverse of run_states: load R runs' checkpoints into the (stacked) model and optimizer."""
    sd = cks[0]["optim"]
    if not isinstance(model, Stacked):
        model.load_state_dict(cks[0]["model"])
    else:
        with torch.no_grad():
            for n, p in named_params(model):
                p.copy_(torch.stack([ck["model"][n] for ck in cks]))
        state = {}
        for i, st in sd["state"].items():  # each state tensor of the runs, stacked on the run axis
            state[i] = {k: torch.stack([ck["optim"]["state"][i][k] for ck in cks]) for k in st}
        sd["state"] = state
    opt.load_state_dict(sd)


def cuda_graph(step, params, opt):
    """Record step() (forward, backward, optimizer) as a CUDA graph, replayed by
    graph.replay(). A small model's eager GPU step is bound by launching its hundreds of small
    kernels, and the full batch never changes, so the step is recorded once. The graph reads
    tensors, not Python numbers: lr and weight decay are tensors updated in place (train.py).
    The warm-up runs that CUDA graphs need (on a side stream: cuBLAS) are undone, the dropout
    masks they draw too (a resumed run records later than a fresh one, and must draw the same
    masks), so training goes on from where it was; the optimizer state must exist already (one
    eager step)."""
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    assert state, "take one eager step before recording: the optimizer state must exist"
    saved = [t.detach().clone() for t in params + state]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.random.fork_rng(devices=[params[0].device]):
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
    with torch.no_grad():
        for t, v in zip(params + state, saved):
            t.copy_(v)
    return graph


class GraphedStep:
    """step() on a GPU, recorded as a CUDA graph (cuda_graph) at its first call and replayed
    at that call and every later one: train.py's step between evaluations. Recorded at a
    call, not when made, because recording needs the optimizer state, which exists only after
    one eager step (the first evaluation's; a resumed run has it from its checkpoint). Call it
    with no autograd graph of an earlier step still referenced: recording needs fresh grad
    nodes."""

    def __init__(self, step, params, opt):
        self.step, self.params, self.opt = step, list(params), opt
        self.graph = None

    def __call__(self):
        if self.graph is None:
            self.graph = cuda_graph(self.step, self.params, self.opt)
        self.graph.replay()


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt options (malloc.h)


def keep_freed_memory():
    """A training step allocates its ~8 MB activations anew, and glibc maps blocks that large
    afresh and unmaps them at free (hundreds to thousands of page faults a step): keep freed
    memory in the heap instead (mallopt M_MMAP_THRESHOLD = -3 and M_TRIM_THRESHOLD = -1, in
    bytes). Process-wide and left on: it changes where memory comes from, never a value."""
    if sys.platform != "linux":
        return
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "mallopt"):  # a C library other than glibc (musl)
        return
    for option in (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD):
        libc.mallopt(option, 1 << 30)


def denormals_flushed():
    """Whether the CPU now flushes float32 denormals to 0 (torch can set this, not read it):
    a denormal times 1."""
    return torch.tensor([1e-40]).mul(1.0).item() == 0


@contextlib.contextmanager
def flush_denormals(flush=True):
    """Within the block, CPU results below float32's normal range (1.2e-38) are flushed to 0
    (flush) or kept; after it, the setting the block found, so that a caller's process (a
    test, a notebook) keeps its own."""
    before = denormals_flushed()
    torch.set_flush_denormal(flush)
    try:
        yield
    finally:
        torch.set_flush_denormal(before)


@contextlib.contextmanager
def cpu_settings():
    """The CPU settings training runs under, set once around the loop: denormals flushed, as
    after grokking gradients and AdamW's state fall below float32's normal range and x86 CPUs
    compute on such values several times slower (no value that matters changes: AdamW with eps
    0 keeps them in its step, see adamw_step); freed memory kept in the heap
    (keep_freed_memory)."""
    keep_freed_memory()
    with flush_denormals(True):
        yield


def adamw_step(opt, keep_denormals):
    """opt.step(), with denormals kept during it when keep_denormals (AdamW with eps 0): it
    then divides m by sqrt(v), and where a gradient stays exactly 0 flushed moments reach 0
    (0 / 0: no step) where kept they stop at the smallest denormal, as in torch's AdamW and on
    a GPU. The forward and backward stay flushed (cpu_settings)."""
    if not keep_denormals:
        opt.step()
        return
    with flush_denormals(False):
        opt.step()
