#!/usr/bin/env python3
"""What binding PyTorch's threads to CPUs changes, beside cnnbench (which binds its own where a
rank owns exactly as many CPUs as threads): runs cnnbench, PyTorch bound (OMP_PROC_BIND,
OMP_PLACES, as compare_pytorch.py now runs it) and PyTorch unbound (as every table before
2026-11-29), one after another in rounds, the order rotating each round, and writes each side's
median and range, and the ratios both ways, to OUT/pinning_<model>_<precision>.md.

  scripts/compare_pinning.py --python VENV/bin/python --model resnet50 --rounds 3 --out results/pinning
"""
import argparse
import os
import platform
import statistics
import time

from compare_pytorch import (BATCHES, ROOT, median_run, pinning_env, run_cnnbench, run_pytorch, runs_text,
                             steps_for)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--python", required=True, help="the Python whose torch is the peer")
    p.add_argument("--model", default="resnet50")
    p.add_argument("--setting", default="eager+cl+malloc", help="PyTorch's setting (compare_pytorch.py SETTINGS)")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "cnnbench"))
    p.add_argument("--out", default=os.path.join(ROOT, "results", "pinning"))
    a = p.parse_args()
    if not pinning_env(a.threads):
        p.error(f"this process owns {len(os.sched_getaffinity(0))} CPUs, not --threads={a.threads}: "
                "neither side would bind its threads")
    batch, steps = BATCHES.get(a.model, 32), steps_for(a.model, a.steps)
    sides = {
        "cnnbench": lambda: run_cnnbench(a.binary, a.model, batch, a.threads, a.warmup, steps, a.precision),
        "PyTorch bound": lambda: run_pytorch(a.python, a.model, batch, a.threads, a.warmup, steps, a.precision,
                                             a.setting, pin=True),
        "PyTorch unbound": lambda: run_pytorch(a.python, a.model, batch, a.threads, a.warmup, steps, a.precision,
                                               a.setting, pin=False),
    }
    names = list(sides)
    runs = {name: [] for name in names}
    for r in range(a.rounds):
        for name in names[r % 3:] + names[:r % 3]:  # the order rotates: no side always first
            runs[name].append(sides[name]())
            print(f"  round {r + 1} {name}: {runs[name][-1]['images_per_sec']:.2f} img/s", flush=True)
    med = {name: median_run(runs[name])["images_per_sec"] for name in names}
    torch_version = runs["PyTorch bound"][0]["torch"]
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"pinning_{a.model}_{a.precision}.md")
    with open(path, "w") as f:
        f.write(f"{a.model} batch {batch}, {a.precision}, {a.threads} threads, PyTorch {torch_version} {a.setting}, "
                f"{platform.node()}, {time.strftime('%Y-%m-%d')}; {steps} timed steps after {a.warmup}; median of "
                f"{a.rounds} rounds, the order rotating\n\n| side | img/s (range) | cnnbench / side |\n|---|---|---|\n")
        for name in names:
            speeds = [r["images_per_sec"] for r in runs[name]]
            f.write(f"| {name} | {med[name]:.2f} ({min(speeds):.2f}-{max(speeds):.2f}) | "
                    f"{med['cnnbench'] / med[name]:.3f}x |\n")
        ratios = [b["images_per_sec"] / u["images_per_sec"] for b, u in zip(runs["PyTorch bound"], runs["PyTorch unbound"])]
        f.write(f"\nPyTorch bound / unbound, round by round: {', '.join(f'{x:.3f}' for x in ratios)} "
                f"(median {statistics.median(ratios):.3f})\n\nEvery run in order (share of thread time waiting for a CPU):\n\n")
        for name in names:
            f.write(f"- {name}: {runs_text(runs[name])}\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
