# AlQuabeh et al.: embedding-MLP with learned vs one-hot input, embedding lr ratio, balanced split.
source "$(dirname "$0")/jobs.sh"
OUT=runs/embedding
# checkpoints every 500 steps, not 100: analysis takes ~3 s a checkpoint on a 2-vCPU CPU, so
# 100 would make it ~2.3 h for the 24 runs; the steps and losses of the table are the same
jobs() { for s in 0 1 2 3; do
  for op in add a2+b2; do for e in learned onehot; do
    echo "python train.py --preset alquabeh --embed $e --op $op --seed $s --stop-after-grok 1000 --ckpt-every 500 --out $OUT"; done; done
  echo "python train.py --preset alquabeh --emb-lr-ratio 10 --seed $s --stop-after-grok 1000 --ckpt-every 500 --out $OUT"
  echo "python train.py --preset alquabeh --split balanced --seed $s --stop-after-grok 1000 --ckpt-every 500 --out $OUT"
done; }
run_jobs "$@"
