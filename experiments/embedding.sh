# AlQuabeh et al.: embedding-MLP with learned vs one-hot input, embedding lr ratio, balanced split.
source "$(dirname "$0")/jobs.sh"
OUT=runs/embedding
jobs() { for s in 0 1 2; do
  for op in add a2+b2; do for e in learned onehot; do
    echo "python train.py --preset alquabeh --embed $e --op $op --seed $s --stop-after-grok 1000 --out $OUT"; done; done
  echo "python train.py --preset alquabeh --emb-lr-ratio 10 --seed $s --stop-after-grok 1000 --out $OUT"
  echo "python train.py --preset alquabeh --split balanced --seed $s --stop-after-grok 1000 --out $OUT"
done; }
run_jobs "$@"
