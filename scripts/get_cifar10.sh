#!/usr/bin/env bash
# Downloads CIFAR-10 in its binary form (cifar-10-binary.tar.gz), checks it, and unpacks it
# to data/cifar-10-batches-bin/ (or the folder given). For machines with a network; cnnbench
# itself never downloads anything.
set -euo pipefail
dest=${1:-data}
url=https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz
md5=c32a1d4ab5d03f1284b67883e8d87530
mkdir -p "$dest"
archive="$dest/cifar-10-binary.tar.gz"
if [ ! -f "$archive" ]; then
  curl -fL --retry 3 -o "$archive.part" "$url"
  mv "$archive.part" "$archive"
fi
echo "$md5  $archive" | md5sum -c -
tar -xzf "$archive" -C "$dest"
for f in data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin; do
  size=$(stat -c %s "$dest/cifar-10-batches-bin/$f")
  [ "$size" -eq 30730000 ] || { echo "get_cifar10.sh: $f has $size bytes, expected 30730000" >&2; exit 1; }
done
echo "CIFAR-10 ready in $dest/cifar-10-batches-bin"
