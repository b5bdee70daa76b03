# Gu et al.'s Fig. 4 in their code's setting (--preset gu): a^2+ab+b^2 at three training fractions
# (the paper names none), 3 seeds, 3000 of their 30k epochs (train loss 0.01 by step 240-360).
source "$(dirname "$0")/jobs.sh"
OUT=runs/gu_quadratic
jobs() { for s in 0 1 2; do for f in 0.3 0.5 0.7; do
  echo "python train.py --preset gu --op a2+ab+b2 --frac $f --steps 3000 --seed $s --out $OUT"
done; done; }
ANALYZE_ARGS="--no-llc"
run_jobs "$@"
