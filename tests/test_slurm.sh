#!/usr/bin/env bash
# ctest: cnnbench under Slurm, on a 2-node cluster on this machine (scripts/slurm_cluster.sh): a
# direct `srun --mpi=pmix` launch, then the Slurm recipe configs/launch/slurm_resnet50.sbatch
# submitted with sbatch --wait at small settings (resnet20, batch 8, 1 CPU per task, 1 task per
# node), its result files checked. Exits 77 (skipped) where it cannot run: not root, or Slurm,
# munge or libpmix-dev not installed (scripts/install_deps.sh installs them).
#   tests/test_slurm.sh CNNBENCH_BINARY
set -euo pipefail
bin=$(readlink -f "$1")
here=$(dirname "$(readlink -f "$0")")
repo=$(dirname "$here")
cluster=$repo/scripts/slurm_cluster.sh
"$cluster" check || exit $?

# The cluster apart from a user's (/tmp/cnnbench-slurm, port 16817). A run killed before its trap
# could stop the cluster (ctest's timeout kills with SIGKILL) left it up: it goes first.
state=/tmp/cnnbench-slurm-test
opts=(--dir "$state" --port 16917)
"$cluster" stop "${opts[@]}"
work=$(mktemp -d)
trap '"$cluster" stop "${opts[@]}"; rm -rf "$work"' EXIT
trap 'exit 143' TERM INT HUP
fail() { echo "FAILED: $*" >&2; exit 1; }
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, d))" "$@"; }
check_json() {  # FILE WHAT CONDITION... (Python expressions on the result's fields): fails naming those untrue
  python3 - "$@" <<'PY' || fail "$2: a condition on $(basename "$1") does not hold"
import json, sys
d = json.load(open(sys.argv[1]))
untrue = [c for c in sys.argv[3:] if not eval(c, {}, d)]
for c in untrue:
    print(f"{sys.argv[2]}: untrue: {c}", file=sys.stderr)
sys.exit(1 if untrue else 0)
PY
}

"$cluster" start "${opts[@]}" --nodes 2
export SLURM_CONF=$state/slurm.conf

# Where srun puts 2 tasks on 2 nodes: rank 0 on node1, rank 1 on node2. Each node has a host name
# of its own where this machine allows UTS namespaces (scripts/slurm_cluster.sh says which).
# shellcheck disable=SC2016  # the task's shell expands them
placement=$(srun --mpi=pmix -N 2 -n 2 sh -c 'echo "$SLURM_PROCID $SLURMD_NODENAME $SLURM_NODEID $(hostname)"' | sort)
echo "srun -N 2 -n 2: $(echo "$placement" | tr '\n' ';')"
[ "$(echo "$placement" | cut -d' ' -f1-3 | tr '\n' ' ')" = "0 node1 0 1 node2 1 " ] ||
  fail "srun did not place task 0 on node1 and task 1 on node2"
hosts=$(echo "$placement" | cut -d' ' -f4 | sort -u | wc -l)

# A direct launch: srun starts both ranks through PMIx, and MPI wires them up.
(cd "$work" && srun --mpi=pmix -N 2 -n 2 "$bin" --model=trivial --batch_size=8 --num_batches=3 \
  --num_warmup_batches=1 --num_intra_threads=1 --benchmark_log_dir="$work/direct" \
  --result_json="$work/direct.json") > "$work/direct.log" 2>&1 || { cat "$work/direct.log"; fail "srun --mpi=pmix launch"; }
check_json "$work/direct.json" "srun launch" "run['ranks'] == 2" "run['hosts'] == $hosts" \
  "summary['images_per_sec'] > 0"
echo "ok: srun --mpi=pmix -N 2 -n 2: $(grep 'total images/sec' "$work/direct.log")"

# Gloo listens on the node's host name, which only Slurm knows here (node1, node2): refused on
# every task with one line naming CNNBENCH_GLOO_IFACE (it crashed inside Gloo), and with
# CNNBENCH_GLOO_IFACE=lo (every node is this machine) it trains. On one host name it just trains.
gloo=(srun --mpi=pmix --kill-on-bad-exit=1 -N 2 -n 2 "$bin" --model=trivial --batch_size=8 --num_batches=2
  --num_warmup_batches=1 --num_intra_threads=1 --allreduce=gloo --benchmark_log_dir="$work/gloo")
if [ "$hosts" = 2 ]; then
  rc=0; (cd "$work" && timeout 120 "${gloo[@]}") > "$work/gloo.log" 2>&1 || rc=$?
  [ "$rc" = 2 ] || { cat "$work/gloo.log"; fail "gloo on unresolvable node names: exit $rc, not 2"; }
  grep -q "this host's name node[12] does not resolve to an address (.*): name the network interface Gloo is to use with CNNBENCH_GLOO_IFACE" \
    "$work/gloo.log" || { cat "$work/gloo.log"; fail "gloo on unresolvable node names: no message naming CNNBENCH_GLOO_IFACE"; }
  ! [ -e "$work/gloo/results.csv" ] || fail "gloo refused, yet results.csv written"
  echo "ok: gloo refused on node names that do not resolve"
fi
(cd "$work" && CNNBENCH_GLOO_IFACE=lo timeout 120 "${gloo[@]}" --result_json="$work/gloo.json") > "$work/gloo.log" 2>&1 ||
  { cat "$work/gloo.log"; fail "gloo with CNNBENCH_GLOO_IFACE=lo"; }
check_json "$work/gloo.json" "gloo launch" "run['ranks'] == 2" "run['allreduce'] == 'gloo'" "summary['images_per_sec'] > 0"
echo "ok: gloo with CNNBENCH_GLOO_IFACE=lo"

# The recipe, unchanged but for its size: run where build/cnnbench's place is taken by CNNBENCH and
# configs/ is the repository's, so that results/ lands in the scratch directory.
ln -s "$repo/configs" "$work/configs"
start_s=$(date +%s)
job=$(cd "$work" && MODEL=resnet20 BATCH_SIZE=8 NUM_BATCHES=4 NUM_WARMUP=1 CNNBENCH=$bin \
  timeout 180 sbatch --parsable --wait --time=00:03:00 --nodes=2 --ntasks-per-node=1 --cpus-per-task=1 \
  "$repo/configs/launch/slurm_resnet50.sbatch") || { cat "$work"/cnnbench-*.out 2>/dev/null; fail "sbatch job ${job:-}"; }
out=$work/results/slurm-$job
echo "sbatch --wait: job $job done in $(( $(date +%s) - start_s )) s"
grep -q "on $hosts host" "$work/cnnbench-$job.out" || { cat "$work/cnnbench-$job.out"; fail "job output does not say $hosts host(s)"; }
base=$out/baseline_1rank.json run=$out/2ranks_mpi.json
if ! [ -f "$base" ] || ! [ -f "$run" ]; then ls -l "$out"; fail "no baseline_1rank.json or 2ranks_mpi.json in results/slurm-$job"; fi
check_json "$base" baseline "run['ranks'] == 1" "summary['images_per_sec'] > 0"
check_json "$run" recipe "run['ranks'] == 2" "run['hosts'] == $hosts" \
  "run['threads_per_rank'] == 1  # --cpus-per-task=1" "model['name'] == 'resnet20'  # MODEL" \
  "run['batch_size_per_rank'] == 8  # BATCH_SIZE" "run['timed_steps'] == 4  # NUM_BATCHES" \
  "run['allreduce'] == 'mpi'" "summary['images_per_sec'] > 0" "summary['comm_mean_sec'] > 0" \
  "summary['baseline_ranks'] == 1" "summary['scaling_efficiency'] > 0"
[ "$(wc -l < "$out/results.csv")" = 3 ] || fail "recipe: results.csv does not hold the 2 runs"
# Slurm's side: the batch script and the baseline step ran on node1, the 2-rank step on both nodes.
grep -q "Launching batch job $job " "$state/slurmd-node1.log" || fail "the batch script did not run on node1"
grep -q "launch task StepId=$job.0 " "$state/slurmd-node1.log" || fail "the baseline step did not run on node1"
for node in node1 node2; do
  grep -q "launch task StepId=$job.1 " "$state/slurmd-$node.log" || fail "the 2-rank step did not run on $node"
done
echo "ok: sbatch recipe, job $job: 2 ranks on node1 and node2 ($hosts host name(s)):" \
  "$(field "$run" "'%.1f images/sec, 1 rank %.1f, scaling efficiency %.0f%%' % (summary['images_per_sec'], summary['baseline_images_per_sec'], 100 * summary['scaling_efficiency'])")"
