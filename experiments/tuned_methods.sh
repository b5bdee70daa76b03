# AdamW and every accelerator tuned alike, so that the comparison gives each arm the same budget
# on one machine: the same lr x wd grid, plus a method's paper's own setting, on the tuning seed
# 5 (not among the compared seeds 0-4), on M+A* and No LN. (AdamW is tuned as tuned_adamw.sh
# tunes it, again here beside the methods: that script's runs are from another machine.)
#   1. tuning, seed 5: AdamW, Grokfast EMA, ⊥AdamW and Muon at lr {1e-3, 3e-3, 6e-3} x wd
#      {1, 3}, and ⊥AdamW at its paper's wd 0 (the other two papers' settings are in the grid:
#      lr 1e-3, wd 1), each to test loss 0.01 + 1000 steps. Stopping rule, stated before the
#      runs: a cell that has not reached test loss 0.01 by step 10000 is hopeless (tuned_adamw.sh's
#      cells: every one that generalized did by 4530). A cell short of 0.01 at the step where
#      another cell of its grid first reached it can no longer be chosen, so it may be stopped
#      there (SIGTERM: resumable; the grid reads "stopped"): the choice is the one its full
#      budget would give. (This saving was added while Muon's M+A* grid ran: Grokfast EMA's
#      and ⊥AdamW's M+A* grids ran in full, the later grids used it.)
#   2. each arm's cell that reaches test loss 0.01 first on seed 5 (a tie: the smaller lr, then
#      wd), on seeds 0-4 (STAGE2 below, filled in once an arm's grid is done: `python
#      experiments/claims.py tuned_methods` prints the choice).
# Stage 1 is 50 runs of up to 10k steps each (their times: BENCHMARKS.md, the reproduction sweeps).
source "$(dirname "$0")/jobs.sh"
OUT=runs/tuned_methods
# the arms' flags: AdamW (none), Grokfast EMA, ⊥AdamW, Muon
ARMS=("" "--grokfast ema --gf-alpha 0.98 --gf-lamb 2" "--orthograd" "--optimizer muon")
R="--seed 5 --stop-after-grok 1000 --out $OUT"
# stage 2: "placement|flags|lr|wd", the cells stage 1 chose (accelerators.TUNED)
STAGE2=(
  "pre||0.001|1"
  "pre|--grokfast ema --gf-alpha 0.98 --gf-lamb 2|0.003|1"
  "pre|--orthograd|0.001|1"
  "pre|--optimizer muon|0.003|1"
  "off||0.006|3"
  "off|--grokfast ema --gf-alpha 0.98 --gf-lamb 2|0.006|3"
  "off|--orthograd|0.001|0"
  "off|--optimizer muon|0.006|1"
)
jobs() {
  for ln in pre off; do for flags in "${ARMS[@]}"; do
    for lr in 0.001 0.003 0.006; do for wd in 1 3; do
      echo "python train.py --ln $ln${flags:+ $flags} --lr $lr --wd $wd $R"
    done; done
  done
  echo "python train.py --ln $ln --orthograd --wd 0 $R"
  done
  local cell ln flags lr wd s
  for cell in "${STAGE2[@]}"; do
    IFS="|" read -r ln flags lr wd <<< "$cell"
    for s in 0 1 2 3 4; do
      echo "python train.py --ln $ln${flags:+ $flags} --lr $lr --wd $wd --seed $s --stop-after-grok 1000 --out $OUT"
    done
  done
}
run_jobs "$@"
