"""
The update rule: AdamW with per-run learning rates and weight decays, the schedule, and the
embedding learning-rate ratio. The one place to change how parameters move.

    opt = AdamW(params, betas=(0.9, 0.98), eps=1e-8, runs=R)
    set_hyper(opt, names, cfgs, step, ratios, skip)   # each run's lr and wd at this step
    loss.backward(); opt.step()
"""
import torch


class AdamW(torch.optim.Optimizer):
    """torch.optim.AdamW's update, operation for operation (on the CPU a lone run rounds
    exactly as torch's does; tested), with lr and weight decay as tensors: one value per run of
    a stack, set in place before each step (set_hyper), so batched runs differ in them and a
    recorded CUDA graph reads the new values. Everything the update keeps lives in
    self.state[p], which checkpoints, --resume, batched runs and the CUDA graph all carry."""

    def __init__(self, params, betas, eps, runs=1):
        # capturable: torch's load_state_dict then puts 'step' on the parameter's device
        super().__init__(params, dict(betas=betas, eps=eps, capturable=True))
        # per parameter (runs,) float64, a value per run; not state: set_hyper sets them anew
        new = lambda p: torch.zeros(runs, dtype=torch.float64, device=p.device)
        self.lr, self.wd = ([new(p) for p in self.param_groups[0]["params"]] for _ in "lw")
        self.values = [None] * len(self.lr)  # what they hold, on the host

    def set_hyper(self, lr, wd):
        """lr and weight decay, per parameter a list of one value per run: copied in place (a
        recorded CUDA graph reads these tensors), only when they change, and to a GPU from
        pinned memory without waiting for it."""
        for i, values in enumerate(zip(lr, wd)):
            if values != self.values[i]:
                self.values[i] = values
                for t, v in zip((self.lr[i], self.wd[i]), values):
                    src = torch.tensor(v, dtype=torch.float64)
                    t.copy_(src.pin_memory() if t.is_cuda else src, non_blocking=True)

    def direction(self, p, grad, state):
        """The gradient the moments see: the one place for a gradient filter. Keep what it
        needs in `state`, as tensors shaped like p (in a stack, one slice per run)."""
        return grad

    @torch.no_grad()
    def step(self):
        (b1, b2), eps = self.defaults["betas"], self.defaults["eps"]
        for p, lr, wd in zip(self.param_groups[0]["params"], self.lr, self.wd):
            if p.grad is None:  # a parameter this run never reads
                continue
            s = self.state[p]
            if not s:  # torch.optim.AdamW's names and types
                s["step"] = torch.zeros((), dtype=torch.float32, device=p.device)
                s["exp_avg"], s["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
            grad = self.direction(p, p.grad, s)
            per_run = lambda t: t.to(p.dtype).view(-1, *[1] * (p.dim() - 1))  # (R, 1, ...)
            s["step"] += 1
            p.mul_(per_run(1 - lr * wd))
            s["exp_avg"].lerp_(grad, 1 - b1)
            s["exp_avg_sq"].mul_(b2).addcmul_(grad, grad, value=1 - b2)
            # a CUDA graph cannot read a host number; on the CPU a Python one, as torch's AdamW
            t = s["step"].double() if p.is_cuda else s["step"].item()
            denom = (s["exp_avg_sq"].sqrt() / (1 - b2 ** t) ** 0.5).add_(eps)
            p.add_(s["exp_avg"] * per_run(-(lr / (1 - b1 ** t))) / denom)


def schedule(cfg, step):
    """(lr, weight decay) of a run at `step`: the one place for a schedule. Nanda et al.'s
    linear warm-up gives step 0 lr 0."""
    f = min(step / cfg.warmup, 1.0) if cfg.warmup else 1.0
    lr = cfg.lr / (cfg.alpha ** 2 if cfg.alpha_lr else 1)
    return lr * f, cfg.wd * (1e-3 / cfg.lr if cfg.fix_wd else 1.0)


@torch.no_grad()
def emb_lr_ratio(P, cfg, f_E):
    """Embedding lr / lr of a run with parameters P (name -> tensor). 'auto' is AlQuabeh et
    al.'s rule c = s_max(E)/s_max(W) * f_W/f_E: W the first layer after the embedding; f the
    fraction of steps in which a block gets a gradient: f_W = 1 (every step), f_E =
    data.token_frequency (1 with full batches)."""
    if cfg.emb_lr_ratio != "auto":
        return float(cfg.emb_lr_ratio)
    W = P["fc1.weight" if cfg.model == "mlp" else "blocks.0.attn.in_proj_weight"]
    E = P["embed.weight"][:cfg.p]
    return float(torch.linalg.matrix_norm(E, 2) / torch.linalg.matrix_norm(W, 2) / f_E)


def set_hyper(opt, names, cfgs, step, ratios, skip):
    """Each run's lr and weight decay at `step`, per parameter, into the optimizer; returns
    the runs' (lr, wd). skip[r]: the parameters run r never reads (weight decay 0)."""
    hyper = [schedule(c, step) for c in cfgs]
    opt.set_hyper([[lr * (ratios[r] if n == "embed.weight" else 1)
                    for r, (lr, _) in enumerate(hyper)] for n in names],
                  [[0.0 if n in skip[r] else wd for r, (_, wd) in enumerate(hyper)]
                   for n in names])
    return hyper
