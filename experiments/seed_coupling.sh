# Is No LN slower here because one seed draws both the split and the initial weights? The
# default split is a torch.Generator seeded with --seed, the init torch's global generator
# seeded with --seed: the same algorithm from the same integer, so the same random bits.
# Three arms of 20 seeds, No LN, 10k steps: coupled (the default), an independent torch split
# (--data-seed S + 10000), Singh et al.'s own split (--split-rng singh: Python's shuffle).
# 60 runs of up to 10k steps: a GPU job (bash experiments/seed_coupling.sh --batched).
# M+A* under the same protocol on their split (reproduction/seed_coupling_pre: seeds 0-14):
#   python train.py --ln pre --seed $(seq -s ' ' 0 14) --split-rng singh --stop-after-grok 1000 \
#     --out runs/seed_coupling_pre   (2-vCPU EPYC: ~2 h for 8 seeds in one 1-thread process)
source "$(dirname "$0")/jobs.sh"
OUT=runs/seed_coupling
jobs() { for s in $(seq 0 19); do
  r="python train.py --ln off --seed $s --stop-after-grok 1000 --out $OUT"
  echo "$r"
  echo "$r --data-seed $((s + 10000))"
  echo "$r --split-rng singh"
done; }
batched() {  # one command per arm: the 20 seeds of an arm train together
  r="python train.py --ln off --seed $(seq -s ' ' 0 19) --stop-after-grok 1000 --out $OUT"
  echo "$r"
  echo "$r --data-seed $(seq -s ' ' 10000 10019)"  # paired: seed s with data seed s + 10000
  echo "$r --split-rng singh"
}
run_jobs "$@"
