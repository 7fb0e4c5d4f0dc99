#!/usr/bin/python3
"""Draws --overlap_forward against end-of-step updates from the netns overlap sweeps' CSVs
(scripts/sweep.py configs/sweep_netns_overlap_*.toml): scaling efficiency per backend and bucket
size, each bar the median of the sweep's rounds with their range, and the communication hidden
behind forward per step; writes overlap.png and summary.md.

  scripts/plot_overlap.py results/sweeps/netns_overlap_200mbit/sweep.csv \
      results/sweeps/netns_overlap_200mbit_fusion0/sweep.csv --out results/sweeps/netns_overlap_200mbit
"""
import argparse
import csv
import os
import statistics
import sys


def load(paths):
    """{(backend, fusion MiB, overlap): [(efficiency, hidden sec), ...]} over the 2-rank rows."""
    groups = {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["status"] != "ok" or r["ranks"] == "1":
                    continue
                key = (r["allreduce"], r["fusion_threshold_mb"] or "16", r.get("overlap_forward", "false"))
                groups.setdefault(key, []).append((float(r["scaling_efficiency"]),
                                                   float(r["comm_hidden_by_forward_mean_sec"] or 0)))
    return groups


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    groups = load(args.csv)
    if not groups:
        sys.exit("plot_overlap.py: no 2-rank rows with status ok")
    lines = ["| backend, buckets | end of step: efficiency | --overlap_forward: efficiency | hidden behind forward (s/step) |",
             "|---|---|---|---|"]
    labels, off, on, off_err, on_err = [], [], [], [], []
    for backend, fusion in sorted({(k[0], k[1]) for k in groups}):
        cells = []
        for overlap, bars, errs in (("false", off, off_err), ("true", on, on_err)):
            runs = [e for e, _ in groups.get((backend, fusion, overlap), [])]
            median = statistics.median(runs) if runs else 0
            bars.append(100 * median)
            errs.append((100 * (median - min(runs)), 100 * (max(runs) - median)) if runs else (0, 0))
            cells.append(f"{100 * median:.1f}% [{100 * min(runs):.1f}-{100 * max(runs):.1f}]" if runs else "-")
        hidden = [h for _, h in groups.get((backend, fusion, "true"), [])]
        cells.append(f"{statistics.median(hidden):.2f} [{min(hidden):.2f}-{max(hidden):.2f}]" if hidden else "-")
        name = f"{backend}, {'per tensor' if float(fusion) == 0 else fusion + ' MiB'}"
        labels.append(name)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    x = range(len(labels))
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.38
    ax.bar([i - width / 2 for i in x], off, width, yerr=list(zip(*off_err)), capsize=4, label="updates at the end of the step")
    ax.bar([i + width / 2 for i in x], on, width, yerr=list(zip(*on_err)), capsize=4, label="--overlap_forward")
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("scaling efficiency, 2 hosts (%)")
    ax.set_ylim(min(off + on) - 10, 100)
    ax.set_title("resnet50 b32, 2 namespace hosts, 200 Mbit/s (median of rounds, range)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "overlap.png"), dpi=110)


if __name__ == "__main__":
    main()
