# Do Singh et al.'s LN placements move a model between Zhong et al.'s Clock and Pizza? Every
# placement of their paper, five seeds each, as ln_placements.sh trains them (their split, their
# 10k-step budget, a run stops 1000 steps after test loss reaches 0.01); analyze.py writes each
# checkpoint's distance irrelevance and gradient symmetricity (--no-llc: the table needs no local
# learning coefficient, which would be most of the analysis's time), and
#   python experiments/clock_pizza.py runs/clock_pizza
# prints the table. --batched: one command per configuration with its five seeds (a GPU). Cost
# on a 2-vCPU AMD EPYC (BENCHMARKS.md): 9016 s of training, the 35 runs summed.
source "$(dirname "$0")/jobs.sh"
OUT=runs/clock_pizza
ANALYZE_ARGS=--no-llc
SEEDS="456 789 111 222 333"
PLACEMENTS="off attn-pre pre mlp-pre attn-pre-qk attn-pre-v pre-v"
R="--split-rng singh --stop-after-grok 1000 --out $OUT"
jobs() { for s in $SEEDS; do for ln in $PLACEMENTS; do
  echo "python train.py --ln $ln --seed $s $R"; done; done; }
# every placement but off has one parameter shape: two processes train all 35 runs
batched() { for ln in off "${PLACEMENTS#off }"; do
  echo "python train.py --ln $ln --seed $SEEDS $R"; done; }
run_jobs "$@"
