#!/usr/bin/env python3
"""Writes an ImageNet-style JPEG folder: ROOT/train/<class>/*.JPEG and ROOT/val/<class>/*.JPEG.

Images are ImageNet-sized (500 x 375 by default, quality 90) and photograph-like for the JPEG
coder: smooth colour fields with edges and texture, so that they compress to about ImageNet's
110 kB per image and decode at about its cost. Deterministic for a given --seed.

  scripts/make_jpeg_folder.py ROOT --classes 10 --train_per_class 50 --val_per_class 5
"""
import argparse
import os
import sys

import numpy as np
from PIL import Image


def photo_like(rng, width, height):
    # low-frequency colour fields, upsampled: the sky-and-ground part of a photograph
    coarse = rng.uniform(0, 255, size=(6, 8, 3)).astype(np.uint8)
    base = np.asarray(Image.fromarray(coarse).resize((width, height), Image.BICUBIC), dtype=np.float32)
    # a few hard-edged shapes: objects
    yy, xx = np.mgrid[0:height, 0:width]
    for _ in range(rng.integers(3, 7)):
        cx, cy, r = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(20, 120)
        mask = (xx - cx) ** 2 + (yy - cy) ** 2 < r * r
        base[mask] = rng.uniform(0, 255, size=3)
    # texture: what makes a photograph's JPEG ~100 kB rather than ~20 kB
    base += rng.normal(0, 18, size=base.shape)
    return Image.fromarray(np.clip(base, 0, 255).astype(np.uint8))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("root")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--train_per_class", type=int, default=20)
    p.add_argument("--val_per_class", type=int, default=2)
    p.add_argument("--width", type=int, default=500)
    p.add_argument("--height", type=int, default=375)
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    for name in ("classes", "train_per_class", "width", "height"):
        if getattr(a, name) < 1:
            sys.exit(f"make_jpeg_folder.py: --{name} must be at least 1")
    if a.val_per_class < 0 or not 1 <= a.quality <= 100:
        sys.exit("make_jpeg_folder.py: --val_per_class must be >= 0 and --quality 1..100")
    rng = np.random.default_rng(a.seed)
    total, size = 0, 0
    for split, per_class in (("train", a.train_per_class), ("val", a.val_per_class)):
        for c in range(a.classes):
            folder = os.path.join(a.root, split, f"n{c:08d}")
            os.makedirs(folder, exist_ok=True)
            for i in range(per_class):
                path = os.path.join(folder, f"{split}_{c}_{i}.JPEG")
                photo_like(rng, a.width, a.height).save(path, quality=a.quality)
                total += 1
                size += os.path.getsize(path)
    print(f"{a.root}: {total} JPEG files, {a.width}x{a.height}, quality {a.quality}, "
          f"{size / max(1, total) / 1000:.0f} kB each on average")


if __name__ == "__main__":
    main()
