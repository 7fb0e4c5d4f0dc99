#!/usr/bin/env python3
"""summary.md of a scripts/gpu_check.sh state folder: the tests, the benchmark medians and ranges
against PyTorch, each cnnbench run's Backend line (its algorithm search), the largest batch, the
convergence runs and the profile's head.
    gpu_check_summary.py STATE_DIR GPU_NAME MANIFEST > summary.md"""
import csv, glob, os, statistics as st, sys

S, gpu, m = sys.argv[1:]
print(f"# GPU check: {gpu}\n")
if os.path.exists(m): print("bundle: " + open(m).readline())
t = os.path.join(S, "tests", "summary.tsv")
if os.path.exists(t):
    print("| test binary | status | passed | failed | skipped | s |\n|---|---|---|---|---|---|")
    for r in csv.reader(open(t), delimiter="\t"): print("| " + " | ".join(r) + " |")
b = os.path.join(S, "bench.csv")
if os.path.exists(b):
    every = list(csv.DictReader(open(b), delimiter="\t"))
    rows = [r for r in every if r["status"] == "ok"]
    if len(rows) < len(every): print(f"\n{len(every) - len(rows)} of {len(every)} runs failed or timed out: bench.csv, bench/*.log")
    def cell(vals, f="{:.0f}"):
        return "-" if not vals else f.format(st.median(vals)) + (f" ({f.format(min(vals))}-{f.format(max(vals))}, {len(vals)})" if len(vals) > 1 else "")
    print("\nimg/s: median of each run's step medians (range, runs); GPU memory: peak in use (nvidia-smi), MiB\n")
    print("| mode | run | cnnbench | eager | compile | vs eager | vs compile | memory cnnbench / eager / compile | torch allocated / reserved GiB | unfused (--fuse_ops=false), memory | graphs (--cuda_graphs), memory |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, cfg in sorted({(r["mode"], r["config"]) for r in rows}):
        v = {i: [r for r in rows if (r["mode"], r["config"], r["impl"]) == (mode, cfg, i)] for i in ("cnnbench", "eager", "compile")}
        other = lambda impl: [r for r in rows if (r["mode"], r["config"], r["impl"]) == (mode, cfg, impl)]
        both = lambda rs: (cell([float(r["img_s_median"]) for r in rs if r["img_s_median"]]) + ", " +
                           cell([float(r["gpu_mem_peak_mib"]) for r in rs if r["gpu_mem_peak_mib"]])) if rs else "-"
        ips = {i: [float(r["img_s_median"]) for r in v[i] if r["img_s_median"]] for i in v}
        ratio = lambda i: f"{st.median(ips['cnnbench']) / st.median(ips[i]):.2f}x" if ips["cnnbench"] and ips[i] else "-"
        mem = " / ".join(cell([float(r["gpu_mem_peak_mib"]) for r in v[i] if r["gpu_mem_peak_mib"]]) for i in v)
        tg = " / ".join(cell([float(r[c]) for r in v["eager"] if r[c]], "{:.1f}") for c in ("torch_allocated_gib", "torch_reserved_gib"))
        print(f"| {mode} | {cfg} | {cell(ips['cnnbench'])} | {cell(ips['eager'])} | {cell(ips['compile'])} | {ratio('eager')} | {ratio('compile')} | {mem} | {tg} (eager) | {both(other('unfused'))} | {both(other('graphs'))} |")
logs = sorted(l for side in ("cnnbench", "unfused", "graphs") for l in glob.glob(os.path.join(S, "bench", f"*_{side}_*.log")))
if logs:  # what each plan chose: the algorithm search's time, the graphs it kept
    print("\ncnnbench's `Backend:` line, run by run:\n")
    for l in logs:
        line = next((x for x in open(l, errors="replace") if x.startswith("Backend:")), "Backend: (none: the run ended first)")
        print(f"- {os.path.basename(l)}: {line[len('Backend:'):].strip()}")
mb = os.path.join(S, "maxbatch", "runs.tsv")
if os.path.exists(mb):
    print("\nresnet50 fp16, the largest batch (5 steps; GPU memory peak from nvidia-smi, MiB)\n\n| batch | exit | GPU memory | outcome |\n|---|---|---|---|")
    for r in csv.reader(open(mb), delimiter="\t"): print("| " + " | ".join(r) + " |")
cv = os.path.join(S, "converge", "runs.tsv")
if os.path.exists(cv):
    print("\nresnet20_fmnist fp16 on Fashion-MNIST (30,000 training images, the 10,000 test images; "
          "configs/fashion_mnist_resnet.toml), conv-BN-ReLU-conv chains folded or not\n")
    print("| chains | batch norms folded | exit | final test top-1 | test top-1 (%) after each epoch | training s |\n|---|---|---|---|---|---|")
    for r in csv.reader(open(cv), delimiter="\t"): print("| " + " | ".join(r) + " |")
p = os.path.join(S, "profile", "summary.md")
if os.path.exists(p): print("\n" + "".join(open(p).readlines()[:20]))
