# Gu et al.: square and strip holes of growing size, a^2+ab+b^2, deeper models.
source "$(dirname "$0")/jobs.sh"
OUT=runs/gu
jobs() { for s in 0 1 2; do
  # holes: a 5k-step budget (the holes that are learned at all are learned by step ~4100 in seed 0)
  for k in 10 30 50; do echo "python train.py --split square --hole $k --steps 5000 --seed $s --stop-after-grok 1000 --out $OUT"; done
  for k in 5 15 30; do echo "python train.py --split strip --hole $k --steps 5000 --seed $s --stop-after-grok 1000 --out $OUT"; done
  echo "python train.py --op a2+ab+b2 --seed $s --stop-after-grok 1000 --out $OUT"
  # depth: the one-layer default model, then 2 and 3 layers
  echo "python train.py --seed $s --stop-after-grok 1000 --out $OUT"
  for n in 2 3; do echo "python train.py --n-layers $n --seed $s --stop-after-grok 1000 --out $OUT"; done
  # Gu et al. Fig. 4: a^2+ab+b^2 with more training data (its test accuracy settles by step ~400)
  for f in 0.5 0.7; do echo "python train.py --op a2+ab+b2 --frac $f --steps 3000 --seed $s --out $OUT"; done
done; }
run_jobs "$@"
