#!/usr/bin/env bash
# ctest: what cnnbench writes survives a full disk and many writers at once.
#  1. a full file system (an 8 MiB tmpfs, filled up) while the result JSON and results.csv are
#     written: one clear line, exit non-zero, the previous files intact, no temporary left;
#  2. the same while a convergence run writes its checkpoint (a tiny CIFAR-10 in the published
#     binary format): the previous checkpoint intact and still the one --resume takes;
#  3. 8 processes appending to one results.csv at once: every row whole, none lost.
# Parts 1-2 need a private mount namespace and tmpfs (root); without them they are skipped
# (exit 77, with the reason) after part 3 has run.
#   tests/test_file_faults.sh CNNBENCH_BINARY
set -euo pipefail
bin=$(readlink -f "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }
run() { "$bin" --num_intra_threads=1 "$@"; }

# --- 3. eight writers at once -----------------------------------------------------------
for i in $(seq 1 8); do
  run --model=trivial --num_batches=2 --num_warmup_batches=1 --batch_size=$i --benchmark_log_dir="$work/many" \
    >"$work/many$i.log" 2>&1 &
done
wait
rows=$(tail -n +2 "$work/many/results.csv" | wc -l)
[ "$rows" = 8 ] || fail "8 writers left $rows rows in results.csv"
python3 - "$work/many/results.csv" <<'EOF' || fail "a row of results.csv is torn"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
width = len(rows[0])
assert all(len(r) == width for r in rows), [len(r) for r in rows]
assert sorted(int(r[rows[0].index("batch_size_per_rank")]) for r in rows[1:]) == list(range(1, 9))
EOF
echo "ok: 8 processes appended 8 whole rows to one results.csv"

# --- 1-2. a full disk --------------------------------------------------------------------
if ! unshare --mount --propagation private sh -c "mount -t tmpfs -o size=64k tmpfs '$work'" 2>"$work/why"; then
  echo "skipped: a full disk needs a private mount namespace and tmpfs here: $(head -1 "$work/why")" >&2
  exit 77
fi

# a tiny CIFAR-10: 5 training batches and a test batch of 32 records each (label, 3072 bytes)
python3 - "$work/cifar" <<'EOF'
import os, random, sys
os.makedirs(sys.argv[1])
rng = random.Random(1)
for name in [f"data_batch_{i}.bin" for i in range(1, 6)] + ["test_batch.bin"]:
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        for _ in range(32):
            f.write(bytes([rng.randrange(10)]) + bytes(rng.randrange(256) for _ in range(3072)))
EOF

export bin work
unshare --mount --propagation private bash -euo pipefail <<'EOF'
fail() { echo "FAILED: $*" >&2; exit 1; }
run() { "$bin" --num_intra_threads=1 "$@"; }
disk="$work/disk"
mkdir -p "$disk"
mount -t tmpfs -o size=8m tmpfs "$disk"
fill() { dd if=/dev/zero of="$disk/filler$1" bs=4k 2>/dev/null || true; }
no_temporaries() { ! find "$disk" -name '*.tmp.*' | grep -q . || fail "a temporary file was left: $(find "$disk" -name '*.tmp.*')"; }

# 1. results
run --model=trivial --num_batches=2 --num_warmup_batches=1 --benchmark_log_dir="$disk/results" >/dev/null ||
  fail "the first run could not write its results"
cp "$disk/results/results.csv" "$work/results.before"
jsons=$(ls "$disk/results"/*.json | wc -l)
fill 1
code=0
run --model=trivial --num_batches=2 --num_warmup_batches=1 --benchmark_log_dir="$disk/results" \
  >"$work/full.out" 2>"$work/full.err" || code=$?
[ $code -ne 0 ] || fail "a run on a full disk exited 0"
grep -q "\.json: cannot write (left as it was): No space left on device" "$work/full.err" ||
  fail "no clear error naming the result JSON on a full disk: $(cat "$work/full.err")"
[ "$(grep -c . "$work/full.err")" = 1 ] || fail "more than one line of error: $(cat "$work/full.err")"
cmp -s "$work/results.before" "$disk/results/results.csv" || fail "results.csv changed on a full disk"
[ "$(ls "$disk/results"/*.json | wc -l)" = "$jsons" ] || fail "a result JSON appeared on a full disk"
no_temporaries
echo "ok: full disk while writing results (exit $code): $(cat "$work/full.err")"
rm -f "$disk"/filler*

# 2. checkpoints: epoch 1 written with room, epoch 2 on a full disk
args=(--model=resnet20 --data_dir="$work/cifar" --batch_size=16 --train_dir="$disk/run" --benchmark_log_dir="$work/log")
run "${args[@]}" --num_epochs=1 >"$work/epoch1.log" 2>&1 || { cat "$work/epoch1.log"; fail "epoch 1"; }
first="$disk/run/checkpoint-epoch-0001.ckpt"
[ -s "$first" ] || fail "no checkpoint after epoch 1"
cp "$first" "$work/ckpt.before"
fill 2
code=0
run "${args[@]}" --num_epochs=2 --resume >"$work/epoch2.out" 2>"$work/epoch2.err" || code=$?
[ $code -ne 0 ] || fail "a checkpoint on a full disk exited 0"
grep -q "checkpoint-epoch-0002.ckpt: cannot write (left as it was): No space left on device" "$work/epoch2.err" ||
  fail "no clear error naming the checkpoint: $(cat "$work/epoch2.err")"
cmp -s "$work/ckpt.before" "$first" || fail "the previous checkpoint changed"
[ ! -e "$disk/run/checkpoint-epoch-0002.ckpt" ] || fail "a torn epoch-2 checkpoint is in place"
no_temporaries
echo "ok: full disk while writing a checkpoint (exit $code): $(grep -m1 . "$work/epoch2.err")"
rm -f "$disk"/filler*
run "${args[@]}" --num_epochs=2 --resume >"$work/resume.log" 2>&1 || { cat "$work/resume.log"; fail "resume after the full disk"; }
grep -q "Resuming from .*checkpoint-epoch-0001.ckpt (1 epoch done)" "$work/resume.log" ||
  fail "the resume did not start from the epoch-1 checkpoint"
[ -s "$disk/run/checkpoint-epoch-0002.ckpt" ] || fail "no epoch-2 checkpoint once there was room"
echo "ok: with room again, --resume went on from the epoch-1 checkpoint"
umount "$disk"
EOF
