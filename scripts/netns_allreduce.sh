#!/usr/bin/env bash
# The allreduce microbenchmark (cnnbench --mode=allreduce) between 2 namespace hosts under named
# settings, on shaped and unshaped links: which transport settings reach the line rate, and what
# the hierarchical allreduce changes with several ranks per host. Settings:
#   cnnbench          MPI as cnnbench runs it: plain send/receive for large messages (btl_tcp_flags
#                     without "put", set by cnnbench unless the user sets it)
#   open_mpi          MPI with Open MPI's own default: large messages through its emulated RDMA
#                     pipeline ("put")
#   open_mpi_2tcp     that default with two TCP connections per pair of ranks (btl_tcp_links=2)
#   hierarchical      cnnbench's MPI with --hierarchical_allreduce
#   gloo, gloo_hierarchical   the Gloo data plane, flat and hierarchical
# Repeats run alternately (each setting once per round). Writes, under OUT:
#   <setting>_<rate>_<repeat>.json / .log   each microbenchmark's result and console
#   runs.csv                                setting, rate, repeat, exit code, JSON path
# then draws busbw against message size (scripts/plot_allreduce.py: allreduce.png, summary.md).
#   scripts/netns_allreduce.sh [--out results/netns/mpi_tcp_tuning] [--rates "200mbit 1gbit unshaped"]
#       [--settings "cnnbench open_mpi open_mpi_2tcp"] [--ranks-per-host 1] [--repeats 1]
#       [--max_mb 32] [--model small_cnn] [--cnnbench build/cnnbench]
# Needs root (network namespaces, see scripts/netns_cluster.sh). 1-3 minutes per run here.
set -euo pipefail
cd "$(dirname "$0")/.."

out=results/netns/mpi_tcp_tuning rates="200mbit 1gbit unshaped" settings="cnnbench open_mpi open_mpi_2tcp"
ranks_per_host=1 repeats=1 max_mb=32 model=small_cnn bin=build/cnnbench
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --settings) settings=$2; shift 2 ;;
    --ranks-per-host) ranks_per_host=$2; shift 2 ;;
    --model) model=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --max_mb) max_mb=$2; shift 2 ;;
    --cnnbench) bin=$2; shift 2 ;;
    *) echo "netns_allreduce: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ $repeats =~ ^[1-9][0-9]*$ ]] || { echo "netns_allreduce: --repeats: '$repeats' is not a count" >&2; exit 2; }
[ -x "$bin" ] || { echo "netns_allreduce: no cnnbench at $bin (build it first)" >&2; exit 2; }
scripts/netns_cluster.sh check

open_mpi_flags=send,put,inplace,need-ack,need-csum,hetero-rdma
setting_env() {  # the OMPI_MCA_* variables of a setting
  case $1 in
    open_mpi) echo "OMPI_MCA_btl_tcp_flags=$open_mpi_flags" ;;
    open_mpi_2tcp) echo "OMPI_MCA_btl_tcp_flags=$open_mpi_flags OMPI_MCA_btl_tcp_links=2" ;;
  esac
}
setting_flags() {  # the cnnbench flags of a setting
  case $1 in
    cnnbench | open_mpi | open_mpi_2tcp) echo "--allreduce=mpi" ;;
    hierarchical) echo "--allreduce=mpi --hierarchical_allreduce" ;;
    gloo) echo "--allreduce=gloo" ;;
    gloo_hierarchical) echo "--allreduce=gloo --hierarchical_allreduce" ;;
    *) echo "netns_allreduce: unknown setting '$1'" >&2; return 2 ;;
  esac
}
for s in $settings; do setting_flags "$s" >/dev/null || exit 2; done

mkdir -p "$out"
echo "setting,rate,repeat,exit_code,json" > "$out/runs.csv"
for ((r = 1; r <= repeats; r++)); do
  for rate in $rates; do
    for s in $settings; do
      name=${s}_${rate}_$r shape=()
      [ "$rate" != unshaped ] && shape=(--rate "$rate")
      rc=0
      # shellcheck disable=SC2046  # the setting's variables and flags are words by design
      env $(setting_env "$s") scripts/netns_cluster.sh run --hosts 2 --ranks-per-host "$ranks_per_host" "${shape[@]}" -- \
        "$bin" --mode=allreduce $(setting_flags "$s") --model="$model" --allreduce_max_mb="$max_mb" \
        --collective_timeout_sec=120 --result_json="$out/$name.json" \
        --benchmark_log_dir="$out/runs" > "$out/$name.log" 2>&1 || rc=$?
      echo "$s,$rate,$r,$rc,$out/$name.json" >> "$out/runs.csv"
      echo "netns_allreduce: $name exit $rc"
    done
  done
done
/usr/bin/python3 scripts/plot_allreduce.py "$out/runs.csv" --out "$out"
