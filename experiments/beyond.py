"""
Beyond the four papers: Zhong et al.'s Clock and Pizza across Singh et al.'s placements, the
local learning coefficient (devinterp, Lau et al.) through a run, and forecasting grokking
part-way through a run: the claims (CLAIMS), the tables of REPRODUCTION.md that show them
(SECTIONS) and the runs they read.

    python experiments/claims.py --paper beyond   # its verdict rows and tables
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import clock_pizza  # noqa: E402
import forecast  # noqa: E402
import summary as S  # noqa: E402
from render import Section  # noqa: E402
from rule import Claim, any_differs, exact, signs  # noqa: E402
from runfiles import Stop, first_below  # noqa: E402
from runsets import REPRO, Missing, Runs, load  # noqa: E402
from seedstats import grok_step, llc_shape  # noqa: E402

PAPERS = ("this project (beyond the papers)", "Zhong et al.", "devinterp (Lau et al.'s LLC)")
BEYOND, ZHONG, DEVINTERP = PAPERS

CLOCK_PIZZA = Runs("clock_pizza", analysed=True)
LLC_RUN = Runs("llc_example", analysed=True)  # M+A*, seed 0, to test loss 0.01 + 1000
FORECAST_T = 0.1  # the forecast claim's fraction of the budget: early, most runs still pending


# ---------------------------------------------------------------- the tables



def llc(root):
    """The local learning coefficient and Zhong et al.'s signatures through each run: the steps
    at which train and test loss first reach 0.01 and whether the run has devinterp's shape
    (seedstats.llc_shape), then at its LLC checkpoints (measures.llc_every) and its last
    the train and test loss, the LLC (each chain's; "-" where not taken), distance irrelevance
    and gradient symmetricity."""
    for run, (_, m, a) in load(root, analysed=True, llc=True).items():
        at = np.union1d(np.nonzero(np.isfinite(a["llc"]))[0], [len(a["step"]) - 1])
        chains = lambda i: " / ".join(f"{v:.2f}" for v in a["llc_chains"][i])
        rows = [[str(int(a["step"][i])), f"{a['train_loss'][i]:.3g}", f"{a['test_loss'][i]:.3g}",
                 f"{a['llc'][i]:.2f} ({chains(i)})" if np.isfinite(a["llc"][i]) else "-",
                 f"{a['distance_irrelevance'][i]:.3f}", f"{a['gradient_symmetricity'][i]:.3f}"]
                for i in at]
        fit = first_below(m["step"], m["train_loss"])
        shape = {None: "-", True: "yes", False: "no"}[llc_shape(m, a)]
        print(f"{os.path.basename(run)}: train loss <= 0.01 at {fit}, test loss at "
              f"{grok_step(m)}; devinterp's shape: {shape}\n")
        print(S.markdown(["step", "train loss", "test loss", "LLC (per chain)",
                          "distance irrelevance", "gradient symmetricity"], rows))


# ---------------------------------------------------------------- the claims



def clock_pizza_claims():
    rows = []
    quoted = clock_pizza.ZHONG["their model A (Pizza, attention rate 0)"]  # 3 decimals
    for (name, printed), v in zip(clock_pizza.MODEL_A_PRINTED.items(), quoted):
        rows.append(Claim(
            paper=ZHONG, claim=f"their saved model A (attention rate 0) has {name} {v:.3f}",
            value=v, source=f"their code/eval-main.ipynb prints {printed:.8f}; fjzzq2002/pizza "
                            "4c7f2f3",
            statistic=f"measures.py's {name} of their model on their pairs and triples, at "
                      "the 3 decimals quoted (one computation: the interval is the number)",
            like=True, differs="like for like: their weights, pairs and triples; `python "
            "experiments/claims.py pizza_check` prints both to 8 decimals (they differ by "
            "float32 rounding, at most 1e-7 relative)", section="pizza_check",
            label=f"model A {name}",
            test=exact(lambda name=name: clock_pizza.model_a_values()[name], v, 3,
                       "their model A's weights (reproduction/sources/pizza_model_a.npz)")))
    rows.append(Claim(
        paper=BEYOND, claim="Singh et al.'s LN placements move a model between Zhong et al.'s "
                            "Clock and Pizza", value="-", source="this project's question",
        statistic="gradient symmetricity at the last checkpoint, "
        "each other placement against No LN (two-sided Mann-Whitney: clock_pizza.py's test "
        "column, written before the runs); p the smallest times their number (Bonferroni)",
        like=True, differs="a question of our own: no paper's number or direction. A difference "
        "in the signature, not shown to be another algorithm: M's symmetricity 1.000 comes with "
        "uniform attention (entropy 1.099 in 5 of 5), 3 of A^qk's 5 seeds never reach test loss "
        "0.01 in 10k (`claims.py placements`), and p 0.0476 is the smallest 5 runs against 5 "
        "give over six comparisons", section="clock_pizza",
        test=any_differs(CLOCK_PIZZA, lambda c: c.ln, "off",
                     lambda m, r: float(r["gradient_symmetricity"][-1]))))
    return rows


def llc_claims():
    return [Claim(
        paper=DEVINTERP, claim="the LLC rises while the model memorises and "
        "falls as it groks (their grokking example)", value="rises, then falls",
        source="examples/grokking.ipynb (an MLP, p 53; a figure, no number)",
        statistic="per seed: the LLC of the memorised model has risen half-way to its largest "
                  "before test loss 0.01, and falls after it (seedstats.llc_shape)",
        like=False, differs="their MLP, p 53 and 40% train, theirs by devinterp with its "
        "settings; ours M+A* by measures.sgld_llc (the same estimator) with LLC_* (a "
        "calibration of our own), at 4 checkpoints of the run; the one after generalizing "
        "(3000) sits in a slingshot, not at a minimum as the estimator assumes", section="llc",
        test=signs(LLC_RUN, llc_shape))]


class Forecasts:
    """Every configuration of the committed packs as a group for `signs`: (key, None, whether
    the forecaster's median error on its runs pending at FORECAST_T that generalize is below
    the global median's, None: equal) from experiments/forecast.py."""
    def __str__(self):
        return "every committed pack that fits (`python experiments/forecast.py` says which)"

    def get(self, load):  # reads every pack itself: a forecast needs every configuration
        try:
            done = forecast.evaluate(forecast.load_runs(REPRO)[0], (FORECAST_T,))
        except Stop as e:
            raise Missing(str(e)) from None
        return [(key, None, closer) for key, closer in
                forecast.versus(done, FORECAST_T, "global median")]


def forecast_claims():
    return [Claim(
        paper=BEYOND,
        claim=f"at {FORECAST_T:g} of its budget, what a run has logged forecasts its step of test "
              "loss 0.01 better than the other configurations' median step",
        value="closer in most configurations", source="this project's question",
        statistic=f"per configuration with runs pending at {FORECAST_T:g} x budget that "
                  "generalize: the forecaster's median relative error below the global "
                  "median's, leave one configuration out; one-sided sign test",
        like=True, differs="like for like: both forecasts of the same runs, fit on the same "
        "other configurations; t = 0.1 was picked after seeing the table of five fractions, so "
        "its p is multiplied by 5 (Bonferroni)", section="forecast",
        test=signs(Forecasts(), lambda m, closer: closer, tries=5))]


CLAIMS = clock_pizza_claims() + llc_claims() + forecast_claims()
# the claims the verdicts' summary opens with (claims.py verdicts), as written above
HEADLINES = ["Singh et al.'s LN placements move a model between Zhong et al.'s Clock and "
             "Pizza"]
SECTIONS = {
    "llc": Section("The LLC and the Clock / Pizza signatures through one run", "runs/llc_example",
                   "python train.py --ln pre --seed 0 --stop-after-grok 1000 --out "
                   "runs/llc_example; python analyze.py runs/llc_example", llc, "llc_example"),
    "pizza_check": Section("Zhong et al.'s model A: distance irrelevance and gradient "
                           "symmetricity", None, "python experiments/claims.py pizza_check",
                           lambda root: print(S.markdown(*clock_pizza.model_a_table()))),
    "clock_pizza": Section("Clock or Pizza by LN placement", "runs/clock_pizza",
                           "bash experiments/clock_pizza.sh --list | bash",
                           lambda root: print(S.markdown(*clock_pizza.table(root))),
                           "clock_pizza"),
    "forecast": Section("Forecasting grokking part-way through a run", None,
                        "python experiments/forecast.py", lambda root: forecast.main()),
}

