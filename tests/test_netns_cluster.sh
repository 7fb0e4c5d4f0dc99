#!/usr/bin/env bash
# ctest: a 2-host job across network namespaces (scripts/netns_cluster.sh): training over TCP
# with the MPI and the Gloo data plane, each run seeing 2 hosts, and a shaped link that really
# limits the allreduce bandwidth. Exits 77 (skipped) where the machine allows no namespaces.
#   tests/test_netns_cluster.sh CNNBENCH_BINARY
set -euo pipefail
bin=$1
here=$(dirname "$(readlink -f "$0")")
cluster=("$here/../scripts/netns_cluster.sh" --name cnbt --subnet 10.214.0)
"${cluster[0]}" check --name cnbt || exit $?
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, d))" "$@"; }

for backend in mpi gloo; do
  "${cluster[0]}" run "${cluster[@]:1}" --hosts 2 -- "$bin" --model=resnet20 --batch_size=16 --num_batches=4 \
    --num_warmup_batches=1 --num_intra_threads=1 --allreduce=$backend --benchmark_log_dir="$out" \
    --result_json="$out/$backend.json" > "$out/$backend.log" 2>&1 || { cat "$out/$backend.log"; fail "$backend run"; }
  [ "$(field "$out/$backend.json" "run['hosts']")" = 2 ] || fail "$backend: the run did not see 2 hosts"
  [ "$(field "$out/$backend.json" "run['ranks']")" = 2 ] || fail "$backend: not 2 ranks"
  [ "$(field "$out/$backend.json" "run['allreduce']")" = $backend ] || fail "$backend: wrong allreduce backend"
  [ "$(field "$out/$backend.json" "summary['images_per_sec'] > 0 and summary['comm_mean_sec'] > 0")" = True ] ||
    fail "$backend: no images/sec or no communication time"
  grep -q "on 2 hosts" "$out/$backend.log" || fail "$backend: header does not say 2 hosts"
  echo "ok: $backend across 2 hosts: $(grep 'total images/sec' "$out/$backend.log")"
done

# A 200 Mbit/s link carries at most 25 MB/s each way: the bus bandwidth of a 4 MiB allreduce must
# stay below that (unshaped, the same veth link gives over 1 GB/s here).
"${cluster[0]}" run "${cluster[@]:1}" --hosts 2 --rate 200mbit -- "$bin" --mode=allreduce --allreduce_max_mb=4 \
  --model=trivial --benchmark_log_dir="$out" --result_json="$out/shaped.json" > "$out/shaped.log" 2>&1 ||
  { cat "$out/shaped.log"; fail "shaped allreduce run"; }
busbw=$(field "$out/shaped.json" "[s['busbw_gbps'] for s in sizes if s['bytes'] == 4 << 20][0]")
wrong=$(field "$out/shaped.json" "sum(s['wrong'] for s in sizes)")
echo "ok: 4 MiB allreduce over a 200 Mbit/s link: busbw $busbw GB/s, $wrong wrong elements"
[ "$wrong" = 0 ] || fail "wrong allreduce results across hosts"
python3 -c "import sys; b = float(sys.argv[1]); sys.exit(0 if 0.005 < b < 0.026 else 1)" "$busbw" ||
  fail "busbw $busbw GB/s is not what a 200 Mbit/s link allows (0.005-0.026 GB/s)"
