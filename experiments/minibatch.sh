# AlQuabeh et al. with mini-batches, where a token can be absent from a step: learned against
# one-hot input, embedding lr ratio 1 / 10 / auto, random against balanced batches.
source "$(dirname "$0")/jobs.sh"
OUT=runs/minibatch
jobs() { for s in 0 1 2 3; do for b in 64 512; do
  run="python train.py --preset alquabeh --batch-size $b --eval-every 50 --seed $s --stop-after-grok 1000 --out $OUT"
  echo "$run"
  echo "$run --embed onehot"
  echo "$run --emb-lr-ratio 10"
  echo "$run --emb-lr-ratio auto"
  echo "$run --sampling balanced"
done; done; }
run_jobs "$@"
