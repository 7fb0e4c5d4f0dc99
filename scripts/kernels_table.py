#!/usr/bin/env python3
"""Turns cnnbench_kernels_bench's JSON (--benchmark_format=json or --benchmark_out) into a
Markdown table: one row per layer and direction, oneDNN's time and share of the peak per
precision, and where cnnbench's own kernel runs, its time and speed against oneDNN's.

  build/cnnbench_kernels_bench --benchmark_out=results/kernels/cpu.json --benchmark_out_format=json
  scripts/kernels_table.py results/kernels/cpu.json -o results/kernels/cpu.md
Convolutions and linear layers show GFLOP/s and the fraction of the measured FMA peak; the
other layers GB/s (each tensor once) and the fraction of the measured STREAM triad.
"""
import argparse
import json
import sys


def load(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"kernels_table.py: {path}: {e}")
    if not isinstance(doc, dict) or "benchmarks" not in doc:
        sys.exit(f"kernels_table.py: {path}: not Google Benchmark JSON (no \"benchmarks\")")
    rows = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        parts = b["name"].split("/")
        if len(parts) < 5:
            continue
        model, layer, direction, target, dtype = parts[:5]
        if b.get("error_occurred"):
            cell = {"error": b.get("error_message", "error")}
        else:
            cell = {"ms": b["real_time"] if b.get("time_unit") == "ms" else b["real_time"] / 1e6}
            for k in ("GFLOP/s", "GB/s", "peak_fraction", "bandwidth_fraction"):
                if k in b:
                    cell[k] = b[k]
        rows.setdefault((model, layer, direction), {})[(target, dtype)] = cell
    return doc.get("context", {}), rows


def speed(cell):
    if "error" in cell:
        return "error"
    # the fraction where one was measured (a GPU's layers have no STREAM triad to compare with)
    if "GFLOP/s" in cell:
        share = f" ({100 * cell['peak_fraction']:.0f}%)" if "peak_fraction" in cell else ""
        return f"{cell['ms']:.2f} ms, {cell['GFLOP/s']:.0f} GFLOP/s{share}"
    share = f" ({100 * cell['bandwidth_fraction']:.0f}%)" if "bandwidth_fraction" in cell else ""
    return f"{cell['ms']:.2f} ms, {cell['GB/s']:.1f} GB/s{share}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", help="cnnbench_kernels_bench JSON output")
    parser.add_argument("-o", "--output", help="write the table here (default: standard output)")
    args = parser.parse_args()
    context, rows = load(args.json)
    if not rows:
        sys.exit(f"kernels_table.py: {args.json}: no cnnbench_kernels_bench results")
    targets = sorted({t for cells in rows.values() for t in cells})
    columns = [t for t in targets if t[0] != "cnnbench"]
    own = [t for t in targets if t[0] == "cnnbench"]
    out = ["# cnnbench_kernels_bench", ""]
    for key in sorted(k for k in context if k.startswith(("peak_gflops", "gpu", "stream_triad"))):
        out.append(f"- {key}: {context[key]}")
    for key in ("host_name", "num_cpus", "date", "cnnbench_runs"):
        if key in context:
            out.append(f"- {key}: {context[key]}")
    out.append("")
    header = ["model", "layer", "direction"] + [f"{t} {d}" for t, d in columns]
    header += [f"cnnbench {d} (vs oneDNN)" for _, d in own]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "---|" * len(header))
    order = {"forward": 0, "backward_data": 1, "backward_weights": 2, "backward": 3}
    for (model, layer, direction), cells in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1], order.get(kv[0][2], 9))):
        line = [model, layer, direction] + [speed(cells[t]) if t in cells else "" for t in columns]
        for t in own:
            mine, theirs = cells.get(t), cells.get(("onednn", t[1]))
            if not mine:
                line.append("")
            elif "error" in mine or not theirs or "error" in theirs:
                line.append(speed(mine))
            else:
                line.append(f"{speed(mine)}, {theirs['ms'] / mine['ms']:.2f}x")
        out.append("| " + " | ".join(line) + " |")
    text = "\n".join(out) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
        print(f"{args.output}: {len(rows)} rows")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
