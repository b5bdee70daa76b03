"""
Tests of optim.py's interventions and train.py's losses: each against a straightforward
computation on a hand-made case (Grokfast's filters, ⊥Grad, Muon against torch.optim.Muon,
Adam's coupled L2 against torch.optim.Adam, StableMax and its gradient, the collapse shares),
and training with every option on (resume and batched runs equal lone runs).

    python -m pytest -q test_optim.py
"""
import os

import numpy as np
import pytest
import torch

from config import Config
from conftest import DEVICES, quiet, small_cfg, train_alone
from data import make_data
from model import build_model
from optim import AdamW, make_optimizer, orthogonal, per_run, per_run_flat
from train import collapse, loss_fn, main, train


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
    ours.set_lr_wd([[1e-2]], [[0.5]])
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
        opt = make_optimizer(cfg, named, runs, model.NAMES)
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
    ours.set_lr_wd([[1e-2] * 3], [[0.1] * 3])
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
    row, y = torch.tensor([[[9.0, 0, 0]]]), torch.tensor([[0]])  # 1 + 2 exp(-9) = 1 + 2.5e-4
    assert collapse(row, y, "float16")[0].item() == 1 and collapse(row, y, "float32")[0].item() == 0


@pytest.mark.parametrize("argv,msg", [
    (["--grokfast", "fast"], "argument --grokfast: invalid choice: 'fast'"),
    (["--gf-alpha", "1.5"], "--gf-alpha 1.5 must be in [0, 1)"),
    (["--gf-window", "0"], "--gf-window 0 must be at least 1"),
    (["--optimizer", "sgd"], "argument --optimizer: invalid choice: 'sgd'"),
    (["--loss", "mse"], "argument --loss: invalid choice: 'mse'"),
    (["--l1", "-1"], "--l1 -1.0 must be finite and >= 0"),
    (["--dropout", "1.5"], "--dropout 1.5 must be in [0, 1)"),
    (["--init", "xavier"], "argument --init: invalid choice: 'xavier'"),
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
    alone = [train_alone(c, str(tmp_path / f"a{r}"), device, log=quiet) for r, c in enumerate(cfgs)]
    plain = train_alone(small_cfg(steps=30), str(tmp_path / "plain"), device, log=quiet)
    assert not np.allclose(plain["train_loss"][1:], alone[0]["train_loss"][1:])  # it acts
    train_alone(small_cfg(steps=15, **kw), str(tmp_path / "r"), device, log=quiet)
    resumed = train_alone(cfgs[0], str(tmp_path / "r"), device, resume=True, log=quiet)
    batched = train(cfgs, [str(tmp_path / f"b{r}") for r in range(2)], device, log=quiet)
    # Muon orthogonalises in bfloat16: a float32 rounding difference between stacked and lone
    # gradients can flip a bfloat16 rounding (8-bit mantissa)
    rtol = 1e-3 if kw.get("optimizer") == "muon" else 1e-4
    for k in ("train_loss", "test_loss", "weight_norm", "update_norm", "collapse", "zero_loss"):
        np.testing.assert_array_equal(resumed[k], alone[0][k], err_msg=k)
        for r in range(2):
            np.testing.assert_allclose(batched[r][k], alone[r][k], rtol=rtol, atol=1e-6)


def test_l1_penalty_joins_the_gradient_and_kaiming_init(tmp_path):
    cfg = small_cfg(steps=1, l1=0.01, wd=0.0)
    train_alone(cfg, str(tmp_path / "l1"), log=quiet)
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


@pytest.mark.parametrize("device", DEVICES)  # a GPU: the warm-up of its graph draws no mask
def test_dropout_trains_resumes_exactly_and_is_off_at_evaluation(device, tmp_path):
    cfg = small_cfg(steps=30, dropout=0.2)
    a = train_alone(cfg, str(tmp_path / "a"), device, log=quiet)
    b = train_alone(cfg, str(tmp_path / "b"), device, log=quiet)
    plain = train_alone(small_cfg(steps=30), str(tmp_path / "p"), device, log=quiet)  # no dropout
    train_alone(small_cfg(steps=15, dropout=0.2), str(tmp_path / "r"), device, log=quiet)
    resumed = train_alone(cfg, str(tmp_path / "r"), device, resume=True, log=quiet)
    for k in ("train_loss", "test_loss", "update_norm"):
        np.testing.assert_array_equal(a[k], b[k])  # same seed, same masks
        np.testing.assert_array_equal(resumed[k], a[k])  # the random state is in resume.pt
    assert a["train_loss"][0] == plain["train_loss"][0]  # evaluated without dropout
    assert a["update_norm"][0] != plain["update_norm"][0]  # stepped with it
    two = train([small_cfg(steps=10, dropout=0.2, seed=s) for s in (0, 1)],
                [str(tmp_path / f"s{s}") for s in (0, 1)], device, log=quiet)  # masks per run
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


def test_eps_0_leaves_a_parameter_one_run_of_a_stack_never_reads_as_a_lone_run_does(tmp_path):
    cfgs = [small_cfg(steps=10, eps=0.0, ln=ln) for ln in ("attn-pre", "mlp-pre")]  # ln2 / ln1
    alone = [train_alone(c, str(tmp_path / c.ln), log=quiet) for c in cfgs]
    batched = train(cfgs, [str(tmp_path / f"b{r}") for r in range(2)], log=quiet)
    for a, b in zip(alone, batched):  # not 0/0 = NaN where the moments stay exactly 0
        assert np.isfinite(b["weight_norm"]).all()
        np.testing.assert_array_equal(a["weight_norm"], b["weight_norm"])


# ---------------------------------------------------------------- the state rule

def clipped_direction(self, p, grad, state):
    """A forker's trick with a per-run scalar in its state, written as the new body of
    AdamW.direction (the one place the README names): each run's gradient clipped to the
    running mean of its norms, kept as the state rule says (run_zeros: (R,) in a stack, ()
    alone)."""
    if "norm_ema" not in state:
        state["norm_ema"] = self.run_zeros(p)
    ema = state["norm_ema"]
    norm = per_run_flat(grad, self.stacked).norm(dim=1).view_as(ema)
    ema.copy_(torch.where(ema == 0, norm, 0.9 * ema + 0.1 * norm))
    return grad * per_run((ema / norm).clamp(max=1), grad)


def last_checkpoint(run):
    return torch.load(os.path.join(run, "ckpt", "step_000030.pt"), weights_only=True)["model"]


def test_a_per_run_scalar_state_resumes_bit_for_bit_batched_alone_and_across(tmp_path,
                                                                             monkeypatch):
    cfgs = [small_cfg(steps=30, seed=s) for s in (0, 1)]
    halves = [small_cfg(steps=15, seed=s) for s in (0, 1)]
    plain = train_alone(cfgs[0], str(tmp_path / "plain"), log=quiet)
    monkeypatch.setattr(AdamW, "direction", clipped_direction)  # the one edit
    runs = lambda name: [str(tmp_path / f"{name}{r}") for r in (0, 1)]
    alone = [train_alone(c, d, log=quiet) for c, d in zip(cfgs, runs("alone"))]
    assert not np.array_equal(plain["train_loss"], alone[0]["train_loss"])  # it clips
    ck = torch.load(tmp_path / "alone0" / "resume.pt", weights_only=True)
    assert {st["norm_ema"].shape for st in ck["optim"]["state"].values()} == {()}
    batched = train(cfgs, runs("batched"), log=quiet)
    train(halves, runs("b_b"), log=quiet)  # batched, then batched --resume
    b_b = train(cfgs, runs("b_b"), resume=True, log=quiet)
    train(halves, runs("b_l"), log=quiet)  # batched, then each alone
    b_l = [train_alone(c, d, resume=True, log=quiet) for c, d in zip(cfgs, runs("b_l"))]
    for c, d in zip(halves, runs("l_b")):  # alone, then batched
        train_alone(c, d, log=quiet)
    l_b = train(cfgs, runs("l_b"), resume=True, log=quiet)
    for r in (0, 1):
        # a CPU runs a stack run by run: the losses and the weights of a batched run are those
        # of the run alone, bit for bit; so is every interrupted run's
        for got, name in ((batched[r], "batched"), (b_b[r], "b_b"), (b_l[r], "b_l"),
                          (l_b[r], "l_b")):
            for k in ("train_loss", "test_loss", "train_acc", "test_acc"):
                np.testing.assert_array_equal(got[k], alone[r][k], err_msg=f"{name} {k}")
            want = last_checkpoint(runs("alone")[r])
            for n, t in last_checkpoint(runs(name)[r]).items():
                assert torch.equal(t, want[n]), (name, n)


def shared_direction(self, p, grad, state):
    """A per-run statistic kept as one number for the whole stack: against the state rule."""
    state.setdefault("calls", torch.zeros((), device=p.device)).add_(1)
    return grad


def test_a_state_without_the_run_axis_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(AdamW, "direction", shared_direction)
    train_alone(small_cfg(steps=2), str(tmp_path / "alone"), log=quiet)  # alone, () is per run
    with pytest.raises(SystemExit) as e:
        main(["--p", "23", "--d-model", "32", "--d-mlp", "64", "--steps", "2", "--seed", "0",
              "1", "--out", str(tmp_path)])
    assert "optimizer state 'calls' has shape () in a stack of 2 runs" in str(e.value)
    assert "run axis" in str(e.value) and "\n" not in str(e.value)
