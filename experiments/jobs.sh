# Sourced by each experiment script: it defines `jobs` (one command per line), then calls run_jobs "$@".
#   bash experiments/ln_placements.sh          run every job, then analyze
#   bash experiments/ln_placements.sh --list   print the jobs, one command per line
#   bash experiments/ln_placements.sh N        run job N only (1-based), e.g. N=$SLURM_ARRAY_TASK_ID;
#                                              afterwards run the analyze command that --list prints last
set -euo pipefail
cd "$(dirname "$0")/.."
run_jobs() {
  mapfile -t cmds < <(jobs)
  case "${1:-all}" in
    --list) printf '%s\n' "${cmds[@]}"; echo "python analyze.py $OUT" ;;
    all) for c in "${cmds[@]}"; do echo "== $c"; eval "$c"; done; python analyze.py "$OUT" ;;
    *) eval "${cmds[$(($1 - 1))]}" ;;
  esac
}
