#!/usr/bin/env python3
"""How far 16-bit rounding alone moves the gradients of tests/op_cases.h's VGG-like cases (conv ->
ReLU -> conv, conv -> ReLU -> 2x2 pool, and VGG16's conv512to512 at 14x14) from an exact
computation: the GPU tests' fp16 and bf16 tolerances for them rest on these figures
(tests/test_cuda_vs_ref.cc).

A ReLU after a convolution masks the gradient where its input is positive. A 16-bit plan rounds
every convolution's output before the ReLU sees it, so an element within a rounding step of zero
can fall on the other side: the gradient there is dy on one side and 0 on the other. A handful of
such elements among thousands moves a whole gradient tensor by percents in relative L2, in a
correct plan. Everything is float64 except what is modelled:
  plain: a convolution's output rounded to 16 bits, then the bias added and rounded again;
  graph: the convolution and its bias summed exactly and rounded once (cuDNN's conv + bias + ReLU);
  backward: data gradients and weight gradients rounded to 16 bits (the plan's fp16 dW buffer),
            bias gradients summed exactly; the masks those of each plan's own forward;
  unmasked: plain, with every ReLU's backward left out: what a broken fusion would compute, to show
            that the tests' rules fail it.
Inputs as tests/op_cases.h draws them: images, output gradient, weights and biases uniform, the
weights within +-(1/sqrt(fan_in) + 0.1), all rounded to the type as the reference gets them.
Needs numpy:  python3 scripts/emulate_relu_masks.py [--seeds 30]
"""
import argparse

import numpy as np


def rounded(x, kind):
    if kind == "f16":
        return x.astype(np.float16).astype(np.float64)
    f = x.astype(np.float32).view(np.uint32)  # bf16: round to nearest even on the upper 16 bits
    f = ((f + 0x7FFF + ((f >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return f.view(np.float32).astype(np.float64)


def patches(x, k, pad):  # N,C,H,W -> N*H*W rows of C*k*k (stride 1, same size)
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    cols = np.stack([xp[:, :, i:i + h, j:j + w] for i in range(k) for j in range(k)], axis=2)  # N,C,kk,H,W
    return cols.transpose(0, 3, 4, 1, 2).reshape(n * h * w, c * k * k)


def unpatch(cols, shape, k, pad):  # the adjoint of patches()
    n, c, h, w = shape
    cols = cols.reshape(n, h, w, c, k * k).transpose(0, 3, 4, 1, 2)
    xp = np.zeros((n, c, h + 2 * pad, w + 2 * pad))
    for t in range(k * k):
        i, j = divmod(t, k)
        xp[:, :, i:i + h, j:j + w] += cols[:, :, t]
    return xp[:, :, pad:pad + h, pad:pad + w]


class Net:
    """layers: ("conv", out_c, k, bias), ("relu",), ("pool",), ("linear", out)"""

    def __init__(self, layers, in_shape, rng, kind):
        self.layers, self.params, shape = layers, [], in_shape
        for layer in layers:
            if layer[0] == "conv":
                _, out_c, k, bias = layer
                fan_in = shape[1] * k * k
                bound = 1 / np.sqrt(fan_in) + 0.1
                w = rng.uniform(-bound, bound, (out_c, shape[1] * k * k))
                b = rng.uniform(-bound, bound, out_c) if bias else None
                self.params.append([rounded(w, kind), None if b is None else rounded(b, kind)])
                shape = (shape[0], out_c, shape[2], shape[3])
            elif layer[0] == "pool":
                shape = (shape[0], shape[1], shape[2] // 2, shape[3] // 2)
                self.params.append(None)
            elif layer[0] == "linear":
                fan_in = shape[1] * shape[2] * shape[3]
                bound = 1 / np.sqrt(fan_in) + 0.1
                self.params.append([rounded(rng.uniform(-bound, bound, (layer[1], fan_in)), kind),
                                    rounded(rng.uniform(-bound, bound, layer[1]), kind)])
                shape = (shape[0], layer[1])
            else:
                self.params.append(None)
        self.out_shape = shape

    def step(self, x, dy, kind, mode):
        """One forward and backward; mode exact, plain or graph. Gradients by layer, and dx."""
        r = (lambda t: t) if mode == "exact" else (lambda t: rounded(t, kind))
        # "unmasked": plain's rounding, and every ReLU's backward forgotten (a broken fusion)
        saved = []
        for layer, p in zip(self.layers, self.params):
            if layer[0] == "conv":
                k = layer[2]
                cols = patches(x, k, k // 2)
                n, _, h, w = x.shape
                acc = (cols @ p[0].T).reshape(n, h, w, -1).transpose(0, 3, 1, 2)
                if p[1] is not None:
                    acc = (acc if mode == "graph" else r(acc)) + p[1][None, :, None, None]
                saved.append((cols, x.shape))
                x = r(acc)
            elif layer[0] == "relu":
                saved.append(x > 0)
                x = np.maximum(x, 0)
            elif layer[0] == "pool":
                n, c, h, w = x.shape
                win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
                first = win.argmax(-1)
                saved.append((first, x.shape))
                x = win.max(-1)
            else:
                flat = x.reshape(x.shape[0], -1)
                saved.append((flat, x.shape))
                x = r(r(flat @ p[0].T) + p[1][None, :])
        grads = [None] * len(self.layers)
        g = dy
        for i in reversed(range(len(self.layers))):
            layer, p, s = self.layers[i], self.params[i], saved[i]
            if layer[0] == "linear":
                flat, shape = s
                grads[i] = [r(g.T @ flat), g.sum(0)]
                g = r(g @ p[0]).reshape(shape)
            elif layer[0] == "relu":
                g = g if mode == "unmasked" else g * s
            elif layer[0] == "pool":
                first, shape = s
                n, c, h, w = shape
                win = np.zeros((n, c, h // 2, w // 2, 4))
                np.put_along_axis(win, first[..., None], g[..., None], -1)
                g = win.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(shape)
            else:
                cols, shape = s
                rows = g.transpose(0, 2, 3, 1).reshape(-1, g.shape[1])
                grads[i] = [r(rows.T @ cols), None if p[1] is None else rows.sum(0)]
                g = r(unpatch(rows @ p[0], shape, layer[2], layer[2] // 2))
        return grads, g


def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


CASES = {  # tests/op_cases.h
    "vgg_convs_relu_conv": ([("conv", 16, 3, True), ("relu",), ("conv", 16, 3, True), ("relu",), ("conv", 16, 3, False),
                             ("relu",), ("conv", 16, 1, False), ("linear", 10)], (2, 8, 8, 8)),
    "vgg_blocks_relu_pool": ([("conv", 16, 3, True), ("relu",), ("pool",), ("conv", 16, 3, False), ("relu",), ("pool",),
                              ("linear", 10)], (2, 8, 8, 8)),
    "vgg16_conv512to512_k3s1p1_14_relu": ([("conv", 512, 3, True), ("relu",)], (1, 512, 14, 14)),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--cases", default=",".join(CASES))
    args = ap.parse_args()
    print(f"# scripts/emulate_relu_masks.py, {args.seeds} seeds, numpy {np.__version__}")
    print("# worst relative L2 error of any gradient (parameters and image) against exact float64: median / max,")
    print("# and how many seeds stay within the tolerance tests/test_cuda_vs_ref.cc gives the case")
    for name in args.cases.split(","):
        layers, shape = CASES[name]
        for kind, tolerance in (("f16", 0.005), ("bf16", 0.02)):
            worst = {"plain": [], "graph": [], "unmasked": []}
            for seed in range(args.seeds):
                rng = np.random.default_rng(seed)
                net = Net(layers, shape, rng, kind)
                x = rounded(rng.uniform(-1, 1, shape), kind)
                dy = rounded(rng.uniform(-1, 1, net.out_shape), kind)
                exact, dx_exact = net.step(x, dy, kind, "exact")
                for mode in worst:
                    grads, dx = net.step(x, dy, kind, mode)
                    errs = [rel(dx, dx_exact)]
                    for a, b in zip(grads, exact):
                        if a is None:
                            continue
                        errs += [rel(a[j], b[j]) for j in range(2) if a[j] is not None]
                    worst[mode].append(max(errs))
            for mode in worst:
                v = np.array(worst[mode])
                print(f"{name:36s} {kind:4s} {mode:8s}  median {np.median(v):.4f}  max {v.max():.4f}  "
                      f"within {tolerance}: {(v <= tolerance).sum()}/{len(v)}  within 4x: {(v <= 4 * tolerance).sum()}/{len(v)}")
            # CudaFusions' rule on 15 draws (the fused plan's median worst error within 3x the
            # unfused one's plus a rounding step, and in fp16 within 5%), fused modelled either
            # way against plain, on 2000 paired resamples of the draws above
            step = 0.005 if kind == "f16" else 0.02
            boot = np.random.default_rng(7)
            plain = np.array(worst["plain"])
            for mode in worst:
                v, passed = np.array(worst[mode]), 0
                for _ in range(2000):
                    pick = boot.integers(0, len(v), 15)
                    fused, unfused = np.median(v[pick]), np.median(plain[pick])
                    passed += fused <= 3 * unfused + step and (kind != "f16" or fused <= 0.05)
                print(f"{name:36s} {kind:4s} {mode:8s}  CudaFusions' median rule on 15 draws: {passed / 20:.1f}% of resamples pass")


if __name__ == "__main__":
    main()
