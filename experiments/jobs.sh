# Sourced by each experiment script: it defines `jobs` (one command per line), then calls run_jobs "$@".
#   bash experiments/ln_placements.sh          run every job, then analyze
#   bash experiments/ln_placements.sh --list   print the jobs, one command per line
#   bash experiments/ln_placements.sh N        run job N only (1-based), e.g. N=$SLURM_ARRAY_TASK_ID;
#                                              afterwards run the analyze command that --list prints last
#   bash experiments/ln_placements.sh -j 2     run every job, 2 at a time with 1 thread each, then analyze
#                                              (on a 2-core CPU, two 1-thread runs get more steps done
#                                              per second than one 2-thread run)
#   bash experiments/ln_placements.sh --batched   print the same runs as one command per configuration
#                                              with all its seeds (for a GPU: the seeds train batched);
#                                              a script may define its own `batched` (fewer commands)
set -euo pipefail
cd "$(dirname "$0")/.."
ANALYZE_ARGS=""  # a script's own, set after it sources this file; never the caller's environment
run_jobs() {
  mapfile -t cmds < <(jobs)
  # the analysis after the jobs; a script may set ANALYZE_ARGS (clock_pizza.sh: --no-llc)
  local analyze="python analyze.py ${ANALYZE_ARGS:+$ANALYZE_ARGS }$OUT"
  case "${1:-all}" in
    --list) printf '%s\n' "${cmds[@]}"; echo "$analyze" ;;
    --batched) if declare -F batched >/dev/null; then batched; else printf '%s\n' "${cmds[@]}" | awk '{ c = $0; sub(/ --seed [0-9]+/, "", c); match($0, / --seed [0-9]+/)
        if (!(c in seeds)) order[++n] = c; seeds[c] = seeds[c] " " substr($0, RSTART + 8, RLENGTH - 8) }
        END { for (i = 1; i <= n; i++) { c = order[i]; sub(/ --out /, " --seed" seeds[c] " --out ", c); print c } }'; fi
        echo "$analyze" ;;
    # a run that fails (its one-line error printed: a NaN loss, a finished run) does not stop the
    # rest; an interrupted one (Ctrl-C: 130, SIGTERM: 143, saved for --resume) stops the sweep
    all) for c in "${cmds[@]}"; do
          echo "== $c"
          rc=0; eval "$c" || rc=$?
          case $rc in
            0) ;;
            130|143) echo "== interrupted: $c" >&2; exit "$rc" ;;
            *) echo "== failed: $c" ;;
          esac
        done
        eval "$analyze" ;;
    # xargs stops starting jobs when one exits 255
    -j) printf '%s\n' "${cmds[@]}" | OMP_NUM_THREADS=1 xargs -P "$2" -I{} sh -c \
          '{}; rc=$?; case $rc in 0) ;; 130|143) exit 255 ;; *) echo "== failed: {}" ;; esac'
        eval "$analyze" ;;
    *) # job N, 1-based: digits only (never arithmetic on the argument), within the list
      if [[ ! $1 =~ ^[1-9][0-9]{0,8}$ ]] || (( $1 > ${#cmds[@]} )); then
        echo "error: job $1: give a number from 1 to ${#cmds[@]}, --list, --batched or -j N" >&2
        exit 2
      fi
      eval "${cmds[$1 - 1]}" ;;
  esac
}
