"""Singh et al.'s numbers that experiments/claims.py prints beside this project's, each with
its source (their released curves)."""

# Singh et al.'s step numbers, each (seed-mean curve <= 0.01 at: their statistic; the first seed
# there; all five there at once), 0: not in 10k steps. Re-derived from their released curves
# (layernorm-grok 7ea0e10, notebooks/) by `python experiments/singh_released.py`, which names
# the file of each sweep. No LN, one layer, keyed by the (lr, wd, alpha) a run trains with; the
# main text's sweeps (AdamW eps 1e-8, their LeCun init) and the appendix's eps 0 + Kaiming init
# (their scripts/lazy.sh and lazy_wrong.sh, loop (b)).
SINGH = {(1e-8, "singh"): {
    (1e-3, 1, 1): (7807, 6328, 7935), (3e-3, 1 / 3, 1): (7740, 4575, 8078),
    (5e-3, 0.2, 1): (6582, 4062, 7001), (1e-2, 0.1, 1): (4470, 3026, 4788),
    (1e-3, 0.1, 1): (0, 0, 0), (1e-3, 0.2, 1): (0, 0, 0), (1e-3, 0.5, 1): (0, 0, 0),
    (1e-3, 0.75, 1): (9787, 9173, 0), (1e-3, 1.5, 1): (6395, 3952, 6661),
    (1e-3, 1, 0.5): (0, 9155, 0), (1e-3, 1, 0.75): (0, 7604, 0),
    (1e-3, 1, 1.25): (8221, 5019, 8475), (1e-3, 1, 1.5): (8309, 4328, 8565),
    (4e-3, 1, 0.5): (2021, 1245, 2150), (1e-3 / 0.75 ** 2, 1, 0.75): (5531, 3384, 5858),
    (1e-3 / 1.25 ** 2, 1, 1.25): (0, 6830, 0), (1e-3 / 1.5 ** 2, 1, 1.5): (0, 8073, 0)},
    (0.0, "kaiming"): {
    (1e-3, 1, 1): (6617, 2862, 7009), (1e-3, 1, 0.5): (7933, 5595, 8209),
    (1e-3, 1, 0.75): (8131, 3943, 8430), (1e-3, 1, 1.25): (5177, 2244, 6570),
    (1e-3, 1, 1.5): (5168, 2267, 6465), (4e-3, 1, 0.5): (1736, 1205, 1811),
    (1e-3 / 0.75 ** 2, 1, 0.75): (4587, 1945, 4913),
    (1e-3 / 1.25 ** 2, 1, 1.25): (7532, 3222, 7940), (1e-3 / 1.5 ** 2, 1, 1.5): (0, 4916, 0)}}

# Their one-layer No LN model of those sweeps: a run that differs in one of these has no number
# (but eps and init, which pick the sweep above).
SINGH_MODEL = dict(ln="off", n_layers=1, d_model=128, d_mlp=512, norm="layernorm", eps=1e-8,
                   init="singh")

# Singh et al.'s placements: their name and their numbers as in SINGH (the same source).
SINGH_LN = {"off": ("No LN", (7807, 6328, 7935)), "mlp-pre": ("M", (1425, 809, 2055)),
            "pre": ("M+A*", (3525, 2360, 3934)), "attn-pre": ("A*", (7157, 3647, 7274)),
            "pre-v": ("M+A^v", (964, 529, 1061)), "attn-pre-v": ("A^v", (1891, 1523, 1982)),
            "attn-pre-qk": ("A^qk", (0, 0, 0))}

# Singh et al.'s released 5-seed mean curves (layernorm-grok commit 7ea0e10, notebooks/: C_Fourier
# data/trf-1l_lecun_fourier_colvar.csv, every 200 steps; attention entropy
# check_data/attn_ln_analysis.csv, every 200 steps, seeds not named; SR-train `train/spec_loss`
# of check_data/{ln,none}_mem_train_loss.csv and attn_v_mlp_mem_train.csv, every step): at step
# 1000, the maximum and its step, at their statistic's step (linear between logged steps), at 10k.
SINGH_CURVES = {
    ("c_fourier", "off"): (0.186, 3.35, 10000, 2.39, 3.35),
    ("c_fourier", "mlp-pre"): (0.367, 2.24, 4000, 0.709, 1.65),
    ("c_fourier", "pre"): (0.0556, 2.53, 4000, 2.42, 2.27),
    ("c_fourier", "attn-pre"): (0.0876, 1.06, 5600, 0.625, 0.451),
    ("attn_entropy", "off"): (0.768, 1.10, 1, 0.965, 0.964),
    ("attn_entropy", "mlp-pre"): (1.10, 1.10, 2800, 1.10, 1.10),
    ("attn_entropy", "attn-pre"): (0.859, 1.08, 1, 0.968, 0.993),
    ("attn_entropy", "pre-v"): (1.06, 1.10, 9800, 1.06, 1.10),
    ("attn_entropy", "attn-pre-v"): (0.962, 1.10, 1, 0.968, 0.965),
    ("attn_entropy", "attn-pre-qk"): (0.603, 1.08, 1, None, 0.770),
    ("sr_train", "off"): (3.97, 6.12, 3579, 3.78, 3.28),
    ("sr_train", "mlp-pre"): (3.93, 4.74, 1, 4.05, 2.68),
    ("sr_train", "pre"): (4.93, 8.11, 6114, 5.29, 6.66),
    ("sr_train", "attn-pre"): (4.59, 4.87, 9560, 4.69, 4.79),
    ("sr_train", "attn-pre-v"): (4.44, 5.47, 8058, 4.67, 5.04),
    # R(Z), power-law exponent, effective rank (data/ln_rank.csv, ln_alpha.csv, ln_eff_rank.csv,
    # `alpha_req/*_test`, every 200 steps; the four placements only)
    ("rank", "mlp-pre"): (128, 128, 200, 116, 31.4), ("rank", "pre"): (128, 128, 1, 39.6, 22.0),
    ("rank", "attn-pre"): (128, 128, 1, 80.1, 62.8), ("rank", "off"): (128, 128, 200, 59.4, 32.2),
    ("power_law_alpha", "mlp-pre"): (1.29, 5.72, 9600, 1.30, 2.15),
    ("power_law_alpha", "pre"): (3.63, 5.63, 600, 2.68, 1.83),
    ("power_law_alpha", "attn-pre"): (4.60, 4.78, 1400, 1.32, 1.71),
    ("power_law_alpha", "off"): (2.99, 3.26, 400, 1.71, 1.71),
    ("eff_rank", "mlp-pre"): (20.7, 57.6, 200, 17.9, 9.69),
    ("eff_rank", "pre"): (44.7, 55.6, 200, 8.41, 8.43),
    ("eff_rank", "attn-pre"): (56.8, 58.1, 800, 14.7, 12.8),
    ("eff_rank", "off"): (35.6, 36.0, 1600, 10.7, 8.34),
    # the same across weight decays (No LN, their wd sweep: data/wd_rank.csv, wd_alpha.csv,
    # wd_eff_rank.csv; their wd 1 curve is the "off" one above)
    ("rank", "wd 1.5"): (128, 128, 200, 35.8, 25.4),
    ("rank", "wd 0.75"): (128, 128, 200, 62.7, 58.2),
    ("rank", "wd 0.5"): (128, 128, 200, None, 117),
    ("rank", "wd 0.2"): (128, 128, 200, None, 128), ("rank", "wd 0.1"): (128, 128, 200, None, 128),
    ("power_law_alpha", "wd 1.5"): (2.80, 3.01, 200, 1.38, 1.41),
    ("power_law_alpha", "wd 0.75"): (2.97, 3.18, 2800, 1.44, 1.45),
    ("power_law_alpha", "wd 0.5"): (2.94, 3.23, 5400, None, 2.60),
    ("power_law_alpha", "wd 0.2"): (3.23, 3.54, 5400, None, 3.03),
    ("power_law_alpha", "wd 0.1"): (3.18, 3.45, 5000, None, 2.94),
    ("eff_rank", "wd 1.5"): (31.4, 32.5, 600, 7.34, 6.96),
    ("eff_rank", "wd 0.75"): (36.9, 38.0, 2000, 7.90, 7.32),
    ("eff_rank", "wd 0.5"): (37.4, 39.7, 2600, None, 31.2),
    ("eff_rank", "wd 0.2"): (37.3, 41.6, 6000, None, 40.7),
    ("eff_rank", "wd 0.1"): (36.7, 42.1, 10000, None, 42.1)}

COMPRESSIBILITY = ("rank", "power_law_alpha", "power_law_alpha_f64", "eff_rank")


def released(mean, first, every):
    """One of the step numbers above as the tables print it."""
    return (f"{mean or 'not reached'} (first seed / all five: {first or 'none'} / "
            f"{every or 'not all'})")
