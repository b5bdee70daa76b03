"""
Tests: model.py against independent computations (nn.MultiheadAttention, every position), the
fast paths of fast.py against model.py, every LN placement against its row of the table, the
papers' inits (the data: test_data.py; training: test_train.py).

    python -m pytest -q test_model.py
"""
import math
import re
from dataclasses import replace

import numpy as np
import pytest
import torch

import measures
import model as model_module
from config import Config
from conftest import SMALL, quiet, small_cfg, train_alone
from fast import MATCHES, Stacked, build_runs, check_forward, forward_fn, unused_params
from model import LN_PLACEMENTS, EmbedMLP, Transformer, build_model, param_name
from optim import make_optimizer
from runfiles import Stop


def tokens(p, n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(0, p, (n, 3), generator=g)
    t[:, 2] = p
    return t


# ---------------------------------------------------------------- model.py against oracles

def table(m, x):  # fast.py's forward of the model, on the model's own parameters
    return forward_fn(m)(dict(m.named_parameters()), dict(m.named_buffers()), x)


def assert_same_function(model, fast=table, oracle=lambda m, x: m(x)):
    """Same logits and gradients from two forwards of one model (float64)."""
    x, y = tokens(model.cfg.p), torch.randint(0, model.cfg.p, (200,))
    out = []
    for forward in (fast, oracle):
        model.zero_grad()
        logits = forward(model, x)
        torch.nn.functional.cross_entropy(logits, y).backward()
        out.append((logits.detach(), [p.grad.clone() for p in model.parameters()
                                      if p.grad is not None]))
    (l1, g1), (l2, g2) = out
    torch.testing.assert_close(l1, l2, rtol=1e-10, atol=1e-10)
    assert len(g1) == len(g2)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("ln", list(LN_PLACEMENTS))
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_fast_table_forward_equals_model(ln, causal, norm):
    cfg = Config(ln=ln, causal=causal, norm=norm, dtype="float64",
                 **{k: SMALL[k] for k in ("p", "d_model", "d_mlp")})
    model = build_model(cfg)
    for name, prm in model.named_parameters():  # LN affine params away from 1/0, so they matter
        if "ln" in name:
            prm.data += 0.1 * torch.randn_like(prm)
    assert_same_function(model)


@pytest.mark.parametrize("n_layers", [1, 2, 3])
@pytest.mark.parametrize("causal", [False, True])
def test_last_position_only_equals_all_positions(n_layers, causal):
    # the forward runs its last block at the last position only
    cfg = Config(ln="pre", causal=causal, n_layers=n_layers, dtype="float64",
                 **{k: SMALL[k] for k in ("p", "d_model", "d_mlp")})
    assert_same_function(build_model(cfg), lambda m, x: m(x),
                         lambda m, x: (m.alpha * (m.residuals(x) @ m.unembed))[:, -1])


@pytest.mark.parametrize("causal", [False, True])
def test_attention_equals_torch_multihead_attention(causal):
    # model.py writes attention out; PyTorch's module with the same weights is the oracle
    torch.manual_seed(0)
    blk = build_model(Config(p=23, d_model=32, causal=causal, dtype="float64")).blocks[0]
    mha = torch.nn.MultiheadAttention(32, 4, bias=False, batch_first=True).double()
    mha.load_state_dict(blk.attn.state_dict())
    x = torch.randn(50, 3, 32, dtype=torch.float64)
    mask = torch.ones(3, 3).triu(1).bool() if causal else None
    want, w_want = mha(x, x, x, attn_mask=mask, average_attn_weights=False)
    cache = {}
    torch.testing.assert_close(blk.attn(x, x, x, mask, cache), want)
    torch.testing.assert_close(cache["attn"][0], w_want)
    # the last query alone (last block): the last rows of the same
    torch.testing.assert_close(blk.attn(x[:, -1:], x, x, mask), want[:, -1:])


@pytest.mark.parametrize("embed", ["learned", "onehot"])
def test_embed_mlp_table_path_equals_concatenation(embed):
    assert_same_function(build_model(Config(model="mlp", embed=embed, act="relu",
                                            dtype="float64", p=23, d_model=16, d_mlp=32)))


def test_last_query_cache_matches_all_positions():
    model, x = build_model(Config(ln="pre", dtype="float64", p=23)), tokens(23)
    c1, c2 = {}, {}
    model(x, cache=c1)
    model.residuals(x, cache=c2)
    torch.testing.assert_close(c1["attn"][0][:, :, 0], c2["attn"][0][:, :, -1])
    for k in ("mlp_in", "mlp_act"):
        torch.testing.assert_close(c1[k], c2[k][:, -1])


# the initial parameters of b30491b (the last commit before model.py was split into a reference
# and fast.py): per parameter, the sum and the sum of squares, for the same seeds
BEFORE = {
    "singh/s0": {
        "pos": [-0.22993813872744795, 0.17296686310550008],
        "unembed": [-15.473835831075576, 114.70480990853139],
        "embed.weight": [3.35178233018587, 114.1728125284322],
        "blocks.0.attn.in_proj_weight": [-16.899257718698664, 191.11905597847664],
        "blocks.0.attn.out_proj.weight": [9.516066871485236, 98.65860769819875],
        "blocks.0.fc1.weight": [-25.881097387288435, 396.810468727267],
        "blocks.0.fc1.bias": [0.0, 0.0],
        "blocks.0.fc2.weight": [3.8971967605157687, 99.4715047042957],
        "blocks.0.fc2.bias": [0.0, 0.0],
        "blocks.0.ln1.weight": [128.0, 128.0],
        "blocks.0.ln1.bias": [0.0, 0.0],
        "blocks.0.ln2.weight": [128.0, 128.0],
        "blocks.0.ln2.bias": [0.0, 0.0],
    },
    "singh/s7": {
        "pos": [0.4389751803537365, 0.14959516678400553],
        "unembed": [6.501880030682514, 112.09726615845298],
        "embed.weight": [-7.340426822245263, 112.77836535612786],
        "blocks.0.attn.in_proj_weight": [-5.095770107362171, 191.4972761455012],
        "blocks.0.attn.out_proj.weight": [-9.855613356652384, 98.5726186544712],
        "blocks.0.fc1.weight": [7.708479536885079, 398.8151995525357],
        "blocks.0.fc1.bias": [0.0, 0.0],
        "blocks.0.fc2.weight": [11.283075254374012, 99.19114330694774],
        "blocks.0.fc2.bias": [0.0, 0.0],
        "blocks.0.ln1.weight": [128.0, 128.0],
        "blocks.0.ln1.bias": [0.0, 0.0],
        "blocks.0.ln2.weight": [128.0, 128.0],
        "blocks.0.ln2.bias": [0.0, 0.0],
    },
    "nanda/s0": {
        "pos": [-4.1732790636015125, 2.957354134962647],
        "unembed": [1.037837909276277, 128.7316878208629],
        "embed.weight": [-1.1385750169878293, 113.38900077015349],
        "blocks.0.attn.in_proj_weight": [-24.95907335533684, 382.77099353636396],
        "blocks.0.attn.out_proj.weight": [-4.333425994441484, 129.89818838810447],
        "blocks.0.fc1.weight": [0.20722152928578907, 509.74971251349535],
        "blocks.0.fc1.bias": [0.0, 0.0],
        "blocks.0.fc2.weight": [-17.14394243409788, 517.3977911280201],
        "blocks.0.fc2.bias": [0.0, 0.0],
    },
    "alquabeh/s0": {
        "embed.weight": [-15.547887823283418, 114.48114265453468],
        "fc1.weight": [-11.970020225019113, 395.5158710347331],
        "fc1.bias": [0.0, 0.0],
        "readout.weight": [5.608373122859803, 87.8079815488654],
        "readout.bias": [0.0, 0.0],
    },
    "onehot/s0": {
        "fc1.weight": [-22.386571936876436, 394.38676842344256],
        "fc1.bias": [0.0, 0.0],
        "readout.weight": [1.663957725533237, 87.81723600304443],
        "readout.bias": [0.0, 0.0],
    },
}


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_same_seed_same_initial_parameters_as_before(name):
    preset, seed = name.split("/")
    kw = dict(singh={}, nanda=dict(act="relu", causal=True, ln="off", init="nanda"),
              alquabeh=dict(model="mlp", act="relu"),
              onehot=dict(model="mlp", act="relu", embed="onehot"))[preset]
    model = build_model(Config(seed=int(seed[1:]), **kw))
    got = {n: [float(p.detach().double().sum()), float((p.detach().double() ** 2).sum())]
           for n, p in model.named_parameters()}
    assert got.keys() == BEFORE[name].keys()
    for n in got:  # exact here; 1e-6 leaves room for another machine's vectorised RNG maths
        assert got[n] == pytest.approx(BEFORE[name][n], rel=1e-6, abs=1e-9), n


def test_fast_table_forward_with_dropout_draws_model_pys_masks():
    cfg = Config(dropout=0.3, dtype="float64", **{k: SMALL[k] for k in ("p", "d_model", "d_mlp")})
    model = build_model(cfg)

    def seeded(forward):
        return lambda m, x: (torch.manual_seed(5), forward(m, x))[1]
    assert_same_function(model, seeded(table), seeded(lambda m, x: m(x)))
    x = tokens(cfg.p)
    torch.manual_seed(5)
    a = table(model, x)
    assert not torch.equal(a, table(model, x))  # a fresh mask per call
    f = forward_fn(model)
    P, B = dict(model.named_parameters()), dict(model.named_buffers())
    torch.testing.assert_close(f(P, B, x, train=False), model.eval()(x))  # off when evaluating


def test_check_leaves_the_random_state_alone():
    model = build_model(Config(dropout=0.3, **{k: SMALL[k] for k in ("p", "d_model", "d_mlp")}))
    x, y = tokens(model.cfg.p), torch.randint(0, model.cfg.p, (200,))
    state = torch.get_rng_state()
    check_forward(model, forward_fn(model), x[:64], y[:64])
    assert torch.equal(torch.get_rng_state(), state)


# ---------------------------------------------------------------- fast.py: the start-up check

def test_an_edit_to_model_py_trains_on_model_py_with_a_line_and_no_fast_too(monkeypatch):
    cfg = Config(dtype="float64", **{k: SMALL[k] for k in ("p", "d_model", "d_mlp")})
    x, y = tokens(cfg.p), torch.randint(0, cfg.p, (200,))
    lines = []
    _, fast, _ = build_runs([build_model(cfg)], probe=(x[:64], y[:64]), log=lines.append)
    assert lines == []  # unedited: the table forward trains
    forward = type(build_model(cfg).blocks[0]).forward
    monkeypatch.setattr(type(build_model(cfg).blocks[0]), "forward",
                        lambda self, *a, **k: 1.5 * forward(self, *a, **k))  # a forker's edit
    model = build_model(cfg)
    for two in (False, True):  # alone, and two runs batched
        models = [model, build_model(replace(cfg, seed=1))] if two else [model]
        _, edited, _ = build_runs(models, probe=(x[:64], y[:64]), log=lines.append)
        assert len(lines) == 1 and re.fullmatch(
            r"model.py differs from fast.transformer_table \(relative difference .*\): "
            r"training on model.py's own forward, .*", lines.pop())
        torch.testing.assert_close(edited(torch.stack([x] * len(models)))[0], model(x))
    assert not torch.allclose(edited(x[None].expand(2, -1, -1))[0], table(model, x))
    _, ref, _ = build_runs([model], fast=False, probe=(x[:64], y[:64]), log=lines.append)
    torch.testing.assert_close(ref(x[None])[0], model(x))  # --no-fast: the same, no line
    assert lines == []


def test_check_compares_gradients_too():
    model = build_model(Config(dtype="float64", **{k: SMALL[k] for k in ("p", "d_model")}))
    x, y = tokens(23), torch.randint(0, 23, (200,))
    fn = forward_fn(model)
    assert check_forward(model, fn, x[:64], y[:64]) < MATCHES
    # same logits, but no gradient reaches the unembedding
    detached = lambda P, B, t: fn(dict(P, unembed=P["unembed"].detach()), B, t)
    assert check_forward(model, detached, x[:64], y[:64]) >= 1
    mlp = build_model(Config(model="mlp", dtype="float64", p=23, d_model=32, d_mlp=64))
    wrong = lambda P, buffers, t: 2 * forward_fn(mlp)(P, buffers, t)
    assert check_forward(mlp, wrong, x[:64], y[:64]) >= 1  # logits twice as large


# ---------------------------------------------------------------- parameter names: model.NAMES

def renamed(base, aliases, names=None):
    """A subclass of base whose __init__ registers some layers under other names (aliases: old
    -> new; its code reaches them by the old), with NAMES given (None: base's, left stale)."""
    class Renamed(base):
        NAMES = base.NAMES if names is None else {**base.NAMES, **names}

        def __init__(self, cfg):
            super().__init__(cfg)
            for registry in ("_parameters", "_modules"):  # each where it stood: the init
                # draws in that order
                layers = self.__dict__[registry]
                self.__dict__[registry] = {aliases.get(k, k): v for k, v in layers.items()}

        def __getattr__(self, name):
            return super().__getattr__(aliases.get(name, name))
    return Renamed


RENAMED = [  # a model family's layers renamed (the readout too: 2-D, Muon would move it) and
    # NAMES saying so; each config moves the embedding at its own lr, Muon the hidden matrices
    (Transformer, dict(embed="tok", pos="W_pos", unembed="W_U"),
     dict(embed="tok.weight", pos="W_pos", readout="W_U"),
     dict(optimizer="muon", emb_lr_ratio="10")),
    (EmbedMLP, dict(fc1="layer1", readout="head"),
     dict(first="layer1.weight", first_bias="layer1.bias", readout="head.weight",
          readout_bias="head.bias"),
     dict(model="mlp", n_layers=2, optimizer="muon", emb_lr_ratio="auto")),
]


@pytest.mark.parametrize("base, aliases, names, kw", RENAMED)
def test_a_layer_renamed_with_its_names_keeps_optimizer_measures_and_training(
        base, aliases, names, kw, tmp_path, monkeypatch):
    """optim.py, measures.py and fast.py ask model.NAMES: a layer renamed there as in __init__
    trains and measures exactly as before (Muon's matrices, the embedding's lr, the fast
    forward)."""
    cfg = small_cfg(steps=12, **kw)
    original = build_model(cfg)
    monkeypatch.setattr(model_module, base.__name__, renamed(base, aliases, names))
    model = build_model(cfg)
    assert set(aliases.values()) <= {n.split(".")[0] for n, _ in model.named_parameters()}
    for role in ("embed", "first", "readout"):  # the same tensors under their new names
        assert torch.equal(model.get_parameter(param_name(model, role)),
                           original.get_parameter(param_name(original, role)))

    back = {new: old for old, new in aliases.items()}

    def moved_by_muon(m):  # the names of the parameters Muon moves, as the original has them
        opt = make_optimizer(cfg, list(m.named_parameters()), 1, m.NAMES)
        moved = []
        for name, p in m.named_parameters():
            head, dot, rest = name.partition(".")
            if id(p) in opt.muon:
                moved.append(back.get(head, head) + dot + rest)
        return sorted(moved)
    assert moved_by_muon(model) == moved_by_muon(original)  # a renamed readout not among them
    for f in (measures.embedding, measures.neuron_logit_map):
        torch.testing.assert_close(f(model, cfg), f(original, cfg), rtol=0, atol=0)
    x, y = tokens(cfg.p), torch.randint(0, cfg.p, (200,))
    assert check_forward(model, forward_fn(model), x[:64], y[:64]) < MATCHES  # fast still
    monkeypatch.undo()
    want = train_alone(cfg, str(tmp_path / "original"), log=quiet)
    monkeypatch.setattr(model_module, base.__name__, renamed(base, aliases, names))
    got = train_alone(cfg, str(tmp_path / "renamed"), log=quiet)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


@pytest.mark.parametrize("base, aliases, names, kw", RENAMED)
def test_a_layer_renamed_in_init_alone_stops_in_one_line(base, aliases, names, kw,
                                                          monkeypatch):
    """NAMES left stale, optim.py would hand the renamed readout to Muon silently: instead
    build_model (every run's) stops, naming the parameter."""
    monkeypatch.setattr(model_module, base.__name__, renamed(base, aliases))
    with pytest.raises(Stop) as e:
        build_model(small_cfg(**kw))
    assert "\n" not in str(e.value)
    assert re.fullmatch(r"parameter '(\w+)\.?\w*' of Renamed has no entry in its NAMES: .*",
                        str(e.value)).group(1) in aliases.values()


# ---------------------------------------------------------------- model: LN placements

def unit_rows(u):
    return torch.allclose(u.mean(-1), torch.zeros(()).double(), atol=1e-8) and \
        torch.allclose(u.var(-1, unbiased=False), torch.ones(()).double(), atol=1e-6)


@pytest.mark.parametrize("ln", list(LN_PLACEMENTS))
def test_ln_placement_does_what_its_row_says(ln):
    place = LN_PLACEMENTS[ln]
    cfg = Config(ln=ln, dtype="float64", p=23)
    model, x = build_model(cfg), tokens(23)
    seen = []  # the inputs attention gets: (queries, keys, values)
    model.blocks[0].attn.register_forward_pre_hook(lambda mod, args: seen.append(args[:3]))
    cache = {}
    model.residuals(x, cache=cache)
    q, k, v = seen[0]
    assert unit_rows(q) == unit_rows(k) == place.qk
    assert unit_rows(v) == place.v
    assert unit_rows(cache["mlp_in"]) == (place.mlp or place.post)  # post: MLP sees LN(x + attn)
    cache = {}
    model(x, cache=cache)
    assert unit_rows(cache["resid"]) == place.post
    # Rescaling the residual stream leaves attention weights alone exactly when q/k are normed.
    with torch.no_grad():
        model.embed.weight *= 5
        model.pos *= 5
    cache5 = {}
    model(x, cache=cache5)
    same = torch.allclose(cache["attn"][0], cache5["attn"][0], atol=1e-10)
    assert same == place.qk


def test_no_ln_modules_when_off_and_both_when_on():
    assert not any("ln" in n for n, _ in build_model(Config(ln="off")).named_parameters())
    names = [n for n, _ in build_model(Config(ln="attn-pre")).named_parameters()]
    assert any("ln1" in n for n in names) and any("ln2" in n for n in names)


@pytest.mark.parametrize("kw", [dict(norm="rmsnorm", ln="post"), dict(n_layers=2, ln="pre"),
                                dict(n_layers=3, causal=True)])
def test_rmsnorm_and_deep_models_train(kw, tmp_path):
    m = train_alone(small_cfg(steps=30, lr=3e-3, **kw), str(tmp_path / "r"), log=quiet)
    assert m["train_loss"][-1] < 0.8 * m["train_loss"][0]


@pytest.mark.filterwarnings("error")  # e.g. vmap falling back to a loop over the runs
@pytest.mark.parametrize("n_layers", [1, 2])
def test_stacked_runs_equal_separate_models(n_layers):
    runs = ((0, "pre"), (1, "pre"), (2, "attn-pre-v"))  # two placements: two groups in one stack
    models = [build_model(Config(p=23, n_layers=n_layers, seed=s, ln=ln, dtype="float64"))
              for s, ln in runs]
    x = tokens(23)
    out = Stacked(models)(torch.stack([x] * 3))
    for r, m in enumerate(models):
        torch.testing.assert_close(out[r], m(x))
    assert [unused_params(m, forward_fn(m)) for m in models] == \
        [set(), set(), {f"blocks.{i}.ln2.{w}" for i in range(n_layers) for w in ("weight", "bias")}]


def test_embed_mlp_variants():
    x = tokens(23)
    learned = build_model(Config(model="mlp", p=23))
    assert learned.embed.weight.shape == (24, 128)
    assert learned(x).shape == (200, 23)
    onehot = build_model(Config(model="mlp", embed="onehot", p=23, dtype="float64"))
    assert not hasattr(onehot, "embed")
    # one-hot input: the first layer is a lookup of two columns of W1
    W, b = onehot.fc1.weight, onehot.fc1.bias
    cache = {}
    onehot(x, cache=cache)
    pre = W[:, x[:, 0]].T + W[:, 23 + x[:, 1]].T + b
    act = torch.relu if onehot.cfg.act == "relu" else torch.nn.functional.gelu
    torch.testing.assert_close(cache["mlp_act"], act(pre))


def test_alpha_scales_logits_and_sr_train_removes_feature_norm():
    x = tokens(23)
    m1, m3 = build_model(Config(p=23)), build_model(Config(p=23, alpha=3.0))
    torch.testing.assert_close(3 * m1(x), m3(x))
    cache = {}
    m1(x, cache=cache, scale_free=True)
    torch.testing.assert_close(cache["mlp_in"].norm(dim=-1), torch.ones(200))


def test_inits_follow_the_papers():
    s = build_model(Config())
    assert abs(s.embed.weight.std().item() - 128 ** -0.5) < 0.005
    assert abs(s.pos.std().item() - 0.02) < 0.005
    w = s.blocks[0].fc1.weight
    assert w.abs().max() <= 2 / math.sqrt(128) + 1e-6  # truncated at 2 std
    n = build_model(Config(init="nanda", ln="off"))
    assert abs(n.unembed.std().item() - 114 ** -0.5) < 0.005
    assert abs(n.blocks[0].fc2.weight.std().item() - 128 ** -0.5) < 0.005
    assert n.blocks[0].fc1.bias.abs().max() == 0


def test_gu_dnn_is_three_embeddings_into_two_hidden_layers():
    cfg = Config(model="mlp", act="relu", n_layers=2, mlp_eq=True, init="gu", p=13, d_model=8,
                 d_mlp=16)
    m = build_model(cfg)
    x = torch.tensor([[3, 5, 13], [0, 12, 13]])
    u = torch.cat([m.embed.weight[x[:, i]] for i in range(3)], 1)          # [E(a), E(b), E(=)]
    h = torch.relu(m.hidden[0](torch.relu(m.fc1(u))))
    torch.testing.assert_close(m(x), m.readout(h))
    check_forward(m, forward_fn(m), x, torch.tensor([8, 12]))  # the fast path agrees
    bound = 1 / math.sqrt(16)  # nn.Linear's own init, as Gu et al.'s DNN
    assert m.hidden[0].weight.abs().max() <= bound and m.hidden[0].bias.abs().max() > 0
    with pytest.raises(Stop, match="--mlp-eq and --no-bias need --model mlp"):
        Config(mlp_eq=True).check()


def test_gu_onehot_dnn_pads_three_one_hots_to_d_model():
    # their README's variant: W_E = identity in a zero (d_model, n_vocab) buffer, not trained,
    # so fc1 sees [onehot(a), onehot(b), onehot(=)], each d_model wide: 384 inputs at p = 97
    cfg = Config(model="mlp", act="relu", n_layers=2, mlp_eq=True, embed="onehot", init="gu",
                 p=13, d_model=16, d_mlp=24, dtype="float64")
    m = build_model(cfg)
    assert m.fc1.in_features == 48 and not hasattr(m, "embed")
    E = torch.zeros(16, 14, dtype=torch.float64)
    E[:14, :14] = torch.eye(14)
    x = torch.tensor([[3, 5, 13], [0, 12, 13]])
    u = torch.cat([E[:, x[:, i]].T for i in range(3)], 1)
    h = torch.relu(m.hidden[0](torch.relu(m.fc1(u))))
    torch.testing.assert_close(m(x), m.readout(h))
    check_forward(m, forward_fn(m), x, torch.tensor([8, 12]))  # the fast path agrees
    assert m.fc1.weight.abs().max() <= 1 / math.sqrt(48)  # nn.Linear's init on 3 d_model inputs
    with pytest.raises(Stop, match="do not fit"):
        Config(model="mlp", embed="onehot", mlp_eq=True, p=13, d_model=8).check()


def test_prieto_mlp_has_no_biases_and_torch_init():
    cfg = Config(model="mlp", embed="onehot", n_layers=2, d_mlp=20, bias=False, init="torch",
                 p=13, act="relu")
    m = build_model(cfg)
    assert [n for n, _ in m.named_parameters()] == ["fc1.weight", "hidden.0.weight",
                                                    "readout.weight"]
    assert m.fc1.weight.abs().max() <= 1 / math.sqrt(26)  # nn.Linear's own U(+-1/sqrt(fan_in))
    x = torch.tensor([[3, 5, 13], [0, 12, 13]])
    check_forward(m, forward_fn(m), x, torch.tensor([8, 12]))
