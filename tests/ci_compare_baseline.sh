#!/usr/bin/env bash
# CI: a short benchmark in the two configurations of results/baseline/ (its README says how it
# was made), compared with that committed baseline. Every time: the new result files must read
# back and every baseline configuration must be matched (cnnbench compare --check_only). Speed
# gates only when asked, since shared machines are too noisy to fail on every slow run:
#   CNNBENCH_GATE_SPEED=1 ctest --test-dir build -R ci_compare_baseline --output-on-failure
# (CNNBENCH_GATE_TOLERANCE=PCT sets the tolerance, default 5).
# usage: ci_compare_baseline.sh CNNBENCH SOURCE_DIR WORK_DIR MPIEXEC [MPIEXEC FLAGS...]
set -euo pipefail
cnnbench=$1 source_dir=$2 work=$3
shift 3
rm -rf "$work" && mkdir -p "$work" && cd "$work"

run() {  # LOG COMMAND...: quiet unless it fails
  local log=$1
  shift
  "$@" > "$log" 2>&1 || { cat "$log"; echo "ci_compare_baseline: the benchmark failed: $*"; exit 1; }
}
common="--model=resnet20 --batch_size=32 --num_batches=20 --benchmark_log_dir=new"
run 1rank.log "$cnnbench" $common --num_intra_threads=2 --result_json=new/resnet20_b32_1rank.json
run 2ranks.log "$@" -np 2 "$cnnbench" $common --num_intra_threads=1 --result_json=new/resnet20_b32_2ranks_mpi.json

if [ "${CNNBENCH_GATE_SPEED:-0}" = 1 ]; then
  mode=(--tolerance="${CNNBENCH_GATE_TOLERANCE:-5}")
else
  mode=(--check_only)
fi
status=0
"$cnnbench" compare "$source_dir/results/baseline" new "${mode[@]}" > compare.txt || status=$?
cat compare.txt
# exit 3: a baseline configuration has no new run (the benchmark's settings drifted?)
exit "$status"
