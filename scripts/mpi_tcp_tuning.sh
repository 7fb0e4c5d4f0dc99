#!/usr/bin/env bash
# Open MPI over TCP between 2 namespace hosts: the allreduce microbenchmark (cnnbench
# --mode=allreduce --allreduce=mpi) under each transport setting, on shaped and unshaped links,
# to show which settings reach the line rate. Settings:
#   cnnbench      what cnnbench runs with: plain send/receive for large messages
#                 (btl_tcp_flags without "put", set by cnnbench unless the user sets it)
#   open_mpi      Open MPI's own default: large messages through its emulated RDMA pipeline ("put")
#   open_mpi_2tcp Open MPI's default with two TCP connections per pair of ranks (btl_tcp_links=2)
# Repeats run alternately (each setting once per round). Writes, under OUT:
#   <setting>_<rate>_<repeat>.json / .log   each microbenchmark's result and console
#   runs.csv                                setting, rate, repeat, exit code, JSON path
# then draws busbw against message size (scripts/plot_allreduce.py: tcp_tuning.png, summary.md).
#   scripts/mpi_tcp_tuning.sh [--out results/netns/mpi_tcp_tuning] [--rates "200mbit 1gbit unshaped"]
#                             [--repeats 1] [--max_mb 32] [--cnnbench build/cnnbench]
# Needs root (network namespaces, see scripts/netns_cluster.sh). About 1 minute per run here.
set -euo pipefail
cd "$(dirname "$0")/.."

out=results/netns/mpi_tcp_tuning rates="200mbit 1gbit unshaped" repeats=1 max_mb=32 bin=build/cnnbench
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --max_mb) max_mb=$2; shift 2 ;;
    --cnnbench) bin=$2; shift 2 ;;
    *) echo "mpi_tcp_tuning: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { echo "mpi_tcp_tuning: --repeats: '$repeats' is not a count" >&2; exit 2; }
[ -x "$bin" ] || { echo "mpi_tcp_tuning: no cnnbench at $bin (build it first)" >&2; exit 2; }
scripts/netns_cluster.sh check

settings=(cnnbench open_mpi open_mpi_2tcp)
setting_env() {  # the OMPI_MCA_* variables of a setting
  local open_mpi_flags=send,put,inplace,need-ack,need-csum,hetero-rdma
  case $1 in
    cnnbench) ;;
    open_mpi) echo "OMPI_MCA_btl_tcp_flags=$open_mpi_flags" ;;
    open_mpi_2tcp) echo "OMPI_MCA_btl_tcp_flags=$open_mpi_flags OMPI_MCA_btl_tcp_links=2" ;;
  esac
}

mkdir -p "$out"
echo "setting,rate,repeat,exit_code,json" > "$out/runs.csv"
for ((r = 1; r <= repeats; r++)); do
  for rate in $rates; do
    for s in "${settings[@]}"; do
      name=${s}_${rate}_$r shape=()
      [ "$rate" != unshaped ] && shape=(--rate "$rate")
      rc=0
      # shellcheck disable=SC2046  # the setting's variables are words by design
      env $(setting_env "$s") scripts/netns_cluster.sh run --hosts 2 "${shape[@]}" -- \
        "$bin" --mode=allreduce --allreduce=mpi --model=small_cnn --allreduce_max_mb="$max_mb" \
        --collective_timeout_sec=120 --result_json="$out/$name.json" \
        --benchmark_log_dir="$out/runs" > "$out/$name.log" 2>&1 || rc=$?
      echo "$s,$rate,$r,$rc,$out/$name.json" >> "$out/runs.csv"
      echo "mpi_tcp_tuning: $name exit $rc"
    done
  done
done
/usr/bin/python3 scripts/plot_allreduce.py "$out/runs.csv" --out "$out"
