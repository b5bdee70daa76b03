"""
tl_export.py: a run's checkpoint as a TransformerLens HookedTransformer computes model.py's
function on every pair, shows the attention model.py's cache holds, and comes back whole from
its file; what it cannot express is refused in one line. TransformerLens is needed here, not
optional: CI installs requirements-test.txt, and without it these tests fail rather than skip.

    pip install -r requirements-test.txt
    python -m pytest -q test_tl_export.py
"""
import os
import subprocess
import sys

import pytest
import torch

import tl_export
from config import PRESETS, Config
from conftest import HERE, quiet, small_cfg, train_alone
from data import all_pairs
from model import build_model
from runfiles import Stop, load_checkpoint, save_atomic

# tiny runs of what the export supports: Nanda et al.'s (ReLU, causal, no LN, float32);
# Singh et al.'s (GELU, non-causal, LN before attention and MLP with eps 0) with alpha 2, in
# float64 so that a mismatch cannot hide in rounding; and RMSNorm, two blocks, causal, b's own
# tokens and a p-way readout
RUNS = {
    "nanda": dict(PRESETS["nanda"], steps=30, ckpt_every=10),
    "pre": dict(alpha=2.0, dtype="float64", steps=30),
    "rms": dict(norm="rmsnorm", n_layers=2, causal=True, ln_eps=1e-5, alpha=0.5, b_offset=23,
                eq_class=False, steps=20),
}
TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-12, atol=1e-12)}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A folder with a run of each of RUNS, and two runs the export refuses: checkpoints of an
    --ln mlp-pre transformer and of the embedding-MLP, untrained (refused before the weights
    are read)."""
    root = tmp_path_factory.mktemp("runs")
    for name, kw in RUNS.items():
        train_alone(small_cfg(**kw), str(root / name), log=quiet)
    for name, kw in (("mlp-pre", dict(ln="mlp-pre")), ("embed-mlp", PRESETS["alquabeh"])):
        cfg = small_cfg(**kw)
        os.makedirs(root / name / "ckpt")
        save_atomic(dict(step=0, config=cfg.to_dict(), model=build_model(cfg).state_dict()),
                    str(root / name / "ckpt" / "step_000000.pt"))
    return root


def reference(run_dir, step=None):
    """(cfg, model.py's Transformer at the checkpoint in eval mode, every pair's tokens)."""
    ck = load_checkpoint(tl_export.checkpoint_file(run_dir, step))
    cfg = Config.from_dict(ck["config"])
    model = build_model(cfg)
    model.load_state_dict(ck["model"])
    return cfg, model.eval(), all_pairs(cfg)[0]


@pytest.mark.parametrize("run", RUNS)
def test_logits_are_model_py_s_on_every_pair_and_weights_the_run_s(root, run):
    cfg, ours, x = reference(str(root / run))
    tl = tl_export.hooked_transformer(str(root / run))
    assert not tl.training and tl.cfg.dtype == getattr(torch, cfg.dtype)
    with torch.no_grad():
        torch.testing.assert_close(tl(x)[:, -1], ours(x), **TOL[cfg.dtype])
    # the weights as trained: no folding or centering (alpha folded into W_U alone)
    assert torch.equal(tl.W_E, ours.embed.weight) and torch.equal(tl.W_pos, ours.pos)
    assert torch.equal(tl.W_U, ours.alpha * ours.unembed) and not tl.b_U.any()
    for blk, ref in zip(tl.blocks, ours.blocks):
        assert torch.equal(blk.mlp.W_in, ref.fc1.weight.T)
        assert torch.equal(blk.mlp.b_out, ref.fc2.bias)
        if cfg.ln != "off":
            assert torch.equal(blk.ln1.w, ref.ln1.weight) and torch.equal(blk.ln2.w, ref.ln2.weight)
            assert blk.ln1.eps == cfg.ln_eps


@pytest.mark.parametrize("run", RUNS)
def test_run_with_cache_shows_the_attention_model_py_caches(root, run):
    """cache["pattern", i] against both of measures.py's reads: residuals() (all 3 queries,
    attn_entropy_heads) and forward (the last block at the last query only, final_attn_a);
    and the last block's neurons and final features there."""
    cfg, ours, x = reference(str(root / run))
    tl = tl_export.hooked_transformer(str(root / run))
    full, last = {}, {}
    with torch.no_grad():
        _, cache = tl.run_with_cache(x)
        ours.residuals(x, cache=full)
        ours(x, cache=last)
    L = cfg.n_layers - 1
    for i in range(cfg.n_layers):
        pattern = cache["pattern", i]                                       # (N, H, 3, 3)
        torch.testing.assert_close(pattern, full["attn"][i], **TOL[cfg.dtype])
        rows = last["attn"][i].shape[2]  # 1 in the last block
        torch.testing.assert_close(pattern[:, :, -rows:], last["attn"][i], **TOL[cfg.dtype])
        if cfg.causal:
            assert not pattern.triu(1).any()
    assert last["attn"][L].shape[2] == 1
    torch.testing.assert_close(cache["post", L][:, -1], last["mlp_act"], **TOL[cfg.dtype])
    torch.testing.assert_close(cache["resid_post", L][:, -1], last["resid"], **TOL[cfg.dtype])
    if cfg.ln != "off":  # the final "norm" is the identity: where the cache applies it, exact;
        # where it would divide by a cached LayerNorm scale, refused (tl_export's docstring)
        assert torch.equal(cache.accumulated_resid(apply_ln=True)[-1], cache["resid_post", L])
        with pytest.raises(KeyError, match="ln_final.hook_scale"):
            cache.decompose_resid(apply_ln=True)


@pytest.mark.filterwarnings("ignore:HookedTransformer is deprecated")
@pytest.mark.parametrize("run", ["nanda", "pre"])
def test_the_file_loads_back_to_the_same_model(root, run, tmp_path, capsys):
    from transformer_lens import HookedTransformer, HookedTransformerConfig
    run_dir = str(root / run)
    _, _, x = reference(run_dir)
    tl_export.main([run_dir])  # the last checkpoint, to RUN_DIR/transformer_lens.pt
    assert "wrote" in capsys.readouterr().out
    path = os.path.join(run_dir, tl_export.OUT)
    d = torch.load(path, weights_only=True)
    plain = HookedTransformer(HookedTransformerConfig(**d["cfg"])).eval()
    with torch.no_grad():
        if run == "nanda":  # no norms: plain TransformerLens reads the file
            plain.load_state_dict(d["state_dict"])
            assert torch.equal(plain(x), tl_export.hooked_transformer(run_dir)(x))
        else:  # its ln_final is a LayerNorm where ours has none: refused, not silently wrong
            with pytest.raises(RuntimeError, match="ln_final"):
                plain.load_state_dict(d["state_dict"])
        assert torch.equal(tl_export.load(path)(x), tl_export.hooked_transformer(run_dir)(x))
        # --step and --out: that checkpoint, not the last
        out = str(tmp_path / "s10.pt")
        tl_export.main([run_dir, "--step", "10", "--out", out])
        assert torch.load(out, weights_only=True)["step"] == 10
        at10 = tl_export.load(out)(x)
        assert torch.equal(at10, tl_export.hooked_transformer(run_dir, step=10)(x))
        assert not torch.equal(at10, tl_export.load(path)(x))
    os.remove(path)


@pytest.mark.parametrize("run,says", [("mlp-pre", "this run is --ln mlp-pre, a norm on the MLP "
                                       "input only"),
                                      ("embed-mlp", "this run is --model mlp")])
def test_what_transformer_lens_cannot_express_is_a_one_line_stop(root, run, says):
    with pytest.raises(Stop) as e:
        tl_export.hooked_transformer(str(root / run))
    assert "supports --ln off and --ln pre transformers" in str(e.value)
    assert says in str(e.value) and "\n" not in str(e.value)


def corrupt(root):
    """A run folder whose last checkpoint is cut short."""
    os.makedirs(root / "cut" / "ckpt", exist_ok=True)
    (root / "cut" / "ckpt" / "step_000000.pt").write_bytes(b"PK\x03\x04 cut")
    return str(root / "cut")


BAD = [  # (argv with {root}, what the line says)
    (["{root}/nowhere"], "is not a run folder or a checkpoint file"),
    (["{root}/empty"], "no checkpoints"),
    (["{root}/nanda", "--step", "7"], "no checkpoint of step 7; its 4 checkpoints are of steps "
     "0 to 30"),
    (["{root}/nanda", "--step", "x"], "invalid int value"),
    (["{root}/nanda/ckpt/step_000010.pt"], "say where to write, --out"),
    (["{root}/nanda/ckpt/step_000010.pt", "--step", "10", "--out", "{root}/x.pt"],
     "--step picks a checkpoint of a run folder"),
    (["{root}/nanda", "--out", "{root}/nowhere/x.pt"], "cannot write"),
    (["{root}/mlp-pre"], "--ln mlp-pre"),
    (["{root}/embed-mlp"], "--model mlp"),
    (["{cut}"], "corrupt checkpoint"),
    (["{root}/nanda", "no-transformer-lens"], "pip install -r requirements-test.txt"),
]


@pytest.mark.parametrize("argv,says", BAD, ids=[" ".join(a)[-40:] for a, _ in BAD])
def test_a_bad_input_of_the_command_is_one_line_and_writes_nothing(root, argv, says, capsys,
                                                                   monkeypatch):
    os.makedirs(root / "empty", exist_ok=True)
    if "no-transformer-lens" in argv:
        argv = argv[:-1]
        monkeypatch.setitem(sys.modules, "transformer_lens", None)  # import fails
    argv = [a.format(root=root, cut=corrupt(root)) for a in argv]
    before = sorted(p for p, _, _ in os.walk(root)), sorted(f for _, _, fs in os.walk(root)
                                                             for f in fs)
    with pytest.raises(SystemExit) as e:
        tl_export.main(argv)
    assert isinstance(e.value.code, str), e.value.code  # sys.exit(text): status 1, text on stderr
    assert e.value.code.startswith("error: ") and "\n" not in e.value.code, e.value.code
    assert says in e.value.code, e.value.code
    assert capsys.readouterr().out == ""
    assert (sorted(p for p, _, _ in os.walk(root)),
            sorted(f for _, _, fs in os.walk(root) for f in fs)) == before


def test_the_command_says_a_bad_input_in_one_line_without_a_traceback(tmp_path):
    r = subprocess.run([sys.executable, "tl_export.py", str(tmp_path / "nowhere")], cwd=HERE,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0 and r.stdout == ""
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
