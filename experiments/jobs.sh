# Sourced by each experiment script: it defines `jobs` (one command per line), then calls run_jobs "$@".
#   bash experiments/ln_placements.sh          run every job, then analyze
#   bash experiments/ln_placements.sh --list   print the jobs, one command per line
#   bash experiments/ln_placements.sh --count  print how many jobs there are (for sbatch --array)
#   bash experiments/ln_placements.sh N        run job N only (1-based), e.g. N=$SLURM_ARRAY_TASK_ID
#                                              (a 0-based array is read as 0-based: README, Slurm);
#                                              afterwards run the analyze command that --list prints last
#   bash experiments/ln_placements.sh -j 2     run every job, 2 at a time with 1 thread each, then analyze
#                                              (on a 2-core CPU, two 1-thread runs get more steps done
#                                              per second than one 2-thread run)
#   bash experiments/ln_placements.sh --batched   print the same runs as one command per configuration
#                                              with all its seeds (for a GPU: the seeds train batched);
#                                              a script may define its own `batched` (fewer commands)
# Every train.py job runs with --auto-resume: run again (a requeue, a crash, a Ctrl-C), a sweep goes
# on where each run stopped and leaves the finished ones as they are.
set -euo pipefail
cd "$(dirname "$0")/.."
ANALYZE_ARGS=""  # a script's own, set after it sources this file; never the caller's environment

fail() { echo "error: $*" >&2; exit 2; }

# the jobs as train.py runs them: repeat-safe
repeat_safe() { sed '/^python train\.py /s/$/ --auto-resume/'; }

# the jobs as one command per configuration, its seeds in one --seed: what jobs() lists, with the
# commands that differ only in their seed merged, in the order they first appear
group_seeds() {
  local -A seeds=()
  local order=() c key
  for c in "${cmds[@]}"; do
    if [[ ! $c =~ \ --seed\ ([0-9]+) ]]; then order+=("$c"); continue; fi
    key=${c/ --seed ${BASH_REMATCH[1]}/}
    [[ -v seeds[$key] ]] || order+=("$key")
    seeds[$key]+=" ${BASH_REMATCH[1]}"
  done
  for key in "${order[@]}"; do
    if [[ -v seeds[$key] ]]; then echo "${key/ --out / --seed${seeds[$key]} --out }"; else echo "$key"; fi
  done
}

# job N of an array task: Slurm's task ids are 1-based or, when the array starts at 0, 0-based.
# Every task of one array checks the same range, so all run or all refuse: none is lost silently.
job_number() {
  local n=$1 count=${#cmds[@]}
  [[ $n =~ ^(0|[1-9][0-9]{0,8})$ ]] || fail "job $n: give a number from 1 to $count, --list, --count, --batched or -j N"
  if [[ -n ${SLURM_ARRAY_TASK_MIN:-} && $n == "${SLURM_ARRAY_TASK_ID:-}" ]]; then
    local first=$SLURM_ARRAY_TASK_MIN last=$SLURM_ARRAY_TASK_MAX
    if (( first == 0 )); then n=$((n + 1)); last=$((last + 1)); fi
    (( last <= count )) || fail "the array runs to task $SLURM_ARRAY_TASK_MAX, past the $count jobs: submit --array=1-$count (or 0-$((count - 1)))"
  fi
  (( n >= 1 && n <= count )) || fail "job $1: give a number from 1 to $count, --list, --count, --batched or -j N"
  echo "$n"
}

run_jobs() {
  mapfile -t cmds < <(jobs | repeat_safe)
  # the analysis after the jobs; a script may set ANALYZE_ARGS (clock_pizza.sh: --no-llc)
  local analyze="python analyze.py ${ANALYZE_ARGS:+$ANALYZE_ARGS }$OUT"
  local mode=${1-all}
  case $mode in
    -j) (( $# == 2 )) || fail "-j takes one number: how many jobs at once" ;;
    *) (( $# <= 1 )) || fail "one argument at most (got $#: $*)" ;;
  esac
  # an array task runs one job: a whole sweep in every task would run each job many times over
  if [[ -n ${SLURM_ARRAY_TASK_ID:-} && ( $mode == all || $mode == -j ) ]]; then
    fail "in a Slurm array task, give the job: bash $0 \$SLURM_ARRAY_TASK_ID"
  fi
  case $mode in
    --list) printf '%s\n' "${cmds[@]}"; echo "$analyze" ;;
    --count) echo "${#cmds[@]}" ;;
    --batched) if declare -F batched >/dev/null; then batched | repeat_safe; else group_seeds; fi
        echo "$analyze" ;;
    # a run that fails (its one-line error printed: a NaN loss) does not stop the rest; an
    # interrupted one (Ctrl-C: 130, SIGTERM: 143, saved for --resume) stops the sweep
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
    -j) [[ $2 =~ ^[1-9][0-9]{0,3}$ ]] || fail "-j $2: give how many jobs at once, 1 or more"
        printf '%s\n' "${cmds[@]}" | OMP_NUM_THREADS=1 xargs -P "$2" -I{} sh -c \
          '{}; rc=$?; case $rc in 0) ;; 130|143) exit 255 ;; *) echo "== failed: {}" ;; esac'
        eval "$analyze" ;;
    # exec: train.py takes this shell's place, so a signal to the job's shell (Slurm's
    # --signal=B:TERM, a requeue) reaches it
    *) n=$(job_number "$mode"); eval "exec ${cmds[$n - 1]}" ;;
  esac
}
