#!/usr/bin/env python3
"""PyTorch on the same GPU, for the side-by-side with `cnnbench --device=gpu`: torchvision's
resnet50 or vgg16 trained on synthetic data resident on the GPU (as cnnbench's synthetic mode),
SGD with momentum, channels_last, and with --precision=fp16 autocast plus a GradScaler (what
PyTorch users run as AMP); fp32 with TF32 in convolutions and matmuls, as cnnbench. Prints one line per run and, with --json, writes the figures.

  python3 scripts/pytorch_gpu_reference.py --model resnet50 --batch_size 256 --precision fp16
"""
import argparse
import json
import statistics
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="resnet50", choices=["resnet50", "vgg16"])
    p.add_argument("--batch_size", type=int, default=256)
    p.add_argument("--precision", default="fp16", choices=["fp32", "fp16", "bf16"])
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--compile", action="store_true", help="torch.compile the model first")
    p.add_argument("--json", help="write the figures here")
    a = p.parse_args()
    try:
        import torch
        import torchvision
    except ImportError as e:
        sys.exit(f"pytorch_gpu_reference.py: needs torch and torchvision: {e}")
    if not torch.cuda.is_available():
        sys.exit("pytorch_gpu_reference.py: no CUDA device visible to PyTorch")
    torch.backends.cudnn.benchmark = True  # cnnbench times cuDNN's algorithms too
    # fp32: cnnbench runs its fully connected layers in TF32 as its convolutions (PyTorch's default
    # for convolutions only): the same arithmetic on both sides
    torch.backends.cuda.matmul.allow_tf32 = True
    dev = torch.device("cuda")
    model = getattr(torchvision.models, a.model)(num_classes=1000).to(dev).to(memory_format=torch.channels_last)
    if a.compile:
        model = torch.compile(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=4e-5)
    images = torch.randn(a.batch_size, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
    labels = torch.randint(0, 1000, (a.batch_size,), device=dev)
    half = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(a.precision)
    scaler = torch.amp.GradScaler("cuda", enabled=a.precision == "fp16")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=half or torch.float32, enabled=half is not None):
            loss = loss_fn(model(images), labels)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    warmup_start = time.perf_counter()
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    warmup_sec = time.perf_counter() - warmup_start  # with --compile, the compilation too
    times = []
    for _ in range(a.steps):
        start = time.perf_counter()
        loss = step()
        loss.item()  # the step's end, as cnnbench's loss read
        times.append(time.perf_counter() - start)
    speeds = [a.batch_size / t for t in times]
    out = {"framework": f"pytorch {torch.__version__}", "cudnn": torch.backends.cudnn.version(),
           "device": torch.cuda.get_device_name(), "model": a.model, "batch_size": a.batch_size,
           "precision": a.precision, "compile": a.compile, "steps": a.steps,
           "images_per_sec_median": statistics.median(speeds), "images_per_sec_mean": a.batch_size * len(times) / sum(times),
           "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
           "peak_memory_reserved_gib": torch.cuda.max_memory_reserved() / 2**30, "warmup_sec": warmup_sec}
    print(f"pytorch {a.model} b{a.batch_size} {a.precision}{' compiled' if a.compile else ''}: "
          f"{out['images_per_sec_median']:.1f} img/s median ({out['images_per_sec_mean']:.1f} mean), "
          f"{out['peak_memory_gib']:.1f} GiB")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
