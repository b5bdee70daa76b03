# Gu et al.: square and strip holes of growing size, a^2+ab+b^2, deeper models.
source "$(dirname "$0")/jobs.sh"
OUT=runs/gu
jobs() { for s in 0 1 2; do
  for k in 10 30 50; do echo "python train.py --split square --hole $k --seed $s --stop-after-grok 1000 --out $OUT"; done
  for k in 5 15 30; do echo "python train.py --split strip --hole $k --seed $s --stop-after-grok 1000 --out $OUT"; done
  echo "python train.py --op a2+ab+b2 --seed $s --stop-after-grok 1000 --out $OUT"
  for n in 2 3; do echo "python train.py --n-layers $n --seed $s --stop-after-grok 1000 --out $OUT"; done
done; }
run_jobs "$@"
