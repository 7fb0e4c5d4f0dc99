#!/usr/bin/env python3
"""How far fp16 rounding alone moves the gradients of tests/op_cases.h's tiny_bottleneck_blocks,
with its four conv -> batch norm -> ReLU -> conv chains run every op alone or folded as
kernels/cuda/conv_bn.cc folds them. The GPU tests' tolerances for the fold rest on these figures
(tests/test_cuda_vs_ref.cc). Everything is float64 except what is modelled:
  unfused: each chain's first convolution output rounded to fp16, then exact batch norm + ReLU;
  folded:  the same output, then relu(x * scale + bias) in fp32 with scale and bias rounded to fp16
           (as cuDNN's prologue reads them); backward the batch norm's exact formula through the
           mask that forward applied (conv_bn_kernels.cu).
Needs PyTorch (CPU is enough):  python3 scripts/emulate_conv_bn_fold.py [--seeds 30]
"""
import argparse
import statistics

import torch

torch.set_default_dtype(torch.float64)
EPS = 1e-3


def f16(t):
    return t.half().double()


class RoundToF16(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return f16(x)

    @staticmethod
    def backward(ctx, g):
        return g


class FoldedBnRelu(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, gamma, beta):
        mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3), unbiased=False)
        inv_std = 1 / torch.sqrt(var + EPS)
        k = gamma * inv_std
        scale, bias = f16(k.float().double()), f16((beta - mean * k).float().double())
        pre = (x.float() * scale.float()[None, :, None, None] + bias.float()[None, :, None, None]).double()
        ctx.save_for_backward(x, mean, inv_std, gamma, pre > 0)
        return pre.clamp(min=0)

    @staticmethod
    def backward(ctx, dz):
        x, mean, inv_std, gamma, mask = ctx.saved_tensors
        g = dz * mask
        m = x.numel() / x.shape[1]
        xhat = (x - mean[None, :, None, None]) * inv_std[None, :, None, None]
        g_sum, gx_sum = g.sum((0, 2, 3)), (g * xhat).sum((0, 2, 3))
        k = (gamma * inv_std)[None, :, None, None]
        dx = k * (g - g_sum[None, :, None, None] / m - xhat * gx_sum[None, :, None, None] / m)
        return dx, gx_sum, g_sum


def batch_norm(x, gamma, beta):
    mean = x.mean((0, 2, 3), keepdim=True)
    var = x.var((0, 2, 3), unbiased=False, keepdim=True)
    return (x - mean) / torch.sqrt(var + EPS) * gamma[None, :, None, None] + beta[None, :, None, None]


def parameters(seed):  # as tests/op_cases.h's randomize(): uniform within 1/sqrt(fan_in) + 0.1
    gen = torch.Generator().manual_seed(seed)
    p = {}

    def conv(name, cin, cout, k):
        bound = 1 / (cin * k * k) ** 0.5 + 0.1
        p[name] = (torch.rand(cout, cin, k, k, generator=gen) * 2 - 1) * bound
        p[name + "_bn.gamma"] = torch.rand(cout, generator=gen) + 0.5
        p[name + "_bn.beta"] = (torch.rand(cout, generator=gen) * 2 - 1) * 0.35

    conv("conv0", 3, 16, 3)
    for name, cin, cout, k in [("a1", 16, 8, 1), ("a2", 8, 8, 3), ("a3", 8, 32, 1), ("projection", 16, 32, 1),
                               ("b1", 32, 8, 1), ("b2", 8, 8, 3), ("b3", 8, 32, 1)]:
        conv(name, cin, cout, k)
    bound = 1 / 32 ** 0.5 + 0.1
    p["fc.weight"] = (torch.rand(10, 32, generator=gen) * 2 - 1) * bound
    p["fc.bias"] = (torch.rand(10, generator=gen) * 2 - 1) * bound
    return p


def tiny_bottleneck_blocks(p, images, mode):
    conv = torch.nn.functional.conv2d

    def bn(x, name):
        return batch_norm(x, p[name + "_bn.gamma"], p[name + "_bn.beta"])

    def chain(x, name):  # a chain's first convolution output through its batch norm and ReLU
        if mode == "exact":
            return torch.relu(bn(x, name))
        x = RoundToF16.apply(x)
        if mode == "unfused":
            return torch.relu(bn(x, name))
        return FoldedBnRelu.apply(x, p[name + "_bn.gamma"], p[name + "_bn.beta"])

    x = torch.relu(bn(conv(images, p["conv0"], padding=1), "conv0"))
    y = chain(conv(x, p["a1"]), "a1")
    y = chain(conv(y, p["a2"], stride=2, padding=1), "a2")
    y = bn(conv(y, p["a3"]), "a3")
    x = torch.relu(y + bn(conv(x, p["projection"], stride=2), "projection"))
    y = chain(conv(x, p["b1"]), "b1")
    y = chain(conv(y, p["b2"], padding=1), "b2")
    x = torch.relu(bn(conv(y, p["b3"]), "b3") + x)
    return x.mean((2, 3)) @ p["fc.weight"].T + p["fc.bias"]


def gradients(mode, seed, steps, rate):
    """Parameter and image gradients of the last of `steps` steps (SGD, momentum 0.9, between)."""
    p = {k: v.requires_grad_() for k, v in parameters(1000 + seed).items()}
    images = f16(torch.rand(4, 3, 16, 16, generator=torch.Generator().manual_seed(2000 + seed)) * 2 - 1)
    images.requires_grad_()
    out_grad = f16(torch.rand(4, 10, generator=torch.Generator().manual_seed(3000 + seed)) * 2 - 1)
    velocity = {k: torch.zeros_like(v) for k, v in p.items()}
    for step in range(steps):
        for v in list(p.values()) + [images]:
            v.grad = None
        tiny_bottleneck_blocks(p, images, mode).backward(out_grad)
        if step + 1 < steps:
            with torch.no_grad():
                for k, v in p.items():
                    velocity[k] = 0.9 * velocity[k] + v.grad
                    v -= rate * velocity[k]
    return {k: v.grad.clone() for k, v in p.items()}, images.grad.clone()


def rel(a, b):
    return float((a - b).norm() / b.norm())


def errors(grads, exact):
    """Worst tensor's relative L2 error, all tensors' (each at unit norm), the image gradient's,
    and each tensor's."""
    per = {k: rel(grads[0][k], exact[0][k]) for k in exact[0]}
    unit = lambda g: torch.cat([g[0][k].flatten() / exact[0][k].norm() for k in sorted(exact[0])])
    return max(per.values()), rel(unit(grads), unit(exact)), rel(grads[1], exact[1]), per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=30)
    args = ap.parse_args()
    for steps, rate, what in [(1, 0.0, "one step (the op cases, CudaFusions)"),
                              (2, 0.5, "two steps, an update of rate 0.5 between")]:
        rows = []
        for seed in range(args.seeds):
            exact = gradients("exact", seed, steps, rate)
            rows.append({m: errors(gradients(m, seed, steps, rate), exact) for m in ("unfused", "folded")})
        print(f"## {what}: relative L2 error against exact float64, {args.seeds} seeds (median / max)")
        for i, name in enumerate(["worst parameter gradient", "all parameter gradients (unit-normed)", "image gradient"]):
            u = [r["unfused"][i] for r in rows]
            f = [r["folded"][i] for r in rows]
            held = sum(fi <= 3 * ui + (0.05 if i == 0 else 0.02) for fi, ui in zip(f, u))
            print(f"{name:40s} unfused {statistics.median(u):.3f} / {max(u):.3f}   folded {statistics.median(f):.3f} / "
                  f"{max(f):.3f}   folded <= 3 x unfused + {0.05 if i == 0 else 0.02}: {held}/{len(rows)}")
        folded_bn = [k for k in rows[0]["unfused"][3] if k.split("_bn")[0] in ("a1", "a2", "b1", "b2") and "_bn." in k]
        for extra in (0.05, 0.1):
            held = sum(all(r["folded"][3][k] <= 3 * r["unfused"][3][k] + extra for k in folded_bn) for r in rows)
            print(f"every folded batch norm's gamma and beta gradient within 3 x unfused + {extra}: {held}/{len(rows)} seeds")
        for t in (0.0625, 0.125):
            print(f"worst parameter gradient within {t:.2%}: unfused {sum(r['unfused'][0] <= t for r in rows)}, "
                  f"folded {sum(r['folded'][0] <= t for r in rows)} of {len(rows)}")
        print()


if __name__ == "__main__":
    main()
