#!/bin/bash
# tests/fuzz/run_fuzzers.sh — runs every libFuzzer harness of a fuzz build, one at a time and in
# one process each (nice -n 10), for a fixed time or a fixed number of inputs, on a copy of its
# seed corpus (tests/fuzz/corpus/<name>/: the committed corpus is never written) with its
# dictionary (tests/fuzz/dict/<name>.dict), and prints the inputs each ran.
#   tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS_EACH [RUNS]    (BUILD_DIR: where fuzz_* are,
#                                                              e.g. build-fuzz/tests/fuzz)
# With RUNS, each harness stops after RUNS inputs (-runs=RUNS) or SECONDS_EACH, whichever is
# first. Exit code 0 when no harness crashed, leaked, hung (-timeout=10 s an input), went past
# 2 GiB (-rss_limit_mb=2048) or had an ASan/UBSan report; 1 otherwise, naming the work folder
# that keeps the log and the input. FUZZERS="fuzz_idx fuzz_jpeg" picks harnesses; FUZZ_WORK=DIR
# puts the work folder there and keeps it (it is removed after a clean run otherwise);
# FUZZ_SEED=N makes the inputs the same from run to run (-seed=N), as the ctest gate wants: a
# gate that fails by chance blocks an unrelated change, so finding new bugs is the job of long
# runs with a fresh seed each, not of the gate.
set -u
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 BUILD_DIR SECONDS_EACH [RUNS]" >&2
  exit 2
fi
build=$1 seconds=$2 runs=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
fuzzers=${FUZZERS:-"fuzz_flags fuzz_config_toml fuzz_cifar10 fuzz_idx fuzz_jpeg fuzz_jpeg_folder fuzz_tfrecord fuzz_image_example fuzz_checkpoint fuzz_result_json fuzz_results_csv fuzz_algorithm_cache"}
work=${FUZZ_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/cnnbench_fuzz_run.XXXXXX")}
mkdir -p "$work"

failed=0
printf '%-20s %12s %8s %10s  %s\n' harness executions seconds exec/s result
for name in $fuzzers; do
  binary=$build/$name
  if [ ! -x "$binary" ]; then
    echo "$name: no $binary (build the fuzzers target)" >&2
    failed=1
    continue
  fi
  corpus=$work/corpus/$name artifacts=$work/artifacts/$name/ log=$work/$name.log dict=$here/dict/${name#fuzz_}.dict
  mkdir -p "$corpus" "$artifacts"
  cp -r "$here/corpus/${name#fuzz_}/." "$corpus/"
  dict_flag=
  [ -f "$dict" ] && dict_flag=-dict=$dict
  start=$(date +%s.%N)
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1 \
    nice -n 10 "$binary" -max_total_time="$seconds" ${runs:+-runs=$runs} ${FUZZ_SEED:+-seed=$FUZZ_SEED} -timeout=10 -rss_limit_mb=2048 \
    -detect_leaks=1 -print_final_stats=1 ${dict_flag:+"$dict_flag"} -artifact_prefix="$artifacts" "$corpus" >"$log" 2>&1
  rc=$?
  elapsed=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(awk -v n="${execs:-0}" -v t="$elapsed" 'BEGIN { printf "%.0f", (t > 0 ? n / t : 0) }')
  result=ok
  if [ $rc -ne 0 ] || [ -n "$(ls -A "$artifacts")" ]; then
    result="FAILED (exit $rc; $log; inputs in $artifacts)"
    failed=1
  fi
  printf '%-20s %12s %8.1f %10s  %s\n' "$name" "${execs:-?}" "$elapsed" "$rate" "$result"
done
[ -z "${FUZZ_WORK:-}" ] && [ $failed -eq 0 ] && rm -rf "$work"
[ $failed -ne 0 ] && echo "fuzz work folder (logs, corpora, crashing inputs): $work"
exit $failed
