"""
A transformer run's checkpoint as a TransformerLens HookedTransformer: its hooks, run_with_cache
and head/neuron tools on the weights we trained, unchanged. TransformerLens is a test-only
dependency (pip install -r requirements-test.txt); train.py and analyze.py never import it.

    python tl_export.py runs/ln-pre_s0                # last checkpoint -> RUN/transformer_lens.pt
    python tl_export.py runs/ln-pre_s0 --step 2000 --out pre_2000.pt

    from tl_export import hooked_transformer, load
    model = hooked_transformer("runs/ln-pre_s0")      # its last checkpoint (step=N: that one)
    model = load("runs/ln-pre_s0/transformer_lens.pt")  # or the command's file
    logits, cache = model.run_with_cache(tokens)      # tokens (N, 3) = [a, b, '='], data.all_pairs
    cache["pattern", 0][:, 2, -1]                     # head 2's attention from '=' to a, b, '='

The export is model.py's function in eval mode, float rounding aside: logits[:, -1] of the
HookedTransformer are model(tokens) (TransformerLens reads logits out at every position; ours
at the last; --dropout, a training-time mask, has no counterpart and needs none). Its
weights are the run's as they are: no LayerNorm folding, no centering, the readout scale alpha
folded into W_U = alpha * unembed (alpha * (x @ unembed) = x @ W_U), zero attention and
unembedding biases.
Supported: --ln off and --ln pre transformers (--norm layernorm or rmsnorm). Not expressible:
a HookedTransformer norms the whole attention input (ln1) and the MLP input (ln2) or nothing,
so the other placements are refused, as is the embedding-MLP. Our model has no final norm;
TransformerLens has no option for "block norms but no final norm", so ln_final is replaced by
an identity (NoFinalNorm). The cache's apply_ln at the final layer then works where it calls
ln_final (accumulated_resid) and fails where it would divide by a cached LayerNorm scale
(decompose_resid, stack_head_results, logit_attrs: KeyError ln_final.hook_scale); there,
apply_ln=False is the model's computation (logits = resid_post[-1] @ W_U).
"""
import argparse
import os
import sys
import warnings

import torch
import torch.nn as nn

from config import Config
from model import LN_PLACEMENTS, build_model
from runfiles import (CHECKPOINT, ArgumentParser, Stop, checkpoint_paths, load_checkpoint,
                      message, printable, save_atomic)

OUT = "transformer_lens.pt"  # the command's file in the run folder
SUPPORTED = ("off", "pre")   # the --ln placements a HookedTransformer computes
NORMS = {"layernorm": "LN", "rmsnorm": "RMS"}  # --norm -> normalization_type (with weights)
ACTS = {"gelu": "gelu", "relu": "relu"}  # TransformerLens's "gelu" is F.gelu, exact erf


class NoFinalNorm(nn.Module):
    """ln_final of a model without a final norm: the residual stream as it is. It keeps the
    hook_normalized of TransformerLens's norms, so a cache has ln_final.hook_normalized as for
    any model, but no hook_scale: the cache's apply_ln at the final layer by a cached scale,
    which would center the stream as for a LayerNorm, fails instead of being silently wrong."""

    def __init__(self):
        super().__init__()
        from transformer_lens.hook_points import HookPoint
        self.hook_normalized = HookPoint()

    def forward(self, x):
        return self.hook_normalized(x)


def transformer_lens():
    """(HookedTransformer, HookedTransformerConfig), or Stop saying how to install them."""
    try:
        from transformer_lens import HookedTransformer, HookedTransformerConfig
    except ImportError as e:  # not installed, or 4.x, which removed HookedTransformer
        raise Stop(f"no TransformerLens HookedTransformer ({message(e)}): "
                   "pip install -r requirements-test.txt") from None
    return HookedTransformer, HookedTransformerConfig


def checkpoint_file(path, step=None):
    """The checkpoint file of `path`: a run folder's last, or its one at `step`; or `path`
    itself, a checkpoint file."""
    where = printable(path)
    if os.path.isfile(path):
        if step is not None:
            raise Stop(f"--step picks a checkpoint of a run folder; {where} is a file")
        return path
    if not os.path.isdir(path):
        raise Stop(f"{where} is not a run folder or a checkpoint file")
    paths, _ = checkpoint_paths(path)
    if not paths:
        raise Stop(f"{where}: no checkpoints (ckpt/step_XXXXXX.pt)")
    if step is None:
        return paths[-1]
    steps = {int(CHECKPOINT.fullmatch(os.path.basename(q))[1]): q for q in paths}
    if step not in steps:
        raise Stop(f"{where}: no checkpoint of step {step}; its {len(steps)} checkpoints are of "
                   f"steps {min(steps)} to {max(steps)}")
    return steps[step]


def normed(place):
    """What a placement (model.LN) norms, in words."""
    if place.post:
        return "the residual stream after each sublayer"
    parts = []
    if place.qk or place.v:
        parts.append("the attention input" if place.qk and place.v else
                     "attention's query and key input" if place.qk else "attention's value input")
    if place.mlp:
        parts.append("the MLP input")
    return " and ".join(parts) + (" only" if len(parts) == 1 else "")


def run_config(ck, where):
    """The checkpoint's Config, checked to be one a HookedTransformer can compute."""
    try:
        cfg = Config.saved(ck["config"])
    except (ValueError, TypeError) as e:  # unknown or missing keys, a field of another type
        raise Stop(f"{where}: its config is not a run's ({message(e)})") from None
    cfg.check()
    need = "TransformerLens export supports --ln off and --ln pre transformers"
    if cfg.model != "transformer":
        raise Stop(f"{need}; this run is --model {cfg.model} (the embedding-MLP)")
    if cfg.ln not in SUPPORTED:
        raise Stop(f"{need} (a HookedTransformer norms the whole attention input and the MLP "
                   f"input, or nothing); this run is --ln {cfg.ln}, a norm on "
                   f"{normed(LN_PLACEMENTS[cfg.ln])}")
    if cfg.act not in ACTS:
        raise Stop(f"TransformerLens export supports --act {', '.join(ACTS)}; this run is "
                   f"--act {cfg.act}")
    return cfg


def tl_config(cfg):
    """HookedTransformerConfig's keyword arguments for cfg's transformer: plain values (a
    weights-only torch.load reads them back)."""
    return dict(
        n_layers=cfg.n_layers, d_model=cfg.d_model, n_heads=cfg.n_heads,
        d_head=cfg.d_model // cfg.n_heads, d_mlp=cfg.d_mlp, n_ctx=3,  # [a, b, '=']
        d_vocab=cfg.n_vocab, d_vocab_out=cfg.n_out, act_fn=ACTS[cfg.act],
        normalization_type=None if cfg.ln == "off" else NORMS[cfg.norm], eps=cfg.ln_eps,
        attention_dir="causal" if cfg.causal else "bidirectional",
        positional_embedding_type="standard", dtype=getattr(torch, cfg.dtype),
        # the weights are ours: no random init (nor its seeding of every RNG), on the CPU
        # rather than TransformerLens's pick of device (the caller may .to() it)
        init_weights=False, device="cpu", default_prepend_bos=False, model_name="grokking")


def tl_state(model):
    """model.py's Transformer's weights by TransformerLens's names and layouts."""
    cfg = model.cfg
    H, d = cfg.n_heads, cfg.d_model
    dh = d // H
    zero = dict(dtype=model.pos.dtype)
    state = {"embed.W_E": model.embed.weight, "pos_embed.W_pos": model.pos,
             # logits = alpha * x @ unembed, with alpha the buffer (the run's dtype, from a
             # float32 tensor, as build_model makes it): folded, it is the same function
             "unembed.W_U": model.alpha * model.unembed,
             "unembed.b_U": torch.zeros(cfg.n_out, **zero)}
    for i, blk in enumerate(model.blocks):
        b = f"blocks.{i}."
        # in_proj_weight is W_Q, W_K, W_V stacked, each (d_out, d_in) with the heads' d_head
        # rows side by side: row h * dh + j is head h's j-th; TransformerLens: [H, d_in, dh]
        for name, w in zip("QKV", blk.attn.in_proj_weight.chunk(3)):
            state[b + f"attn.W_{name}"] = w.view(H, dh, d).transpose(1, 2)
            state[b + f"attn.b_{name}"] = torch.zeros(H, dh, **zero)
        # out_proj maps the heads' outputs side by side: column h * dh + j; TL: [H, dh, d]
        state[b + "attn.W_O"] = blk.attn.out_proj.weight.T.reshape(H, dh, d)
        state[b + "attn.b_O"] = torch.zeros(d, **zero)
        state[b + "mlp.W_in"], state[b + "mlp.b_in"] = blk.fc1.weight.T, blk.fc1.bias
        state[b + "mlp.W_out"], state[b + "mlp.b_out"] = blk.fc2.weight.T, blk.fc2.bias
        if cfg.ln != "off":  # pre: ln1 on the attention input, ln2 on the MLP input, as TL's
            for n in ("ln1", "ln2"):
                state[b + f"{n}.w"] = getattr(blk, n).weight
                if cfg.norm == "layernorm":
                    state[b + f"{n}.b"] = getattr(blk, n).bias
    return {k: v.detach().contiguous() for k, v in state.items()}


def build(kw, state):
    """A HookedTransformer of config kwargs kw in eval mode, without a final norm, holding
    `state` (every parameter named; buffers may be left out) as it is."""
    HookedTransformer, HookedTransformerConfig = transformer_lens()
    with warnings.catch_warnings():  # 3.x says HookedTransformer goes in 4.0: we pin 3.x
        warnings.simplefilter("ignore", DeprecationWarning)
        model = HookedTransformer(HookedTransformerConfig(**kw))
    if kw["normalization_type"] is not None:
        model.ln_final = NoFinalNorm()  # our blocks' norms, but none before the unembedding
        model.setup()  # the hook names again, now with this module's
    full = model.state_dict()
    unknown = set(state) - set(full)
    missing = {n for n, _ in model.named_parameters()} - set(state)
    if unknown or missing:  # a TransformerLens whose names differ from what we wrote
        raise Stop(f"this TransformerLens names its parameters otherwise (missing "
                   f"{sorted(missing)[:3]}, unknown {sorted(unknown)[:3]}): "
                   "pip install -r requirements-test.txt")
    # a strict load of the weights as they are: TransformerLens's load_and_process_state_dict
    # (even with fold_ln, centering and fold_value_biases off) loads key by key, not strictly
    model.load_state_dict({**full, **state}, strict=True)
    return model.eval()


def export(path, step=None):
    """(HookedTransformer, its config kwargs, the checkpoint's step) of `path`."""
    where = checkpoint_file(path, step)
    ck = load_checkpoint(where)
    cfg = run_config(ck, printable(where))
    transformer_lens()  # missing: said before any work
    with torch.random.fork_rng(devices=[]):  # build_model seeds torch: keep the caller's RNG
        ours = build_model(cfg)
    try:
        ours.load_state_dict(ck["model"])
    except RuntimeError as e:  # names or shapes of another model.py
        lines = [s.strip() for s in str(e).splitlines()[1:] if s.strip()]
        raise Stop(f"{printable(where)} does not fit this model.py "
                   f"({lines[0] if lines else 'other parameters'})") from None
    kw = tl_config(cfg)
    return build(kw, tl_state(ours.eval())), kw, ck["step"]


def hooked_transformer(path, step=None):
    """A transformer_lens.HookedTransformer, in eval mode, computing run folder `path`'s last
    checkpoint (or its one at `step`), or checkpoint file `path`."""
    return export(path, step)[0]


def save(model, kw, path, step=None):
    """model (of config kwargs kw) to `path`, whole or not at all; load() reads it."""
    save_atomic({"cfg": kw, "state_dict": model.state_dict(), "step": step}, path)


def load(path):
    """The HookedTransformer of a file of save() (or the command), in eval mode."""
    try:
        d = torch.load(path, map_location="cpu", weights_only=True)
        kw, state = d["cfg"], d["state_dict"]
    except FileNotFoundError:
        raise Stop(f"missing {printable(path)}") from None
    except Exception as e:  # cut short, not a zip, not our dict
        raise Stop(f"{printable(path)} is not an export of tl_export.py ({message(e)})") from None
    return build(kw, state)


def main(argv=None):
    ap = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", metavar="RUN_DIR",
                    help="a run folder (or a checkpoint file, with --out)")
    ap.add_argument("--step", type=int, help="the checkpoint of this step (default: the last)")
    ap.add_argument("--out", metavar="FILE", help=f"where to write (default: RUN_DIR/{OUT})")
    args = ap.parse_args(argv)
    try:
        if args.out is None and os.path.isfile(args.run):
            raise Stop(f"{printable(args.run)} is a checkpoint file: say where to write, --out")
        out = args.out or os.path.join(args.run, OUT)
        folder = os.path.dirname(out) or "."
        if args.out and not os.path.isdir(folder):  # before the work; torch.save's error is long
            raise Stop(f"cannot write {printable(out)}: no folder {printable(folder)}")
        model, kw, step = export(args.run, args.step)
        save(model, kw, out, step)
    except Stop as e:
        sys.exit(f"error: {e}")
    except KeyboardInterrupt:  # save_atomic leaves no temp file
        sys.exit("error: interrupted; nothing written")
    print(f"wrote {printable(out)}: step {step}; tl_export.load({printable(out)!r}) reads it")


if __name__ == "__main__":
    main()
