"""
Every option of a run in one place: `Config` (its fields with their --help text, its check), the
choices and least values `check` enforces, and the papers' presets.

    from config import Config, PRESETS
    cfg = Config(**{**PRESETS["nanda"], "seed": 1})   # a preset, then the options given
    cfg.check()                                        # Stop naming the first bad option

One config module, not options split by who reads them: one Config is saved with every checkpoint
(config.json, ck["config"]) and read back whole by the model, training and analysis alike, so its
fields, defaults and check live together. The choices of --op, --ln and --act are read from the
registries of data.py and model.py: a new row there is a valid value here with no edit.
"""
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Optional

from data import OPS, SPLITS
from model import ACTS, LN_PLACEMENTS
from runfiles import Stop

# the values of each option that takes one of a set (--op, --ln, --act: their registries' keys)
CHOICES = dict(op=tuple(OPS), split=SPLITS, model=("transformer", "mlp"),
               embed=("learned", "onehot"), act=tuple(ACTS), ln=tuple(LN_PLACEMENTS),
               norm=("layernorm", "rmsnorm"), init=("singh", "kaiming", "nanda", "gu", "torch"),
               dtype=("float32", "float64"), loss_dtype=("float16", "float32", "float64"),
               sampling=("random", "balanced"), optimizer=("adamw", "adam", "muon"),
               split_rng=("torch", "singh", "nanda"),
               grokfast=("none", "ema", "ma"), loss=("ce", "stablemax"))
# the least value of each integer option: p 2, a seed or an offset 0, the others 1
MINIMUMS = dict(p=2, n_layers=1, d_model=1, n_heads=1, d_mlp=1, steps=1, eval_every=1,
                ckpt_every=1, gf_window=1, seed=0, data_seed=0,
                b_offset=0)


# the sections of Config's fields, each named at its first field (train.py --help's groups)
SECTIONS = dict(p="task", model="model", lr="optimization",
                steps="steps and precision")


# options of older runs' saved configs that no code reads any more: dropped when read
RETIRED = ("schedule_steps",)
SAVED = ("model", "op", "p", "seed", "steps")  # in every config.json train.py has ever written


def option(default, help):
    """A Config field with its --help text beside it."""
    return field(default=default, metadata=dict(help=help))


@dataclass
class Config:
    # task
    p: int = option(113, "modulus; the vocabulary is p operands and '='")
    op: str = option("add", "operation (a2+ab+b2: a^2 + ab + b^2, Gu et al.)")
    frac: float = option(0.3, "fraction of all pairs used for training")
    split: str = option("random", "training pairs: random; balanced (every operand equally often); "
                        "square or strip (a dug-out region, Gu et al.)")
    hole: int = option(0, "size K of the dug-out square {a,b<=K} or strip {a<=K}")
    b_offset: int = option(0, "token of the second operand b is b + this: 0 one vocabulary "
                           "for both operands; p their own ranges (Gu et al.'s strips: 60)")
    seed: int = option(0, "seed of the split and the initial weights")
    data_seed: Optional[int] = option(None, "split's seed (default: --seed); one, or one per "
                                      "--seed")
    split_rng: str = option("torch", "split drawn as torch, or as Singh's or Nanda's code shuffles")
    # model
    model: str = option("transformer", "the one-layer transformer, or the embedding-MLP "
                        "(AlQuabeh et al.)")
    embed: str = option("learned", "mlp only: learned embeddings, or one-hot operands")
    mlp_eq: bool = option(False, "mlp: the '=' token's embedding is a third input (Gu et al.)")
    bias: bool = option(True, "mlp: biases in its layers (--no-bias: Prieto et al.)")
    n_layers: int = option(1, "transformer blocks; mlp: hidden layers (Gu et al.'s DNN: 2)")
    d_model: int = option(128, "width of the residual stream (mlp: of each embedding)")
    n_heads: int = option(4, "attention heads")
    d_mlp: int = option(512, "MLP width")
    act: str = option("gelu", "activation")
    causal: bool = option(False, "causal attention mask")
    dropout: float = option(0.0, "transformer: dropout on the MLP neurons (Nanda et al.)")
    ln: str = option("pre", "LayerNorm placement, by Singh et al.'s names: " + ", ".join(
        f"{k} ({place.paper or 'not in the paper'})" for k, place in LN_PLACEMENTS.items()))
    norm: str = option("layernorm", "the norm of --ln")
    ln_eps: float = option(0.0, "norm epsilon (Singh et al.: 0)")
    alpha: float = option(1.0, "readout scale: logits = alpha * h @ W_U")
    init: str = option("singh", "initial weights: as each paper's code (kaiming: Singh et al.'s "
                       "appendix; torch: the modules' own)")
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
    optimizer: str = option("adamw", "adam: coupled L2; muon: for the hidden matrices")
    grokfast: str = option("none", "gradient filter of Lee et al. (Grokfast)")
    gf_alpha: float = option(0.98, "grokfast ema: decay of the average")
    gf_window: int = option(100, "grokfast ma: gradients averaged")
    gf_lamb: float = option(2.0, "grokfast: grad + lamb * filtered grad")
    orthograd: bool = option(False, "Prieto et al.'s ⊥Grad: no gradient along the weights")
    loss: str = option("ce", "softmax cross-entropy, or Prieto et al.'s StableMax")
    l1: float = option(0.0, "L1 penalty: + l1 * sum |theta| to the loss stepped on (Nanda et al.)")
    # steps and precision
    steps: int = option(10000, "optimizer steps")
    batch_size: Optional[int] = option(None, "examples per step (default: all, full batch)")
    sampling: str = option("random", "mini-batch order (balanced: tokens evenly)")
    dtype: str = option("float32", "parameters' dtype")
    loss_dtype: str = option("float64", "loss dtype (float32: Nanda et al.'s slingshots)")
    eval_every: int = option(10, "steps between metric rows")
    ckpt_every: int = option(100, "steps between checkpoints")

    @classmethod
    def from_dict(cls, d):
        d = {k: v for k, v in d.items() if k not in RETIRED}
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown config keys {sorted(unknown)}")
        d = dict(d)
        if "betas" in d:  # JSON has no tuples: a saved config holds them as lists
            d["betas"] = tuple(d["betas"])
        return cls(**d)

    @classmethod
    def saved(cls, d):
        """The Config of a saved config.json (d, parsed): an object holding SAVED at least (a
        `{}` or a cut file is no run's config); keys added since take their defaults."""
        if not isinstance(d, dict):
            raise TypeError(f"a JSON {type(d).__name__}, not an object")
        missing = [k for k in SAVED if k not in d]
        if missing:
            raise ValueError(f"no {', '.join(missing)}")
        return cls.from_dict(d)

    def to_dict(self):
        return asdict(self)

    @property
    def n_vocab(self):  # operands, then '=' as the last token
        return max(self.p, self.b_offset + self.p) + 1

    @property
    def n_out(self):
        """Classes read out: the transformer keeps the '=' class (p+1-way softmax, as Singh's
        and Nanda's code) unless told not to; the embedding-MLP reads out p, as AlQuabeh et al."""
        if self.model == "transformer" and self.eq_class:
            return self.p + 1
        return self.p

    def check(self):
        """This run's options, each alone and against each other: raise Stop naming the first
        bad one. What depends on more than one Config (runs trained together), on the data or on
        the machine is train.check_options's, which calls this for every run."""
        for k, allowed in CHOICES.items():
            if getattr(self, k) not in allowed:
                raise Stop(f"unknown --{flag(k)} {getattr(self, k)!r}; "
                           f"choose from {', '.join(allowed)}")
        p, d = self.p, self.d_model
        for k, least in MINIMUMS.items():
            v = getattr(self, k)
            if v is None:  # data_seed: the run's --seed
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
    """The command-line spelling of an option: d_model -> d-model (--d-model)."""
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
