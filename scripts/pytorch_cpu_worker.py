"""One PyTorch training run on the CPU for scripts/compare_pytorch.py, run by the Python whose
torch is measured (Debian's 1.13, or 2.x from a virtual environment). Prints one JSON line:
images/sec over the timed steps, every step's time, the first step's time (with torch.compile,
the compilation), the share of the timed steps' thread time spent waiting for a CPU, and the
process's peak RSS.

  python pytorch_cpu_worker.py MODEL BATCH THREADS WARMUP STEPS PRECISION MODE CHANNELS_LAST [profile]
MODE: eager, compile (torch.compile's default mode) or max-autotune; CHANNELS_LAST: 1 or 0.
With `profile`, the timed steps run under torch.profiler and the JSON line carries the events
of PROFILED_OPS in the order they ran (scripts/per_op_table.py reads them).
The model is torchvision's (resnet50, vgg16, ...), the CIFAR ResNet of He et al. 2015 with
option A shortcuts (resnet20 ... resnet110), googlenet as tf_cnn_benchmarks defines it
(convolutions with bias and ReLU, no batch norm, no auxiliary heads: torchvision's has both), or
alexnet as tf_cnn_benchmarks defines it (227 x 227; torchvision's has other channel counts),
each as cnnbench builds it, or inception3: torchvision's inception_v3 at 299 x 299 without its
auxiliary head (the network and parameter count of cnnbench's; its 'SAME' average pools count the
padding and a dropout precedes its last layer, neither of which moves the time), or mobilenet:
torchvision's mobilenet_v2 with tf_cnn_benchmarks' extra 1000 x 1000 layer after its logits, as
cnnbench builds it, or nasnet, nasnetlarge, nasnet_cifar10: NASNet-A as cnnbench builds it
(scripts/pytorch_nasnet.py); SGD with momentum and weight decay; synthetic data of the model's
input size.
"""
import json
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Shortcut(nn.Module):  # CIFAR ResNet option A: subsample, zero-pad channels
    def __init__(self, pad):
        super().__init__()
        self.pad = pad

    def forward(self, x):
        return F.pad(x[:, :, ::2, ::2], (0, 0, 0, 0, self.pad, self.pad))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = Shortcut((cout - cin) // 2) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class CifarResNet(nn.Module):
    def __init__(self, depth):
        super().__init__()
        n = (depth - 2) // 6
        self.conv1 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        layers, cin = [], 16
        for stage, width in enumerate((16, 32, 64)):
            for i in range(n):
                layers.append(Block(cin, width, 2 if stage > 0 and i == 0 else 1))
                cin = width
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.layers(F.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def conv_relu(cin, cout, k, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2), nn.ReLU(inplace=True))


class Inception(nn.Module):  # tf_cnn_benchmarks' inception_v1(k, l, m, n, p, q)
    def __init__(self, cin, k, l, m, n, p, q):
        super().__init__()
        self.one = conv_relu(cin, k, 1)
        self.three = nn.Sequential(conv_relu(cin, l, 1), conv_relu(l, m, 3))
        self.five = nn.Sequential(conv_relu(cin, n, 1), conv_relu(n, p, 5))
        self.pool = nn.Sequential(nn.MaxPool2d(3, 1, 1), conv_relu(cin, q, 1))
        self.channels = k + m + p + q

    def forward(self, x):
        return torch.cat([self.one(x), self.three(x), self.five(x), self.pool(x)], 1)


class GoogLeNet(nn.Module):  # models/googlenet.cc
    def __init__(self):
        super().__init__()
        layers = [conv_relu(3, 64, 7, 2), nn.MaxPool2d(3, 2, 1), conv_relu(64, 64, 1), conv_relu(64, 192, 3),
                  nn.MaxPool2d(3, 2, 1)]
        cin = 192
        for spec in ((64, 96, 128, 16, 32, 32), (128, 128, 192, 32, 96, 64), "pool", (192, 96, 208, 16, 48, 64),
                     (160, 112, 224, 24, 64, 64), (128, 128, 256, 24, 64, 64), (112, 144, 288, 32, 64, 64),
                     (256, 160, 320, 32, 128, 128), "pool", (256, 160, 320, 32, 128, 128),
                     (384, 192, 384, 48, 128, 128)):
            if spec == "pool":
                layers.append(nn.MaxPool2d(3, 2, 1))
                continue
            layers.append(Inception(cin, *spec))
            cin = layers[-1].channels
        self.features = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, 1000)

    def forward(self, x):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


class AlexNet(nn.Module):  # models/alexnet.cc: tf_cnn_benchmarks' (torchvision's has 384 -> 256 -> 256)
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, 4), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(64, 192, 5, 1, 2), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2),
            nn.Conv2d(192, 384, 3, 1, 1), nn.ReLU(inplace=True), nn.Conv2d(384, 384, 3, 1, 1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, 3, 1, 1), nn.ReLU(inplace=True), nn.MaxPool2d(3, 2))
        self.classifier = nn.Sequential(
            nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5), nn.Linear(4096, 1000))
    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))
def build(name):
    """(model, image size, classes)"""
    if name.startswith("resnet") and name[6:].isdigit() and int(name[6:]) in (20, 32, 44, 56, 110):
        return CifarResNet(int(name[6:])), 32, 10
    if name == "googlenet":
        return GoogLeNet(), 224, 1000
    if name == "alexnet":
        return AlexNet(), 227, 1000
    if name in ("nasnet", "nasnetlarge", "nasnet_cifar10"):  # NASNet-A as cnnbench builds it
        import pytorch_nasnet
        return pytorch_nasnet.build(name)
    import torchvision
    if name == "inception3":
        return torchvision.models.inception_v3(aux_logits=False, init_weights=False), 299, 1000
    if name == "mobilenet":  # tf_cnn_benchmarks' adds a classes x classes layer after the logits
        return nn.Sequential(torchvision.models.mobilenet_v2(), nn.Linear(1000, 1000)), 224, 1000
    return getattr(torchvision.models, name)(), 224, 1000


# Operators that do not nest inside one another, so that their times add up: each layer's
# forward and backward, the optimizer step.
PROFILED_OPS = {"aten::convolution", "aten::convolution_backward", "aten::relu_", "aten::relu",
                "aten::threshold_backward", "aten::max_pool2d", "aten::max_pool2d_with_indices_backward",
                "aten::linear", "autograd::engine::evaluate_function: AddmmBackward0", "aten::dropout",
                "autograd::engine::evaluate_function: MulBackward0", "Optimizer.step#SGD.step"}


def profiled_events(prof):
    return [{"name": e.name, "shapes": e.input_shapes, "us": e.cpu_time_total, "start_us": e.time_range.start}
            for e in sorted(prof.events(), key=lambda e: e.time_range.start) if e.name in PROFILED_OPS]


def runqueue_wait_sec():
    """As cnnbench's harness/report/cpu_wait.cc: time the threads were ready but had no CPU."""
    total = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                total += int(f.read().split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1e9


def main():
    name, batch, threads, warmup, steps, precision, mode, channels_last = sys.argv[1:9]
    profiling = sys.argv[9:10] == ["profile"]
    batch, threads, warmup, steps = int(batch), int(threads), int(warmup), int(steps)
    channels_last = channels_last == "1"
    # the interpreter and torch's libraries (a CUDA wheel maps its CUDA libraries too), before any model
    import_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model, size, classes = build(name)
    model = model.train()
    images = torch.randn(batch, 3, size, size)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
        images = images.to(memory_format=torch.channels_last)
    labels = torch.randint(0, classes, (batch,))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    run = model if mode == "eager" else torch.compile(model, mode=None if mode == "compile" else mode)

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = loss_fn(run(images), labels)
        loss.backward()
        optimizer.step()

    start = time.perf_counter()
    step()  # with torch.compile: the compilation (or the cache's answer)
    first = time.perf_counter() - start
    for _ in range(max(0, warmup - 1)):
        step()
    times = []
    waited = runqueue_wait_sec()
    prof = None
    if profiling:
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CPU], record_shapes=True)
        prof.__enter__()
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    if prof:
        prof.__exit__(None, None, None)
    wait = max(0.0, runqueue_wait_sec() - waited) / (threads * sum(times))
    result = {"images_per_sec": batch * steps / sum(times), "step_times": times, "first_step_sec": first,
              "torch": torch.__version__, "cpu_wait_fraction": min(1.0, wait),
              "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
              "import_rss_bytes": import_rss, "omp_places": os.environ.get("OMP_PLACES", "")}
    if prof:
        result["events"] = profiled_events(prof)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
