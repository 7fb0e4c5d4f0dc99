#!/usr/bin/env python3
"""Decode + augment images/sec per core: cnnbench's input pipeline against PyTorch's DataLoader
with torchvision's transforms, on the same ImageNet-sized JPEGs and the same cores.

Both make 224 x 224 training examples the same way: a random-resized crop (scale 0.08-1, aspect
3/4-4/3), a random horizontal flip, normalisation by ImageNet's mean and deviation, batched 32.
cnnbench runs `--mode=input` (its pipeline with no model to feed) with one worker thread per core,
on the JPEG folder and on TFRecord shards made from it; PyTorch runs ImageFolder + DataLoader with
its best num_workers on those cores: every value from 0 to the core count is tried twice, untimed,
and the fastest kept (the table says which). The work is not identical: torchvision decodes the
whole image and resizes with PIL's antialiasing filter; cnnbench decodes the crop's window only
and samples it bilinearly (2 x 2 taps), after DCT scaling where the crop is twice the output.
Each side is pinned with `taskset` to the first N cores, and glibc is told to keep freed memory
(MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_=68719476736) on both sides. The runs alternate
(cnnbench folder, PyTorch, cnnbench shards, again ...) so that a slow spell of the machine hits
all; the table gives medians and ranges.

  scripts/compare_input_pytorch.py                      # makes 1000 JPEGs; 1 and all cores
  scripts/compare_input_pytorch.py --images ROOT --cores 1 2 4 --repeats 7
Needs python3-torch, python3-torchvision and python3-pil (scripts/install_deps.sh --pytorch).
"""
import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MALLOC_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": "68719476736"}

PYTORCH_WORKER = r'''
import json, sys, time
import torch
from torchvision import datasets, transforms
root, workers, threads, batch, warmup, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
torch.set_num_threads(threads)
recipe = transforms.Compose([transforms.RandomResizedCrop(224), transforms.RandomHorizontalFlip(), transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
loader = torch.utils.data.DataLoader(datasets.ImageFolder(root + "/train", recipe), batch_size=batch, shuffle=True,
                                     num_workers=workers, drop_last=True, persistent_workers=workers > 0)
batches_of = iter(loader)
def take():
    global batches_of
    try:
        return next(batches_of)
    except StopIteration:  # the next epoch
        batches_of = iter(loader)
        return next(batches_of)
for _ in range(warmup):
    take()
start = time.perf_counter()
for _ in range(batches):
    take()
print(json.dumps({"images_per_sec": batches * batch / (time.perf_counter() - start)}))
'''


def run_checked(args, env, what):
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"compare_input_pytorch.py: {what} failed (exit {done.returncode}):\n"
                 f"{(done.stderr or done.stdout).strip()[-2000:]}")
    return done


def pinned(cores):
    return ["taskset", "-c", "0" if cores == 1 else f"0-{cores - 1}"]


def run_cnnbench(binary, data_dir, cores, batch, warmup, batches, env):
    with tempfile.TemporaryDirectory() as tmp:
        result = os.path.join(tmp, "r.json")
        run_checked(pinned(cores) + [binary, "--mode=input", "--model=resnet50", f"--data_dir={data_dir}",
                                     "--data_name=imagenet", f"--batch_size={batch}", f"--num_warmup_batches={warmup}",
                                     f"--num_batches={batches}", f"--num_data_workers={cores}",
                                     f"--benchmark_log_dir={tmp}", f"--result_json={result}"],
                    env, f"cnnbench --mode=input on {data_dir}")
        with open(result) as f:
            doc = json.load(f)
    return doc["result"]["images_per_sec"], doc["context"]["cpu_model"]


def run_pytorch(python, images, cores, workers, batch, warmup, batches, env):
    out = run_checked(pinned(cores) + [python, "-c", PYTORCH_WORKER, images, str(workers), str(cores), str(batch),
                                       str(warmup), str(batches)], env, "PyTorch DataLoader")
    return json.loads(out.stdout.strip().splitlines()[-1])["images_per_sec"]


def median(values):
    ordered, half = sorted(values), len(values) // 2
    return ordered[half] if len(values) % 2 else (ordered[half - 1] + ordered[half]) / 2


def cell(values, cores):
    m = median(values)
    return f"{m:.1f} ({min(values):.1f}-{max(values):.1f}) | {m / cores:.1f}"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--images", help="a JPEG folder (ROOT/train/<class>/*.JPEG); default: 1000 made here")
    p.add_argument("--cores", type=int, nargs="+", help="core counts to measure (default: 1, and all)")
    p.add_argument("--repeats", type=int, default=5, help="runs per side and core count, alternating")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--warmup", type=int, default=5, help="batches before timing")
    p.add_argument("--batches", type=int, default=60, help="timed batches per run")
    p.add_argument("--binary", default=os.path.join(ROOT, "build", "cnnbench"))
    p.add_argument("--python", default="/usr/bin/python3", help="the Python that has torch and torchvision")
    p.add_argument("--out", default=os.path.join(ROOT, "results", "input_pipeline"))
    args = p.parse_args()
    all_cores = len(os.sched_getaffinity(0))
    cores_list = args.cores or sorted({1, all_cores})
    if max(cores_list) > all_cores:
        sys.exit(f"compare_input_pytorch.py: --cores: this machine lets us use {all_cores} cores")
    env = dict(os.environ, **MALLOC_ENV)

    with tempfile.TemporaryDirectory() as tmp:
        images = args.images
        if not images:
            images = os.path.join(tmp, "jpeg")
            run_checked([args.python, os.path.join(ROOT, "scripts", "make_jpeg_folder.py"), images, "--classes", "10",
                         "--train_per_class", "100", "--val_per_class", "2"], env, "make_jpeg_folder.py")
        shards = os.path.join(tmp, "shards")
        run_checked([args.binary, "make_tfrecords", images, shards, "--train_shards=8", "--validation_shards=1"], env,
                    "cnnbench make_tfrecords")
        rows, cpu = [], "?"
        for cores in cores_list:
            folder, peer, records = [], [], []
            workers, best = 0, 0.0
            for candidate in list(range(cores + 1)) * 2:
                rate = run_pytorch(args.python, images, cores, candidate, args.batch, args.warmup, args.batches, env)
                print(f"{cores} core(s): PyTorch with num_workers={candidate}: {rate:.1f} images/sec (untimed probe)")
                if rate > best:
                    workers, best = candidate, rate
            for r in range(args.repeats):
                rate, cpu = run_cnnbench(args.binary, images, cores, args.batch, args.warmup, args.batches, env)
                folder.append(rate)
                peer.append(run_pytorch(args.python, images, cores, workers, args.batch, args.warmup, args.batches, env))
                records.append(run_cnnbench(args.binary, shards, cores, args.batch, args.warmup, args.batches, env)[0])
                print(f"{cores} core(s), run {r + 1}: cnnbench folder {folder[-1]:.1f}, PyTorch {peer[-1]:.1f}, "
                      f"cnnbench shards {records[-1]:.1f} images/sec", flush=True)
            rows.append({"cores": cores, "pytorch_workers": workers, "repeats": args.repeats, "batch": args.batch, "timed_batches": args.batches,
                         "cnnbench_folder": median(folder), "cnnbench_folder_min": min(folder),
                         "cnnbench_folder_max": max(folder), "cnnbench_shards": median(records),
                         "cnnbench_shards_min": min(records), "cnnbench_shards_max": max(records),
                         "pytorch": median(peer), "pytorch_min": min(peer), "pytorch_max": max(peer),
                         "ratio": median(folder) / median(peer),
                         "runs": json.dumps({"cnnbench_folder": folder, "pytorch": peer, "cnnbench_shards": records})})

    import torch
    import torchvision
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, "decode_vs_pytorch")
    with open(stem + ".csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(stem + ".md", "w") as f:
        f.write(f"Decode + augment (random-resized crop to 224, flip, normalise), ImageNet-sized JPEGs "
                f"({'made by scripts/make_jpeg_folder.py' if not args.images else args.images}), cnnbench vs "
                f"PyTorch {torch.__version__} DataLoader + torchvision {torchvision.__version__}, {cpu}, "
                f"{time.strftime('%Y-%m-%d')}, {platform.node()}\n\n")
        f.write(f"batch {args.batch}, {args.batches} timed batches after {args.warmup}; median of {args.repeats} "
                f"alternating runs per side, range in brackets; per core = median / cores\n\n")
        f.write("| cores | cnnbench, JPEG folder: img/s | per core | cnnbench, TFRecord shards: img/s | per core | "
                "PyTorch DataLoader: img/s | per core | its num_workers | cnnbench / PyTorch |\n"
                "|---|---|---|---|---|---|---|---|---|\n")
        for row in rows:
            runs = json.loads(row["runs"])
            f.write(f"| {row['cores']} | {cell(runs['cnnbench_folder'], row['cores'])} | "
                    f"{cell(runs['cnnbench_shards'], row['cores'])} | {cell(runs['pytorch'], row['cores'])} | "
                    f"{row['pytorch_workers']} | {row['ratio']:.2f}x |\n")
    print(f"wrote {stem}.csv and {stem}.md")


if __name__ == "__main__":
    main()
