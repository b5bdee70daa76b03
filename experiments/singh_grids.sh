# Singh et al.'s own grids (No LN, the paper's five seeds, 10k steps; the numbers to compare are
# in conventions.md) and their appendix sweeps (scripts/*.sh of layernorm-grok), each split drawn
# as their code draws it (--split-rng singh: --seed S is their split of seed S; the initial
# weights are this project's). Compare with `python analyze.py runs/singh_grids`: the summary's
# last column is their statistic (first step with the 5-seed mean test loss <= 0.01).
# 165 runs of up to 10k steps (3-layer ones on model.py's forward): a GPU job (--batched).
source "$(dirname "$0")/jobs.sh"
OUT=runs/singh_grids
jobs() { for s in 456 789 111 222 333; do
  r="python train.py --split-rng singh --seed $s --stop-after-grok 1000 --out $OUT"
  for lr in 1e-3 3e-3 5e-3 1e-2; do echo "$r --ln off --lr $lr --fix-wd"; done
  for wd in 0.1 0.2 0.5 0.75 1.5; do echo "$r --ln off --wd $wd"; done   # wd 1: the lr 1e-3 run
  for a in 0.5 0.75 1.25 1.5; do echo "$r --ln off --alpha $a"; echo "$r --ln off --alpha $a --alpha-lr"; done
  for ln in off attn-pre pre mlp-pre; do   # appendix: 3 layers of width 64 (MLP 4x); RMSNorm
    echo "$r --ln $ln --n-layers 3 --d-model 64 --d-mlp 256"
    [ "$ln" = off ] || echo "$r --ln $ln --norm rmsnorm"
  done
  for a in 0.5 0.75 1 1.25 1.5; do   # appendix: AdamW eps 0 with Kaiming init (lazy.sh (b)),
    k="$r --ln off --alpha $a --eps 0 --init kaiming"  # and with lr / alpha^2 (lazy_wrong.sh (b))
    echo "$k"; [ "$a" = 1 ] || echo "$k --alpha-lr"
  done
done; }
run_jobs "$@"
