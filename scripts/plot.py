#!/usr/bin/python3
"""Draws a sweep's results (the sweep.csv of scripts/sweep.py) as PNGs:

  scaling.png    images/sec against ranks, one line per allreduce backend (and compression),
                 one panel per model / batch / precision; the dashed line is linear scaling from
                 the fewest ranks and each point is labelled with its scaling efficiency,
                 imgs(N) / (N / N1 x imgs(N1)), computed here from the CSV
  fusion.png     images/sec against the fusion threshold, one line per backend, one panel per
                 configuration and rank count
  precision.png  fp32 against bf16 (every precision swept) per model and rank count
  accuracy.png   convergence sweeps: test top-1 and the time to the target accuracy against
                 the global batch, one line per setting that varies besides ranks and batch
                 (e.g. optimizer); a target missed is drawn as an x at the top of its panel

  scripts/plot.py results/sweeps/scaling/sweep.csv [--out results/sweeps/scaling]

Only the plots the CSV has data for are drawn (it says which were skipped and why). Keys a plot
does not draw are held at cnnbench's defaults where the sweep has them (fusion 16 MiB, MPI, no
compression, horovod, fp32); the title says which. Repeats of a point are averaged; error bars
are the standard error over repeats, or, for a single run, cnnbench's standard error of the
per-step images/sec. Points that differ in any setting (hosts included) are never averaged: a
setting that takes several values at one place on a plot's x axis gets lines (or ticks) of its own.
Needs python3-matplotlib (Debian: run it with /usr/bin/python3).
"""
import argparse
import csv
import math
import os
import statistics
import sys

if __package__:  # python3 -m scripts.plot
    from .sweep import NON_PARAM_COLUMNS  # the CSV layout
    from .sweep_panels import (accuracy_series, fusion_panels, label, num, precision_panels, scaling_panels,
                               values_of)
else:  # scripts/plot.py: scripts/ is first on sys.path
    from sweep import NON_PARAM_COLUMNS
    from sweep_panels import accuracy_series, fusion_panels, label, num, precision_panels, scaling_panels, values_of


def fail(message):
    """Bad input: one line, exit code 2 (as sweep.py and cnnbench)."""
    print(message, file=sys.stderr)
    sys.exit(2)

def load(path):
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames or []
        rows = list(reader)
    if "point" not in header or "images_per_sec" not in header:
        fail(f"plot.py: {path} is not a sweep.csv of scripts/sweep.py")
    last = {}
    for r in rows:  # the newest row of each point (a retried point has several)
        last[r["point"]] = r
    ok = [r for r in last.values() if r.get("status") == "ok" and r.get("images_per_sec")]
    for r in ok:
        r["ranks"] = int(r["ranks"])
    params = [c for c in header if c not in NON_PARAM_COLUMNS]
    return params, ok, len(last) - len(ok)


def title(rows, panel_keys, pvals):
    """A panel's title: its own values, then what all its points share (model, batch, ...)."""
    keys, vals = list(panel_keys), list(pvals)
    for k in ("model", "batch_size", "precision", "num_intra_threads"):
        v = values_of(rows, k) if rows and k in rows[0] else []
        if k not in keys and len(v) == 1:
            keys.append(k)
            vals.append(v[0])
    return label(keys, vals)


def figure(plt, n, width=6.0, height=4.2):
    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat)[:n]


class Colors:
    def __init__(self, plt):
        self.cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        self.seen = {}

    def __call__(self, name):
        return self.seen.setdefault(name, self.cycle[len(self.seen) % len(self.cycle)])


def finish(fig, title, notes, path):
    if notes:
        title += "\n(" + "; ".join(notes) + ")"
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot.py: wrote {path}")


def plot_scaling(plt, rows, params, path):
    drawn = scaling_panels(rows, params)
    if isinstance(drawn, str):
        return drawn
    rows, panels, line_keys, panel_keys, notes = drawn
    fig, axes = figure(plt, len(panels))
    color = Colors(plt)
    for ax, (pvals, series) in zip(axes, panels):
        ideal_drawn = set()
        top = 0
        for lvals, pts in series:
            xs = sorted(pts)
            ys = [pts[x][0] for x in xs]
            name = label(line_keys, lvals, short=True) if line_keys else "measured"
            ax.errorbar(xs, ys, yerr=[pts[x][1] for x in xs], marker="o", capsize=3, color=color(name), label=name)
            n1, v1 = xs[0], ys[0]
            if (n1, round(v1, 6)) not in ideal_drawn:
                ax.plot([n1, xs[-1]], [v1, v1 * xs[-1] / n1], ls="--", color="grey", lw=1,
                        label=f"linear from {n1} rank{'s' if n1 > 1 else ''}" if not ideal_drawn else None)
                ideal_drawn.add((n1, round(v1, 6)))
            for x, y in zip(xs[1:], ys[1:]):
                eff = y / (x / n1 * v1)
                ax.annotate(f"{100 * eff:.0f}%", (x, y), textcoords="offset points", xytext=(6, -4),
                            fontsize=8, color=color(name))
            top = max(top, v1 * xs[-1] / n1, max(ys))
        ax.set_xticks(sorted({x for _, pts in series for x in pts}))
        ax.set_xlabel("ranks")
        ax.set_ylabel("images/sec (total)")
        ax.set_ylim(0, top * 1.12)
        ax.set_title(title(rows, panel_keys, pvals), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    if notes:
        notes = [f"every line at {', '.join(notes)}; fusion.png has the other thresholds"]
    finish(fig, "Images/sec against ranks (% = scaling efficiency against linear)", notes, path)
    plt.close(fig)
    return None


def plot_fusion(plt, rows, params, path):
    drawn = fusion_panels(rows, params)
    if isinstance(drawn, str):
        return drawn
    rows, thresholds, panels, line_keys, panel_keys = drawn
    fig, axes = figure(plt, len(panels))
    color = Colors(plt)
    pos = {t: i for i, t in enumerate(thresholds)}
    for ax, (pvals, lines) in zip(axes, panels):
        for lvals, pts in lines:
            xs = sorted(pts, key=num)
            name = label(line_keys, lvals, short=True) if line_keys else "measured"
            ax.errorbar([pos[x] for x in xs], [pts[x][0] for x in xs], yerr=[pts[x][1] for x in xs],
                        marker="o", capsize=3, color=color(name), label=name)
        ax.set_xticks(range(len(thresholds)))
        ax.set_xticklabels([f"{t}\n(per tensor)" if num(t) == 0 else t for t in thresholds])
        ax.set_xlabel("fusion threshold (MiB)")
        ax.set_ylabel("images/sec (total)")
        ax.set_ylim(bottom=0)
        ax.set_title(title(rows, panel_keys, pvals), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    finish(fig, "Images/sec against the fusion threshold (gradient bucket size)", [], path)
    plt.close(fig)
    return None


def plot_precision(plt, rows, params, path):
    drawn = precision_panels(rows, params)
    if isinstance(drawn, str):
        return drawn
    rows, precisions, panels, tick_keys, panel_keys, notes = drawn
    fig, axes = figure(plt, len(panels))
    color = Colors(plt)
    width = 0.8 / len(precisions)
    for ax, (pvals, cells, groups) in zip(axes, panels):
        for j, prec in enumerate(precisions):
            xs, ys, es = [], [], []
            for i, g in enumerate(groups):
                if g + (prec,) in cells:
                    xs.append(i + (j - (len(precisions) - 1) / 2) * width)
                    ys.append(cells[g + (prec,)][0])
                    es.append(cells[g + (prec,)][1])
            bars = ax.bar(xs, ys, width, yerr=es, capsize=3, color=color(prec), label=prec)
            for b, (i, g) in zip(bars, [(i, g) for i, g in enumerate(groups) if g + (prec,) in cells]):
                h = b.get_height()
                text = f"{h:.0f}" if h >= 100 else f"{h:.3g}"
                base = cells.get(g + (precisions[0],))
                if j > 0 and base:
                    text += f"\n{b.get_height() / base[0]:.2f}x"
                ax.annotate(text, (b.get_x() + b.get_width() / 2, b.get_height()), textcoords="offset points",
                            xytext=(0, 3), ha="center", fontsize=8)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels([f"{g[0]} rank{'s' if g[0] != 1 else ''}"
                            + "".join(f"\n{label([k], [v])}" for k, v in zip(tick_keys[1:], g[1:]) if v) for g in groups])
        ax.set_ylabel("images/sec (total)")
        ax.set_ylim(0, max(v[0] for v in cells.values()) * 1.25)
        ax.set_title(title(rows, panel_keys, pvals), fontsize=9)
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8, loc="upper left")
    finish(fig, f"{' against '.join(precisions)} (x = against {precisions[0]})", notes, path)
    plt.close(fig)
    return None


def plot_accuracy(plt, rows, params, path):
    drawn = accuracy_series(rows, params)
    if isinstance(drawn, str):
        return drawn
    rows, line_keys, series = drawn
    fig, (acc, tta) = plt.subplots(1, 2, figsize=(12, 4.4))
    color = Colors(plt)
    targets = values_of(rows, "target_top_1_accuracy") if "target_top_1_accuracy" in rows[0] else []
    top = 0
    missed = []
    for lvals, by_batch in series.items():
        name = label(line_keys, lvals, short=True) if line_keys else "measured"
        xs = [int(k[0]) for k in by_batch]
        # repeats of a point: the median run, as cnnbench compare takes it
        acc.plot(xs, [100 * statistics.median(float(r["test_top1"]) for r in v) for v in by_batch.values()], "o-",
                 color=color(name), label=f"{name}, final")
        acc.plot(xs, [100 * statistics.median(float(r["best_test_top1"]) for r in v) for v in by_batch.values()], ".:",
                 color=color(name), label=f"{name}, best")
        reached = [(x, statistics.median(num(r.get("time_to_accuracy_sec") or "inf") for r in v))
                   for x, v in zip(xs, by_batch.values())]
        got = [(x, t) for x, t in reached if math.isfinite(t)]
        missed += [(x, name) for x, t in reached if not math.isfinite(t)]
        if got:
            tta.plot([x for x, _ in got], [t for _, t in got], "o-", color=color(name), label=name)
            top = max(top, max(t for _, t in got))
    for x, name in missed:
        tta.plot([x], [top * 1.05 if top else 1], "x", ms=10, color=color(name))
        tta.annotate("not reached", (x, top * 1.05 if top else 1), textcoords="offset points", xytext=(4, 4), fontsize=8)
    for ax in (acc, tta):
        ax.set_xscale("log", base=2)
        xs = sorted({r["global_batch"] for r in rows})
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs])
        ax.set_xlabel("global batch (ranks x batch per rank)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    acc.set_ylabel("test top-1 accuracy (%)")
    tta.set_ylabel("seconds to the target")
    if top:
        tta.set_ylim(0, top * 1.15)
    target = f" (target {100 * float(targets[0]):g}% top-1)" if len(targets) == 1 else ""
    finish(fig, f"{title(rows, [], [])}: accuracy and time to accuracy against the global batch{target}", [], path)
    plt.close(fig)
    return None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv", help="sweep.csv written by scripts/sweep.py")
    parser.add_argument("--out", help="folder for the PNGs (default: the CSV's folder)")
    args = parser.parse_args(argv)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("plot.py: needs matplotlib (Debian: apt-get install python3-matplotlib; run /usr/bin/python3 scripts/plot.py)")
    try:
        params, rows, not_ok = load(args.csv)
    except OSError as e:
        fail(f"plot.py: cannot read {args.csv}: {e.strerror}")
    if not rows:
        fail(f"plot.py: {args.csv} has no ok points to draw")
    if not_ok:
        print(f"plot.py: leaving out {not_ok} point(s) that failed")
    busy = [r for r in rows if float(r.get("other_cpus") or 0) >= 0.25]
    if busy:
        print(f"plot.py: {len(busy)} point(s) ran while other work kept at least 0.25 CPUs busy "
              f"(column other_cpus; re-run them on a quiet machine): {' '.join(r['point'] for r in busy)}")
    out = args.out or os.path.dirname(os.path.abspath(args.csv))
    os.makedirs(out, exist_ok=True)
    drawn = 0
    for name, fn in (("scaling.png", plot_scaling), ("fusion.png", plot_fusion), ("precision.png", plot_precision),
                     ("accuracy.png", plot_accuracy)):
        why = fn(plt, [dict(r) for r in rows], params, os.path.join(out, name))
        if why:
            print(f"plot.py: skipped {name}: {why}")
        else:
            drawn += 1
    return 0 if drawn else 1


if __name__ == "__main__":
    sys.exit(main())
