# Gu et al. in their code's setting (--preset gu: p 97, Nanda's model with a 97-way readout,
# float32 loss, 30k epochs; transformer/rec.py, str.py, base.py; MLP/*.py), 3 seeds.
# ~63 runs of 30k steps: a GPU job (bash experiments/gu_setting.sh --batched).
source "$(dirname "$0")/jobs.sh"
OUT=runs/gu_setting
jobs() { for s in 0 1 2; do
  run="python train.py --preset gu --seed $s --out $OUT"
  # Table 1 / Fig. 3: squares {a, b <= k} (rec.py) and strips {a <= k} with b on tokens 60..156
  # (str.py); one strip on a shared vocabulary, where a 0..k still occur as the second operand.
  # A hole run stops 1000 steps after test loss 0.01 (the hole learned: best accuracy ~1)
  hole="$run --stop-after-grok 1000"
  for k in 40 50 60 67; do echo "$hole --split square --hole $k"; done
  for k in 40 50 60 67; do echo "$hole --split strip --hole $k --b-offset 60"; done
  echo "$hole --split strip --hole 40"
  # Fig. 2, depth (base.py: 2 layers, frac 0.5), and Fig. 5, MED against test loss on four
  # primes (base.py loops over p_list = [97]; the other three primes are ours)
  for n in 1 2 3; do echo "$run --n-layers $n --frac 0.5"; done
  for p in 53 71 113; do echo "$run --n-layers 2 --frac 0.5 --p $p"; done
  # token uniformity: weight decay 1 against 0 (no run of theirs has wd 0)
  for wd in 0 1; do echo "$run --wd $wd"; done
  # the DNN (MLP/*.py): [E(a), E(b), E(=)] into two ReLU layers of 512; random split, square
  # k=70 (MLP/rec.py), strip k=35 (MLP/str.py); and one-hot input (their README's variant:
  # the one-hots of a, b and '=' padded to 128 each, 384 inputs, as --mlp-eq --embed onehot)
  # A checkpoint every 500 steps (the preset: 1000): MED is read from checkpoints, and the
  # DNN's are small (~2 MB)
  dnn="$run --model mlp --n-layers 2 --mlp-eq --ckpt-every 500"
  echo "$dnn"; echo "$dnn --split square --hole 70"; echo "$dnn --split strip --hole 35"
  echo "$dnn --embed onehot"
done; }
run_jobs "$@"
