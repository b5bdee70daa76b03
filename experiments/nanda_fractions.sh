# Nanda et al.'s training-fraction sweep (their released saved_runs/mod_addition_frac_train_sweep
# .pth: one run per fraction), here with seed 0, the mainline preset and their code's split (their
# sweep's split generator; its seed is unknown), to test loss 0.01 + 1000.
source "$(dirname "$0")/jobs.sh"
OUT=runs/nanda_fractions
jobs() { for f in 0.25 0.28 0.4 0.5 0.6 0.7 0.8 0.9; do
  echo "python train.py --preset nanda --split-rng nanda --frac $f --seed 0 --stop-after-grok 1000 --out $OUT"
done; }
run_jobs "$@"
