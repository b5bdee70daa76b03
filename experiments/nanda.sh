# Nanda et al.: the mainline (40k steps), weight decay 0, and training fractions 0.5 and 0.7.
source "$(dirname "$0")/jobs.sh"
OUT=runs/nanda
# Seed 3 gives the frac and wd-0 orderings four seeds a side, the fewest at which a rank test of
# a clean separation reaches p < 0.05.
jobs() { for s in 0 1 2 3; do
  echo "python train.py --preset nanda --seed $s --stop-after-grok 1000 --out $OUT"
  echo "python train.py --preset nanda --wd 0 --seed $s --out $OUT"
  for f in 0.5 0.7; do echo "python train.py --preset nanda --frac $f --seed $s --stop-after-grok 1000 --out $OUT"; done
done; }
run_jobs "$@"
