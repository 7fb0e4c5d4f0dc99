#!/usr/bin/env bash
# ctest: a 2-host job across network namespaces (scripts/netns_cluster.sh): training over TCP
# with the MPI and the Gloo data plane, each run seeing 2 hosts; --hierarchical_allreduce on 2
# hosts of 2 ranks (sums right, training runs) and refused on hosts of 2 and 1; a shaped link that really limits the allreduce
# bandwidth; a cut link ending the job. Exits 77 (skipped) where the machine allows no namespaces.
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

# Hierarchical allreduce on 2 hosts x 2 ranks: within each host, then across from both ranks'
# shares. The microbenchmark checks every element against the closed-form sum (fp32 exact, bf16
# within its rounding) for sizes of 4 KB to 1 MiB, most of which do not split evenly.
for backend in mpi gloo; do
  for compression in none bf16; do
    name=hier-$backend-$compression
    "${cluster[0]}" run "${cluster[@]:1}" --hosts 2 --ranks-per-host 2 -- "$bin" --mode=allreduce --allreduce=$backend \
      --hierarchical_allreduce --compression=$compression --allreduce_max_mb=1 --model=trivial \
      --benchmark_log_dir="$out" --result_json="$out/$name.json" > "$out/$name.log" 2>&1 ||
      { cat "$out/$name.log"; fail "$name run"; }
    [ "$(field "$out/$name.json" "(run['hierarchical'], run['ranks'], run['hosts'])")" = "(True, 4, 2)" ] ||
      fail "$name: not a hierarchical run of 4 ranks on 2 hosts"
    wrong=$(field "$out/$name.json" "sum(s['wrong'] for s in sizes)")
    [ "$wrong" = 0 ] || fail "$name: $wrong wrong elements"
  done
  "${cluster[0]}" run "${cluster[@]:1}" --hosts 2 --ranks-per-host 2 -- "$bin" --model=resnet20 --batch_size=8 \
    --num_batches=3 --num_warmup_batches=1 --num_intra_threads=1 --allreduce=$backend --hierarchical_allreduce \
    --benchmark_log_dir="$out" --result_json="$out/hier-train-$backend.json" > "$out/hier-train-$backend.log" 2>&1 ||
    { cat "$out/hier-train-$backend.log"; fail "hierarchical training with $backend"; }
  [ "$(field "$out/hier-train-$backend.json" "run['hierarchical_allreduce'] and summary['images_per_sec'] > 0")" = True ] ||
    fail "$backend: hierarchical training did not run"
  grep -q "allreduce $backend (hierarchical)" "$out/hier-train-$backend.log" || fail "$backend: header does not say hierarchical"
  echo "ok: hierarchical allreduce with $backend on 2 hosts x 2 ranks: sums right (fp32, bf16), training runs"
done

# Hierarchical with 2 ranks on one host and 1 on the other: refused on every rank with one line
# naming the counts, a non-zero exit, and no rank left waiting.
for backend in mpi gloo; do
  log="$out/hier-uneven-$backend.log"
  rc=0
  timeout 120 "${cluster[0]}" run "${cluster[@]:1}" --hosts 2 --ranks-per-host 2 --ranks 3 -- "$bin" --mode=allreduce \
    --allreduce=$backend --hierarchical_allreduce --allreduce_max_mb=1 --model=trivial --benchmark_log_dir="$out" \
    > "$log" 2>&1 || rc=$?
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || { cat "$log"; fail "$backend: uneven hosts gave exit $rc (want a refusal)"; }
  grep -q "needs the same number of ranks on every host (these hosts run 1 to 2)" "$log" ||
    { cat "$log"; fail "$backend: uneven hosts not refused with the counts"; }
  echo "ok: hierarchical with $backend on hosts of 2 and 1 ranks refused (exit $rc)"
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

# A host whose link is cut mid-run (its veth taken down): the job must end within the collective
# timeout plus 5 s, naming the host that went away, with either data plane. Trials per backend:
# CNNBENCH_LINK_CUT_TRIALS (2 here; docs/testing.md's 10 of 10 come from 10).
timeout_sec=6   # above the 4 s in which mpiexec notices the lost daemon (netns_cluster.sh)
for backend in mpi gloo; do
  for trial in $(seq 1 "${CNNBENCH_LINK_CUT_TRIALS:-2}"); do
    log="$out/cut-$backend-$trial.log"
    setsid "${cluster[0]}" run "${cluster[@]:1}" --hosts 2 -- "$bin" --model=resnet20 --batch_size=16 --num_batches=100000 \
      --num_intra_threads=1 --display_every=1000 --allreduce=$backend --collective_timeout_sec=$timeout_sec \
      --benchmark_log_dir="$out" > "$log" 2>&1 &
    job=$!
    for _ in $(seq 1 600); do grep -q "Done warm up" "$log" && break; sleep 0.1; done
    sleep "0.$((RANDOM % 10))"
    start=$(date +%s.%N)
    ip link set cnbtv2 down
    code=0
    if ! timeout $((timeout_sec + 30)) tail --pid=$job -f /dev/null; then
      kill -TERM -- "-$job" 2>/dev/null || true  # its trap takes the cluster down
    fi
    wait $job || code=$?
    seconds=$(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)")
    # named by the watchdog of a rank on either side, or by mpiexec, which lost that host's daemon
    if grep -q "rank [01] on host cnbt-host[12] did not arrive and does not answer" "$log"; then named="by the watchdog"
    elif grep -q "ORTE has lost communication with a remote daemon" "$log"; then named="by mpiexec (daemon lost)"
    else named=; fi
    echo "link cut, $backend, trial $trial: the job ended after $seconds s, exit code $code, host named ${named:-nowhere}"
    [ "$code" -ne 0 ] && [ -n "$named" ] || { tail -20 "$log"; fail "$backend: a cut link did not end the job naming the host"; }
    python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) + 5 else 1)" "$seconds" $timeout_sec ||
      fail "$backend: a cut link took $seconds s to end the job (limit $((timeout_sec + 5)) s)"
    ! pgrep -f "cnbt" >/dev/null || fail "$backend: processes of the cut job are left"
  done
done
