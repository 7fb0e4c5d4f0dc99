#!/usr/bin/env python3
"""Where a training step's time goes, layer by layer, in cnnbench and in PyTorch on this CPU:
cnnbench's --layer_timing against torch.profiler over the same model, batch, threads and
precision (PyTorch eager with channels_last and the allocator variables, its fastest setting on
vgg16 and resnet50 here), alternating the two sides for --rounds rounds and taking each figure's
median. Each convolution's forward and backward (data + weight gradient) time and its GFLOP/s as
a fraction of the FMA peak cnnbench measured in the same round; then ReLU, pooling, the fully
connected layers, dropout, the optimizer, and the whole step.

  scripts/per_op_table.py --python VENV/bin/python --model vgg16 --batch 16 --out results/per_op_vgg16

Convolutions are matched by order (the two sides build the same network); both sides time with
their own instruments (cnnbench waits at each layer's end, torch.profiler records each
operator), so each side's step here is somewhat slower than without them: compare the shares
and the fractions of the peak, and take images/sec from scripts/compare_pytorch.py.
"""
import argparse
import csv
import os
import statistics
import sys

from compare_pytorch import ROOT, cnnbench_result, pinning_env, run_pytorch as pytorch_result

SETTING = "eager+cl+malloc"
# PyTorch operators per row of the table beside the convolutions
PYTORCH_ROWS = {
    "relu": ["aten::relu_", "aten::relu", "aten::threshold_backward"],
    "max_pool": ["aten::max_pool2d", "aten::max_pool2d_with_indices_backward"],
    "linear": ["aten::linear", "autograd::engine::evaluate_function: AddmmBackward0"],
    "dropout": ["aten::dropout", "autograd::engine::evaluate_function: MulBackward0"],
    "optimizer": ["Optimizer.step#SGD.step"],
}


def run_cnnbench(a, layer_timing=True):
    doc = cnnbench_result(a.binary, a.model, a.batch, a.threads, a.warmup, a.steps, a.precision,
                          ["--layer_timing"] if layer_timing else [])
    if not layer_timing:
        return {"step": doc["summary"]["step_time_p50_sec"]}
    layers = doc["layers"]
    convs = [(l["name"], l["forward_macs"], l["forward_sec_per_step"], l["backward_sec_per_step"])
             for l in layers if l["op"] == "conv"]
    rows = {}
    for l in layers:
        if l["op"] != "conv":
            rows[l["op"]] = rows.get(l["op"], 0.0) + l["forward_sec_per_step"] + l["backward_sec_per_step"]
    s = doc["summary"]
    rows["optimizer"] = s["update_mean_sec"]
    return {"convs": convs, "rows": rows, "step": s["step_time_p50_sec"], "peak": s["peak_gflops_per_rank"]}


def run_pytorch(a, profile=True):
    doc = pytorch_result(a.python, a.model, a.batch, a.threads, a.warmup, a.steps, a.precision, SETTING, profile)
    if not profile:
        return {"step": statistics.median(doc["step_times"])}
    events = doc["events"]
    forward = [e for e in events if e["name"] == "aten::convolution"]
    backward = [e for e in events if e["name"] == "aten::convolution_backward"]
    count = len(forward) // a.steps
    convs = []
    for i in range(count):
        # forward in layer order, backward in reverse, `count` of each per step
        fwd = statistics.mean(e["us"] for e in forward[i::count]) / 1e6
        bwd = statistics.mean(e["us"] for e in backward[count - 1 - i::count]) / 1e6
        convs.append((forward[i]["shapes"][0], forward[i]["shapes"][1], fwd, bwd))
    rows = {row: sum(e["us"] for e in events if e["name"] in names) / 1e6 / a.steps
            for row, names in PYTORCH_ROWS.items()}
    return {"convs": convs, "rows": rows, "step": statistics.median(doc["step_times"]), "torch": doc["torch"]}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--python", required=True, help="the Python whose torch is measured (a virtual environment's)")
    p.add_argument("--model", default="vgg16")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "cnnbench"))
    p.add_argument("--out", default=os.path.join(ROOT, "results", "per_op"))
    a = p.parse_args()

    ours, theirs, plain = [], [], []
    for r in range(a.rounds):
        ours.append(run_cnnbench(a))
        theirs.append(run_pytorch(a))
        # and each without its instrument: what the instruments cost
        plain.append((run_cnnbench(a, layer_timing=False)["step"], run_pytorch(a, profile=False)["step"]))
        print(f"  round {r + 1}: step {ours[-1]['step']:.3f} s cnnbench, {theirs[-1]['step']:.3f} s PyTorch; "
              f"uninstrumented {plain[-1][0]:.3f} s, {plain[-1][1]:.3f} s", flush=True)
    if len(ours[0]["convs"]) != len(theirs[0]["convs"]):
        sys.exit(f"per_op_table.py: {len(ours[0]['convs'])} convolutions in cnnbench, "
                 f"{len(theirs[0]['convs'])} in PyTorch: not the same network")
    med = statistics.median
    peak = med(o["peak"] for o in ours)
    table, lines = [], []
    for i, (name, macs, _, _) in enumerate(ours[0]["convs"]):
        x, w = theirs[0]["convs"][i][0], theirs[0]["convs"][i][1]
        shape = f"{x[1]}x{x[2]}x{x[3]} -> {w[0]}, {w[2]}x{w[3]}"
        times = [med(o["convs"][i][2] for o in ours), med(o["convs"][i][3] for o in ours),
                 med(t["convs"][i][2] for t in theirs), med(t["convs"][i][3] for t in theirs)]
        back = 2 if i == 0 else 4  # the first layer has no data gradient: its weight gradient alone
        fractions = [2 * macs / times[0] / 1e9 / peak, back * macs / times[1] / 1e9 / peak,
                     2 * macs / times[2] / 1e9 / peak, back * macs / times[3] / 1e9 / peak]
        table.append([name, shape] + times + fractions)
    rows = sorted(set(ours[0]["rows"]) | set(theirs[0]["rows"]), key=lambda r: (r == "optimizer", r))
    other = [[row, med(o["rows"].get(row, 0.0) for o in ours), med(t["rows"].get(row, 0.0) for t in theirs)]
             for row in rows]
    steps = [med(o["step"] for o in ours), med(t["step"] for t in theirs)]

    os.makedirs(a.out, exist_ok=True)
    stem = os.path.join(a.out, f"per_op_{a.model}_{a.precision}")
    with open(stem + ".csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["layer", "shape", "cnnbench_forward_s", "cnnbench_backward_s", "pytorch_forward_s",
                      "pytorch_backward_s", "cnnbench_forward_peak", "cnnbench_backward_peak",
                      "pytorch_forward_peak", "pytorch_backward_peak"])
        for r in table:
            out.writerow(r[:2] + [f"{v:.5f}" for v in r[2:6]] + [f"{v:.4f}" for v in r[6:]])
        for row, o, t in other:
            out.writerow([row, "", f"{o:.5f}", "", f"{t:.5f}", "", "", "", "", ""])
        out.writerow(["step", "", f"{steps[0]:.5f}", "", f"{steps[1]:.5f}", "", "", "", "", ""])
        out.writerow(["step_uninstrumented", "", f"{med(q[0] for q in plain):.5f}", "",
                      f"{med(q[1] for q in plain):.5f}", "", "", "", "", ""])
    pct = lambda v: f"{100 * v:.0f}%"
    lines.append(f"{a.model} {a.precision}, batch {a.batch}, {a.threads} threads: cnnbench --layer_timing against "
                 f"PyTorch {theirs[0]['torch']} eager + channels_last + malloc under torch.profiler, its threads "
                 f"{'bound to CPUs as cnnbench binds its own' if pinning_env(a.threads) else 'unbound'}; median of "
                 f"{a.rounds} alternating round(s) of {a.steps} steps after {a.warmup} warm-up; fractions of the "
                 f"FMA peak cnnbench measured in the same rounds ({peak:.0f} GFLOP/s)\n")
    lines.append("| layer | shape (in -> out, kernel) | cnnbench fwd ms | PyTorch fwd ms | cnnbench bwd ms | "
                 "PyTorch bwd ms | fwd % of peak (cnnbench / PyTorch) | bwd % of peak (cnnbench / PyTorch) |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for r in table:
        lines.append(f"| {r[0]} | {r[1]} | {1e3 * r[2]:.1f} | {1e3 * r[4]:.1f} | {1e3 * r[3]:.1f} | {1e3 * r[5]:.1f} | "
                     f"{pct(r[6])} / {pct(r[8])} | {pct(r[7])} / {pct(r[9])} |")
    conv = [sum(r[2] + r[3] for r in table), sum(r[4] + r[5] for r in table)]
    lines.append(f"| all convolutions | | {1e3 * sum(r[2] for r in table):.0f} | {1e3 * sum(r[4] for r in table):.0f} | "
                 f"{1e3 * sum(r[3] for r in table):.0f} | {1e3 * sum(r[5] for r in table):.0f} | | |")
    lines.append("\n| the rest | cnnbench ms | PyTorch ms |\n|---|---|---|")
    for row, o, t in other:
        lines.append(f"| {row} | {1e3 * o:.1f} | {1e3 * t:.1f} |")
    lines.append(f"| convolutions, forward + backward | {1e3 * conv[0]:.0f} | {1e3 * conv[1]:.0f} |")
    lines.append(f"| whole step (median) | {1e3 * steps[0]:.0f} | {1e3 * steps[1]:.0f} |")
    lines.append(f"| whole step without --layer_timing / torch.profiler | {1e3 * med(q[0] for q in plain):.0f} | "
                 f"{1e3 * med(q[1] for q in plain):.0f} |")
    with open(stem + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"wrote {stem}.md and {stem}.csv")


if __name__ == "__main__":
    main()
