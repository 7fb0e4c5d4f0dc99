#!/usr/bin/python3
"""Draws allreduce microbenchmark results (cnnbench --mode=allreduce JSONs) listed in a runs.csv
(columns setting, rate, repeat, exit_code, json; as scripts/netns_allreduce.sh writes it):

  allreduce.png  busbw against message size, one panel per link rate, one line per setting
                  (the median over repeats, the shaded band their range); the dashed line is
                  the link's rate where it was shaped
  summary.md      per rate and setting: busbw at 1 MiB, 8 MiB and the largest size, median
                  [min-max] over repeats, and, for 2 ranks, the share of the line rate (busbw
                  is then what each host sends per second; with more ranks per host it assumes
                  a flat ring, so a hierarchical allreduce can show more than the line)

  scripts/plot_allreduce.py results/netns/mpi_tcp_tuning/runs.csv [--out DIR]

A run that failed (non-zero exit) is left out and named. Needs python3-matplotlib (Debian: run it
with /usr/bin/python3).
"""
import argparse
import collections
import csv
import json
import os
import re
import statistics
import sys

UNITS = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}


def fail(message):
    print(f"plot_allreduce: {message}", file=sys.stderr)
    sys.exit(2)


def line_rate_gbps(rate):
    """'200mbit' -> 0.025 (GB/s, 1e9 bytes, as the microbenchmark counts); None when unshaped."""
    m = re.fullmatch(r"(\d+)(gbit|mbit|kbit)", rate.lower())
    return int(m.group(1)) * UNITS[m.group(2)] / 8 / 1e9 if m else None


def load(runs_csv):
    """{(rate, setting): [{bytes: busbw}, ...]} in the order the CSV lists them, the failures, and
    {(rate, setting): ranks}."""
    runs, failed, ranks = collections.OrderedDict(), [], {}
    try:
        with open(runs_csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail(f"cannot read {runs_csv}: {e.strerror}")
    base = os.path.dirname(os.path.abspath(runs_csv))
    for row in rows:
        try:
            key, code, path = (row["rate"], row["setting"]), int(row["exit_code"]), row["json"]
        except (KeyError, ValueError, TypeError):
            fail(f"{runs_csv}: a row without setting, rate, exit_code and json: {row}")
        if code != 0:
            failed.append(f"{row['setting']} at {row['rate']} (repeat {row.get('repeat')}, exit {code})")
            continue
        if not os.path.exists(path):  # a path relative to where the runs were made, or to the CSV
            path = os.path.join(base, os.path.basename(path))
        try:
            with open(path) as f:
                doc = json.load(f)
            sizes = {int(s["bytes"]): float(s["busbw_gbps"]) for s in doc["sizes"]}
            ranks[key] = int(doc["run"]["ranks"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            fail(f"{path}: not an allreduce result ({e})")
        runs.setdefault(key, []).append(sizes)
    if not runs:
        fail(f"{runs_csv}: no run succeeded")
    return runs, failed, ranks


def medians(repeats):
    """[(bytes, median, low, high)] over the sizes every repeat has."""
    common = sorted(set.intersection(*(set(r) for r in repeats)))
    return [(b, statistics.median(r[b] for r in repeats), min(r[b] for r in repeats), max(r[b] for r in repeats))
            for b in common]


def summary(runs, ranks):
    lines = ["| link | setting | ranks | runs | busbw 1 MiB (GB/s) | busbw 8 MiB | busbw largest | largest of line rate |",
             "|---|---|---|---|---|---|---|---|"]
    for (rate, setting), repeats in runs.items():
        points = {b: (m, lo, hi) for b, m, lo, hi in medians(repeats)}
        largest = max(points)

        def cell(b):
            if b not in points:
                return "-"
            m, lo, hi = points[b]
            return f"{m:.3f}" + (f" [{lo:.3f}-{hi:.3f}]" if len(repeats) > 1 else "")
        line = line_rate_gbps(rate)
        share = f"{100 * points[largest][0] / line:.0f}%" if line and ranks[(rate, setting)] == 2 else "-"
        lines.append(f"| {rate} | {setting} | {ranks[(rate, setting)]} | {len(repeats)} | {cell(1 << 20)} | {cell(8 << 20)} | "
                     f"{cell(largest)} ({largest >> 20} MiB) | {share} |")
    return "\n".join(lines) + "\n"


def plot(runs, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rates = list(dict.fromkeys(rate for rate, _ in runs))
    fig, axes = plt.subplots(1, len(rates), figsize=(5 * len(rates), 4), squeeze=False)
    for ax, rate in zip(axes[0], rates):
        for (r, setting), repeats in runs.items():
            if r != rate:
                continue
            pts = medians(repeats)
            x = [p[0] for p in pts]
            ax.plot(x, [p[1] for p in pts], marker="o", markersize=3, label=setting)
            ax.fill_between(x, [p[2] for p in pts], [p[3] for p in pts], alpha=0.2)
        line = line_rate_gbps(rate)
        if line:
            ax.axhline(line, linestyle="--", color="gray", label=f"line rate ({line:.3g} GB/s)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.set_ylim(bottom=0)
        ax.set_title(f"allreduce between 2 hosts, link {rate}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs_csv")
    parser.add_argument("--out", default=None, help="directory for the PNG and summary (default: the CSV's)")
    args = parser.parse_args()
    out = args.out or os.path.dirname(os.path.abspath(args.runs_csv))
    runs, failed, ranks = load(args.runs_csv)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(summary(runs, ranks))
    plot(runs, os.path.join(out, "allreduce.png"))
    for what in failed:
        print(f"plot_allreduce: left out {what}", file=sys.stderr)
    print(f"plot_allreduce: {out}/allreduce.png, {out}/summary.md")


if __name__ == "__main__":
    main()
