# Nanda et al.'s appendix D.1-D.2 on their mainline (--preset nanda), 3-5 seeds, their 40k budget:
# weight decay replaced by dropout on the MLP neurons or by an L1 penalty added to the loss (not
# decoupled), and the loss in float32 against float64 (slingshots). The paper's text, as we hold
# it, lost its numbers (the dropout rates, L1's lambda): the values below are ours.
# 19 runs of 40k steps, all on fast.py's table forward (dropout too): 2.7-2.8 h for the three
# seeds of one line batched on one CPU thread beside one or two other processes (the mainline,
# float32; 2-vCPU AMD EPYC Zen 4), minutes on a GPU (--batched).
source "$(dirname "$0")/jobs.sh"
OUT=runs/nanda_regularizers
# The mainline and float32 have seeds 3-4 too: a sign test of the cleanup claims needs five seeds
# to reach p < 0.05, the rank test of the slingshot claim four a side.
jobs() { for s in 0 1 2 3 4; do
  r="python train.py --preset nanda --split-rng nanda --seed $s --out $OUT"   # their split
  echo "$r"                                    # the mainline, float64 loss, 40k steps
  echo "$r --loss-dtype float32"
  (( s > 2 )) && continue
  for p in 0.1 0.2; do echo "$r --wd 0 --dropout $p"; done
  echo "$r --wd 0 --l1 1e-5"
done; }
run_jobs "$@"
