# Singh et al.: lr sweep with lr*wd fixed, wd sweep, readout scale alpha with lr fixed or lr/alpha^2.
source "$(dirname "$0")/jobs.sh"
OUT=runs/optimization
jobs() { for s in 456 789 111 222 333; do
  for lr in 3e-4 1e-3 3e-3; do echo "python train.py --ln off --lr $lr --fix-wd --seed $s --stop-after-grok 1000 --out $OUT"; done
  for wd in 0.3 3; do echo "python train.py --ln off --wd $wd --seed $s --stop-after-grok 1000 --out $OUT"; done
  for a in 0.5 2 4; do echo "python train.py --ln off --alpha $a --seed $s --stop-after-grok 1000 --out $OUT"
                       echo "python train.py --ln off --alpha $a --alpha-lr --seed $s --stop-after-grok 1000 --out $OUT"; done
done; }
run_jobs "$@"
