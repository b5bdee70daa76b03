# Singh et al.: every LN placement, the paper's five seeds, 10k steps each.
source "$(dirname "$0")/jobs.sh"
OUT=runs/ln_placements
jobs() { for ln in off attn-pre pre mlp-pre attn-pre-qk attn-pre-v pre-v; do for s in 456 789 111 222 333; do
  echo "python train.py --ln $ln --seed $s --out $OUT"; done; done; }
run_jobs "$@"
