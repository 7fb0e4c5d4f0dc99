#!/usr/bin/env python3
"""Trains the same models with cnnbench and with PyTorch on this machine, one after the other,
and prints images/sec and the ratio per model.

Both run with the same model, per-rank batch, thread count, precision, synthetic data and
number of warm-up and timed steps. PyTorch gets its best CPU setting: channels_last memory
format and glibc told to keep freed memory (MALLOC_MMAP_MAX_=0,
MALLOC_TRIM_THRESHOLD_=68719476736), without which it pays page faults every step; cnnbench
runs under the same environment.

  scripts/compare_pytorch.py                      # resnet50, vgg16, resnet20; writes results/
  scripts/compare_pytorch.py --models resnet20 --steps 30
Needs python3-torch and python3-torchvision (scripts/install_deps.sh --pytorch).
"""
import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULTS = {"resnet50": 32, "vgg16": 16, "resnet20": 128}  # per-rank batch
MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736"}

PYTORCH_WORKER = r'''
import sys, time, json
import torch, torch.nn as nn, torch.nn.functional as F
model_name, batch, threads, warmup, steps, precision = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
torch.set_num_threads(threads)
torch.manual_seed(1)

class Shortcut(nn.Module):  # CIFAR ResNet option A: subsample, zero-pad channels
    def __init__(self, pad):
        super().__init__(); self.pad = pad
    def forward(self, x):
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))

class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = Shortcut((cout - cin) // 2) if stride != 1 or cin != cout else nn.Identity()
    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))

class CifarResNet(nn.Module):
    def __init__(self, depth):
        super().__init__(); n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False); self.bn1 = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for stage, width in enumerate((16, 32, 64)):
            for i in range(n):
                layers.append(Block(cin, width, 2 if stage > 0 and i == 0 else 1)); cin = width
        self.layers = nn.Sequential(*layers); self.fc = nn.Linear(64, 10)
    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

if model_name.startswith("resnet") and int(model_name[6:]) in (20, 32, 44, 56, 110):
    model, size, classes = CifarResNet(int(model_name[6:])), 32, 10
else:
    import torchvision
    model, size, classes = getattr(torchvision.models, model_name)(), 224, 1000
model = model.to(memory_format=torch.channels_last).train()
images = torch.randn(batch, 3, size, size).to(memory_format=torch.channels_last)
labels = torch.randint(0, classes, (batch,))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
loss_fn = nn.CrossEntropyLoss()

def step():
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
        loss = loss_fn(model(images), labels)
    loss.backward()
    optimizer.step()

def runqueue_wait_sec():  # as cnnbench's harness/report/cpu_wait.cc: time ready but without a CPU
    import os
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            total += int(open(f"/proc/self/task/{tid}/schedstat").read().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9

for _ in range(warmup):
    step()
times = []
waited = runqueue_wait_sec()
for _ in range(steps):
    start = time.perf_counter(); step(); times.append(time.perf_counter() - start)
wait_fraction = max(0.0, runqueue_wait_sec() - waited) / (threads * sum(times))
import resource
print(json.dumps({"images_per_sec": batch * steps / sum(times), "step_times": times, "torch": torch.__version__,
                  "cpu_wait_fraction": wait_fraction,
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}))
'''


def run_checked(args, env, what):
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compare_pytorch.py: {what} failed (exit {done.returncode}):\n{done.stderr.strip()[-2000:]}")
    return done


def run_pytorch(python, model, batch, threads, warmup, steps, precision, env):
    out = run_checked([python, "-c", PYTORCH_WORKER, model, str(batch), str(threads), str(warmup), str(steps),
                       precision], env, f"PyTorch {model}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_cnnbench(binary, model, batch, threads, warmup, steps, precision, env):
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "r.json")
        args = [binary, f"--model={model}", f"--batch_size={batch}", f"--num_batches={steps}",
                f"--num_warmup_batches={warmup}", f"--num_intra_threads={threads}", "--optimizer=momentum",
                "--weight_decay=1e-4", f"--benchmark_log_dir={tmp}", f"--result_json={result}"]
        if precision != "fp32":
            args.append("--use_fp16")
        run_checked(args, env, f"cnnbench {model}")
        with open(result) as f:
            doc = json.load(f)
    summary = doc["summary"]
    # null where not measured (no peak for the type, or below what the run achieved; no wait figure): -1 here
    return {"images_per_sec": summary["images_per_sec"], "fraction_of_peak": none_as(summary.get("fraction_of_peak"), -1),
            "peak_gflops": summary["peak_gflops_per_rank"], "cpu": doc["context"]["cpu_model"],
            "cpu_wait_fraction": none_as(summary.get("cpu_wait_fraction"), -1),
            "peak_rss_bytes": doc["summary"]["peak_rss_bytes"]}


def none_as(value, default):
    return default if value is None else value


def peak_pct(fraction):
    return f"{100 * fraction:.1f}%" if fraction >= 0 else "?"


def runs_text(runs):
    """Every run's images/sec in order, with the share of its time its threads waited for a CPU."""
    return "; ".join(f"{r['images_per_sec']:.2f} ({100 * r.get('cpu_wait_fraction', -1):.1f}% wait)" for r in runs)


def most_wait(runs):
    waits = [r.get("cpu_wait_fraction", -1) for r in runs]
    return f"{100 * max(waits):.1f}%" if waits and min(waits) >= 0 else "?"


def median_run(runs):
    return sorted(runs, key=lambda r: r["images_per_sec"])[len(runs) // 2]


def span(runs):
    ordered = sorted(runs, key=lambda r: r["images_per_sec"])
    return [ordered[0], ordered[-1]]


def spread_pct(runs):
    """(max - min) / median of the runs' images/sec, in percent: what one bad run widens."""
    speeds = sorted(r["images_per_sec"] for r in runs)
    return round(100 * (speeds[-1] - speeds[0]) / statistics.median(speeds), 1)


def iqr_pct(runs):
    """Interquartile range / median, in percent: the spread of the middle half, which one run
    slowed by a neighbour does not move. Needs 4 runs or more; None below."""
    speeds = [r["images_per_sec"] for r in runs]
    if len(speeds) < 4:
        return None
    q1, _, q3 = statistics.quantiles(speeds, n=4, method="inclusive")
    return round(100 * (q3 - q1) / statistics.median(speeds), 1)


def pct(value):
    return "n/a" if value is None else f"{value}%"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(DEFAULTS), help="models to compare")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "cnnbench"))
    parser.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable,
                        help="interpreter that has Debian's torch (default /usr/bin/python3)")
    parser.add_argument("--repeats", type=int, default=1,
                        help="run each side this many times, alternating; report the medians (and the range)")
    parser.add_argument("--out", default=os.path.join(ROOT, "results"), help="folder for compare_pytorch_*.csv/.md")
    args = parser.parse_args()
    env = dict(os.environ, **MALLOC_ENV)
    rows = []
    for model in args.models:
        batch = DEFAULTS.get(model, 32)
        steps = args.steps * (5 if model == "resnet20" else 1)  # short steps: time more of them
        # alternate the two so that a slow spell of the machine hits both; keep each side's median run
        runs_ours, runs_theirs = [], []
        for _ in range(max(1, args.repeats)):
            runs_ours.append(run_cnnbench(args.binary, model, batch, args.threads, args.warmup, steps,
                                          args.precision, env))
            runs_theirs.append(run_pytorch(args.python, model, batch, args.threads, args.warmup, steps,
                                           args.precision, env))
            print(f"  {model} run {len(runs_ours)}: cnnbench {runs_text(runs_ours[-1:])}, "
                  f"PyTorch {runs_text(runs_theirs[-1:])}", flush=True)
        ours, theirs = median_run(runs_ours), median_run(runs_theirs)
        ratio = ours["images_per_sec"] / theirs["images_per_sec"]
        rows.append({"model": model, "batch": batch, "threads": args.threads, "precision": args.precision,
                     "steps": steps, "cnnbench_images_per_sec": round(ours["images_per_sec"], 2),
                     "pytorch_images_per_sec": round(theirs["images_per_sec"], 2), "ratio": round(ratio, 3),
                     "cnnbench_fraction_of_peak": round(ours["fraction_of_peak"], 3),
                     "torch_version": theirs["torch"], "cpu": ours["cpu"], "repeats": len(runs_ours),
                     "cnnbench_range": "-".join(f"{r['images_per_sec']:.2f}" for r in span(runs_ours)),
                     "pytorch_range": "-".join(f"{r['images_per_sec']:.2f}" for r in span(runs_theirs)),
                     "cnnbench_spread_pct": spread_pct(runs_ours), "pytorch_spread_pct": spread_pct(runs_theirs),
                     "cnnbench_iqr_pct": iqr_pct(runs_ours), "pytorch_iqr_pct": iqr_pct(runs_theirs),
                     "cnnbench_runs": runs_text(runs_ours), "pytorch_runs": runs_text(runs_theirs),
                     "most_cpu_wait": f"{most_wait(runs_ours)} / {most_wait(runs_theirs)}",
                     "cnnbench_peak_rss_gib": round(max(r["peak_rss_bytes"] for r in runs_ours) / 2**30, 2),
                     "pytorch_peak_rss_gib": round(max(r["peak_rss_bytes"] for r in runs_theirs) / 2**30, 2)})
        print(f"{model:10s} batch {batch:4d}  cnnbench {ours['images_per_sec']:9.2f} img/s  "
              f"pytorch {theirs['images_per_sec']:9.2f} img/s  ratio {ratio:5.2f}x  "
              f"({peak_pct(ours['fraction_of_peak'])} of the measured {args.precision} peak)", flush=True)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, f"compare_pytorch_{args.precision}")
    with open(stem + ".csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(stem + ".md", "w") as f:
        f.write(f"cnnbench vs PyTorch {rows[0]['torch_version']}, {args.precision}, {args.threads} threads, "
                f"{rows[0]['cpu']} ({platform.node()}), {time.strftime('%Y-%m-%d')}\n\n")
        f.write(f"{args.steps} timed steps ({5 * args.steps} for resnet20) after {args.warmup} warm-up; "
                f"median of {rows[0]['repeats']} alternating run(s) per side, range in brackets\n\n")
        f.write("| model | batch | cnnbench img/s | PyTorch img/s | ratio | cnnbench % of peak | most CPU wait (cnnbench / PyTorch) "
                "| peak RSS GiB (cnnbench / PyTorch) | spread, range / median (cnnbench / PyTorch) "
                "| spread, IQR / median (cnnbench / PyTorch) |\n"
                "|---|---|---|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write(f"| {r['model']} | {r['batch']} | {r['cnnbench_images_per_sec']} ({r['cnnbench_range']}) "
                    f"| {r['pytorch_images_per_sec']} ({r['pytorch_range']}) "
                    f"| {r['ratio']}x | {peak_pct(r['cnnbench_fraction_of_peak'])} | {r['most_cpu_wait']} "
                    f"| {r['cnnbench_peak_rss_gib']} / {r['pytorch_peak_rss_gib']} "
                    f"| {r['cnnbench_spread_pct']}% / {r['pytorch_spread_pct']}% "
                    f"| {pct(r['cnnbench_iqr_pct'])} / {pct(r['pytorch_iqr_pct'])} |\n")
        f.write("\nEvery run in order, images/sec (share of its threads' time spent waiting for a CPU another "
                "process held):\n\n")
        for r in rows:
            f.write(f"- {r['model']}: cnnbench {r['cnnbench_runs']}; PyTorch {r['pytorch_runs']}\n")
    print(f"wrote {stem}.csv and {stem}.md")


if __name__ == "__main__":
    main()
