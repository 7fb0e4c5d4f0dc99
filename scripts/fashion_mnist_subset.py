#!/usr/bin/env python3
"""Fashion-MNIST with fewer training images: the first N records of the idx training files and
the whole test set, gzip'd, in the published format (a header whose count says N), into OUT.
scripts/gpu_check.sh pack carries it to a lent GPU machine, where the whole set does not fit the
64 MiB a call may carry.
    fashion_mnist_subset.py SRC_DIR OUT_DIR N"""
import gzip
import os
import shutil
import struct
import sys


def first_records(src, dst, n):
    with gzip.open(src, "rb") as f:
        data = f.read()
    if data[:2] != b"\0\0" or data[2] != 8:
        sys.exit(f"{src}: not an idx file of unsigned bytes")
    rank = data[3]
    dims = struct.unpack(f">{rank}I", data[4:4 + 4 * rank])
    per = 1
    for d in dims[1:]:
        per *= d
    count = min(n, dims[0])
    body = data[4 + 4 * rank:]
    if len(body) != dims[0] * per:
        sys.exit(f"{src}: {len(body)} bytes of records, the header announces {dims[0] * per}")
    with gzip.open(dst, "wb", compresslevel=9) as f:
        f.write(data[:4] + struct.pack(">I", count) + data[8:4 + 4 * rank] + body[:count * per])
    return count


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    counts = {stem: first_records(os.path.join(src, stem + ".gz"), os.path.join(out, stem + ".gz"), n)
              for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte")}
    if len(set(counts.values())) != 1:
        sys.exit(f"{src}: {counts} records")
    for name in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(os.path.join(src, name), out)
    print(f"{out}: {counts['train-images-idx3-ubyte']} training images of Fashion-MNIST, its 10,000 test images")


if __name__ == "__main__":
    main()
