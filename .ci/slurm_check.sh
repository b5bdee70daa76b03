# A sweep on a real Slurm survives a requeue: a one-node cluster on localhost (slurm-wlm and munge
# from Debian's packages, installed when absent; as root), an array of three tiny runs through
# experiments/slurm.sbatch and jobs.sh, one task requeued mid-run (SIGTERM, then Slurm runs the
# same script again), and every run checked against the same run trained without Slurm: the
# same metrics, the same checkpoints, the same weights bit for bit. The daemons it started are
# stopped by their PIDs, whatever happens. .ci/run runs it; its time is in BENCHMARKS.md.
#   bash .ci/slurm_check.sh
set -euo pipefail
(( $# == 0 )) || { echo "error: slurm_check.sh takes no argument" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "error: slurm check: $*" >&2; exit 1; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null
fi
D=$(mktemp -d /tmp/slurm_check.XXXXXX)
pids=()
stop() {  # SIGTERM, then SIGKILL to what has not ended in 20 s
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true  # the daemons started here are this shell's children: reaped
  rm -rf "$D"
}
trap stop EXIT

# a copy of the project, as a user's checkout: the real train.py, jobs.sh and slurm.sbatch
mkdir -p "$D/repo/experiments" "$D/ctld" "$D/d" "$D/run" "$D/log"
cp "$repo"/*.py "$D/repo"
cp "$repo/experiments/jobs.sh" "$repo/experiments/slurm.sbatch" "$D/repo/experiments"
cat > "$D/repo/experiments/tiny.sh" <<'EOF'
source "$(dirname "$0")/jobs.sh"
OUT=runs/tiny
jobs() { for s in 0 1 2; do
  echo "python train.py --p 23 --d-model 32 --d-mlp 64 --frac 0.5 --steps 4000 --seed $s --out $OUT"
done; }
run_jobs "$@"
EOF

# munge: its own daemon unless one runs already (then it is not ours to stop)
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  mkdir -p /run/munge && chown munge:munge /run/munge
  su -s /bin/sh munge -c /usr/sbin/munged
  for _ in $(seq 50); do [ -s /run/munge/munged.pid ] && break; sleep 0.1; done
  pids+=("$(cat /run/munge/munged.pid)")
fi
export SLURM_CONF=$D/slurm.conf
cat > "$SLURM_CONF" <<EOF
ClusterName=check
SlurmctldHost=localhost
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CryptoType=crypto/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobRequeue=1
ReturnToService=2
MinJobAge=3600
StateSaveLocation=$D/ctld
SlurmdSpoolDir=$D/d
SlurmctldPidFile=$D/run/ctld.pid
SlurmdPidFile=$D/run/d.pid
SlurmctldLogFile=$D/log/ctld.log
SlurmdLogFile=$D/log/d.log
SchedulerType=sched/backfill
SwitchType=switch/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
KillWait=30
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i >"$D/log/ctld.out" 2>&1 & pids+=($!)
slurmd -D -N localhost >"$D/log/d.out" 2>&1 & pids+=($!)
for _ in $(seq 100); do [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && break; sleep 0.2; done
[ "$(sinfo -h -o %t)" = idle ] || fail "the node is $(sinfo -h -o %t), not idle ($D/log)"

cd "$D/repo"
n=$(bash experiments/tiny.sh --count)
job=$(sbatch --parsable --array=1-"$n" --output="$D/log/task_%a.out" \
      experiments/slurm.sbatch experiments/tiny.sh)
echo "submitted array $job of $n tasks"
state() { scontrol show job "${job}_$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2; }
# requeue task 2 once its run has saved past step 0, before it ends
for _ in $(seq 600); do compgen -G "runs/tiny/*_s1/ckpt/step_000300.pt" >/dev/null && break; sleep 0.2; done
[ "$(state 2)" = RUNNING ] || fail "task 2 is $(state 2) before the requeue"
scontrol requeue "${job}_2"
echo "requeued task 2"
for _ in $(seq 100); do [ "$(state 2)" = PENDING ] && break; sleep 0.2; done
# Slurm holds a requeued job ~2 minutes before it may start again: let it start now
scontrol update JobId="${job}_2" StartTime=now
for _ in $(seq 900); do
  done_tasks=0
  for t in $(seq "$n"); do
    case $(state "$t") in
      COMPLETED) done_tasks=$((done_tasks + 1)) ;;
      FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) fail "task $t $(state "$t"): $(cat "$D/log/task_$t.out")" ;;
    esac
  done
  [ "$done_tasks" = "$n" ] && break
  sleep 1
done
[ "$done_tasks" = "$n" ] || fail "$done_tasks of $n tasks completed in 15 minutes"
grep -q "interrupted by SIGTERM" "$D/log/task_2.out" || fail "task 2 was not interrupted"
grep -q "resumed at step" "$D/log/task_2.out" || fail "task 2 did not resume"
# a second submission of the whole array: every run is finished, nothing is rewritten
before=$(find runs -type f -exec md5sum {} + | sort)
job=$(sbatch --parsable --array=1-"$n" --output="$D/log/again_%a.out" \
      experiments/slurm.sbatch experiments/tiny.sh)
for _ in $(seq 300); do
  [ "$(for t in $(seq "$n"); do state "$t"; done | sort -u)" = COMPLETED ] && break; sleep 1
done
[ "$(for t in $(seq "$n"); do state "$t"; done | sort -u)" = COMPLETED ] || fail "the second array did not complete"
grep -q "nothing to do" "$D/log/again_2.out" || fail "a finished run was run again"
[ "$(find runs -type f -exec md5sum {} + | sort)" = "$before" ] || fail "the second array rewrote a run"

# the same runs without Slurm, uninterrupted, and the two compared
for s in 0 1 2; do  # each alone, as its task trained it (a batch of seeds rounds otherwise)
  OMP_NUM_THREADS=1 python train.py --p 23 --d-model 32 --d-mlp 64 --frac 0.5 --steps 4000 \
    --seed "$s" --out ref >/dev/null & refs+=($!)
done
wait "${refs[@]}"
python3 - runs/tiny ref <<'EOF'
import os, sys
import numpy as np, torch
a, b = sys.argv[1:]
runs = sorted(os.listdir(a))
assert runs == sorted(os.listdir(b)) and len(runs) == 3, (runs, os.listdir(b))
for run in runs:
    for name in ("metrics.npz",):
        x, y = (np.load(os.path.join(r, run, name)) for r in (a, b))
        assert x.files == y.files and all(np.array_equal(x[k], y[k], equal_nan=True)
                                          for k in x.files), (run, name)
    ckpts = sorted(os.listdir(os.path.join(a, run, "ckpt")))
    assert ckpts == sorted(os.listdir(os.path.join(b, run, "ckpt"))), run
    for name in [os.path.join("ckpt", c) for c in ckpts] + ["resume.pt"]:
        x, y = (torch.load(os.path.join(r, run, name), weights_only=True) for r in (a, b))
        assert x.pop("config") == y.pop("config"), (run, name)
        torch.testing.assert_close(x, y, rtol=0, atol=0, msg=f"{run}/{name}")
print(f"slurm check: {len(runs)} runs of a requeued array equal the runs without Slurm, "
      "bit for bit; a second array left them as they were")
EOF
