"""
Each progress measure against its definition on an input whose answer is known: a pure cosine
embedding has one key frequency, a Fourier-algorithm logit table has the restricted and excluded
losses the papers describe, the NTK and the Hessian equal their explicit computations, the local
learning coefficient of a quadratic loss is d/2 and of a quartic direction less, a Clock and a
Pizza logit table have the distance irrelevance and gradient symmetricity Zhong et al. describe,
and their saved model A the numbers their notebook prints.

    python -m pytest -q test_measures.py
"""
import math
import os
import sys
import types

import numpy as np
import pytest
import torch
from torch.autograd.functional import hessian

import summary as S
import fourier
import measures as M
from config import Config
from conftest import HERE, train_alone
from data import make_data
from model import build_model

sys.path.insert(0, os.path.join(HERE, "experiments"))
import clock_pizza  # noqa: E402
import pack  # noqa: E402

P = 23


def cosine_embedding(p, k, d=16, seed=0):
    x = torch.arange(p, dtype=torch.float64)
    v = torch.randn(d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return torch.cos(2 * math.pi * k * x / p)[:, None] * v


def test_fourier_basis_is_orthonormal():
    for p in (23, 24, 113):
        B = M.fourier_basis(p)
        torch.testing.assert_close(B @ B.T, torch.eye(p, dtype=torch.float64))


def test_pure_cosine_embedding_has_one_key_frequency_and_gini_near_one():
    for k in (1, 5, 11):
        E = cosine_embedding(P, k)
        norms = M.frequency_norms(E, M.fourier_basis(P))
        assert M.key_frequencies(norms) == [k]
        assert M.gini(norms[1:]) > 0.9
        assert M.c_fourier(E) > 1.0  # (no threshold in the paper; from ~0.01 at init)


def test_key_frequencies_are_the_neuron_logit_maps_and_every_measure_uses_them():
    cfg = Config(p=P, d_model=8, n_heads=2, d_mlp=16)
    model = build_model(cfg).double()
    w = 2 * math.pi * 4 * torch.arange(cfg.n_vocab, dtype=torch.float64) / P
    with torch.no_grad():  # W_L = W_U^T W_out: over the classes, frequency 4 alone
        model.unembed.zero_()
        model.unembed[0], model.unembed[1] = torch.cos(w), torch.sin(w)
        model.embed.weight[:P] = cosine_embedding(P, 7, cfg.d_model)  # W_E: frequency 7 alone
    c = M.run_context(cfg, model, {"model": model.state_dict()})
    assert (c.keys, c.keys_embed) == ([4], [7])  # Nanda et al.'s rule is W_L's; W_E's kept
    assert (M.FINAL["keys"](c).tolist(), M.FINAL["keys_embed"](c).tolist()) == ([4], [7])
    c.L, c.y = fourier_logits(P, [4]), (c.x[:, 0] + c.x[:, 1]) % P  # logits of frequency 4
    assert M.FINAL["cos_r2_per_freq"](c) == pytest.approx(1.0)  # fitted on W_L's, as Table 5
    # restricted loss keeps frequency 4 (the logits unchanged), excluded loss removes it
    assert M.MEASURES["restricted_loss"].fn(c) == pytest.approx(M.ce(c.L, c.y), rel=1e-9)
    assert M.MEASURES["excluded_loss"].fn(c) > M.ce(c.L, c.y) + 1


def test_gini_of_a_pure_cosine_is_of_one_fourier_component_of_p():
    c = types.SimpleNamespace(E=cosine_embedding(P, 5), basis=M.fourier_basis(P))
    assert M.MEASURES["gini_embed"].fn(c) == pytest.approx(1 - 1 / P)  # one nonzero norm of P
    x = 2 * math.pi * 5 * torch.arange(P, dtype=torch.float64) / P
    c.E = (torch.cos(x) + torch.sin(x))[:, None] * c.E[0]  # cos 5 and sin 5 alike: 2 of P
    assert M.MEASURES["gini_embed"].fn(c) == pytest.approx(1 - 2 / P)  # (per frequency: 1 of 11)


def test_c_fourier_equals_its_definition_worked_by_hand():
    x = 2 * math.pi * torch.arange(5, dtype=torch.float64) / 5
    E = torch.stack([torch.cos(x), torch.cos(2 * x)], 1)  # p 5, columns: frequency 1, 2
    # |rfft| per column: [0, 2.5, 0] and [0, 0, 2.5]; frequency means mu = [0, 1.25, 1.25],
    # their variance 0.34722; squared deviations from mu: 1.5625 in 4 of 6 cells, mean 1.04167
    assert M.c_fourier(E) == pytest.approx(1 / 3, rel=1e-6)


def test_gini_logit_of_a_one_component_neuron_logit_map():
    cfg = Config(p=P, d_model=8, n_heads=2, d_mlp=16)
    model = build_model(cfg).double()
    with torch.no_grad():  # W_L = W_U^T W_out: over the classes, cos 4 alone
        model.unembed.zero_()
        model.unembed[0] = torch.cos(2 * math.pi * 4 * torch.arange(cfg.n_vocab).double() / P)
    c = types.SimpleNamespace(model=model, cfg=cfg, basis=M.fourier_basis(P))
    assert M.MEASURES["gini_logit"].fn(c) == pytest.approx(1 - 1 / P)  # one nonzero norm of P


def test_random_embedding_has_low_gini_and_small_c_fourier():
    E = torch.randn(113, 128, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    norms = M.frequency_norms(E, M.fourier_basis(113))
    assert M.gini(norms[1:]) < 0.2
    assert M.c_fourier(E) < 0.1
    assert M.c_fourier(cosine_embedding(113, 7, d=128)) > 100 * M.c_fourier(E)


def test_gini_matches_hurley_rickard_by_hand():
    assert M.gini([0, 0, 0, 1]) == pytest.approx(0.75)  # 2*4/(4*1) - 5/4
    assert M.gini([1, 1, 1, 1]) == pytest.approx(0.0)
    assert M.gini([1, 2, 3]) == pytest.approx(2 * (1 + 4 + 9) / (3 * 6) - 4 / 3)


def test_med_of_constant_embedding_is_zero_and_of_a_circle_is_its_chord():
    assert M.med(torch.ones(P, 8)) == 0
    t = 2 * math.pi * torch.arange(P, dtype=torch.float64) / P
    circle = torch.stack([torch.cos(t), torch.sin(t)], 1)
    assert M.med(circle) == pytest.approx(2 * math.sin(math.pi / P))


def fourier_logits(p, keys, scale=8.0):
    a, b, c = torch.meshgrid(torch.arange(p), torch.arange(p), torch.arange(p), indexing="ij")
    T = sum(torch.cos(2 * math.pi * k * (a + b - c).double() / p) for k in keys)
    return scale * T.reshape(p * p, p)


def test_token_spreads_and_med_of_the_hidden_layer_by_hand():
    assert M.spread(torch.tensor([1.0, 3.0])) == pytest.approx(0.5)  # std 1 over mean 2
    p = 11
    ang = 2 * math.pi * 3 * torch.arange(p).double() / p
    circle = torch.stack([torch.cos(ang), torch.sin(ang)], 1)  # equal norms, equal steps
    c = types.SimpleNamespace(E=circle * 2, p=p)
    assert M.MEASURES["norm_spread"].fn(c) < 1e-12 and M.MEASURES["diff_spread"].fn(c) < 1e-12
    c.E = circle * (1 + torch.arange(p).double()[:, None])  # norms 1..11
    assert M.MEASURES["norm_spread"].fn(c) == pytest.approx(M.spread(1 + torch.arange(p).double()))
    # the hidden layer on the pairs (i, i): rows i * p + i of a per-pair table
    act = torch.randn(p * p, 5).double()
    c.cache = {"mlp_act": act}
    want = torch.stack([act[i * p + i] for i in range(p)])
    assert M.MEASURES["med_hidden"].fn(c) == pytest.approx(M.med(want))


def test_hole_accuracy_split_by_whether_the_first_operand_token_is_also_a_second_operand():
    p = 5
    y = torch.arange(p * p) % p
    right = torch.arange(p * p) // p == 1  # every pair with a = 1 right, the rest wrong
    logits = torch.nn.functional.one_hot(torch.where(right, y, (y + 1) % p), p).double()
    cfg = Config(p=p, split="strip", hole=2, b_offset=1)  # strip a <= 2; b on tokens 1..5
    c = types.SimpleNamespace(p=p, cfg=cfg, y=y, logits=logits, valid=torch.ones(p * p) > 0)
    # a = 1, 2 share tokens 1, 2 with b = 0, 1: 5 of 10 right; a = 0's token 0 is no b's
    assert M.FINAL["hole_acc_shared"](c) == 0.5 and M.FINAL["hole_acc_unshared"](c) == 0
    c.cfg = Config(p=p, split="strip", hole=2)  # one vocabulary: every a is some b's token
    assert M.FINAL["hole_acc_shared"](c) == pytest.approx(1 / 3)
    assert np.isnan(M.FINAL["hole_acc_unshared"](c))


def test_fourier_algorithm_logits_restricted_and_excluded_loss():
    keys = [3, 7]
    L = fourier_logits(P, keys)
    y = (torch.arange(P * P) // P + torch.arange(P * P) % P) % P
    g = torch.Generator().manual_seed(0)
    L_noisy = L + 0.1 * torch.randn(L.shape, generator=g, dtype=torch.float64)
    train = torch.rand(P * P, generator=torch.Generator().manual_seed(1)) < 0.3
    full = M.ce(L_noisy, y)
    restricted = M.restricted_loss(L_noisy, y, P, keys)
    excluded = M.excluded_loss(L_noisy, y, P, keys, train)
    assert restricted <= full + 1e-9  # the noise is removed, the algorithm kept
    assert excluded == pytest.approx(math.log(P), rel=0.1)  # without its frequencies: chance
    assert M.cos_template_r2(L, P, keys) == pytest.approx(1.0)
    # the final-checkpoint ablations: each key frequency removed, all removed, all but them
    each = [M.excluded_loss(L, y, P, [k]) for k in keys]
    all_keys, but_keys = M.excluded_loss(L, y, P, keys), M.restricted_loss(L, y, P, keys)
    assert all(e > M.ce(L, y) for e in each) and all_keys == pytest.approx(math.log(P), rel=1e-6)
    assert but_keys == pytest.approx(M.ce(L, y), rel=1e-9)


def test_neuron_frequency_rule_and_per_frequency_fit_on_made_up_arrays():
    p = 13
    a, b = (t.flatten().double() for t in torch.meshgrid(torch.arange(p), torch.arange(p),
                                                          indexing="ij"))
    w = lambda k: 2 * math.pi * k / p
    acts = torch.stack([torch.cos(w(3) * (a + b)),                      # one frequency: 3
                        torch.cos(w(2) * a) + torch.cos(w(5) * b),      # two, half each
                        3 + torch.sin(w(4) * a) * torch.cos(w(4) * b)], 1)  # 4, constant aside
    freq, share = M.neuron_frequencies(acts, M.fourier_basis(p))
    assert freq.tolist()[0::2] == [3, 4] and share[0::2].tolist() == pytest.approx([1, 1])
    assert share[1].item() == pytest.approx(0.5)
    c = types.SimpleNamespace(cache={"mlp_act": acts}, basis=M.fourier_basis(p), memo={})
    assert M.FINAL["one_freq_share"](c) == pytest.approx(2 / 3)  # share > 0.85: neurons 0, 2
    L = 2 * fourier_logits(p, [3], 1.0) + 5 * fourier_logits(p, [5], 1.0)
    assert M.cos_fit_r2(L, p, [3, 5]) == pytest.approx(1.0)       # a coefficient each
    assert M.cos_template_r2(L, p, [3, 5]) < 0.9                   # one shared coefficient


def test_an_even_p_has_frequency_p_over_2_without_a_sine():
    p = 12
    U = fourier.sum_directions(p, [6, 2])  # 1, cos 6, cos 2, sin 2
    torch.testing.assert_close(U.T @ U, torch.eye(4, dtype=torch.float64))
    a = torch.arange(p * p).double() // p
    freq, share = M.neuron_frequencies(torch.cos(math.pi * a)[:, None], M.fourier_basis(p))
    assert freq.tolist() == [6] and share.item() == pytest.approx(1.0)


def test_uniform_attention_has_entropy_ln_positions():
    w = torch.full((10, 4, 3, 3), 1 / 3)
    ln3 = torch.full((4,), math.log(3), dtype=torch.float64)
    torch.testing.assert_close(M.attention_entropy(w), ln3)
    one_hot = torch.zeros(10, 4, 3, 3)
    one_hot[..., 0] = 1
    assert M.attention_entropy(one_hot).abs().max() < 1e-12


def test_singh_attention_entropy_averages_the_heads_first():
    w = torch.zeros(1, 2, 1, 3)
    w[0, 0, 0, 0] = w[0, 1, 0, 1] = 1.0  # each head sure, of a different key
    assert M.attention_entropy(w).tolist() == pytest.approx([0, 0], abs=1e-12)
    assert float(M.attention_entropy(w.mean(1, keepdim=True))) == pytest.approx(math.log(2))


def test_power_law_alpha_by_maximum_likelihood_finds_exponent_and_xmin():
    rng = np.random.default_rng(0)
    tail = (1 - rng.random(3000)) ** (-1 / 1.5)  # Pareto, pdf ~ x^-2.5 above 1
    assert M.power_law_alpha(tail) == pytest.approx(2.5, abs=0.1)
    head = rng.random(3000) * 0.9  # not a power law below xmin = 1: the search skips it
    assert M.power_law_alpha(np.concatenate([head, tail])) == pytest.approx(2.5, abs=0.15)



def test_power_law_alpha_equals_the_powerlaw_package():
    # powerlaw 2.0.0 (the package Singh et al. fit with, not a dependency here):
    # powerlaw.Fit(x, discrete=False, verbose=False).alpha on these two inputs, recorded once
    rng = np.random.default_rng(1)
    pareto = (1 - rng.random(128)) ** (-1 / 1.5)
    spectrum = np.abs(rng.standard_normal(128)) * np.arange(1, 129.0) ** -2.5
    assert M.power_law_alpha(pareto) == pytest.approx(2.543033495540108, rel=1e-9)
    assert M.power_law_alpha(spectrum) == pytest.approx(1.4504361961385974, rel=1e-9)

def test_singh_esd_is_the_spectrum_with_a_float32_floor():
    Q = torch.linalg.qr(torch.randn(200, 16, dtype=torch.float64))[0]
    i = torch.arange(1, 17, dtype=torch.float64)
    top = 256  # the eigenvalues i^2 of Z^T Z, each to within their floor (~sqrt(eps) x top)
    assert np.sort(M.singh_esd(Q * i)) == pytest.approx((i ** 2).numpy(), abs=4e-4 * top)
    low = Q[:, :3] @ torch.randn(3, 16, dtype=torch.float64)  # rank 3: 13 eigenvalues are 0
    exact, theirs = M.spectrum(low).numpy(), np.sort(M.singh_esd(low))[::-1]
    assert (exact[3:] < 1e-12).all()  # their sqrt of X X^T's round-off: ~sqrt(float32 eps)
    assert (theirs[3:] > 1e-6 * theirs[0]).all() and (theirs[3:] < 1e-3 * theirs[0]).all()


def sr_train_by_hand(model, x, y, scale=1.0):
    """Singh et al.'s mlp-inpnorm written out: no norm, x + attn(x, x, x), then x + mlp(x /
    ||x||); scale: each block's output multiplied by it (an edited block)."""
    h = model.embed(x) + model.pos
    for blk in model.blocks:
        h = h + blk.attn(h, h, h, model.mask)
        h = scale * (h + blk.fc2(blk.act(blk.fc1(h / h.norm(dim=-1, keepdim=True)))))
    return M.ce(model.alpha * (h[:, -1] @ model.unembed), y)


@pytest.mark.parametrize("kw", [dict(ln="pre"), dict(ln="attn-pre"), dict(ln="post"),
                                dict(ln="pre", norm="rmsnorm", n_layers=2, causal=True)])
def test_singh_sr_train_removes_every_norm_and_follows_an_edited_block(kw, monkeypatch):
    cfg = Config(p=11, d_model=16, d_mlp=32, alpha=2.0, **kw)
    model = build_model(cfg).double().eval()
    x, y = make_data(cfg)[:2]
    c = types.SimpleNamespace(cfg=cfg, model=model, x=x, y=y, train=torch.ones(len(x), dtype=bool))
    with torch.no_grad():
        want = sr_train_by_hand(model, x, y)
        assert M.sr_train(c) == pytest.approx(want, rel=1e-10)
        ours = M.MEASURES["sr_train_ln"].fn(c)
        assert ours != pytest.approx(want, rel=1e-3)  # ours keeps the norms
        assert M.ce(model(x).double(), y) != pytest.approx(want, rel=1e-3)  # the norms are back
        forward = type(model.blocks[0]).forward
        monkeypatch.setattr(type(model.blocks[0]), "forward",
                            lambda self, *a, **k: 1.5 * forward(self, *a, **k))
        edited = sr_train_by_hand(model, x, y, scale=1.5)
        assert edited != pytest.approx(want, rel=1e-3)
        assert M.sr_train(c) == pytest.approx(edited, rel=1e-10)


def test_effective_rank_and_rank():
    Q = torch.linalg.qr(torch.randn(200, 16, dtype=torch.float64))[0]
    assert M.effective_rank(Q) == pytest.approx(16)
    rank_one = Q[:, :1] @ torch.randn(1, 16, dtype=torch.float64)
    assert M.effective_rank(rank_one) == pytest.approx(1, abs=1e-6)
    assert M.matrix_rank(Q) == 16 and M.matrix_rank(rank_one) == 1
    assert M.matrix_rank(Q[:, :3] @ torch.randn(3, 16, dtype=torch.float64)) == 3


@pytest.mark.filterwarnings("error")  # e.g. vmap falling back to a per-example loop
@pytest.mark.parametrize("kw", [dict(n_layers=1), dict(n_layers=2), dict(ln="post", causal=True),
                                dict(norm="rmsnorm", ln="mlp-pre", alpha=2.0),
                                dict(model="mlp"), dict(model="mlp", embed="onehot", bias=False),
                                dict(model="mlp", embed="onehot", n_layers=2, mlp_eq=True)])
def test_ntk_equals_explicit_per_example_gradients(kw):
    # Linear and Embedding weights by their factors (measures.factored_ntk), the rest by vmap
    cfg = Config(**{**dict(p=7, d_model=8, n_heads=2, d_mlp=16, dtype="float64"), **kw})
    model = build_model(cfg).eval()
    x = torch.tensor([[1, 2, 7], [3, 4, 7], [6, 0, 7], [1, 1, 7]])
    rows = []
    for xi in x:  # Singh et al.: the gradient of the sum of all logits, every parameter
        model.zero_grad()
        model(xi[None]).sum().backward()  # an LN the placement leaves out: no gradient, 0
        rows.append(torch.cat([torch.zeros(p.numel()) if p.grad is None else p.grad.flatten()
                               for p in model.parameters()]))
    J = torch.stack(rows).double()
    assert J.shape[1] == sum(p.numel() for p in model.parameters())
    torch.testing.assert_close(M.ntk(model, x), J @ J.T)


def test_ntk_of_a_tied_weight_is_per_example_gradients():
    class Tied(torch.nn.Module):  # the Linear's weight read outside its call too
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x).tanh() @ self.lin.weight
    model = Tied().double()
    x = torch.randn(4, 3, dtype=torch.float64)
    K, covered = M.factored_ntk(model, x)
    assert covered == set() and not K.any()
    J = torch.func.vmap(torch.func.jacrev(lambda w, b, xi: torch.func.functional_call(
        model, {"lin.weight": w, "lin.bias": b}, (xi[None],)).sum(), (0, 1)),
        in_dims=(None, None, 0))(model.lin.weight, model.lin.bias, x)
    J = torch.cat([j.flatten(1) for j in J], 1)
    torch.testing.assert_close(M.ntk(model, x), J @ J.T)


def test_ntk_distance_is_relative_to_the_first_checkpoint_s_kernel(monkeypatch):
    K0, K1 = torch.tensor([[2.0, 1.0], [1.0, 2.0]]), torch.tensor([[2.0, 1.0], [1.0, 5.0]])
    kernels = iter([K0, K1])
    monkeypatch.setattr(M, "ntk", lambda model, x: next(kernels))
    c = types.SimpleNamespace(model=None, x=torch.zeros(2, 3), ntk_idx=[0, 1], memo={})
    assert M.ntk_distance(c) == 0.0  # the first checkpoint is K_0
    assert M.ntk_distance(c) == pytest.approx(3 / math.sqrt(10))  # ||K1 - K0|| / ||K0||


def test_ntk_over_more_pairs_than_one_chunk_equals_it_over_any_two():
    model = build_model(Config(p=17, d_model=8, n_heads=2, d_mlp=16, dtype="float64"))
    x = torch.tensor([[a, b, 17] for a in range(17) for b in range(17)])  # 289 > 256 a chunk
    K = M.ntk(model, x)
    for i, j in ((0, 288), (5, 260), (255, 256)):  # the two in one chunk, or one in each
        torch.testing.assert_close(K[[i, j]][:, [i, j]], M.ntk(model, x[[i, j]]))


def test_hessian_top_eigenvalue_equals_the_explicit_hessian():
    cfg = Config(model="mlp", p=5, d_model=3, d_mlp=8, dtype="float64", act="relu")
    model = build_model(cfg)
    x = torch.tensor([[a, b, 5] for a in range(5) for b in range(5)])
    y = (x[:, 0] + x[:, 1]) % 5
    E0 = model.embed.weight.detach().clone()

    def loss(E):
        logits = torch.func.functional_call(model, {"embed.weight": E}, (x,))
        return torch.nn.functional.cross_entropy(logits, y)
    H = hessian(loss, E0).reshape(E0.numel(), E0.numel())
    top = torch.linalg.eigvalsh(H)
    lam, _ = M.hessian_top(model, x, y, model.embed.weight, iters=300)
    # power iteration: the eigenvalue largest in magnitude
    expected = top[-1] if top[-1].abs() >= top[0].abs() else top[0]
    assert lam == pytest.approx(float(expected), rel=1e-4)


# ---------------------------------------------------------------- local learning coefficient

def quadratic(a, w):
    """loss(idx) of sgld_llc for L(w) = sum a_i w_i^2 / 2 per chain (the rows of w)."""
    return lambda idx: (a * w ** 2).sum(1) / 2


def test_sgld_llc_steps_as_devinterp_s_update_written_out():
    n, eps, gamma = 1000, 1e-3, 50.0
    a = torch.tensor([1.0, 4.0], dtype=torch.float64)
    w_star = torch.tensor([[0.3, -0.2], [0.1, 0.5]], dtype=torch.float64)
    w = w_star.clone().requires_grad_()
    per_chain, drawn = M.sgld_llc(quadratic(a, w), [w], n, seeds=[0, 7], burnin=1, draws=2,
                                  eps=eps, gamma=gamma, batch=None)
    nbeta = n / math.log(n)
    # w <- w - eps/2 (n beta grad L + gamma (w - w*)) + N(0, eps)
    for chain, seed in enumerate([0, 7]):
        g, v, want = torch.Generator().manual_seed(seed), w_star[chain].clone(), []
        for _ in range(3):
            want.append(float((a * v ** 2).sum() / 2))
            xi = torch.randn(2, generator=g, dtype=torch.float64)
            v = v - eps / 2 * (nbeta * a * v + gamma * (v - w_star[chain])) + math.sqrt(eps) * xi
        assert drawn[chain] == pytest.approx(want[1:], rel=1e-12)  # the burn-in step dropped
        loss_star = float((a * w_star[chain] ** 2).sum() / 2)
        assert per_chain[chain] == pytest.approx(nbeta * (np.mean(want[1:]) - loss_star))
    assert torch.equal(w.detach(), w_star)  # put back at w*
    longer = M.sgld_llc(quadratic(a, w), [w], n, seeds=[0, 7], burnin=1, draws=5, eps=eps,
                        gamma=gamma, batch=None)[1]
    np.testing.assert_array_equal(longer[:, :2], drawn)  # a longer chain continues a shorter
    w1 = w_star[1:].clone().requires_grad_()
    alone = M.sgld_llc(quadratic(a, w1), [w1], n, seeds=[7], burnin=1, draws=2, eps=eps,
                       gamma=gamma, batch=None)[1]
    np.testing.assert_array_equal(alone[0], drawn[1])  # a chain's draws are its own


def test_sgld_llc_mini_batch_draws_each_chain_s_batch_then_its_noise():
    """A mini-batch step written out: the mean loss over the batch randperm(n)[:m] drawn from
    the chain's generator, its gradient times n beta, then the chain's noise."""
    n, m, eps, gamma = 50, 8, 1e-3, 10.0
    targets = torch.randn(n, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    w_star = torch.zeros(2, 3, dtype=torch.float64)
    w = w_star.clone().requires_grad_()

    def loss(idx):  # per-example (w - target)^2 / 2, the chain's examples
        t = targets.expand(2, -1, -1) if idx is None else targets[idx]
        return ((w[:, None] - t) ** 2).sum(-1).mean(1) / 2
    _, drawn = M.sgld_llc(loss, [w], n, seeds=[3, 4], burnin=0, draws=3, eps=eps, gamma=gamma,
                          batch=m)
    nbeta = n / math.log(n)
    for chain, seed in enumerate([3, 4]):
        g, v = torch.Generator().manual_seed(seed), w_star[chain].clone()
        for t in range(3):
            b = targets[torch.randperm(n, generator=g)[:m]]
            assert drawn[chain, t] == pytest.approx(float(((v - b) ** 2).sum(-1).mean() / 2))
            xi = torch.randn(3, generator=g, dtype=torch.float64)
            v = v - eps / 2 * (nbeta * (v - b).mean(0) + gamma * v) + math.sqrt(eps) * xi


def test_sgld_llc_of_a_regular_quadratic_is_half_the_dimension():
    """L = sum a_i w_i^2 / 2 in d = 4: learning coefficient d/2. The chain's expected draws
    written out: coordinate i is Gaussian with variance eps (1 - r^2t) / (1 - r^2) at step t,
    r = 1 - eps k / 2, k = n beta a_i + gamma (d/2 = 2 as eps -> 0 and gamma / n beta -> 0)."""
    n, eps, gamma, burnin, draws = 10 ** 4, 1e-4, 1.0, 100, 2000
    a = torch.tensor([1.0, 2.0, 0.5, 3.0], dtype=torch.float64)
    w = torch.zeros(8, 4, dtype=torch.float64, requires_grad=True)
    per_chain, _ = M.sgld_llc(quadratic(a, w), [w], n, seeds=range(8), burnin=burnin,
                              draws=draws, eps=eps, gamma=gamma)
    llc = per_chain.mean()
    nbeta = n / math.log(n)
    r = 1 - eps * (nbeta * a + gamma) / 2
    t = torch.arange(burnin, burnin + draws, dtype=torch.float64)[:, None]
    expected = float(nbeta * (a / 2 * eps * (1 - r ** (2 * t)) / (1 - r ** 2)).sum(1).mean())
    assert expected == pytest.approx(2.0, rel=0.05)  # its step's bias: +4.6%
    assert llc == pytest.approx(expected, abs=3 * per_chain.std() / math.sqrt(8))
    assert llc == pytest.approx(2.0, rel=0.1)


def test_sgld_llc_of_a_degenerate_direction_is_smaller():
    """L = w1^2 / 2 + w2^4: learning coefficient 1/2 + 1/4 (t V for V homogeneous of degree k
    in d variables has mean d / k under exp(-t V)), below the regular 1 of two parameters. The
    localised posterior's n beta E[L] by quadrature as the reference."""
    n, gamma = 10 ** 4, 1.0
    nbeta = n / math.log(n)
    w = torch.zeros(8, 2, dtype=torch.float64, requires_grad=True)
    per_chain, _ = M.sgld_llc(lambda idx: w[:, 0] ** 2 / 2 + w[:, 1] ** 4, [w], n,
                              seeds=range(8), burnin=300, draws=2000, eps=1e-4, gamma=gamma)
    llc = per_chain.mean()
    u = np.linspace(-2, 2, 400001)
    density = np.exp(-nbeta * u ** 4 - gamma * u ** 2 / 2)
    reference = nbeta / (2 * (nbeta + gamma)) + nbeta * (u ** 4 * density).sum() / density.sum()
    assert reference == pytest.approx(0.75, abs=0.005)
    assert llc == pytest.approx(reference, abs=max(0.06, 3 * per_chain.std() / math.sqrt(8)))
    assert llc < 0.9


def test_llc_every_is_a_checkpoint_period_giving_about_llc_points_a_run():
    assert M.llc_every(Config(steps=10000, ckpt_every=100)) == 1000
    assert M.llc_every(Config(steps=40000, ckpt_every=400)) == 4000
    assert M.llc_every(Config(steps=30000, ckpt_every=1000)) == 3000
    assert M.llc_every(Config(steps=45, ckpt_every=20)) == 20  # at least one period


def llc_context(**kw):
    cfg = Config(p=P, d_model=8, n_heads=2, d_mlp=16, frac=0.5, **kw)
    model = build_model(cfg).double()
    ck = {"model": model.state_dict(), "step": M.llc_every(cfg) + 1}
    c = M.run_context(cfg, model, ck)
    M.load_checkpoint_into(c, model, ck)
    return c, model


def test_llc_only_at_every_llc_every_steps_on_a_float32_copy():
    c, model = llc_context()
    assert np.isnan(M.MEASURES["llc"].fn(c)) and M.MEASURES["llc_chains"].fn(c).shape == (2,)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    c.step = 2 * M.llc_every(c.cfg)
    with torch.no_grad():  # as analyze.py measures
        chains = M.MEASURES["llc_chains"].fn(c)
    loss, params, n, seeds = M.llc_problem(c, [model.state_dict()])
    assert params[0].dtype == torch.float32 and n == int(c.train.sum()) and seeds == [0, 1]
    assert chains.tolist() == M.sgld_llc(loss, params, n, seeds)[0].tolist()
    assert M.MEASURES["llc"].fn(c) == pytest.approx(chains.mean())
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


@pytest.mark.parametrize("ln", ["pre", "post"])
def test_stacked_llc_chains_equal_chains_run_one_at_a_time_on_model_py(ln):
    """The fast path (every checkpoint's chains one stacked model on the table forward) against
    the straightforward one (each checkpoint alone, model.py's forward), the same noise: equal
    to float32 rounding, full batch and mini-batch."""
    c, model = llc_context(ln=ln)
    states = []
    for seed in (0, 1, 2):  # three made-up checkpoints
        torch.manual_seed(seed)
        states.append({k: v + 0.05 * torch.randn_like(v) for k, v in model.state_dict().items()})
    for batch in (None, 16):
        settings = dict(burnin=3, draws=4, eps=1e-4, gamma=100.0, batch=batch)
        with torch.no_grad():
            llc, drawn = M.run_llc(c, states, **settings)
            alone = [M.run_llc(c, [sd], fast_path=False, **settings) for sd in states]
        assert llc.shape == (3, M.LLC_CHAINS) and drawn.shape == (3, M.LLC_CHAINS, 4)
        np.testing.assert_allclose(drawn, np.concatenate([d for _, d in alone]), rtol=2e-5)
        np.testing.assert_allclose(llc, np.concatenate([v for v, _ in alone]), rtol=1e-3,
                                   atol=1e-4)


# ---------------------------------------------------------------- Clock and Pizza

def test_distance_irrelevance_of_logit_tables_by_hand():
    p = 11
    a, b = torch.arange(p * p) // p, torch.arange(p * p) % p
    g = torch.cos(2 * math.pi * 3 * ((a + b) % p) / p)  # variance 1/2 over a full period
    h = 0.5 * torch.sin(2 * math.pi * 2 * ((a - b) % p) / p)  # variance 1/8
    assert M.distance_irrelevance(g, p) == pytest.approx(1.0)  # a + b alone: the Clock
    assert M.distance_irrelevance(h + 3, p) < 1e-12  # a - b alone: the Pizza's |cos(w(a-b)/2)|
    want = math.sqrt(0.5) / math.sqrt(0.5 + 0.125)  # each column holds every a + b once
    assert M.distance_irrelevance(g + h, p) == pytest.approx(want)
    assert np.isnan(M.distance_irrelevance(torch.ones(12 * 12), 12))


class CircleModel(torch.nn.Module):
    """Tokens [a, b, '='] -> p logits, from a circle embedding E(t) = (cos wt, sin wt): the Clock
    multiplies the rotations, logit_c = Re(z_a z_b conj(z_c)) = cos(w(a+b-c)); the Pizza reads the
    sum s = E(a) + E(b), logit_c = (s . (cos(wc/2), sin(wc/2)))^2."""
    NAMES = dict(embed="embed.weight")  # as model.py's models: embedding_gradients hooks it

    def __init__(self, p, k, pizza):
        super().__init__()
        w = 2 * math.pi * k * torch.arange(p + 1, dtype=torch.float64) / p
        self.embed = torch.nn.Embedding(p + 1, 2).double()
        with torch.no_grad():
            self.embed.weight.copy_(torch.stack([torch.cos(w), torch.sin(w)], 1))
        self.w, self.pizza = w[:p], pizza

    def forward(self, tokens):
        e = self.embed(tokens)                                       # (N, 3, 2)
        if self.pizza:
            s = e[:, 0] + e[:, 1]
            half = torch.stack([torch.cos(self.w / 2), torch.sin(self.w / 2)], 1)  # (p, 2)
            return (s @ half.T) ** 2
        za, zb = torch.complex(e[:, 0, 0], e[:, 0, 1]), torch.complex(e[:, 1, 0], e[:, 1, 1])
        return (za * zb)[:, None].mul(torch.exp(-1j * self.w)).real


def test_gradient_symmetricity_of_a_clock_and_a_pizza():
    p, k = 13, 3
    g = torch.Generator().manual_seed(0)
    pairs = torch.randint(p * p, (100,), generator=g)
    x = torch.stack([pairs // p, pairs % p, torch.full_like(pairs, p)], 1)
    c = types.SimpleNamespace(x=x, sym_idx=torch.arange(100), sym_class=torch.randint(p, (100,)))
    c.model = CircleModel(p, k, pizza=True)
    assert M.MEASURES["gradient_symmetricity"].fn(c) == pytest.approx(1.0)
    c.model = CircleModel(p, k, pizza=False)  # the cosine of cos(w(b-c)), -sin(w(b-c)) and a's
    want = torch.cos(2 * math.pi * k * (x[:, 0] - x[:, 1]).double() / p).mean()
    assert M.MEASURES["gradient_symmetricity"].fn(c) == pytest.approx(float(want))
    c.model = build_model(Config(model="mlp", embed="onehot", p=p))
    assert np.isnan(M.MEASURES["gradient_symmetricity"].fn(c))


def test_clock_pizza_measures_give_zhong_et_al_s_numbers_on_their_model_a():
    """Their saved model A (clock_pizza.MODEL_A: p 59, attention rate 0, float32 as theirs):
    their notebook prints distance irrelevance 0.17173645661473538 (the correct logit over every
    pair) and gradient symmetricity 0.9936651682853699 (100 triples (a, b, c) of
    random.Random(42).shuffle over all p^3)."""
    ours = clock_pizza.model_a_values()
    assert ours["distance irrelevance"] == pytest.approx(0.17173645661473538, rel=1e-6)
    assert ours["gradient symmetricity"] == pytest.approx(0.9936651682853699, rel=1e-7)


def test_clock_pizza_table_per_placement_from_the_runs_analysis(tmp_path):
    for ln in ("off", "pre"):
        for seed in (0, 1):
            cfg = Config(p=P, d_model=16, n_heads=2, d_mlp=32, frac=0.5, steps=20, ln=ln,
                         seed=seed, eval_every=10, ckpt_every=10)
            train_alone(cfg, str(tmp_path / f"{ln}_s{seed}"), log=lambda *a: None)
    header, rows = clock_pizza.table(str(tmp_path))
    assert [r[0] for r in rows[:2]] == ["off (No LN)", "pre (M+A*)"]  # Singh et al.'s order
    last = [np.load(tmp_path / f"pre_s{s}" / "analysis.npz") for s in (0, 1)]
    assert all(r["llc_skipped"] for r in last)  # the table needs no LLC
    pack.pack(str(tmp_path), str(tmp_path / "copy" / "runs.npz"))  # a committed copy: no ckpt/
    pack.unpack(str(tmp_path / "copy" / "runs.npz"), str(tmp_path / "copy"))
    assert clock_pizza.table(str(tmp_path / "copy")) == (header, rows)
    pre = dict(zip(header, rows[1]))
    for k, title in (("distance_irrelevance", "distance irrelevance, last"),
                     ("gradient_symmetricity", "gradient symmetricity, last")):
        assert pre[title] == S.fmt([float(r[k][-1]) for r in last], 3)
    assert pre["attention entropy, last (uniform: 1.099)"] == S.fmt(
        [float(r["attn_entropy"][-1]) for r in last], 3)
    assert pre["distance irrelevance at generalization"] == "not reached"  # 20 steps
    pizza = sum(clock_pizza.pizza_like(r["distance_irrelevance"][-1],
                                       r["gradient_symmetricity"][-1]) for r in last)
    assert pre["Pizza-like seeds (last)"] == f"{pizza}/2"
    assert pre["gradient symmetricity vs No LN: Mann-Whitney U / p"].startswith("U ")
    assert clock_pizza.pizza_like(*clock_pizza.ZHONG["their model A (Pizza, attention rate 0)"])
    assert not clock_pizza.pizza_like(*clock_pizza.ZHONG["their model B (Clock, attention rate 1)"])
