#!/usr/bin/env python3
"""Two runs' oneDNN kernels side by side, from their ONEDNN_VERBOSE=1 logs (oneDNN 2.x or 3.x):
milliseconds per step by primitive, propagation and shape, with the implementation each chose.

  ONEDNN_VERBOSE=1 build/cnnbench --model=alexnet --batch_size=128 --num_warmup_batches=2 --num_batches=4 > a.txt
  ONEDNN_VERBOSE=1 VENV/bin/python scripts/pytorch_cpu_worker.py alexnet 128 2 2 4 fp32 eager 1 > b.txt
  scripts/onednn_verbose_table.py a.txt b.txt 6 6        # 6: the steps each log holds
A fifth argument names the primitives (default convolution,inner_product,matmul). Only what ran
through oneDNN shows: PyTorch's linear layers, for one, do not.
"""
import collections, re, sys

def rows(path):
    out = collections.defaultdict(lambda: [0, 0.0, set()])
    for line in open(path, errors="replace"):
        if not line.startswith("onednn_verbose") and not line.startswith("dnnl_verbose"):
            continue
        f = line.strip().split(",")
        if "exec" not in f:
            continue
        i = f.index("exec")
        # 3.x: ...,exec,cpu,kind,impl,prop,...; 2.x: ...,exec,cpu,kind,impl,prop,...
        kind, impl, prop = f[i + 2], f[i + 3], f[i + 4]
        desc = next((x for x in f if re.match(r"^(g\d+)?mb\d+", x)), "")
        desc = re.sub(r"^(g\d+)?mb\d+_", "", desc)
        try:
            t = float(f[-1])
        except ValueError:
            continue
        key = (kind, prop, desc)
        out[key][0] += 1
        out[key][1] += t
        out[key][2].add(impl)
    return out

a, b = rows(sys.argv[1]), rows(sys.argv[2])
steps_a, steps_b = float(sys.argv[3]), float(sys.argv[4])
kinds = sys.argv[5].split(",") if len(sys.argv) > 5 else ["convolution", "inner_product", "matmul"]
keys = sorted(set(k for k in list(a) + list(b) if k[0] in kinds), key=lambda k: -(a.get(k, [0, 0])[1] + b.get(k, [0, 0])[1]))
ta = tb = 0
print(f"{'kind':12} {'prop':18} {'shape':55} {'A ms/step':>10} {'B ms/step':>10}  impl A | impl B")
for k in keys:
    x, y = a.get(k, [0, 0.0, set()]), b.get(k, [0, 0.0, set()])
    ta += x[1] / steps_a; tb += y[1] / steps_b
    print(f"{k[0][:12]:12} {k[1][:18]:18} {k[2][:55]:55} {x[1]/steps_a:10.1f} {y[1]/steps_b:10.1f}  {'/'.join(sorted(x[2]))} | {'/'.join(sorted(y[2]))}")
print(f"total {ta:.1f} {tb:.1f}")
