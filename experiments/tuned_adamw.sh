# A tuned AdamW arm for the accelerators' comparison: the public critiques of grokking
# accelerators (Grokfast's tracker, the ⊥AdamW and Muon replications) ask that a method beat
# AdamW with its lr and weight decay tuned, not AdamW at the method's own settings.
#   1. tuning, on seed 5 (not among the compared seeds 0-4): lr {1e-3, 3e-3, 6e-3} x wd {1, 3},
#      M+A* and No LN, each to test loss 0.01 + 1000 steps. Lower weight decay is left out: wd
#      0.3 groks later than wd 1 in Singh et al.'s sweep and ours (claims.py optimization).
#   2. the cell that reaches test loss 0.01 first on seed 5 (claims.py tuned_adamw picks it), on
#      the compared seeds 0-4, beside interventions.sh's matched AdamW and the methods. On M+A*
#      it is the matched AdamW's own cell (lr 1e-3, wd 1), run again here on this machine.
# Lone runs (one stops at its own step; a batched process runs until its slowest run stops):
# stage 1 ~1.5 CPU-hours on one thread of a 2-vCPU AMD EPYC (BENCHMARKS.md: The reproduction sweeps).
source "$(dirname "$0")/jobs.sh"
OUT=runs/tuned_adamw
jobs() {
  for ln in pre off; do for lr in 0.001 0.003 0.006; do for wd in 1 3; do
    echo "python train.py --ln $ln --lr $lr --wd $wd --seed 5 --stop-after-grok 1000 --out $OUT"
  done; done; done
  # stage 2: the cells stage 1 chose (python experiments/claims.py tuned_adamw prints the choice)
  for s in 0 1 2 3 4; do
    echo "python train.py --ln pre --lr 0.001 --wd 1 --seed $s --stop-after-grok 1000 --out $OUT"
    echo "python train.py --ln off --lr 0.006 --wd 3 --seed $s --stop-after-grok 1000 --out $OUT"
  done
}
run_jobs "$@"
