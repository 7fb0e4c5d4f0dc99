#!/usr/bin/env bash
# Faults during a run, as trials: a 2-rank training job is started, and once it is training a
# random rank is sent SIGSTOP (stuck) or SIGKILL (dead) at a random moment of its step (forward,
# backward or allreduce), or (HANG) a random rank stops after a random step while staying alive
# (CNNBENCH_TEST_HANG_AT). Each trial passes when the whole job ends non-zero within the limit,
# naming that rank, and leaves no process behind.
#   tests/fault_trials.sh --binary B --signal STOP|KILL|HANG [--allreduce mpi|gloo] [--trials N]
#       [--timeout_sec T] [--limit_sec L] [--csv FILE] -- MPIEXEC [ARGS...]
# STOP and HANG: cnnbench's collective watchdog (--collective_timeout_sec=T) must end the job
# within T + 5 s (the default limit), naming the rank that does not answer (STOP) or answers
# from an earlier collective (HANG). KILL: the launcher must end the job within 30 s naming the
# rank. One line per trial; exits 1 if any trial failed.
set -euo pipefail

binary= signal= allreduce=mpi trials=10 timeout_sec=4 limit_sec= csv=
while (($#)); do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --signal) signal=$2; shift 2 ;;
    --allreduce) allreduce=$2; shift 2 ;;
    --trials) trials=$2; shift 2 ;;
    --timeout_sec) timeout_sec=$2; shift 2 ;;
    --limit_sec) limit_sec=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "fault_trials: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
launcher=("$@")
[ -x "$binary" ] && [ ${#launcher[@]} -gt 0 ] || { echo "fault_trials: need --binary and -- MPIEXEC" >&2; exit 2; }
case "$signal" in
  STOP|HANG) : "${limit_sec:=$((timeout_sec + 5))}" ;;
  KILL) : "${limit_sec:=30}" ;;
  *) echo "fault_trials: --signal must be STOP, KILL or HANG" >&2; exit 2 ;;
esac

work=$(mktemp -d)
job=
cleanup() {
  [ -n "$job" ] && kill -KILL -- "-$job" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# The process of rank R of the job marked with $1 (cnnbench ranks carry the mark in their
# environment), or nothing.
# (The environment is read whole first: `tr | grep -q` under pipefail fails when grep stops at
# its match and tr, still writing a large environment, dies of SIGPIPE; under load that lost
# the rank now and then.)
rank_pid() {
  local mark=$1 rank=$2 pid environment
  for pid in $(pgrep -x "$(basename "$binary")"); do
    environment=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) || continue
    if grep -qx "CNNBENCH_FAULT_TRIAL=$mark" <<<"$environment" &&
       grep -qx "OMPI_COMM_WORLD_RANK=$rank" <<<"$environment"; then
      echo "$pid"; return
    fi
  done 2>/dev/null
}
leftovers() { local r; for r in 0 1; do rank_pid "$1" $r; done; }

[ -n "$csv" ] && [ ! -s "$csv" ] && echo "signal,allreduce,trial,rank,seconds_to_end,exit_code,named,ok" >"$csv"
passed=0
for trial in $(seq 1 "$trials"); do
  mark="$$-$trial"
  log="$work/trial$trial.log"
  rank=$((RANDOM % 2))
  hang=
  [ "$signal" = HANG ] && hang="$rank:$((2 + RANDOM % 6))"
  # its own process group, so that a failed trial can be cleaned up whole
  setsid env CNNBENCH_FAULT_TRIAL="$mark" CNNBENCH_TEST_HANG_AT="$hang" "${launcher[@]}" -x CNNBENCH_FAULT_TRIAL \
    -x CNNBENCH_TEST_HANG_AT -np 2 "$binary" \
    --model=resnet20 --batch_size=16 --num_batches=100000 --num_intra_threads=1 --display_every=1000 \
    --allreduce="$allreduce" --collective_timeout_sec="$timeout_sec" --benchmark_log_dir="$work" >"$log" 2>&1 &
  job=$!
  if [ "$signal" = HANG ]; then
    for _ in $(seq 1 600); do grep -q "hangs after step" "$log" && break; sleep 0.05; done
    pid=$(rank_pid "$mark" $rank)
  else
    for _ in $(seq 1 600); do grep -q "Done warm up" "$log" && break; sleep 0.1; done
    sleep "0.$((RANDOM % 10))$((RANDOM % 10))"      # somewhere in a step
    pid=$(rank_pid "$mark" $rank)
    [ -n "$pid" ] && kill -"$signal" "$pid"
  fi
  start=$(date +%s.%N)
  code=0
  overran=
  if ! timeout $((limit_sec + 30)) tail --pid=$job -f /dev/null; then
    # still running well past the limit: a failed trial, not a test that waits forever
    overran=yes
    kill -KILL -- "-$job" 2>/dev/null || true
  fi
  wait $job || code=$?
  seconds=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
  job=
  if [ "$signal" = STOP ]; then
    pattern="rank $rank on host [^ ]* did not arrive and does not answer"
  elif [ "$signal" = HANG ]; then
    pattern="rank $rank on host [^ ]* did not arrive: it answers from gradient collective"
  else
    pattern="process rank $rank with PID [0-9]* on node [^ ]* exited on signal 9"
  fi
  named=no; grep -q "$pattern" "$log" && named=yes
  left=$(leftovers "$mark")
  [ -n "$left" ] && kill -KILL $left 2>/dev/null || true
  ok=no
  if [ -n "$pid" ] && [ "$code" -ne 0 ] && [ $named = yes ] && [ -z "$left" ] &&
     python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)" "$seconds" "$limit_sec"; then
    ok=yes; passed=$((passed + 1))
  fi
  echo "trial $trial: $signal rank $rank ($allreduce): job ended after ${seconds} s${overran:+ (killed by the test: it had not ended)} with exit code $code, rank named: $named, $([ -n "$pid" ] || echo "no rank process found to signal, ")processes left: ${left:-none} -> $ok"
  [ $ok = yes ] || { echo "--- its log:"; tail -20 "$log"; }
  [ -n "$csv" ] && echo "$signal,$allreduce,$trial,$rank,$seconds,$code,$named,$ok" >>"$csv"
done
echo "$signal $allreduce: $passed of $trials trials ended within $limit_sec s naming the rank"
[ "$passed" -eq "$trials" ]
