#!/usr/bin/python3
"""Draws --overlap_forward against end-of-step updates from the netns overlap sweeps' CSVs
(scripts/sweep.py configs/sweep_netns_overlap_*.toml): scaling efficiency per backend and bucket
size, each bar the median of the sweep's rounds with their range, and the communication hidden
behind forward per step; writes overlap.png and summary.md. With --setting
first_layers_bucket_mb, the overlapped runs with buckets filled in backward order against
buckets planned from the input side (configs/sweep_netns_first_layers_200mbit.toml), with the
time forward waited for them too.

  scripts/plot_overlap.py results/sweeps/netns_overlap_200mbit/sweep.csv \
      results/sweeps/netns_overlap_200mbit_fusion0/sweep.csv --out results/sweeps/netns_overlap_200mbit
  scripts/plot_overlap.py results/sweeps/netns_first_layers_200mbit/sweep.csv --setting first_layers_bucket_mb \
      --out results/sweeps/netns_first_layers_200mbit
"""
import argparse
import csv
import os
import statistics
import sys


# per setting compared: its column, and (value, table heading, bar label) without and with it
SETTINGS = {
    "overlap_forward": (("false", "end of step", "updates at the end of the step"),
                        ("true", "--overlap_forward", "--overlap_forward")),
    "first_layers_bucket_mb": (("0", "buckets in backward order", "buckets in backward order"),
                               ("1", "--first_layers_bucket_mb=1", "--first_layers_bucket_mb=1 (1, 2, 4, 8, 16 MiB)")),
}


def load(paths, setting):
    """{(backend, fusion MiB, setting's value): [(efficiency, hidden sec, exposed sec), ...]} over
    the 2-rank rows."""
    default = SETTINGS[setting][0][0]
    groups = {}
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["status"] != "ok" or r["ranks"] == "1":
                    continue
                value = r.get(setting) or default
                if setting == "first_layers_bucket_mb":
                    value = f"{float(value):g}"
                key = (r["allreduce"], r["fusion_threshold_mb"] or "16", value)
                groups.setdefault(key, []).append((float(r["scaling_efficiency"]),
                                                   float(r["comm_hidden_by_forward_mean_sec"] or 0),
                                                   float(r["exposed_comm_mean_sec"] or 0)))
    return groups


def median_range(values, form):
    return f"{form.format(statistics.median(values))} [{form.format(min(values))}-{form.format(max(values))}]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--setting", choices=sorted(SETTINGS), default="overlap_forward",
                    help="what the two bars of a backend differ in (default: overlap_forward)")
    args = ap.parse_args()
    (off_value, off_head, off_label), (on_value, on_head, on_label) = SETTINGS[args.setting]
    groups = load(args.csv, args.setting)
    if not groups:
        sys.exit("plot_overlap.py: no 2-rank rows with status ok")
    exposed = args.setting != "overlap_forward"  # both sides overlapped: how long forward waited
    lines = [f"| backend, buckets | {off_head}: efficiency | {on_head}: efficiency | hidden behind forward (s/step) |"
             + (" exposed in forward, without / with (s/step) |" if exposed else ""),
             "|---|---|---|---|" + ("---|" if exposed else "")]
    labels, off, on, off_err, on_err = [], [], [], [], []
    for backend, fusion in sorted({(k[0], k[1]) for k in groups}):
        cells = []
        for value, bars, errs in ((off_value, off, off_err), (on_value, on, on_err)):
            runs = [e for e, _, _ in groups.get((backend, fusion, value), [])]
            median = statistics.median(runs) if runs else 0
            bars.append(100 * median)
            errs.append((100 * (median - min(runs)), 100 * (max(runs) - median)) if runs else (0, 0))
            cells.append(f"{100 * median:.1f}% [{100 * min(runs):.1f}-{100 * max(runs):.1f}]" if runs else "-")
        hidden = [h for _, h, _ in groups.get((backend, fusion, on_value), [])]
        cells.append(median_range(hidden, "{:.2f}") if hidden else "-")
        if exposed:
            waits = [[x for _, _, x in groups.get((backend, fusion, v), [])] for v in (off_value, on_value)]
            cells.append(" / ".join(median_range(w, "{:.2f}") if w else "-" for w in waits))
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
    ax.bar([i - width / 2 for i in x], off, width, yerr=list(zip(*off_err)), capsize=4, label=off_label)
    ax.bar([i + width / 2 for i in x], on, width, yerr=list(zip(*on_err)), capsize=4, label=on_label)
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("scaling efficiency, 2 hosts (%)")
    ax.set_ylim(min(off + on) - 10, 100)
    ax.set_title("resnet50 b32, 2 namespace hosts, 200 Mbit/s (median of rounds, range)" if not exposed else
                 "resnet50 b32, --overlap_forward, 2 hosts at 200 Mbit/s (median, range)")
    if exposed:  # above the bars
        ax.set_ylim(min(off + on) - 10, 108)
        ax.legend(loc="upper left", fontsize=8)
    else:
        ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "overlap.png"), dpi=110)


if __name__ == "__main__":
    main()
