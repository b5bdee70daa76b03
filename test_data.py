"""
Tests of data.py and of training on it: the splits, the operand vocabularies, the mini-batch
sampler (every example once an epoch, balanced orders, a batch a function of seed and step),
and mini-batch training (resume exact, batched like lone runs).

    python -m pytest -q test_data.py
"""
import numpy as np
import pytest
import torch

import measures
from config import Config
from conftest import DEVICES, quiet, small_cfg, train_alone
from data import SPLITS, Batches, all_pairs, make_data, token_frequency
from model import build_model
from optim import emb_lr_ratio
from runfiles import Stop
from train import main, train


# ---------------------------------------------------------------- data

def test_random_split_sizes_disjoint_and_labels():
    cfg = Config()
    xtr, ytr, xte, yte = make_data(cfg)
    assert len(xtr) == 3830 and len(xte) == 12769 - 3830
    pairs = {tuple(r) for r in xtr[:, :2].tolist()} | {tuple(r) for r in xte[:, :2].tolist()}
    assert len(pairs) == 12769
    assert (xtr[:, 2] == 113).all()
    assert torch.equal(ytr, (xtr[:, 0] + xtr[:, 1]) % 113)


@pytest.mark.parametrize("op,f", [("sub", lambda a, b, p: (a - b) % p),
                                  ("mul", lambda a, b, p: a * b % p),
                                  ("div", lambda a, b, p: a * pow(b, p - 2, p) % p),
                                  ("a2+b2", lambda a, b, p: (a * a + b * b) % p),
                                  ("a2+ab+b2", lambda a, b, p: (a * a + a * b + b * b) % p),
                                  ("a3+ab+b3", lambda a, b, p: (a ** 3 + a * b + b ** 3) % p)])
def test_ops_labels(op, f):
    xtr, ytr, xte, yte = make_data(Config(p=13, op=op))
    for x, y in ((xtr, ytr), (xte, yte)):
        for (a, b, _), c in zip(x.tolist(), y.tolist()):
            assert c == f(a, b, 13)
    if op == "div":
        assert (xtr[:, 1] != 0).all() and (xte[:, 1] != 0).all() and len(xtr) + len(xte) == 13 * 12


@pytest.mark.parametrize("split,hole", [("square", 20), ("strip", 10)])
def test_dug_out_region_is_all_in_test(split, hole):
    cfg = Config(split=split, hole=hole)
    xtr, _, xte, _ = make_data(cfg)
    in_hole = (lambda a, b: (a <= hole) & (b <= hole)) if split == "square" else \
        (lambda a, b: a <= hole)
    assert not in_hole(xtr[:, 0], xtr[:, 1]).any()
    n_hole = (hole + 1) ** 2 if split == "square" else (hole + 1) * 113
    assert in_hole(xte[:, 0], xte[:, 1]).sum() == n_hole
    assert len(xtr) == 3830 and len(xtr) + len(xte) == 12769


def test_balanced_split_counts_are_even():
    for p, frac in ((113, 0.3), (23, 0.5), (31, 0.77)):
        xtr, _, xte, _ = make_data(Config(p=p, frac=frac, split="balanced"))
        assert len(xtr) == int(frac * p * p) and len(xtr) + len(xte) == p * p
        assert len({tuple(r) for r in xtr[:, :2].tolist()}) == len(xtr)
        for pos in (0, 1):
            counts = torch.bincount(xtr[:, pos], minlength=p)
            assert counts.max() - counts.min() <= 1
        rnd = torch.bincount(make_data(Config(p=p, frac=frac))[0][:, 0], minlength=p)
        assert rnd.max() - rnd.min() > 1  # the random split is not balanced: the test can tell


def test_seed_and_data_seed():
    a, b = make_data(Config(seed=1))[0], make_data(Config(seed=2))[0]
    assert not torch.equal(a, b)
    assert torch.equal(make_data(Config(seed=1, data_seed=5))[0],
                       make_data(Config(seed=2, data_seed=5))[0])


# ---------------------------------------------------------------- operand vocabularies

def test_b_offset_gives_the_second_operand_its_own_tokens():
    for off in (0, 60, 97):
        cfg = Config(p=97, b_offset=off)
        x, y, _ = all_pairs(cfg)
        assert cfg.n_vocab == max(97, off + 97) + 1 and (x[:, 2] == cfg.n_vocab - 1).all()
        a, b = torch.arange(97 * 97) // 97, torch.arange(97 * 97) % 97
        assert torch.equal(x[:, 0], a) and torch.equal(x[:, 1], b + off)
        assert torch.equal(y, (a + b) % 97)  # labels from the values, not the tokens
        assert build_model(cfg).embed.weight.shape[0] == cfg.n_vocab
    # the split and the hole are of values: the same pairs and labels whatever the tokens, with
    # every split and op
    for split in SPLITS:
        for op in ("add", "div", "a2+ab+b2"):
            kw = dict(p=97, split=split, op=op, hole=40)
            same, off = make_data(Config(**kw)), make_data(Config(**kw, b_offset=60))
            for xs, xo in ((same[0], off[0]), (same[2], off[2])):
                assert torch.equal(xs[:, 0], xo[:, 0]) and torch.equal(xs[:, 1] + 60, xo[:, 1])
            assert torch.equal(same[1], off[1]) and torch.equal(same[3], off[3])
    x = make_data(Config(p=97, split="strip", hole=40, b_offset=60))[0]
    assert (x[:, 0] > 40).all()  # b on 60..: first-operand tokens 0..40 never occur
    with pytest.raises(Stop, match="one-hot inputs"):
        Config(model="mlp", embed="onehot", b_offset=5).check()


def test_med_averages_the_two_operands_embeddings():
    cfg = Config(p=7, d_model=4, b_offset=7)
    model = build_model(cfg)
    with torch.no_grad():
        model.embed.weight.zero_()
        model.embed.weight[:7, 0] = torch.arange(7.0)       # a: steps 1, cyclic jump 6
        model.embed.weight[7:14, 1] = 2.0                    # b: constant, MED 0
    E, E_b = (measures.embedding(model, cfg, i).detach() for i in (0, 1))
    assert measures.med(E) == pytest.approx(12 / 7) and measures.med(E_b) == 0
    assert measures.MEASURES["med"].fn(type("c", (), dict(E=E, E_b=E_b))) == pytest.approx(6 / 7)


@pytest.mark.parametrize("mlp_eq", [False, True])  # AlQuabeh's p-wide blocks; Gu's d_model-wide
def test_one_hot_embedding_is_the_first_layer_block_that_each_operand_multiplies(mlp_eq):
    cfg = Config(p=7, model="mlp", embed="onehot", mlp_eq=mlp_eq, n_layers=2, d_model=16, d_mlp=8)
    model = build_model(cfg).double()
    x, _, _ = all_pairs(cfg)
    cache = {}
    with torch.no_grad():
        model(x, cache=cache)
    pre = model.fc1(cache["mlp_in"]).view(7, 7, -1)  # pre-activations, by (a, b)
    E, E_b = (measures.embedding(model, cfg, i).detach() for i in (0, 1))
    # changing one operand moves the first layer by the difference of that operand's rows
    torch.testing.assert_close(pre[:, 3] - pre[:, 0], (E_b[3] - E_b[0]).expand(7, -1))
    torch.testing.assert_close(pre[5] - pre[2], (E[5] - E[2]).expand(7, -1))


def test_gu_preset_and_p_way_readout(tmp_path):
    main(["--preset", "gu", "--split", "strip", "--hole", "40", "--b-offset", "60", "--steps", "3",
          "--d-model", "32", "--d-mlp", "64", "--out", str(tmp_path), "--name", "g"])
    ck = torch.load(tmp_path / "g" / "resume.pt", weights_only=True)
    assert ck["config"]["p"] == 97 and ck["config"]["loss_dtype"] == "float32"
    assert ck["model"]["unembed"].shape == (32, 97) and ck["model"]["embed.weight"].shape[0] == 158
    m = build_model(Config(p=97, init="gu", eq_class=False, ln="off"))
    assert abs(m.unembed.std().item() - 128 ** -0.5) < 0.004  # Gu's W_U: / sqrt(d_model)


# ---------------------------------------------------------------- mini-batches

def seen_per_step(x, batches, steps):
    """Which tokens each step's batch holds, counted the plain way."""
    return [set(x[batches(t)][:, :2].flatten().tolist()) for t in range(steps)]


@pytest.mark.parametrize("sampling", ["random", "balanced"])
def test_each_epoch_visits_each_example_at_most_once_in_a_new_order(sampling):
    cfg = Config(batch_size=64, sampling=sampling)
    x = make_data(cfg)[0]
    b = Batches(cfg, x)
    per = len(x) // 64
    assert b.per_epoch == per == 59
    for epoch in range(2):
        idx = np.concatenate([b(epoch * per + i) for i in range(per)])
        assert len(idx) == 64 * per and len(set(idx.tolist())) == len(idx)
    assert not np.array_equal(b(0), b(per))  # epoch 1 is not epoch 0 again
    fresh = Batches(cfg, x)  # a batch is a function of seed and step: resume needs no state
    assert np.array_equal(fresh(per + 3), b(per + 3)) and np.array_equal(fresh(2), b(2))
    other = Batches(Config(batch_size=64, sampling=sampling, seed=1), x)
    assert not np.array_equal(other(0), b(0))


def test_balanced_batches_hold_each_token_once_per_position_and_more_tokens():
    x = make_data(Config())[0]
    present = {}
    for sampling in ("random", "balanced"):
        cfg = Config(batch_size=64, sampling=sampling)
        b = Batches(cfg, x)
        worst = max(np.bincount(x[b(t)][:, pos].numpy()).max()
                    for t in range(3 * b.per_epoch) for pos in (0, 1))
        assert (worst == 1) == (sampling == "balanced")
        seen = seen_per_step(x, b, 3 * b.per_epoch)
        present[sampling] = np.mean([len(s) for s in seen]) / 113
    assert present["balanced"] > present["random"] + 0.05  # 0.81 against 0.69 when written


def test_token_frequency_is_the_fraction_of_steps_a_token_is_seen():
    assert token_frequency(Config(), make_data(Config())[0]) == 1.0
    cfg = Config(batch_size=32)
    x = make_data(cfg)[0]
    b = Batches(cfg, x)
    seen = seen_per_step(x, b, b.per_epoch)
    want = np.mean([sum(t in s for s in seen) / b.per_epoch for t in range(113)])
    assert token_frequency(cfg, x) == pytest.approx(want, rel=1e-12)
    model = build_model(Config(model="mlp", act="relu", emb_lr_ratio="auto"))
    s = lambda w: torch.linalg.matrix_norm(w, 2).item()
    full = s(model.embed.weight[:113]) / s(model.fc1.weight)
    P = dict(model.named_parameters())
    assert emb_lr_ratio(P, model.cfg, 1.0, model.NAMES) == pytest.approx(full)
    assert emb_lr_ratio(P, model.cfg, 0.25, model.NAMES) == pytest.approx(4 * full)
    model = build_model(Config(model="mlp", act="relu", emb_lr_ratio="auto", b_offset=60))
    P = dict(model.named_parameters())  # b's tokens 60..172: a's and b's rows, not '=''s
    assert emb_lr_ratio(P, model.cfg, 1.0, model.NAMES) == pytest.approx(
        s(model.embed.weight[:173]) / s(model.fc1.weight))


@pytest.mark.parametrize("argv,msg", [
    (["--batch-size", "0"], "--batch-size 0 must be at least 1"),
    (["--batch-size", "300"], "larger than the training set (264 pairs)"),
    (["--sampling", "balanced"], "needs --batch-size"),
    (["--sampling", "even", "--batch-size", "8"], "argument --sampling: invalid choice: 'even'"),
    (["--loss-dtype", "bfloat16"], "argument --loss-dtype: invalid choice: 'bfloat16'"),
    (["--b-offset", "-1"], "--b-offset -1 must be at least 0"),
])
def test_bad_batch_and_vocabulary_options(argv, msg, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(argv + ["--p", "23", "--frac", "0.5", "--out", str(tmp_path), "--steps", "2"])
    assert msg in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("device", DEVICES)
def test_mini_batch_runs_resume_exactly_and_batch_like_lone_runs(device, tmp_path):
    # and a stack may mix 'auto' with a fixed ratio: each run's from its own weights
    kw = dict(steps=40, batch_size=16, model="mlp", act="relu")
    arms = ((0, "random", "1"), (1, "balanced", "auto"))
    cfgs = [small_cfg(seed=s, sampling=m, emb_lr_ratio=e, **kw) for s, m, e in arms]
    dirs = [str(tmp_path / f"b{r}") for r in range(2)]
    batched = train(cfgs, dirs, device, log=quiet)
    alone = [train_alone(c, str(tmp_path / f"s{r}"), device, log=quiet) for r, c in enumerate(cfgs)]
    resumed = []
    for r, (s, m, e) in enumerate(arms):  # each sampler stops mid-epoch, then goes on
        half = str(tmp_path / f"h{r}")
        train_alone(small_cfg(seed=s, sampling=m, emb_lr_ratio=e, **{**kw, "steps": 17}), half,
                    device, log=quiet)
        resumed.append(train_alone(cfgs[r], half, device, resume=True, log=quiet))
    for k in ("train_loss", "test_loss", "weight_norm", "update_norm"):
        for r in range(2):
            np.testing.assert_array_equal(resumed[r][k], alone[r][k], err_msg=k)
            np.testing.assert_allclose(batched[r][k], alone[r][k], rtol=1e-4, atol=1e-6)
    full = train_alone(small_cfg(steps=40, model="mlp", act="relu"), str(tmp_path / "f"),
                       device, log=quiet)
    assert full["train_loss"][-1] != alone[0]["train_loss"][-1]  # the batches took effect


@pytest.mark.parametrize("rng,n_train", [("singh", 3831), ("nanda", 3830)])
def test_split_rng_gives_the_released_codes_split(rng, n_train):
    import random
    pairs = [(a, b) for a in range(113) for b in range(113)]  # as their code lists them
    random.seed(456)
    random.shuffle(pairs)
    want = set(pairs[:n_train])  # Singh: N - int(0.7 N); Nanda: int(0.3 N)
    x = make_data(Config(split_rng=rng, seed=456))[0]
    assert {tuple(r) for r in x[:, :2].tolist()} == want
    assert torch.equal(make_data(Config(split_rng=rng, seed=1, data_seed=456))[0], x)
    with pytest.raises(Stop, match="random split"):
        Config(split_rng=rng, split="square", hole=3).check()
