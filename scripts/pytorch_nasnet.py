"""NASNet-A in PyTorch as cnnbench builds it (models/nasnet.cc), for scripts/pytorch_cpu_worker.py:
tf_cnn_benchmarks' `nasnet` (mobile, 224 x 224), `nasnetlarge` (331 x 331) and the CIFAR-10
`nasnet`; no auxiliary head, no dropout, no drop path; each tensor's ReLU and parameter-free
pooling computed once however many branches read it, as cnnbench's graph (and TensorFlow's
optimizer) does. Parameter counts are cnnbench's (5,289,978; 88,753,150; 3,346,538), checked by
`python3 pytorch_nasnet.py`.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

# nasnet_utils.py's cells: (left op, left input, right op, right input) per sum; which hidden
# states a sum reads (not concatenated into the output)
NORMAL = (
    [("sep5", 0, "sep3", 1), ("sep5", 1, "sep3", 1), ("avg3", 0, "none", 1), ("avg3", 1, "avg3", 1),
     ("sep3", 0, "none", 0)],
    [True, False, False, False, False, False, False])
REDUCTION = (
    [("sep5", 0, "sep7", 1), ("max3", 0, "sep7", 1), ("avg3", 0, "sep5", 1), ("none", 3, "avg3", 2),
     ("sep3", 2, "max3", 0)],
    [True, True, True, False, False, False, False])


def conv_bn(cin, cout, eps, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout, eps=eps))


class Separable(nn.Module):  # (ReLU, depthwise, pointwise, batch norm) twice; ReLU of the input by the cell
    def __init__(self, cin, cout, k, stride, eps):
        super().__init__()
        self.dw1 = nn.Conv2d(cin, cin, k, stride, k // 2, groups=cin, bias=False)
        self.pw1 = nn.Conv2d(cin, cout, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout, eps=eps)
        self.dw2 = nn.Conv2d(cout, cout, k, 1, k // 2, groups=cout, bias=False)
        self.pw2 = nn.Conv2d(cout, cout, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout, eps=eps)

    def forward(self, relu_x):
        y = self.bn1(self.pw1(self.dw1(relu_x)))
        return self.bn2(self.pw2(self.dw2(F.relu(y))))


class FactorizedReduction(nn.Module):  # even and odd pixels, each a 1x1 to half the filters
    def __init__(self, cin, cout, stride, eps):
        super().__init__()
        self.stride = stride
        if stride == 1:
            self.path = conv_bn(cin, cout, eps)
        else:
            self.path1 = nn.Conv2d(cin, cout // 2, 1, stride, bias=False)
            self.path2 = nn.Conv2d(cin, cout // 2, 1, stride, bias=False)
            self.bn = nn.BatchNorm2d(cout, eps=eps)

    def forward(self, x):
        if self.stride == 1:
            return self.path(x)
        odd = F.pad(x, (0, 1, 0, 1))[:, :, 1:, 1:]
        return self.bn(torch.cat([self.path1(x), self.path2(odd)], 1))


class Cell(nn.Module):
    def __init__(self, definition, in_net, in_prev, same_size_prev, filters, stride, eps):
        super().__init__()
        self.sums, self.used = definition
        self.stride = stride
        self.prev_mode = "raw" if in_prev is None else ("reduce" if not same_size_prev else
                                                         ("1x1" if in_prev != filters else "raw"))
        if self.prev_mode == "reduce":
            self.prev = FactorizedReduction(in_prev, filters, 2, eps)
        elif self.prev_mode == "1x1":
            self.prev = conv_bn(in_prev, filters, eps)
        prev_channels = in_net if in_prev is None else (filters if self.prev_mode != "raw" else in_prev)
        self.base = conv_bn(in_net, filters, eps)
        channels = [filters, prev_channels]
        self.ops = nn.ModuleList()
        for left, li, right, ri in self.sums:
            pair = nn.ModuleList()
            for op, i in ((left, li), (right, ri)):
                s = stride if i < 2 else 1
                cin = channels[i]
                if op.startswith("sep"):
                    pair.append(Separable(cin, filters, int(op[3]), s, eps))
                elif op == "none":
                    pair.append(nn.Identity() if s == 1 and cin == filters else conv_bn(cin, filters, eps, s))
                else:
                    pair.append(nn.Identity() if cin == filters else conv_bn(cin, filters, eps))
            self.ops.append(pair)
            channels.append(filters)
        # the unused states of another size or width reduced to the last one's (only the first
        # CIFAR-10 cell's raw stem output: a 1x1)
        self.fix = nn.ModuleDict()
        if prev_channels != filters and not self.used[1]:
            self.fix["1"] = FactorizedReduction(prev_channels, filters, 1, eps)

    def forward(self, net, prev, once):
        """once(kind, x, make): make(x) the first time kind and x are asked for in a step"""
        def relu(i, x):
            return once("relu", x, F.relu)

        if prev is None:
            prev = net
        elif self.prev_mode != "raw":
            prev = self.prev(once("relu", prev, F.relu))
        hidden = [self.base(once("relu", net, F.relu)), prev]
        for (left, li, right, ri), pair in zip(self.sums, self.ops):
            sides = []
            for op, i, module in ((left, li, pair[0]), (right, ri, pair[1])):
                s = self.stride if i < 2 else 1
                x = hidden[i]
                if op.startswith("sep"):
                    sides.append(module(relu(i, x)))
                elif op == "none":
                    sides.append(x if isinstance(module, nn.Identity) else module[1](module[0](relu(i, x))))
                else:
                    pooled = once((op, s), x, lambda t: F.avg_pool2d(t, 3, s, 1, count_include_pad=False)
                                  if op == "avg3" else F.max_pool2d(t, 3, s, 1))
                    sides.append(module(pooled))
            hidden.append(sides[0] + sides[1])
        out = []
        for i, h in enumerate(hidden):
            if not self.used[i]:
                out.append(self.fix[str(i)](h) if str(i) in self.fix else h)
        return torch.cat(out, 1)


class NASNet(nn.Module):
    def __init__(self, image_size, imagenet_stem, stem_multiplier, num_cells, filters, skip_reduction_input, eps,
                 classes):
        super().__init__()
        self.skip = skip_reduction_input
        reduction_at = [k * num_cells // 3 for k in (1, 2)]
        size = image_size
        if imagenet_stem:
            stem = int(32 * stem_multiplier)
            self.stem = nn.Sequential(nn.Conv2d(3, stem, 3, 2, 0, bias=False), nn.BatchNorm2d(stem, eps=eps))
            size = (size - 3) // 2 + 1
        else:
            stem = int(filters * stem_multiplier)
            self.stem = nn.Sequential(nn.Conv2d(3, stem, 3, 1, 1, bias=False), nn.BatchNorm2d(stem, eps=eps))
        # (channels, size) of cell_outputs, None for slim's None
        outputs = [None, (stem, size)]
        self.plan = []  # (cell index into self.cells, prev output index)
        self.cells = nn.ModuleList()

        def add(definition, net, prev_index, scaling, stride):
            prev = outputs[prev_index] if prev_index is not None else None
            f = int(filters * scaling)
            self.cells.append(Cell(definition, net[0], None if prev is None else prev[0],
                                   prev is not None and prev[1] == net[1], f, stride, eps))
            self.plan.append(prev_index)
            size = (net[1] + 1) // 2 if stride == 2 else net[1]
            channels = f * (4 if definition is REDUCTION else 6)
            return channels, size

        net = outputs[-1]
        if imagenet_stem:
            scaling = 0.25
            for _ in range(2):
                prev_index = len(outputs) - 2 if outputs[-2] is not None else None
                net = add(REDUCTION, net, prev_index, scaling, 2)
                outputs.append(net)
                scaling *= 2
        scaling = 1.0
        for n in range(num_cells):
            if self.skip:
                prev_index = len(outputs) - 2 if outputs[-2] is not None else None
            if n in reduction_at:
                scaling *= 2
                net = add(REDUCTION, net, len(outputs) - 2, scaling, 2)
                outputs.append(net)
            if not self.skip:
                prev_index = len(outputs) - 2 if outputs[-2] is not None else None
            net = add(NORMAL, net, prev_index, scaling, 1)
            outputs.append(net)
        self.fc = nn.Linear(net[0], classes)

    def forward(self, x):
        made = {}

        def once(kind, t, make):  # keyed by the tensor's identity; the tensor kept alive with it
            key = (kind, id(t))
            if key not in made:
                made[key] = (t, make(t))
            return made[key][1]

        outputs = [None, self.stem(x)]
        for cell, prev_index in zip(self.cells, self.plan):
            outputs.append(cell(outputs[-1], None if prev_index is None else outputs[prev_index], once))
        x = F.adaptive_avg_pool2d(once("relu", outputs[-1], F.relu), 1)
        return self.fc(torch.flatten(x, 1))


CONFIGS = {  # nasnet_model.py's: image size, ImageNet stem, stem multiplier, cells, filters, skip, epsilon, classes
    "nasnet": (224, True, 1.0, 12, 44, False, 1e-3, 1000),
    "nasnetlarge": (331, True, 3.0, 18, 168, True, 1e-3, 1000),
    "nasnet_cifar10": (32, False, 3.0, 18, 32, False, 1e-5, 10),
}


def build(name):
    """(model, image size, classes)"""
    config = CONFIGS[name]
    return NASNet(*config), config[0], config[-1]


if __name__ == "__main__":
    for name, expected in (("nasnet", 5289978), ("nasnetlarge", 88753150), ("nasnet_cifar10", 3346538)):
        model, size, classes = build(name)
        count = sum(p.numel() for p in model.parameters())
        out = model(torch.zeros(1, 3, size, size)).shape
        print(name, count, "ok" if count == expected else f"expected {expected}", tuple(out))
