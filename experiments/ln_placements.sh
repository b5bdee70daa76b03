# Singh et al.: every LN placement, the paper's five seeds, 10k-step budget; a run stops 1000 steps
# after test loss reaches 0.01 (steps-to-generalize is what the paper compares). Seeds are the outer
# loop, so a partial run of the list still has every placement for the first seeds. --split-rng
# singh: seed S trains on their code's split of seed S (REPRODUCTION: their split takes No LN from
# "not in 10k steps" to 7510 against their 7807). Their statistic (the seed-mean curve) can need
# more: where slingshots keep a seed above 0.01 (M+A*), --resume the run without the stop to 10k.
# M and A* on their split, 15 seeds more each (reproduction/placements_more_seeds: with the 5 above,
# 20 a placement, as M+A* with seed_coupling_pre and No LN with seed_coupling; 2-vCPU Xeon, one
# thread: M's 15 seeds in one process 2448 s, A*'s seeds 0-4 in one 4192 s; 5-9 and 10-14 each
# one process of 5 as well, on a loaded machine):
#   python train.py --ln mlp-pre --seed $(seq -s ' ' 0 14) --split-rng singh --stop-after-grok 1000 \
#     --out runs/placements_more_seeds
#   python train.py --ln attn-pre --seed 0 1 2 3 4 --split-rng singh --stop-after-grok 1000 \
#     --out runs/placements_more_seeds        (then 5-9 and 10-14 the same way)
source "$(dirname "$0")/jobs.sh"
OUT=runs/ln_placements
SEEDS="456 789 111 222 333"
WITH_LN="attn-pre pre mlp-pre attn-pre-qk attn-pre-v pre-v"
R="--split-rng singh --stop-after-grok 1000 --out $OUT"
jobs() { for s in $SEEDS; do for ln in off $WITH_LN; do
  echo "python train.py --ln $ln --seed $s $R"; done; done; }
# --batched: every placement but off has one parameter shape, so two processes train all 35 runs
batched() { for ln in off "$WITH_LN"; do
  echo "python train.py --ln $ln --seed $SEEDS $R"; done; }
run_jobs "$@"
