# AlQuabeh et al.: embedding-MLP with learned vs one-hot input, embedding lr ratio, balanced split.
source "$(dirname "$0")/jobs.sh"
OUT=runs/embedding
jobs() { for s in 0 1 2; do
  for op in add a2+b2; do for e in learned onehot; do
    echo "python train.py --preset alquabeh --embed $e --op $op --seed $s --out $OUT"; done; done
  echo "python train.py --preset alquabeh --emb-lr-ratio 10 --seed $s --out $OUT"
  echo "python train.py --preset alquabeh --split balanced --seed $s --out $OUT"
done; }
run_jobs "$@"
