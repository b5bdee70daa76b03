"""plots.py draws from arrays alone: fed made-up arrays here, no run, no model."""
import os

import matplotlib.pyplot as plt
import numpy as np
import pytest

import plots


def made_up_run(steps, mlp):
    m = {"step": steps, "test_loss": np.linspace(5, 1e-3, len(steps)),
         "train_loss": np.linspace(5, 1e-6, len(steps)), "update_norm": np.full(len(steps), 1e-2)}
    nan = np.full(len(steps), np.nan)  # what measures.py writes where a measure is undefined
    one = np.ones(len(steps))
    r = {"step": steps, "med": np.linspace(1.4, 0.2, len(steps)), "ntk_distance": one,
         "eff_rank": one, "c_fourier": np.linspace(0.01, 2, len(steps)),
         "sr_train": nan if mlp else one, "attn_entropy": nan if mlp else one}
    return m, r


MEASURES = [(k, k, False) for k in ("med", "c_fourier", "sr_train", "attn_entropy")]


def test_cross_run_figures_skip_a_measure_no_run_has(tmp_path):
    steps = np.arange(0, 1000, 100)
    groups = {"model=mlp": [made_up_run(steps, mlp=True) for _ in range(3)]}
    plots.cross_run_figures(str(tmp_path), groups, {"model=mlp": [600, 700, None]}, {}, {},
                            0.01, MEASURES)
    made = set(os.listdir(tmp_path / "figures"))
    assert {"med_by_config.png", "c_fourier_by_config.png", "loss_by_config.png"} <= made
    assert "sr_train_by_config.png" not in made and "attn_entropy_by_config.png" not in made
    groups["model=transformer"] = [made_up_run(steps, mlp=False)]  # one has it: drawn
    grok = {"model=mlp": [600, None, None], "model=transformer": [None]}
    plots.cross_run_figures(str(tmp_path), groups, grok, {}, {}, 0.01, MEASURES)
    assert "sr_train_by_config.png" in os.listdir(tmp_path / "figures")


def test_steps_to_generalize_draws_every_seed_those_that_never_did_open_at_their_last_step(
        monkeypatch):
    drawn = []
    monkeypatch.setattr(plots, "save", lambda fig, path: drawn.append(fig))
    plots.steps_to_generalize("unused", {"steps": {"a": [300, None, 500], "b": [None]}},
                              {"a": [1000, 800, 900], "b": [2000]},
                              {"a": ("C0", "-"), "b": ("C1", "-")})
    ax = drawn[0].axes[0]
    marks = {m: [(list(l.get_xdata()), list(l.get_ydata())) for l in ax.lines
                 if l.get_marker() == m and len(l.get_xdata())] for m in ".o"}
    assert marks["."] == [([0, 0], [300, 500])]  # the seeds that got there: dots
    assert marks["o"] == [([0], [800]), ([1], [2000])]  # the others: open, at their last step
    assert all(l.get_markerfacecolor() == "none" for l in ax.lines if l.get_marker() == "o")
    assert ax.patches[0].get_height() == 400 and np.isnan(ax.patches[1].get_height())
    assert [t.get_text().split("\n")[1] for t in ax.get_xticklabels()] == ["(2/3 seeds)",
                                                                           "(0/1 seeds)"]
    plt.close(drawn[0])


def test_band_averages_the_seeds_at_one_step_though_they_log_at_others():
    fig, ax = plt.subplots()
    every_10 = ({"step": np.arange(0, 30, 10), "v": np.arange(0, 30, 10.0)},)
    every_5 = ({"step": np.arange(0, 25, 5), "v": np.arange(0, 25, 5.0)},)
    plots.band(ax, [every_10, every_5], "v", "seeds", ("k", "-"), source=0)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), ax.lines[0].get_xdata())  # v = step
    plt.close(fig)


def test_save_writes_through_a_temp_file_of_its_own_and_removes_it_on_failure(tmp_path,
                                                                             monkeypatch):
    path = str(tmp_path / "loss.png")
    other = path + ".222.tmp.png"  # another writer's, half written
    open(other, "wb").write(b"half")
    monkeypatch.setattr(os, "getpid", lambda: 111)
    written = []
    savefig = plt.Figure.savefig
    monkeypatch.setattr(plt.Figure, "savefig",
                        lambda fig, name, **kw: (written.append(name), savefig(fig, name, **kw)))
    fig, _ = plt.subplots()
    plots.save(fig, path)
    assert written == [path + ".111.tmp.png"]
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"  # a PNG, whole
    assert sorted(os.listdir(tmp_path)) == ["loss.png", "loss.png.222.tmp.png"]

    def fail(fig, name, **kw):  # a full disk part way through the write
        open(name, "wb").write(b"\x89PNG")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(plt.Figure, "savefig", fail)
    fig, _ = plt.subplots()
    with pytest.raises(OSError):
        plots.save(fig, str(tmp_path / "acc.png"))
    assert sorted(os.listdir(tmp_path)) == ["loss.png", "loss.png.222.tmp.png"]
    assert open(other, "rb").read() == b"half" and not plt.fignum_exists(fig.number)


def test_band_draws_a_measure_taken_at_some_checkpoints_only():
    fig, ax = plt.subplots()
    sparse = ({"step": np.arange(0, 500, 100), "v": np.array([0, np.nan, 4, np.nan, 8.0])},)
    never = ({"step": np.arange(0, 500, 100), "v": np.full(5, np.nan)},)
    plots.band(ax, [sparse], "v", "seed", ("k", "-"), source=0)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [0, 2, 4, 6, 8])  # between its values
    plots.band(ax, [never], "v", "seed", ("k", "-"), source=0)
    assert np.isnan(ax.lines[1].get_ydata()).all()
    plt.close(fig)
