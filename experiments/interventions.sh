# Grokking accelerators compared fairly (Grokfast, ⊥Grad, StableMax, Muon), 5 seeds each.
#   1. Prieto et al.'s own setting (grokking-at-the-edge-of-numerical-stability, Fig. 1): a+b mod
#      113, 40% train, MLP 226 -> 200 -> 200 -> 113 without biases on two one-hots, torch's init,
#      full batch, lr 0.01, wd 0. Cheap on a CPU but for StableMax's 80k steps. Fig. 1's runs go
#      to runs/prieto_fig1, Fig. 2's to runs/prieto_fig2, the rest to runs/interventions.
#   2. This project's settings (M+A*, No LN, Nanda et al.'s mainline): each method against AdamW
#      at the same weight decay; each Grokfast filter also against AdamW at lr * (1 + lambda)
#      and the filter at lr / (1 + lambda). A GPU job: bash experiments/interventions.sh --batched
source "$(dirname "$0")/jobs.sh"
OUT=runs/interventions
jobs() { for s in 0 1 2 3 4; do
  p="python train.py --model mlp --embed onehot --n-layers 2 --d-mlp 200 --no-bias --act relu --init torch --frac 0.4 --lr 0.01 --wd 0 --seed $s"
  # their AdamW: betas (0.9, 0.99), eps 1e-25 (utils.py defaults); ⊥AdamW's: torch's defaults
  f1="--out runs/prieto_fig1"
  echo "$p --betas 0.9 0.999 --orthograd --loss-dtype float32 --steps 300 $f1"   # Fig. 1a: ⊥AdamW
  echo "$p --betas 0.9 0.99 --eps 1e-25 --loss-dtype float32 --steps 4000 $f1"  # softmax collapse
  # Fig. 1c: float64, their 80k epochs (REPRODUCTION's table has its first 4000 steps)
  echo "$p --betas 0.9 0.99 --eps 1e-25 --steps 80000 --eval-every 100 --ckpt-every 4000 $f1"
  echo "$p --betas 0.9 0.999 --eps 1e-25 --loss stablemax --steps 80000 --eval-every 100 --ckpt-every 4000 --stop-after-grok 1000 $f1"  # Fig. 1b
  # Fig. 2 (their script l.58-70): lr 5e-4, 20k epochs, softmax in float16 / float32 / float64,
  # frac 0.7 and 0.6 with eps 1e-25, frac 0.4 with eps 1e-30
  for f in 0.7 0.6 0.4; do e=1e-25; [ $f = 0.4 ] && e=1e-30; for d in float16 float32 float64; do
    echo "$p --frac $f --lr 0.0005 --betas 0.9 0.99 --eps $e --loss-dtype $d --steps 20000 --eval-every 100 --ckpt-every 4000 --out runs/prieto_fig2"
  done; done
  # Grokfast's own setting (ironjr/grokfast main.py), as near as this model gets: x*y mod 97,
  # 50% train, 2 layers, causal, GELU, batch 512, Adam with coupled L2, 10-step warm-up. Theirs
  # also has an op token ([x, op, y, =]), y != 0, LayerNorm on the stream before attention and
  # a final LN, biases in attention, a 99-way readout (here 98), torch's init, and keeps each
  # epoch's last partial batch (REPRODUCTION.md); LN eps 1e-5 and a float32 loss, as theirs
  g="python train.py --ln pre --ln-eps 1e-5 --loss-dtype float32 --n-layers 2 --causal --op mul --p 97 --frac 0.5 --batch-size 512 --optimizer adam --warmup 10 --steps 300000 --ckpt-every 10000 --stop-after-grok 1000 --seed $s --out $OUT"
  echo "$g --wd 0"                                                   # their baseline: 39,890
  echo "$g --grokfast ema --gf-alpha 0.98 --gf-lamb 2 --wd 0.005"    # 910
  echo "$g --grokfast ma --gf-window 100 --gf-lamb 5 --wd 0.01"      # 790
  echo "$g --wd 0.005"; echo "$g --wd 0.01"   # the filters' weight decay without a filter
  for setting in "--ln pre" "--ln off" "--preset nanda"; do
    r="python train.py $setting --seed $s --stop-after-grok 1000 --out $OUT"
    echo "$r"
    echo "$r --grokfast ema --gf-alpha 0.98 --gf-lamb 2"
    echo "$r --grokfast ema --gf-alpha 0.98 --gf-lamb 2 --lr 0.000333333"
    echo "$r --lr 0.003"
    echo "$r --grokfast ma --gf-window 100 --gf-lamb 5"
    echo "$r --grokfast ma --gf-window 100 --gf-lamb 5 --lr 0.000166667"; echo "$r --lr 0.006"
    echo "$r --orthograd"
    echo "$r --wd 0 --orthograd"; echo "$r --wd 0"   # Prieto et al. use ⊥AdamW at wd 0 only
    echo "$r --loss stablemax"
    echo "$r --optimizer muon"
  done
done; }
run_jobs "$@"
