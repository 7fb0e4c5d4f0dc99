#!/usr/bin/env python3
"""The index arithmetic of CUDA kernels that CI builds but cannot run, replayed on the CPU
against plain numpy: kernels/cuda/conv_bn_kernels.cu's backward_partials_kernel (rows split over
blocks, 8 channels a thread, lanes = 256 / (channels / 8), the lanes' sums added in order),
kernels/cuda/pool_kernels.cu's tiling max pool (window i -> its input packs, the first maximum
taking the gradient) and its overlapping one (the forward's window places, the backward's gather
over the windows oy0..oy1 x ox0..ox1 that hold an input element), and kernels/cuda/tensor_kernels.cu's bias_grad_packed_kernel (packs of 8
features, rows over blocks, per_pass rows a pass). Every (row, channel) must be summed once;
pooling must match numpy.
Needs numpy:  python3 scripts/emulate_gpu_kernel_indexing.py"""
import numpy as np

THREADS, W, SPLITS_MAX, ROWS_MIN = 256, 8, 1024, 16


def splits_for(rows):
    return (rows + ROWS_MIN - 1) // ROWS_MIN if rows < SPLITS_MAX * ROWS_MIN else SPLITS_MAX


def partials_kernel(g, channels):
    """What backward_partials_kernel writes, summed over splits as the coefficients kernel does."""
    rows, splits = g.shape[0], splits_for(g.shape[0])
    groups = channels // W
    lanes = THREADS // groups
    partials = np.zeros((splits, channels))
    for split in range(splits):
        begin, end = rows * split // splits, rows * (split + 1) // splits
        sums = np.full(lanes * channels, np.nan)  # shared memory: every slot must be written
        for t in range(THREADS):
            group, lane = t % groups, t // groups
            if lane >= lanes:
                continue
            acc = g[begin + lane:end:lanes, group * W:(group + 1) * W].sum(0)
            sums[lane * channels + group * W:lane * channels + group * W + W] = acc
        partials[split] = sums.reshape(lanes, channels).sum(0)
    return partials.sum(0)


BIAS_BLOCKS = 1024


def bias_grad_packed(g):
    """What bias_grad_packed_kernel adds into db (g: rows x features, packs of W features)."""
    rows, features = g.shape
    lanes = features // W
    per_pass = THREADS // lanes
    passes = (rows + per_pass - 1) // per_pass
    blocks = min(BIAS_BLOCKS, passes)
    rows_per_block = (passes + blocks - 1) // blocks * per_pass
    grid = (rows + rows_per_block - 1) // rows_per_block
    packs = g.reshape(rows * lanes, W)
    seen = np.zeros(rows * lanes, dtype=int)
    db = np.zeros(features)
    for block in range(grid):
        begin, end = block * rows_per_block, min(block * rows_per_block + rows_per_block, rows)
        part = np.zeros((W, THREADS))
        for t in range(THREADS):
            lane, row_in_pass = t % lanes, t // lanes
            if row_in_pass >= per_pass:
                continue
            at = np.arange(begin + row_in_pass, end, per_pass) * lanes + lane
            seen[at] += 1
            part[:, t] = packs[at].sum(0)
        for lane in range(lanes):
            db[lane * W:lane * W + W] += part[:, [k * lanes + lane for k in range(per_pass)]].sum(1)
    assert (seen == 1).all(), "a pack read twice or never"
    return db, grid


def pool_window_base(i, cp, h, w, oh, ow, k):
    cg, rest = i % cp, i // cp
    ox, oy, img = rest % ow, (rest // ow) % oh, rest // (ow * oh)
    return ((img * h + oy * k) * w + ox * k) * cp + cg


def tiled_pool(x, k, width, relu_mask=False):
    """Forward and backward (gradient dy) as pool_kernels.cu indexes them, in packs of `width`;
    with relu_mask, a maximum that is not positive passes no gradient (x a ReLU's output)."""
    n, h, w, c = x.shape
    oh, ow, cp = h // k, w // k, c // width
    xp = x.reshape(-1, width)
    dy = np.random.default_rng(5).standard_normal((n * oh * ow * cp, width))
    y, dx = np.zeros_like(dy), np.zeros_like(xp)
    for i in range(n * oh * ow * cp):
        base = pool_window_base(i, cp, h, w, oh, ow, k)
        at = [base + (p // k * w + p % k) * cp for p in range(k * k)]
        vals = xp[at]
        y[i] = vals.max(0)
        first = vals.argmax(0)  # the first maximum, row-major
        if relu_mask:
            first = np.where(vals.max(0) > 0, first, -1)
        for p in range(k * k):
            dx[at[p]] = np.where(first == p, dy[i], 0)
    return y.reshape(n, oh, ow, c), dy.reshape(n, oh, ow, c), dx.reshape(x.shape)


def indexed_pool(x, k, s, pad, width):
    """Overlapping windows as forward_indexed_kernel and backward_indexed_kernel index them, in
    packs of `width`: each window's first maximum's place (255: none), then dx gathered."""
    n, h, w, c = x.shape
    oh, ow, cp = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1, c // width
    xp = x.reshape(-1, width)
    dy = np.random.default_rng(6).standard_normal((n * oh * ow * cp, width))
    y, index = np.zeros_like(dy), np.full(dy.shape, 255)
    for i in range(n * oh * ow * cp):
        cg, rest = i % cp, i // cp
        ox, oy, img = rest % ow, (rest // ow) % oh, rest // (ow * oh)
        y0, x0 = oy * s - pad, ox * s - pad
        best = np.full(width, -np.inf)
        for dyy in range(k):
            for dxx in range(k):
                iy, ix = y0 + dyy, x0 + dxx
                if 0 <= iy < h and 0 <= ix < w:
                    v = xp[((img * h + iy) * w + ix) * cp + cg]
                    better = v > best
                    best, index[i] = np.where(better, v, best), np.where(better, dyy * k + dxx, index[i])
        y[i] = best
    dx = np.zeros_like(xp)
    for i in range(n * h * w * cp):
        cg, rest = i % cp, i // cp
        ix, iy, img = rest % w, (rest // w) % h, rest // (w * h)
        ty, tx = iy + pad, ix + pad
        oy0, oy1 = (ty - k) // s + 1 if ty >= k else 0, min(ty // s, oh - 1)
        ox0, ox1 = (tx - k) // s + 1 if tx >= k else 0, min(tx // s, ow - 1)
        for oy in range(oy0, oy1 + 1):
            for ox in range(ox0, ox1 + 1):
                win = ((img * oh + oy) * ow + ox) * cp + cg
                here = (ty - oy * s) * k + (tx - ox * s)
                assert 0 <= ty - oy * s < k and 0 <= tx - ox * s < k
                dx[i] += np.where(index[win] == here, dy[win], 0)
    return y.reshape(n, oh, ow, c), dy.reshape(n, oh, ow, c), dx.reshape(x.shape)


def scatter_pool(x, k, s, pad, dy):
    """The reference's way (kernels/ref/pool.h), on NHWC: each window sends its gradient to its
    first maximum (padding never wins)."""
    n, h, w, c = x.shape
    _, oh, ow, _ = dy.shape
    y, dx = np.full(dy.shape, -np.inf), np.zeros_like(x)
    for img in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for ch in range(c):
                    best, at = -np.inf, None
                    for iy in range(oy * s - pad, oy * s - pad + k):
                        for ix in range(ox * s - pad, ox * s - pad + k):
                            if 0 <= iy < h and 0 <= ix < w and x[img, iy, ix, ch] > best:
                                best, at = x[img, iy, ix, ch], (img, iy, ix, ch)
                    y[img, oy, ox, ch] = best
                    if at is not None:
                        dx[at] += dy[img, oy, ox, ch]
    return y, dx


def main():
    rng = np.random.default_rng(0)
    for channels, rows in [(8, 1), (8, 63), (24, 100), (64, 1000), (64, 70000), (512, 777), (2048, 130), (136, 3001)]:
        g = rng.standard_normal((rows, channels))
        got = partials_kernel(g, channels)
        assert not np.isnan(got).any() and np.allclose(got, g.sum(0)), (channels, rows)
        print(f"partials: {channels} channels, {rows} rows, {splits_for(rows)} splits: every element summed once")
    for features, rows in [(64, 70001), (1000, 301), (2048, 5), (8, 3), (512, 100003), (64, 1)]:
        g = rng.standard_normal((rows, features))
        got, grid = bias_grad_packed(g)
        assert np.allclose(got, g.sum(0)), (features, rows)
        print(f"bias gradient: {rows} rows x {features} features, {grid} blocks: every element summed once")
    for n, c, h, w, k, width in [(2, 16, 4, 6, 2, 8), (3, 8, 6, 6, 3, 8), (2, 3, 4, 4, 2, 1), (2, 12, 4, 4, 2, 4)]:
        x = rng.standard_normal((n, h, w, c)).round(1)  # ties: the first maximum wins
        y, dy, dx = tiled_pool(x, k, width)
        windows = x.reshape(n, h // k, k, w // k, k, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, h // k, w // k, c, k * k)
        assert np.array_equal(y, windows.max(-1))
        want = np.zeros_like(windows)
        np.put_along_axis(want, windows.argmax(-1)[..., None], dy[..., None], -1)
        want = want.reshape(n, h // k, w // k, c, k, k).transpose(0, 1, 4, 2, 5, 3).reshape(x.shape)
        assert np.array_equal(dx, want), (n, c, h, w, k, width)
        print(f"tiled max pool: {n}x{h}x{w}x{c}, window {k}, {width} channels a thread: forward and backward as numpy")
        # a ReLU's output (a quarter of it zero, some windows all zero): the pool's backward with
        # the mask equals the pool's backward, then the ReLU's
        r = np.maximum(x, 0) * (rng.random(x.shape) > 0.25)
        _, dy, dx = tiled_pool(r, k, width, relu_mask=True)
        _, _, plain = tiled_pool(r, k, width)
        assert np.array_equal(dx, np.where(r > 0, plain, 0)), (n, c, h, w, k, width)
        print(f"  and with the ReLU's mask: as the pool's backward then the ReLU's")
    for n, c, h, w, k, s, pad, width in [(2, 16, 7, 9, 3, 2, 1, 8), (1, 8, 6, 6, 3, 1, 1, 8), (2, 3, 9, 7, 3, 2, 0, 1),
                                         (1, 4, 6, 5, 2, 1, 0, 4), (1, 8, 8, 8, 5, 3, 2, 8), (1, 8, 10, 10, 3, 3, 0, 8)]:
        x = rng.standard_normal((n, h, w, c)).round(1)  # ties: the first maximum wins
        x[0, 0, :2, :] = -np.inf
        y, dy, dx = indexed_pool(x, k, s, pad, width)
        want_y, want_dx = scatter_pool(x, k, s, pad, dy)
        assert np.array_equal(y, want_y) and np.allclose(dx, want_dx), (n, c, h, w, k, s, pad, width)
        print(f"overlapping max pool: {n}x{h}x{w}x{c}, window {k}/{s} pad {pad}, {width} channels a thread: "
              "forward and gathered backward as the reference's scatter")


if __name__ == "__main__":
    main()
