#!/usr/bin/env python3
"""Summarises onednn_layers runs (scripts/onednn3_compare.sh) into Markdown: whether oneDNN 3.x
is worth porting cnnbench's CPU backend to.

Each run is one JSON file from bench/onednn_layers.cc (named round<k>_onednn<version>.json by
the compare script). The baseline is the oldest oneDNN among them (Debian's 2.6) unless
--baseline names another. Per model and precision, a run's step-weighted time is the sum over
its layers and directions of (median ms x how often the layer occurs in a training step),
over the layers and directions every run measured. Each version's figure is the median of its
rounds, with their range; the ratio is other / baseline of those medians, with the range of
the per-round ratios (round k of one version against round k of the other).

Go/no-go: go if, in fp32 or in bf16, the step-weighted time of one resnet50
step and one vgg16 step together falls by 10% or more (ratio <= 0.90).

    scripts/onednn3_summary.py results/onednn3/round*_onednn*.json -o results/onednn3/summary.md
"""

import argparse
import collections
import json
import os
import re
import statistics
import sys

GO_RATIO = 0.90
MODELS_TOGETHER = "resnet50 + vgg16"


def version_key(v):
    return tuple(int(x) if x.isdigit() else 0 for x in v.split("."))


def load(paths):
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
        m = re.search(r"round(\d+)", os.path.basename(path))
        run["round"] = int(m.group(1)) if m else len(runs) + 1
        run["file"] = os.path.basename(path)
        run["times"] = {(r["model"], r["precision"], r["layer"], r["direction"]): r for r in run["results"]}
        runs.append(run)
    return runs


def own_kernel(key):
    """cnnbench computes the bf16 weight gradient of unpadded 1x1 convolutions itself."""
    _model, precision, layer, direction = key
    return precision == "bf16" and direction == "backward_weights" and re.search(r"_k1s\dp0_", layer)


def fmt_range(values, digits=1):
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", help="onednn_layers JSON files")
    ap.add_argument("-o", "--output", help="write the Markdown here (else stdout)")
    ap.add_argument("--baseline", help="the version the others are compared with (default: the oldest)")
    ap.add_argument("--note", action="append", default=[], help="a line for the header (repeatable)")
    args = ap.parse_args()

    runs = load(args.runs)
    by_version = collections.defaultdict(list)
    for run in runs:
        by_version[run["onednn_version"]].append(run)
    versions = sorted(by_version, key=version_key)
    base = args.baseline or versions[0]
    if base not in by_version:
        sys.exit(f"onednn3_summary: no run of baseline {base} (have {', '.join(versions)})")
    others = [v for v in versions if v != base]
    for v in versions:
        by_version[v].sort(key=lambda r: r["round"])

    # the layers and directions every run measured, in the order the first run has them
    all_keys = list(runs[0]["times"])
    for run in runs[1:]:
        all_keys += [k for k in run["times"] if k not in all_keys]
    common = [k for k in all_keys if all(run["times"].get(k, {}).get("ms") is not None for run in runs)]
    left_out = [k for k in all_keys if k not in common]
    count = {}
    for run in runs:
        for k, r in run["times"].items():
            count.setdefault(k, r["count"])

    def total(run, model, precision, without_own=False):
        return sum(run["times"][k]["ms"] * count[k] for k in common
                   if (model == MODELS_TOGETHER or k[0] == model) and k[1] == precision
                   and not (without_own and own_kernel(k)))

    models = list(dict.fromkeys(k[0] for k in common))
    precisions = list(dict.fromkeys(k[1] for k in common))
    rows = []  # (label model, precision label, {version: [totals by round]})
    for precision in precisions:
        variants = [(precision, False)] + ([("bf16 w/o own 1x1 dW", True)] if precision == "bf16" else [])
        for label, without in variants:
            for model in models + ([MODELS_TOGETHER] if len(models) > 1 else []):
                rows.append((model, label, precision,
                             {v: [total(r, model, precision, without) for r in by_version[v]] for v in versions}))

    out = []
    w = out.append
    w("# oneDNN 3.x against Debian's 2.6: cnnbench's conv and linear layers\n")
    for v in versions:
        r0 = by_version[v][0]
        w(f"- oneDNN {v}: {len(by_version[v])} run(s), {r0['threading']}, ISA {r0['isa']}, {r0['threads']} threads, "
          f"median of {r0['iterations']} iterations after {r0['warmup']} warm-up; files "
          + ", ".join(r["file"] for r in by_version[v]))
    for note in args.note:
        w(f"- {note}")
    w("- Step-weighted time: each layer's median ms x its count in a training step, summed over forward, backward "
      "data and backward weights (the first convolution has no backward data). Reorders are not included.")
    w("- 'bf16 w/o own 1x1 dW' leaves out the bf16 weight gradients of 1x1 convolutions, which cnnbench computes "
      "with its own kernel (kernels/onednn/bf16_weight_grad.cc), not oneDNN's.")
    if left_out:
        w("- Left out of every total (failed or missing in some run): "
          + "; ".join(f"{m} {p} {l} {d}" for m, p, l, d in left_out))
    w("")

    decisions, per_model = [], collections.defaultdict(list)
    for v in others:
        w(f"## Step-weighted totals: {v} against {base}\n")
        w(f"| model | precision | {base} ms (range) | {v} ms (range) | ratio {v}/{base} | per-round ratios |")
        w("|---|---|---|---|---|---|")
        for model, label, precision, totals in rows:
            b, o = totals[base], totals[v]
            ratio = statistics.median(o) / statistics.median(b)
            per_round = [x / y for x, y in zip(o, b)]
            w(f"| {model} | {label} | {statistics.median(b):.1f} ({fmt_range(b)}) | {statistics.median(o):.1f} "
              f"({fmt_range(o)}) | {ratio:.3f} | {fmt_range(per_round, 3)} |")
            if label in ("fp32", "bf16"):
                if model == MODELS_TOGETHER or len(models) == 1:
                    decisions.append((v, label, ratio, per_round))
                else:
                    per_model[v].append(f"{model} {label} {ratio:.3f}")
        w("")

    w("## Decision\n")
    steps = " + ".join(models) + (" (one step of each)" if len(models) > 1 else " (one step)")
    w(f"Rule: go if, in fp32 or bf16, the step-weighted time of {steps} falls by 10% or more "
      f"(ratio <= {GO_RATIO:.2f}). The other way to go (PyTorch 2.x ahead of cnnbench because of its "
      "oneDNN 3.x) is judged by scripts/compare_pytorch.py's tables, not here.\n")
    for v in others:
        mine = [d for d in decisions if d[0] == v]
        hits = [d for d in mine if d[2] <= GO_RATIO]
        detail = "; ".join(f"{p} {r:.3f} (rounds {fmt_range(pr, 3)})" for _v, p, r, pr in mine)
        if hits:
            robust = all(max(pr) <= GO_RATIO for _v, _p, _r, pr in hits)
            w(f"- **GO** for oneDNN {v}: {detail}. "
              + ("Every round is below the line." if robust else "Not every round is below the line: rerun before porting."))
        else:
            w(f"- **NO-GO** for oneDNN {v}: {detail}; neither falls by 10%.")
        if per_model[v]:
            w(f"  Each model alone ({v}/{base}): " + ", ".join(per_model[v]) + ".")
    w("")

    w("## Per layer and direction (median ms over rounds)\n")
    head = f"| model | precision | layer | count | direction | {base} ms |"
    for v in others:
        head += f" {v} ms | {v}/{base} |"
    w(head + f" {base} impl | " + " | ".join(f"{v} impl" for v in others) + " |")
    w("|---" * (6 + 2 * len(others) + 1 + len(others)) + "|")

    def med(v, k):
        ms = [r["times"][k]["ms"] for r in by_version[v] if r["times"].get(k, {}).get("ms") is not None]
        return statistics.median(ms) if ms else None

    def impl(v, k):
        names = [r["times"][k].get("impl") or "failed" for r in by_version[v] if k in r["times"]]
        return collections.Counter(names).most_common(1)[0][0] if names else "-"

    for k in all_keys:
        model, precision, layer, direction = k
        b = med(base, k)
        line = f"| {model} | {precision} | {layer} | {count[k]} | {direction} | {b:.3f} |" if b else \
            f"| {model} | {precision} | {layer} | {count[k]} | {direction} | - |"
        for v in others:
            o = med(v, k)
            line += f" {o:.3f} | {o / b:.2f} |" if o and b else (f" {o:.3f} | - |" if o else " - | - |")
        line += f" {impl(base, k)} | " + " | ".join(impl(v, k) for v in others) + " |"
        w(line)
    text = "\n".join(out) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
