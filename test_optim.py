"""
Tests of optim.py's interventions and train.py's losses: each against a straightforward
computation on a hand-made case (Grokfast's filters, ⊥Grad, Muon against torch.optim.Muon,
Adam's coupled L2 against torch.optim.Adam, StableMax and its gradient, the collapse shares),
training with every option on (resume and batched runs equal lone runs), and the statistics that
compare runs (Mann-Whitney U, the baseline of a configuration, the seed-mean curve) and the
tables that experiments/claims.py prints from run folders.

    python -m pytest -q test_optim.py
"""
import itertools
import json
import os
import sys

import numpy as np
import pytest
import torch

import analyze as A

from data import make_data
from measures import fisher_exact, sign_test
from model import Config, build_model
from optim import AdamW, make_optimizer, orthogonal
from test_train import DEVICES, quiet, small_cfg
from train import collapse, loss_fn, main, train

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "experiments"))
import claims  # noqa: E402
import metrics_table  # noqa: E402


def test_grokfast_ema_after_two_steps_equals_its_closed_form():
    p = torch.nn.Parameter(torch.zeros(3))
    opt = AdamW([p], (0.9, 0.98), 1e-8, grokfast=("ema", 0.9, 2.0))
    g0, g1, s = torch.tensor([1.0, 2, 3]), torch.tensor([-1.0, 0, 5]), {}
    torch.testing.assert_close(opt.direction(p, g0, s), g0 + 2 * g0)  # the average starts at g0
    torch.testing.assert_close(opt.direction(p, g1, s), g1 + 2 * (0.9 * g0 + 0.1 * g1))


def test_grokfast_ma_waits_for_a_full_window_then_adds_its_mean():
    p = torch.nn.Parameter(torch.zeros(2, 2))  # a stack of 2 runs: the window after the run axis
    opt = AdamW([p], (0.9, 0.98), 1e-8, runs=2, grokfast=("ma", 3, 5.0))
    gs, s = [torch.randn(2, 2) for _ in range(5)], {}
    out = [opt.direction(p, g, s) for g in gs]
    for t in (0, 1):
        torch.testing.assert_close(out[t], gs[t])  # their warm-up: no filter until 3 are in
    for t in (2, 3, 4):
        torch.testing.assert_close(out[t], gs[t] + 5 * sum(gs[t - 2:t + 1]) / 3)
    assert s["grokfast_ring"].shape == (2, 3, 2)


def test_orthogonal_gradient_is_orthogonal_to_each_runs_weights_with_the_gradients_norm():
    w, g = torch.randn(3, 4, 5), torch.randn(3, 4, 5)
    o = orthogonal(w, g, stacked=True)
    for r in range(3):
        assert abs(float((o[r] * w[r]).sum())) < 1e-5
        assert float(o[r].norm()) == pytest.approx(float(g[r].norm()), rel=1e-6)
        torch.testing.assert_close(o[r], orthogonal(w[r], g[r], stacked=False))


def test_coupled_weight_decay_equals_torch_adam():
    torch.manual_seed(0)
    a = torch.nn.Parameter(torch.randn(6, 4))
    b = torch.nn.Parameter(a.detach().clone())
    ours = AdamW([a], (0.9, 0.98), 1e-8, coupled=True)
    ours.set_hyper([[1e-2]], [[0.5]])
    ref = torch.optim.Adam([b], lr=1e-2, betas=(0.9, 0.98), eps=1e-8, weight_decay=0.5)
    for _ in range(10):
        g = torch.randn(6, 4)
        a.grad, b.grad = g.clone(), g.clone()
        ours.step(), ref.step()
    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_muon_moves_exactly_the_hidden_matrices_as_torch_muon_does():
    def muon_names(cfg, runs=1):
        model = build_model(cfg)
        named = list(model.named_parameters())
        if runs > 1:
            named = [(n, torch.nn.Parameter(torch.stack([p.detach()] * runs))) for n, p in named]
        opt = make_optimizer(cfg, named, runs)
        return {n for n, p in named if id(p) in opt.muon}
    hidden = {"blocks.0.attn.in_proj_weight", "blocks.0.attn.out_proj.weight",
              "blocks.0.fc1.weight", "blocks.0.fc2.weight"}
    assert muon_names(Config(optimizer="muon")) == hidden
    assert muon_names(Config(optimizer="muon"), runs=3) == hidden
    assert muon_names(Config(optimizer="muon", model="mlp", n_layers=2)) == \
        {"fc1.weight", "hidden.0.weight"}
    assert muon_names(Config()) == set()
    torch.manual_seed(0)
    w = torch.randn(3, 20, 8)  # three runs of a 20 x 8 matrix
    mine = torch.nn.Parameter(w.clone())
    ours = AdamW([mine], (0.9, 0.98), 1e-8, runs=3, muon=[mine])
    ours.set_hyper([[1e-2] * 3], [[0.1] * 3])
    refs = [torch.nn.Parameter(w[r].clone()) for r in range(3)]
    torch_muon = torch.optim.Muon(refs, lr=1e-2, weight_decay=0.1,
                                  adjust_lr_fn="match_rms_adamw")
    for _ in range(3):
        g = torch.randn(3, 20, 8)
        mine.grad = g.clone()
        for r in range(3):
            refs[r].grad = g[r].clone()
        ours.step(), torch_muon.step()
    for r in range(3):
        torch.testing.assert_close(mine[r], refs[r], rtol=1e-5, atol=1e-6)


def test_stablemax_equals_its_formula_and_gradient():
    z = torch.tensor([[2.0, -1.0, 0.5, -3.0], [0.0, 4.0, -0.5, 1.0]], dtype=torch.float64,
                     requires_grad=True)
    y = torch.tensor([0, 2])
    s = lambda x: x + 1 if x >= 0 else 1 / (1 - x)
    ds = lambda x: 1.0 if x >= 0 else 1 / (1 - x) ** 2
    rows = z.tolist()
    want = np.mean([-np.log(s(r[c]) / sum(map(s, r))) for r, c in zip(rows, y.tolist())])
    loss = loss_fn(z, y, "float64", "stablemax")
    assert loss.item() == pytest.approx(want, rel=1e-12)
    loss.backward()
    for i, (r, c) in enumerate(zip(rows, y.tolist())):
        S = sum(map(s, r))
        grad = [(ds(x) / S - (j == c) * ds(x) / s(x)) / 2 for j, x in enumerate(r)]
        np.testing.assert_allclose(z.grad[i].numpy(), grad, rtol=1e-10)


def test_collapse_and_zero_loss_shares_by_hand():
    logits = torch.tensor([[[20.0, 0, 0], [1.0, 0, 0], [200.0, 0, 0], [0.0, 0, 0]]])
    y = torch.tensor([[0, 0, 0, 1]])
    ones, zero = collapse(logits, y, "float32")  # 1 + 2 exp(-20) rounds to 1 in float32
    assert ones.tolist() == [0.5] and zero.tolist() == [0.5]
    ones, zero = collapse(logits, y, "float64")  # ... not in float64; 1 + 2 exp(-200) does
    assert ones.tolist() == [0.25] and zero.tolist() == [0.25]


@pytest.mark.parametrize("argv,msg", [
    (["--grokfast", "fast"], "unknown --grokfast"),
    (["--gf-alpha", "1.5"], "--gf-alpha 1.5 must be in [0, 1)"),
    (["--gf-window", "0"], "--gf-window 0 must be at least 1"),
    (["--optimizer", "sgd"], "unknown --optimizer"),
    (["--loss", "mse"], "unknown --loss"),
    (["--l1", "-1"], "--l1 non-negative"),
    (["--dropout", "1.5"], "--dropout 1.5 must be in [0, 1)"),
    (["--init", "xavier"], "unknown --init"),
])
def test_bad_intervention_options(argv, msg, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(argv + ["--p", "23", "--out", str(tmp_path), "--steps", "2"])
    assert msg in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("kw", [
    dict(grokfast="ma", gf_window=4, gf_lamb=5.0, optimizer="adam", wd=0.01),
    dict(grokfast="ema", orthograd=True, loss="stablemax", batch_size=32),
    dict(optimizer="muon", loss_dtype="float32"),
])
@pytest.mark.parametrize("device", DEVICES)  # on a GPU: inside a recorded CUDA graph
def test_every_option_resumes_exactly_and_batches_like_lone_runs(kw, device, tmp_path):
    cfgs = [small_cfg(steps=30, seed=s, **kw) for s in (0, 1)]
    alone = [train(c, str(tmp_path / f"a{r}"), device, log=quiet) for r, c in enumerate(cfgs)]
    plain = train(small_cfg(steps=30), str(tmp_path / "plain"), device, log=quiet)
    assert not np.allclose(plain["train_loss"][1:], alone[0]["train_loss"][1:])  # it acts
    train(small_cfg(steps=15, **kw), str(tmp_path / "r"), device, log=quiet)
    resumed = train(cfgs[0], str(tmp_path / "r"), device, resume=True, log=quiet)
    batched = train(cfgs, [str(tmp_path / f"b{r}") for r in range(2)], device, log=quiet)
    # Muon orthogonalises in bfloat16: a float32 rounding difference between stacked and lone
    # gradients can flip a bfloat16 rounding (8-bit mantissa)
    rtol = 1e-3 if kw.get("optimizer") == "muon" else 1e-4
    for k in ("train_loss", "test_loss", "weight_norm", "update_norm", "collapse"):
        np.testing.assert_array_equal(resumed[k], alone[0][k], err_msg=k)
        for r in range(2):
            np.testing.assert_allclose(batched[r][k], alone[r][k], rtol=rtol, atol=1e-6)


def test_l1_penalty_joins_the_gradient_and_kaiming_init(tmp_path):
    cfg = small_cfg(steps=1, l1=0.01, wd=0.0)
    train(cfg, str(tmp_path / "l1"), log=quiet)
    got = torch.load(tmp_path / "l1" / "ckpt" / "step_000001.pt", weights_only=True)["model"]
    model = build_model(cfg)  # by hand: CE + l1 * sum |theta|, one torch AdamW step
    x, y = make_data(cfg)[:2]
    loss = torch.nn.functional.cross_entropy(model(x).double(), y)
    (loss + 0.01 * sum(p.abs().sum() for p in model.parameters())).backward()
    ref = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=cfg.betas, eps=cfg.eps,
                            weight_decay=0.0)
    ref.step()
    for n, p in model.named_parameters():
        torch.testing.assert_close(got[n], p.detach(), rtol=1e-5, atol=1e-6)
    w = build_model(Config(init="kaiming")).blocks[0].fc1.weight
    assert abs(w.std().item() - (2 / 128) ** 0.5) < 0.005 and w.abs().max() > 2 / 128 ** 0.5


def test_dropout_trains_resumes_exactly_and_is_off_at_evaluation(tmp_path):
    cfg = small_cfg(steps=30, dropout=0.2)
    a = train(cfg, str(tmp_path / "a"), log=quiet)
    b = train(cfg, str(tmp_path / "b"), log=quiet)
    # without dropout, on model.py's forward too (dropout has no table forward)
    plain = train(small_cfg(steps=30), str(tmp_path / "p"), fast=False, log=quiet)
    train(small_cfg(steps=15, dropout=0.2), str(tmp_path / "r"), log=quiet)
    resumed = train(cfg, str(tmp_path / "r"), resume=True, log=quiet)
    for k in ("train_loss", "test_loss", "update_norm"):
        np.testing.assert_array_equal(a[k], b[k])  # same seed, same masks
        np.testing.assert_array_equal(resumed[k], a[k])  # the random state is in resume.pt
    assert a["train_loss"][0] == plain["train_loss"][0]  # evaluated without dropout
    assert a["update_norm"][0] != plain["update_norm"][0]  # stepped with it
    two = train([small_cfg(steps=10, dropout=0.2, seed=s) for s in (0, 1)],
                [str(tmp_path / f"s{s}") for s in (0, 1)], log=quiet)  # a stack: masks per run
    assert two[0]["train_loss"][-1] != two[1]["train_loss"][-1]


def test_dropout_drops_mlp_neurons_and_scales_the_rest():
    model = build_model(small_cfg(dropout=0.5)).double()
    x = make_data(model.cfg)[0]
    torch.manual_seed(0)
    cache, off = {}, {}
    model.train()
    model.residuals(x, cache)
    model.eval()
    model.residuals(x, off)
    h, h0 = cache["mlp_act"], off["mlp_act"]  # Nanda et al.: each neuron zeroed with prob. p
    kept = h != 0
    assert abs(kept.double().mean().item() - 0.5) < 0.02 and (h0 != 0).all()
    torch.testing.assert_close(h[kept], 2 * h0[kept])  # the others scaled by 1 / (1 - p)
    torch.testing.assert_close(cache["mlp_in"], off["mlp_in"])  # attention untouched


def test_mann_whitney_by_its_definition():
    rng = np.random.default_rng(0)
    for n1, n2 in ((5, 5), (4, 7), (40, 35)):  # exact, exact, normal approximation
        x, y = list(rng.integers(0, 20, n1)), list(rng.integers(5, 25, n2))
        x[0] = None  # never generalized: later than everything
        inf = lambda v: np.inf if v is None else v
        pairs = sum((inf(a) > b) + 0.5 * (inf(a) == b) for a in x for b in y)
        U, p = A.mann_whitney(x, y)
        assert U == pairs and 0 < p <= 1
    assert A.mann_whitney([1, 2, 3], [4, 5, 6]) == (0, pytest.approx(0.1))  # 2 of 20 splits
    assert A.mann_whitney([1, 2, 3], [1, 2, 3])[1] == 1.0
    same = list(range(60))
    assert A.mann_whitney(same, same)[1] == pytest.approx(1.0)


def test_fisher_and_sign_tests_by_enumeration():
    # Fisher: which n1 of the n runs form group 1, every way equally likely, successes fixed
    for a, n1, b, n2 in ((3, 4, 1, 4), (12, 13, 8, 13), (5, 8, 1, 10), (0, 3, 3, 3)):
        runs = [1] * (a + b) + [0] * (n1 + n2 - a - b)
        seen = [sum(runs[i] for i in g) for g in itertools.combinations(range(n1 + n2), n1)]
        freq = {x: seen.count(x) for x in set(seen)}
        p = sum(v for x, v in freq.items() if v <= freq[a]) / len(seen)
        assert fisher_exact(a, n1, b, n2) == pytest.approx(p)
    assert fisher_exact(3, 4, 1, 4) == pytest.approx(34 / 70)  # the tea-tasting table
    for w, l in ((9, 3), (0, 6), (4, 4), (7, 1)):  # every sign pattern of the w + l pairs
        wins = [sum(s) for s in itertools.product((0, 1), repeat=w + l)]
        extreme = sum(min(k, w + l - k) <= min(w, l) for k in wins) / len(wins)
        assert sign_test(w, l) == pytest.approx(min(1.0, extreme))


def test_baseline_is_the_same_setting_without_intervention():
    cfg = lambda **kw: Config(**kw)
    groups = {"base": [(None, cfg(), None, None)], "ema": [(None, cfg(grokfast="ema"), None, None)],
              "lr3": [(None, cfg(lr=3e-3), None, None)], "off": [(None, cfg(ln="off"), None, None)],
              "ema-lr": [(None, cfg(grokfast="ema", lr=3e-4), None, None)]}
    b = A.baselines(groups)
    assert all(b[k] is groups["base"] for k in ("base", "ema", "lr3", "ema-lr"))
    assert b["off"] is groups["off"]  # its own baseline: no other No LN configuration


def test_seed_mean_curve_statistic_against_per_seed_steps():
    steps = np.arange(0, 100, 10)
    curve = lambda drop: np.where(steps >= drop, 0.001, 1.0)  # test loss falls at `drop`
    runs = [(None, None, dict(step=steps, test_loss=curve(d)), None) for d in (20, 40, 90)]
    # the mean is <= 0.01 only once every seed is below: (1 + 2 * 0.001) / 3 > 0.01 before
    assert A.mean_curve_step(runs) == 90 and A.grok_steps(runs) == [20, 40, 90]
    short = dict(step=steps[:4], test_loss=curve(20)[:4])  # stopped early: keeps its last value
    assert A.mean_curve_step([(None, None, short, None), runs[1]]) == 40
    never = (None, None, dict(step=steps, test_loss=curve(10 ** 9)), None)
    assert claims.subsets(runs, 2) == [40, 90, 90]  # {20, 40}, {20, 90}, {40, 90}
    assert claims.subsets(runs + [never], 3) == [90, None, None, None]


def test_claims_prints_each_arm_seed_by_seed_from_the_run_folders(tmp_path, capsys, monkeypatch):
    steps = np.arange(0, 1001, 100)
    for seed, data_seed, grok in ((0, None, 300), (1, None, None), (0, 10000, 200),
                                  (1, 10001, 700)):  # made-up runs: the step test loss hits 0.01
        run = tmp_path / f"ln-off_{data_seed}_s{seed}"
        run.mkdir()
        (run / "config.json").write_text(json.dumps(
            Config(ln="off", seed=seed, data_seed=data_seed, steps=1000).to_dict()))
        loss = np.where(steps >= (grok or 10 ** 9), 0.005, 1.0)
        np.savez(run / "metrics.npz", step=steps, test_loss=loss, test_acc=1 - loss)
    monkeypatch.setitem(claims.SECTIONS, "coupling", ("c", str(tmp_path), "-", claims.coupling))
    monkeypatch.setitem(claims.SECTIONS, "grids", ("g", str(tmp_path / "no"), "make it", print))
    claims.main(["coupling", "grids"])
    out = capsys.readouterr().out
    assert "| coupled: split and init from one seed | s0: 300 / s1: - | 300 +- 0 (1/2) |" in out
    assert "| independent: split from --data-seed | s0: 200 / s1: 700 | 450 +- 250 (2/2) | 700 |" \
        in out  # the seed-mean curve is <= 0.01 only once both are
    assert "coupled first in 0, later in 2, tied in 0 of 2 seeds (sign test p 0.500); reached " \
        "0.01: 1 of 2 against 2 of 2 (Fisher exact p 1.000)" in out
    assert "not on this machine; made by: make it" in out
    claims.per_seed(str(tmp_path), lambda c: f"seed {c.seed}", ref="centre")  # ref not run here
    out = capsys.readouterr().out
    assert "vs centre (not among these runs): Mann-Whitney U / p |" in out \
        and out.count(" / p ") == 1  # in the header only: no test
    cut = dict(step=np.arange(0, 301, 100))  # a run interrupted before its budget
    assert claims.unfinished(Config(steps=1000), cut) == "- (stopped at 300 of 1000)"
    loss = np.array([1.0, 0.5, 6.0, 0.1, 0.9, 20.0])  # > 10x the evaluation before: 2
    assert claims.jumps(np.arange(6) * 10, loss) == (2, 20)


def test_claims_puts_singh_et_al_s_number_beside_each_placement(tmp_path, capsys):
    steps = np.arange(0, 1001, 100)
    for ln, seed, grok in (("pre", 1, 300), ("pre", 2, 500), ("off", 1, None)):
        run = tmp_path / f"ln-{ln}_s{seed}"
        run.mkdir()
        (run / "config.json").write_text(json.dumps(Config(ln=ln, seed=seed).to_dict()))
        loss = np.where(steps >= (grok or 10 ** 9), 0.005, 1.0)
        np.savez(run / "metrics.npz", step=steps, test_loss=loss, test_acc=1 - loss)
    claims.placements(str(tmp_path))
    out = capsys.readouterr().out
    assert "| off (No LN) | s1: - (stopped at 1000 of 10000) |" in out  # the reference: first
    assert "| pre (M+A*) | s1: 300 / s2: 500 | 400 +- 100 (2/2) | 500 |" in out
    assert "| 3525 (first seed / all five: 2360 / 3934) |" in out
    assert "| 7807 (first seed / all five: 6328 / 7935) |" in out


def test_claims_finds_singh_et_al_s_number_for_the_lr_and_wd_a_run_trains_with():
    off = dict(ln="off")
    assert claims.singh_number(Config(**off, lr=1e-2, fix_wd=True)) == "4470"  # wd 0.1
    assert claims.singh_number(Config(**off, alpha=0.5, alpha_lr=True)) == "2021"  # lr 4e-3
    assert claims.singh_number(Config(**off, alpha=0.5)) == "not reached"
    assert claims.singh_number(Config(**off, wd=1.5)) == "6395"
    assert claims.singh_number(Config(**off, wd=2.0)) == "-"  # not on their grid
    assert claims.singh_number(Config(ln="pre")) == "-"
    assert claims.singh_number(Config(**off, n_layers=3, d_model=64)) == "-"
    half = Config(**off, alpha=0.5, alpha_lr=True)
    assert claims.singh_label(half) == "lr 0.004, wd 1, alpha 0.5"
    assert claims.singh_label(Config(ln="pre", n_layers=3, d_model=64, d_mlp=256, lr=1e-2,
                                     fix_wd=True)) \
        == "ln pre, n_layers 3, d_model 64, d_mlp 256: lr 0.01, wd 0.1, alpha 1"
    assert claims.singh_label(Config(**off, alpha=2, eps=0.0, init="kaiming")) \
        == "eps 0, init kaiming: lr 0.001, wd 1, alpha 2"


def test_claims_early_prints_both_definitions_at_step_1000(monkeypatch, capsys):
    step = np.array([0, 500, 1500])  # step 1000 lies between two checkpoints: interpolated
    runs = {f"r/ln-{ln}_s{s}": (Config(ln=ln, seed=s), {}, dict(
        step=step, attn_entropy=np.array([1.0, 0.8 + s / 10, 0.4 + s / 10]),
        attn_entropy_per_head=np.full(3, 0.1), sr_train=np.full(3, 5.0),
        sr_train_ln=np.array([3.0, 3.0, 1.0]))) for ln in ("pre", "attn-pre-qk") for s in (0, 2)}
    monkeypatch.setattr(claims, "load", lambda root, analysed=False: runs)
    claims.early("r")
    out = capsys.readouterr().out
    row = "| ln=attn-pre-qk | 0.700 +- 0.100 | 0.100 +- 0.000 | 5.000 +- 0.000 | 2.000 +- 0.000 |"
    assert row in out


def test_metrics_table_tests_both_step_counts_against_the_setting_baseline(tmp_path, capsys):
    steps = np.arange(0, 1001, 100)
    arms = {"base": ({}, (500, 600, 700), 100), "ema": (dict(grokfast="ema"), (100, 200, 300), 600)}
    for name, (kw, at, lag) in arms.items():  # made-up: acc >= 0.95 at t, loss <= 0.01 at t+lag
        for seed, t in enumerate(at):
            run = tmp_path / f"{name}_s{seed}"
            run.mkdir()
            (run / "config.json").write_text(json.dumps(Config(seed=seed, **kw).to_dict()))
            np.savez(run / "metrics.npz", step=steps, test_acc=np.where(steps >= t, 1.0, 0.0),
                     test_loss=np.where(steps >= t + lag, 0.005, 1.0), collapse=0 * steps)
    metrics_table.main(str(tmp_path))
    out = capsys.readouterr().out
    ema = next(line for line in out.splitlines() if "grokfast=ema" in line)
    base = next(line for line in out.splitlines() if "grokfast=none" in line)
    # accuracy: every EMA seed before every baseline seed, U = 0, p = 2 / C(6, 3); loss: EMA at
    # 700 / 800 / 900 against 600 / 700 / 800, U = 1.5 + 2.5 + 3 = 7 (ties count a half)
    assert "200 +- 82 (3/3) | 800 +- 82 (3/3)" in ema
    assert "| U 0 / p 0.100 ; U 7 / p " in ema and base.endswith("| - |")
    assert (tmp_path / "figures" / "steps_to_generalize.png").stat().st_size > 10000


def test_metrics_table_recomputes_a_stablemax_runs_test_loss_as_softmax_cross_entropy(tmp_path):
    cfg = small_cfg(steps=20, ckpt_every=10, loss="stablemax")
    train(cfg, str(tmp_path / "sm"), log=quiet)
    steps, loss = metrics_table.softmax_test_loss(str(tmp_path / "sm"), cfg)
    _, _, x_te, y_te = make_data(cfg)
    model = build_model(cfg).double()
    for s, got in zip(steps, loss):  # independent: a plain forward and torch's cross-entropy
        ck = torch.load(tmp_path / "sm" / "ckpt" / f"step_{s:06d}.pt", weights_only=True)
        model.load_state_dict(ck["model"])
        with torch.no_grad():
            want = torch.nn.functional.cross_entropy(model(x_te), y_te)
        assert abs(got - float(want)) < 1e-9 * max(1, float(want))
    assert list(steps) == [0, 10, 20]
    m = np.load(tmp_path / "sm" / "metrics.npz")  # what it trained on: StableMax, not softmax
    assert abs(m["test_loss"][-1] - loss[-1]) > 1e-6
