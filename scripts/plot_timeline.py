#!/usr/bin/python3
"""Draws a cnnbench --timeline trace as a Gantt chart PNG: one row per rank and track (compute,
communication, update, input, checkpoint, device, device communication), spans as bars (nested
spans drawn thinner inside the ones that hold them), instants as ticks, for people who would rather
look than load the trace into Perfetto or chrome://tracing.

  scripts/plot_timeline.py trace.json -o timeline.png                # the first 2 timed steps
  scripts/plot_timeline.py trace.json --first_step 5 --steps 3 -o t.png   # timed steps 5-7
  scripts/plot_timeline.py trace.json --from_ms 0 --to_ms 2500 -o t.png
Needs python3-matplotlib (Debian).
"""
import argparse
import json
import sys

# Colours by event name; a layer's span ("conv1 forward") takes its phase's lighter colour.
COLOURS = {
    "step": "#d9d9d9", "warm-up step": "#eeeeee", "epoch": "#f2f2f2",
    "forward": "#4c78a8", "backward": "#f58518", "update": "#54a24b",
    "allreduce": "#b279a2", "gradients ready": "#222222",
    "input stall": "#e45756", "checkpoint": "#9d755d", "evaluation": "#bab0ac",
    "batch-norm statistics averaged": "#72b7b2",
}
LAYER_COLOURS = {"forward": "#9ecae9", "backward": "#ffbf79"}
TRACK_ORDER = ["compute", "communication", "update", "input", "checkpoint", "device", "device communication"]


def colour(name):
    if name in COLOURS:
        return COLOURS[name]
    if name.startswith("epoch "):
        return COLOURS["epoch"]
    for phase, c in LAYER_COLOURS.items():
        if name.endswith(" " + phase):
            return c
    return "#888888"


def legend_name(name):
    if name.startswith("epoch "):
        return "epoch"
    for phase in LAYER_COLOURS:
        if name.endswith(" " + phase) and name != phase:
            return f"a layer's {phase}"
    return name


def load(path):
    """Returns (rows, events): rows as [(pid, tid, label)], events as dicts with ts/dur in ms."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"plot_timeline.py: {path}: {e}")
    if not isinstance(doc, dict) or "traceEvents" not in doc:
        sys.exit(f"plot_timeline.py: {path}: not a trace (no traceEvents)")
    processes, threads, events = {}, {}, []
    for e in doc["traceEvents"]:
        if e.get("ph") == "M":
            if e.get("name") == "process_name":
                processes[e["pid"]] = e["args"]["name"]
            elif e.get("name") == "thread_name":
                threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") in ("X", "i", "I"):
            events.append({"pid": e["pid"], "tid": e["tid"], "name": e["name"], "ph": e["ph"],
                           "start": e["ts"] / 1e3, "end": (e["ts"] + e.get("dur", 0)) / 1e3})
    if not events:
        sys.exit(f"plot_timeline.py: {path}: the trace has no events")

    def order(key):
        name = threads.get(key, str(key[1]))
        return (key[0], TRACK_ORDER.index(name) if name in TRACK_ORDER else len(TRACK_ORDER), name)

    keys = sorted({(e["pid"], e["tid"]) for e in events}, key=order)
    rows = [(pid, tid, f"{processes.get(pid, f'rank {pid}').split(' (')[0]} {threads.get((pid, tid), tid)}")
            for pid, tid in keys]
    return rows, events


def window(events, args):
    """The [from, to] milliseconds to draw."""
    if args.from_ms is not None or args.to_ms is not None:
        lo = args.from_ms if args.from_ms is not None else min(e["start"] for e in events)
        hi = args.to_ms if args.to_ms is not None else max(e["end"] for e in events)
        return lo, hi
    first_rank = min(e["pid"] for e in events)  # rank 0: pid 1 (pid 0 in traces before ids began at 1)
    steps = sorted({(e["start"], e["end"]) for e in events if e["name"] == "step" and e["pid"] == first_rank})
    if not steps:  # no timed steps: everything
        return min(e["start"] for e in events), max(e["end"] for e in events)
    first = min(max(args.first_step, 1), len(steps)) - 1  # numbered from 1, as the log's step lines
    last = min(first + max(args.steps, 1), len(steps)) - 1
    lo, hi = steps[first][0], steps[last][1]
    pad = 0.02 * (hi - lo)
    return lo - pad, hi + pad


def depths(events):
    """Nesting depth of each span on its track (0: outermost), as trace viewers stack them."""
    out = {}
    by_track = {}
    for i, e in enumerate(events):
        if e["ph"] == "X":
            by_track.setdefault((e["pid"], e["tid"]), []).append(i)
    for spans in by_track.values():
        spans.sort(key=lambda i: (events[i]["start"], -events[i]["end"]))
        open_ends = []
        for i in spans:
            while open_ends and open_ends[-1] <= events[i]["start"] + 1e-6:
                open_ends.pop()
            out[i] = len(open_ends)
            open_ends.append(events[i]["end"])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", help="a --timeline file")
    parser.add_argument("-o", "--output", default="timeline.png")
    parser.add_argument("--first_step", type=int, default=1,
                        help="first timed step drawn (rank 0's, from 1, as the log's step lines number them)")
    parser.add_argument("--steps", type=int, default=2, help="timed steps drawn")
    parser.add_argument("--from_ms", type=float, help="draw from this time (ms from the trace's start)")
    parser.add_argument("--to_ms", type=float, help="draw up to this time")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        sys.exit("plot_timeline.py: needs matplotlib (apt-get install python3-matplotlib)")

    rows, events = load(args.trace)
    lo, hi = window(events, args)
    depth = depths(events)
    row_of = {(pid, tid): n for n, (pid, tid, _) in enumerate(rows)}
    fig, ax = plt.subplots(figsize=(14, 0.55 * len(rows) + 1.8))
    seen = {}
    # outer spans first, so the spans they hold are drawn over them
    for i in sorted(range(len(events)), key=lambda i: depth.get(i, 99)):
        e = events[i]
        if e["end"] < lo or e["start"] > hi:
            continue
        y = len(rows) - 1 - row_of[(e["pid"], e["tid"])]
        c = colour(e["name"])
        seen.setdefault(legend_name(e["name"]), c)
        if e["ph"] in ("i", "I"):
            ax.plot([e["start"], e["start"]], [y - 0.4, y + 0.4], color=c, linewidth=0.8)
            continue
        height = 0.8 * (0.72 ** depth[i])
        ax.broken_barh([(max(e["start"], lo), min(e["end"], hi) - max(e["start"], lo))], (y - height / 2, height),
                       facecolors=c, edgecolors="white" if depth[i] >= 2 else "none", linewidth=0.4)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([label for _, _, label in reversed(rows)])
    ax.set_xlim(lo, hi)
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel("milliseconds from the start of the run")
    for y in range(len(rows) - 1):
        if rows[len(rows) - 1 - y][0] != rows[len(rows) - 2 - y][0]:
            ax.axhline(y + 0.5, color="#999999", linewidth=0.6)
    ax.set_title(args.title or args.trace)
    fig.tight_layout()
    ax.legend(handles=[Patch(color=c, label=n) for n, c in seen.items()], loc="upper center",
              bbox_to_anchor=(0.5, -0.12 - 0.25 / len(rows)), ncol=min(7, len(seen)), fontsize=8, frameon=False)
    fig.savefig(args.output, dpi=110, bbox_inches="tight")
    print(f"{args.output}: {len(rows)} rows, {hi - lo:.1f} ms")


if __name__ == "__main__":
    main()
