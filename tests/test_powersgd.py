#!/usr/bin/python3
"""comm/powersgd.h against a NumPy reference of PyTorch DDP's powerSGD_hook, on the same inputs.

powersgd_check (tests/powersgd_check.cc) reduces random gradients of several tensor shapes across
2 and 3 ranks under mpiexec for a few steps (the first uncompressed), starting from the Q factors
it writes out; the reference below follows torch/distributed/algorithms/ddp_comm_hooks/
powerSGD_hook.py step by step in float64 (error feedback over the whole bucket, Q orthogonalized
every step and warm-started, P orthogonalized after its allreduce, Q averaged). Every step's
result on every rank must match it to 1e-5 of the largest value, for ranks 1, 2 and 4 of the
approximation, and the result must differ from the exact average (it is a compression).
  test_powersgd.py --binary build/tests/powersgd_check --mpiexec "mpiexec --oversubscribe ..."
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile

import numpy as np

SHAPES = ["64x27", "16", "10x8x3x3", "4x3", "100x64", "32", "8x16x1x1"]
STEPS = 4
WARMUP = 1


def sizes(shape):
    dims = [int(d) for d in shape.split("x")]
    return dims, int(np.prod(dims))


def compresses(rows, cols, rank):
    # _should_compress with min_compression_rate 2
    return (rows + cols) * rank * 2 < rows * cols


def orthogonalize(m):
    # _orthogonalize_gram_schmidt, epsilon 0 (a column of zeros stays zeros). The hook takes QR
    # for ranks above 2: its columns differ from these by signs only, which P Q^T does not see.
    for i in range(m.shape[1]):
        norm = np.linalg.norm(m[:, i])
        m[:, i] = m[:, i] / norm if norm > 0 else 0.0
        if i + 1 < m.shape[1]:
            m[:, i + 1:] -= np.outer(m[:, i], m[:, i] @ m[:, i + 1:])


def reference(grads, q_init, rank):
    """grads: [ranks][steps][elements] float64. Returns [steps][elements], the same on every rank."""
    world, steps, elements = grads.shape
    tensors, offset, q_at = [], 0, 0
    for shape in SHAPES:
        dims, count = sizes(shape)
        rows = dims[0]
        cols = count // rows
        r = min(rows, cols, rank)
        entry = {"at": offset, "count": count, "rows": rows, "cols": cols, "rank": r,
                 "compress": len(dims) > 1 and compresses(rows, cols, r)}
        if entry["compress"]:
            entry["q"] = q_init[q_at:q_at + cols * r].reshape(cols, r).astype(np.float64)
            q_at += cols * r
        tensors.append(entry)
        offset += count
    assert q_at == len(q_init), (q_at, len(q_init))
    error = np.zeros((world, elements))
    out = np.zeros((steps, elements))
    for step in range(steps):
        if step < WARMUP:
            out[step] = grads[:, step].mean(axis=0)
            continue
        inputs = grads[:, step] + error  # input_tensor.add_(error_dict[bucket_index])
        copies = inputs.copy()
        result = np.zeros((world, elements))
        for t in tensors:
            span = slice(t["at"], t["at"] + t["count"])
            if not t["compress"]:
                result[:, span] = inputs[:, span].sum(axis=0) / world
                continue
            mats = [inputs[i, span].reshape(t["rows"], t["cols"]) for i in range(world)]
            orthogonalize(t["q"])
            p = sum(m @ t["q"] for m in mats)
            orthogonalize(p)
            t["q"] = sum(m.T @ p for m in mats) / world
            result[:, span] = (p @ t["q"].T).reshape(-1)
        error = copies - result  # error_dict[bucket_index] = input_tensor_cp - input_tensor
        out[step] = result[0]
    return out


def run_case(args, world, rank, fusion_bytes, folder):
    rng = np.random.default_rng(1000 * world + rank)
    elements = sum(sizes(s)[1] for s in SHAPES)
    grads = rng.standard_normal((world, STEPS, elements)).astype(np.float32)
    # gradients that move slowly, as in training: the same direction plus noise from step to step
    grads += 2.0 * rng.standard_normal((world, 1, elements)).astype(np.float32)
    inputs = os.path.join(folder, f"in_{world}_{rank}.f32")
    outputs = os.path.join(folder, f"out_{world}_{rank}")
    grads.tofile(inputs)
    command = shlex.split(args.mpiexec) + ["-np", str(world), args.binary, ",".join(SHAPES), inputs, outputs,
                                           str(rank), str(WARMUP), str(fusion_bytes), str(STEPS)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        return [f"powersgd_check exited {run.returncode}: {run.stderr.strip()[-500:]}"]
    print(f"  {world} ranks, rank {rank}, fusion {fusion_bytes} B: {run.stdout.strip()}")
    failures = []
    results = []
    for r in range(world):
        data = np.fromfile(f"{outputs}.{r}", dtype=np.float32)
        q_count = len(data) - STEPS * elements
        results.append((data[:q_count], data[q_count:].reshape(STEPS, elements)))
    q_init = results[0][0]
    expected = reference(grads.astype(np.float64), q_init, rank)
    exact = grads.astype(np.float64).mean(axis=0)
    scale = np.abs(expected).max()
    for r, (q, got) in enumerate(results):
        if not np.array_equal(q, q_init):
            failures.append(f"rank {r} started from other Q factors than rank 0")
        for step in range(STEPS):
            worst = np.abs(got[step] - expected[step]).max() / scale
            if not worst <= 1e-5:
                failures.append(f"{world} ranks, rank {rank}, step {step}, rank {r}: off the reference by {worst:.3g}")
    compressed_off = np.abs(expected[STEPS - 1] - exact[STEPS - 1]).max() / scale
    if not compressed_off > 1e-3:
        failures.append(f"{world} ranks, rank {rank}: the result is the exact average ({compressed_off:.3g}): nothing compressed")
    if not np.abs(expected[0] - exact[0]).max() / scale < 1e-6:
        failures.append("the warm-up step was not the exact average")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--mpiexec", required=True)
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        for world, rank, fusion_bytes in [(2, 2, 4096), (2, 1, 1 << 30), (3, 2, 0), (2, 4, 4096)]:
            failures += run_case(args, world, rank, fusion_bytes, folder)
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
