"""
The update rule: AdamW with per-run learning rates and weight decays, the schedule, and the
embedding learning-rate ratio. The one place to change how parameters move.

    opt = AdamW(params, betas=(0.9, 0.98), eps=1e-8, runs=R)
    set_hyper(opt, names, cfgs, step, ratios, unused, model.NAMES)  # lr, wd at this step
    loss.backward()
    opt.step()

The state rule: every tensor in the optimizer's state carries the run axis. In a stack of R runs
its first axis is the run (a per-run scalar has shape (R,)); in a lone run it has the same shape
without that axis. AdamW.run_zeros makes one, and AdamW.step refuses any other in a stack, so
that checkpoints slice into runs and stack again (fast.run_states, fast.load_runs).
"""
import torch

from runfiles import Stop


class AdamW(torch.optim.Optimizer):
    """torch.optim.AdamW's update, operation for operation (on the CPU a lone run rounds
    exactly as torch's does; tested), with lr and weight decay as tensors: one value per run of
    a stack, set in place before each step (set_hyper), so batched runs differ in them and a
    recorded CUDA graph reads the new values. Everything the update keeps lives in
    self.state[p], which checkpoints, --resume, batched runs and the CUDA graph all carry, as
    tensors that follow the state rule (run_zeros).

    The interventions (grokking accelerators, compared on one model), each one switch here:
    coupled: Adam with L2 (torch.optim.Adam's weight_decay: wd * p joins the gradient) instead
    of decoupled decay; grokfast ("ema", alpha, lamb) or ("ma", window, lamb): Lee et al.'s
    gradient filters; orthograd: Prieto et al.'s gradient with its component along the weights
    removed; muon: the parameters that Muon moves instead (matrices; torch.optim.Muon's update,
    with the lr scaled to match AdamW's update size)."""

    def __init__(self, params, betas, eps, runs=1, coupled=False, grokfast=None,
                 orthograd=False, muon=()):
        # capturable: torch's load_state_dict then puts 'step' on the parameter's device
        super().__init__(params, dict(betas=betas, eps=eps, capturable=True))
        # per parameter (runs,) float64, a value per run; not state: set_hyper sets them anew
        params = self.param_groups[0]["params"]
        self.lr = [torch.zeros(runs, dtype=torch.float64, device=p.device) for p in params]
        self.wd = [torch.zeros(runs, dtype=torch.float64, device=p.device) for p in params]
        self.values = [None] * len(params)  # what they hold, on the host
        self.runs, self.stacked = runs, runs > 1
        self.coupled, self.grokfast = coupled, grokfast
        self.orthograd, self.muon = orthograd, {id(p) for p in muon}

    def run_zeros(self, p, *shape, dtype=None):
        """A new state tensor of p that holds `shape` per run: (R, *shape) in a stack of R runs,
        `shape` alone (a per-run scalar: run_zeros(p)). The only shape the state rule allows."""
        return run_zeros(p, self.stacked, *shape, dtype=dtype)

    def set_lr_wd(self, lr, wd):
        """lr and weight decay, per parameter a list of one value per run: copied in place (a
        recorded CUDA graph reads these tensors), only when they change, and to a GPU from
        pinned memory without waiting for it."""
        for i, values in enumerate(zip(lr, wd)):
            if values != self.values[i]:
                self.values[i] = values
                for target, v in zip((self.lr[i], self.wd[i]), values):
                    src = torch.tensor(v, dtype=torch.float64)
                    target.copy_(src.pin_memory() if target.is_cuda else src, non_blocking=True)

    def direction(self, p, grad, state):
        """The gradient the update sees: the one place for a gradient filter. Keep what it
        needs in `state`, made with self.run_zeros or shaped like p (the state rule)."""
        if self.orthograd:
            grad = orthogonal(p, grad, self.stacked)
        if self.grokfast:
            grad = grokfast(grad, state, *self.grokfast, self.stacked)
        return grad

    @torch.no_grad()
    def step(self):
        b1, b2 = self.defaults["betas"]
        eps = self.defaults["eps"]
        for p, lr, wd in zip(self.param_groups[0]["params"], self.lr, self.wd):
            if p.grad is None:  # a parameter this run never reads
                continue
            s = self.state[p]
            if id(p) in self.muon:
                muon_step(p, self.direction(p, p.grad, s), s, per_run(lr, p), per_run(wd, p))
                self.check_state(s, p)
                continue
            if "step" not in s:  # torch.optim.AdamW's names and types, one step count per run
                s["step"] = self.run_zeros(p, dtype=torch.float32)
                s["exp_avg"], s["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
            grad = self.direction(p, p.grad, s)
            self.check_state(s, p)
            s["step"] += 1
            if self.coupled:
                grad = grad + p * per_run(wd, p)
            else:
                p.mul_(per_run(1 - lr * wd, p))
            s["exp_avg"].lerp_(grad, 1 - b1)
            s["exp_avg_sq"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
            bias1, bias2_sqrt = self.bias_corrections(s["step"])
            if self.stacked:
                bias2_sqrt = per_run(bias2_sqrt, p)
            denom = (s["exp_avg_sq"].sqrt() / bias2_sqrt).add_(eps)
            step = s["exp_avg"] * per_run(-(lr / bias1), p) / denom
            if eps == 0:  # moments exactly 0 (a parameter one run of a stack never reads): 0/0
                step = torch.where(denom > 0, step, 0.0)
            p.add_(step)

    def bias_corrections(self, step):
        """Adam's 1 - b1^t and sqrt(1 - b2^t) at each run's step count t. On a GPU as tensors
        (a CUDA graph cannot read a host number); on the CPU computed in Python, as torch's
        AdamW does, so that a lone run rounds as torch's: numbers alone, and in a stack float64
        tensors (R,) of the same numbers, so that each run rounds as it would alone."""
        b1, b2 = self.defaults["betas"]
        if step.is_cuda:
            t = step.double()
            return 1 - b1 ** t, (1 - b2 ** t) ** 0.5
        if not self.stacked:
            t = step.item()
            return 1 - b1 ** t, (1 - b2 ** t) ** 0.5
        counts = step.tolist()
        bias1 = torch.tensor([1 - b1 ** t for t in counts], dtype=torch.float64)
        bias2_sqrt = torch.tensor([(1 - b2 ** t) ** 0.5 for t in counts], dtype=torch.float64)
        return bias1, bias2_sqrt

    def check_state(self, state, p):
        """The state rule, checked where it matters, in a stack: every state tensor's first
        axis is the run. A lone run's state has no run axis to check."""
        if not self.stacked:
            return
        for name, v in state.items():
            if v.dim() == 0 or v.shape[0] != self.runs:
                raise Stop(f"optimizer state {name!r} has shape {tuple(v.shape)} in a stack of "
                           f"{self.runs} runs: every state tensor needs the run axis first "
                           f"(make it with AdamW.run_zeros, or shaped like the parameter)")


def run_zeros(p, stacked, *shape, dtype=None):
    """Zeros on p's device in p's dtype (or `dtype`) of shape (R, *shape) if p is a stack of R
    runs (stacked), else `shape`: optimizer state as the state rule wants it."""
    runs = (len(p),) if stacked else ()
    return torch.zeros(runs + shape, dtype=dtype or p.dtype, device=p.device)


def per_run(v, p):
    """A value per run, (R,) in a stack (or () alone), in p's dtype and shaped (R, 1, ...) to
    broadcast against p: each run's slice of p meets its own value."""
    return v.to(p.dtype).view(-1, *[1] * (p.dim() - 1))


def per_run_flat(t, stacked):
    """t with each run's values in one row: (R, n) in a stack, (1, n) alone."""
    return t.reshape(len(t) if stacked else 1, -1)


def orthogonal(p, grad, stacked):
    """Prieto et al.'s ⊥Grad: the gradient less its projection on the weights (each run's
    parameter tensor flattened), rescaled to the gradient's norm (their orthograd.py)."""
    w, g = per_run_flat(p, stacked), per_run_flat(grad, stacked)
    proj = (w * g).sum(1, keepdim=True) / ((w * w).sum(1, keepdim=True) + 1e-30)
    g_orth = g - proj * w
    scale = g.norm(dim=1, keepdim=True) / (g_orth.norm(dim=1, keepdim=True) + 1e-30)
    return (g_orth * scale).view_as(grad)


def grokfast(grad, state, kind, a, lamb, stacked):
    """Lee et al.'s Grokfast: grad + lamb * (a low-pass filter of the gradients). 'ema': an
    exponential average with decay a, started at the first gradient; 'ma': the mean of the
    last a gradients, applied once a of them are in (their warm-up), kept in a ring buffer
    with the window after the run axis, so a stack's state slices per run."""
    if kind == "ema":
        if "grokfast_ema" not in state:
            state["grokfast_ema"] = grad.clone()
        ema = state["grokfast_ema"]
        ema.copy_(ema * a + grad * (1 - a))  # their order of operations
        return grad + ema * lamb
    window = int(a)
    if "grokfast_ring" not in state:
        # (R, window, ...) in a stack, (window, ...) alone
        state["grokfast_ring"] = run_zeros(grad, stacked, window, *grad.shape[stacked:])
        # gradients seen, per run; in the parameter's dtype: torch's load_state_dict casts
        # every state tensor to it
        state["grokfast_count"] = run_zeros(grad, stacked)
    ring, count = state["grokfast_ring"], state["grokfast_count"]
    slot = (count % window).long()  # where this gradient goes, per run
    if stacked:
        ring.index_put_((torch.arange(len(ring), device=ring.device), slot), grad)
    else:
        ring.index_copy_(0, slot.view(1), grad.unsqueeze(0))
    count += 1
    # a tensor, not a branch: a CUDA graph replays it
    full = per_run(count >= window, grad)
    return grad + ring.sum(int(stacked)) / window * lamb * full


MUON = dict(momentum=0.95, ns=(3.4445, -4.7750, 2.0315), steps=5, eps=1e-7)  # torch's defaults


def newton_schulz(G):
    """torch.optim.Muon's orthogonalisation of a matrix (bfloat16, 5 quintic steps); of a stack
    (R, A, B) matrix by matrix, so that a batched run rounds as a lone one."""
    if G.dim() == 3:
        return torch.stack([newton_schulz(g) for g in G])
    a, b, c = MUON["ns"]
    X = G.bfloat16()
    tall = G.size(0) > G.size(1)
    if tall:
        X = X.T
    X.div_(X.norm().clamp(min=MUON["eps"]))
    for _ in range(MUON["steps"]):
        gram = X @ X.T
        X = torch.addmm(X, torch.addmm(gram, gram, gram, beta=b, alpha=c), X, beta=a)
    return X.T if tall else X


def muon_step(p, grad, s, lr, wd):
    """torch.optim.Muon's update (nesterov momentum 0.95, decoupled weight decay), its lr
    scaled by 0.2 sqrt(max(A, B)) ('match_rms_adamw', Moonshot AI): so AdamW's lr and wd carry
    over, and a comparison at one lr is fair."""
    if "momentum_buffer" not in s:
        s["momentum_buffer"] = torch.zeros_like(p)
    buf, mu = s["momentum_buffer"], MUON["momentum"]
    buf.lerp_(grad, 1 - mu)
    update = newton_schulz(grad.lerp(buf, mu))
    p.mul_(1 - lr * wd)
    p.add_(update * (-lr * 0.2 * max(p.shape[-2:]) ** 0.5))


def make_optimizer(cfg, named, runs, roles):
    """The optimizer cfg asks for, over the (name, parameter) pairs of R runs; roles: the
    model's NAMES (model.py), which say which parameter is which."""
    filters = {"ema": ("ema", cfg.gf_alpha, cfg.gf_lamb), "ma": ("ma", cfg.gf_window, cfg.gf_lamb),
               "none": None}
    muon = []
    if cfg.optimizer == "muon":
        # Muon moves the hidden matrices only (Jordan et al.): not the embeddings, positions or
        # readout, and no vector
        run_axis = 1 if runs > 1 else 0
        not_hidden = {roles[role] for role in ("embed", "pos", "readout") if role in roles}
        muon = [p for name, p in named if p.dim() - run_axis == 2 and name not in not_hidden]
    return AdamW([p for _, p in named], cfg.betas, cfg.eps, runs, coupled=cfg.optimizer == "adam",
                 grokfast=filters[cfg.grokfast], orthograd=cfg.orthograd, muon=muon)


def schedule(cfg, step):
    """(lr, weight decay) of a run at `step`: the one place for a schedule. Nanda et al.'s
    linear warm-up gives step 0 lr 0. (A schedule over the run's length would read cfg.steps,
    which --resume may extend: give such a schedule an option of its own for its length.)"""
    lr, wd = cfg.lr, cfg.wd
    if cfg.alpha_lr:
        lr = lr / cfg.alpha ** 2
    if cfg.warmup:
        lr = lr * min(step / cfg.warmup, 1.0)
    if cfg.fix_wd:
        wd = wd * (1e-3 / cfg.lr)
    return lr, wd


@torch.no_grad()
def emb_lr_ratio(P, cfg, embed_frequency, roles):
    """Embedding lr / lr of a run with parameters P (name -> tensor; roles: the model's NAMES).
    'auto' is AlQuabeh et al.'s rule c = s_max(E)/s_max(W) * f_W/f_E: W the first layer after
    the embedding; f the fraction of steps in which a block gets a gradient: f_W = 1 (every
    step), f_E = embed_frequency (data.token_frequency; 1 with full batches)."""
    if cfg.emb_lr_ratio != "auto":
        return float(cfg.emb_lr_ratio)
    W, embed = P[roles["first"]], P[roles["embed"]]
    ids = torch.arange(cfg.p, device=embed.device)
    E = embed[torch.cat([ids, ids + cfg.b_offset]).unique()]  # both operands' rows
    ratio = torch.linalg.matrix_norm(E, 2) / torch.linalg.matrix_norm(W, 2) / embed_frequency
    return float(ratio)


def set_hyper(opt, names, cfgs, step, ratios, unused, roles):
    """Each run's lr and weight decay at `step` (schedule), per parameter, into the optimizer;
    returns the runs' [(lr, wd), ...]. ratios[r]: run r's embedding lr ratio; unused[r]: the
    names of the parameters run r never reads (weight decay 0, as a lone run never steps them);
    roles: the model's NAMES, which name the embedding."""
    lr_wd = [schedule(cfg, step) for cfg in cfgs]
    lrs, wds = [], []  # per parameter, a value per run
    for name in names:
        if name == roles["embed"]:
            lrs.append([lr * ratios[r] for r, (lr, _) in enumerate(lr_wd)])
        else:
            lrs.append([lr for lr, _ in lr_wd])
        wds.append([0.0 if name in unused[r] else wd for r, (_, wd) in enumerate(lr_wd)])
    opt.set_lr_wd(lrs, wds)
    return lr_wd
