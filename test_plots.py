"""plots.py draws from arrays alone: fed made-up arrays here, no run, no model."""
import os

import matplotlib.pyplot as plt
import numpy as np

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


def test_cross_run_figures_skip_a_measure_no_run_has(tmp_path):
    steps = np.arange(0, 1000, 100)
    groups = {"model=mlp": [made_up_run(steps, mlp=True) for _ in range(3)]}
    plots.cross_run_figures(str(tmp_path), groups, {"model=mlp": [600, 700]}, {}, {}, 0.01)
    made = set(os.listdir(tmp_path / "figures"))
    assert {"med_by_config.png", "c_fourier_by_config.png", "loss_by_config.png"} <= made
    assert "sr_train_by_config.png" not in made and "attn_entropy_by_config.png" not in made
    groups["model=transformer"] = [made_up_run(steps, mlp=False)]  # one has it: drawn
    grok = {"model=mlp": [600], "model=transformer": []}
    plots.cross_run_figures(str(tmp_path), groups, grok, {}, {}, 0.01)
    assert "sr_train_by_config.png" in os.listdir(tmp_path / "figures")


def test_band_averages_the_seeds_at_one_step_though_they_log_at_others():
    fig, ax = plt.subplots()
    every_10 = ({"step": np.arange(0, 30, 10), "v": np.arange(0, 30, 10.0)},)
    every_5 = ({"step": np.arange(0, 25, 5), "v": np.arange(0, 25, 5.0)},)
    plots.band(ax, [every_10, every_5], "v", "seeds", ("k", "-"), source=0)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), ax.lines[0].get_xdata())  # v = step
    plt.close(fig)
