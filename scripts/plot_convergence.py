#!/usr/bin/env python3
"""Draws test and train accuracy and loss against epochs from cnnbench's per-epoch results
(the *_epochs.csv or the JSON of a --data_dir run) as one PNG.

  scripts/plot_convergence.py cnnbench_results/small_cnn_fashion_mnist_2r_*_epochs.csv -o results/curve.png
Several files draw several runs on the same axes. Needs python3-matplotlib (Debian).
"""
import argparse
import csv
import json
import os
import sys


def load(path):
    """Returns (label, rows) with rows as dicts of floats (None where absent)."""
    if path.endswith(".json"):
        with open(path) as f:
            doc = json.load(f)
        rows = doc["epochs"]
        label = f"{doc['run']['model']} {doc['run']['dataset']} {doc['run']['ranks']} rank(s)"
    else:
        with open(path, newline="") as f:
            rows = [{k: (float(v) if v not in ("", None) else None) for k, v in r.items()} for r in csv.DictReader(f)]
        label = os.path.basename(path).replace("_epochs.csv", "")
    if not rows:
        sys.exit(f"plot_convergence.py: {path} has no epochs")
    return label, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", help="*_epochs.csv or convergence JSON files")
    parser.add_argument("-o", "--output", default="convergence.png")
    args = parser.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot_convergence.py: needs matplotlib (apt-get install python3-matplotlib)")
    fig, (acc, loss) = plt.subplots(1, 2, figsize=(11, 4.2))
    for path in args.results:
        label, rows = load(path)
        epochs = [r["epoch"] for r in rows]
        acc.plot(epochs, [100 * r["train_top1"] for r in rows], "--", label=f"{label} train")
        tested = [r for r in rows if r.get("test_top1") is not None]
        acc.plot([r["epoch"] for r in tested], [100 * r["test_top1"] for r in tested], "o-", label=f"{label} test")
        loss.plot(epochs, [r["train_loss"] for r in rows], "--", label=f"{label} train")
        loss.plot([r["epoch"] for r in tested], [r["test_loss"] for r in tested], "o-", label=f"{label} test")
    acc.set_xlabel("epoch")
    acc.set_ylabel("top-1 accuracy (%)")
    acc.grid(alpha=0.3)
    acc.legend(fontsize=8)
    loss.set_xlabel("epoch")
    loss.set_ylabel("cross-entropy loss")
    loss.grid(alpha=0.3)
    loss.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
