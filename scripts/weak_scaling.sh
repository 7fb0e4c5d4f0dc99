#!/usr/bin/env bash
# Weak scaling on this machine: 1 rank x T threads as the baseline, then N ranks x T threads
# with each allreduce backend, every run reporting its efficiency against the baseline.
#   scripts/weak_scaling.sh [model] [batch per rank] [timed steps] [ranks] [threads per rank]
# Results (JSON, results.csv, logs) go to results/scaling/<model>/.
set -euo pipefail
cd "$(dirname "$0")/.."
model=${1:-resnet50} batch=${2:-32} steps=${3:-20} ranks=${4:-2} threads=${5:-1}
out=results/scaling/$model
mkdir -p "$out"
bin=build/cnnbench
mpi=(mpiexec --oversubscribe --bind-to none --mca btl self,vader)
[ "$(id -u)" = 0 ] && mpi+=(--allow-run-as-root)
common=(--model="$model" --batch_size="$batch" --num_batches="$steps" --num_warmup_batches=3
        --num_intra_threads="$threads" --optimizer=momentum --benchmark_log_dir="$out")

"${mpi[@]}" -np 1 "$bin" "${common[@]}" --result_json="$out/baseline_1rank.json" | tee "$out/baseline_1rank.log"
for backend in mpi gloo; do
  "${mpi[@]}" -np "$ranks" "$bin" "${common[@]}" --allreduce="$backend" --baseline="$out/baseline_1rank.json" \
    --result_json="$out/${ranks}ranks_$backend.json" | tee "$out/${ranks}ranks_$backend.log"
done
"${mpi[@]}" -np "$ranks" "$bin" "${common[@]}" --variable_update=independent --baseline="$out/baseline_1rank.json" \
  --result_json="$out/${ranks}ranks_independent.json" | tee "$out/${ranks}ranks_independent.log"
grep -H -E "total images/sec|scaling|allreduce  " "$out"/*.log
