// tests/test_files.h — writes small data sets in the exact published file formats.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace cnnbench::testing {

// idx: big-endian magic 0x0000080D (D = dimensions), big-endian sizes, then bytes.
inline std::string idx_bytes(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data) {
  std::string out = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    out += static_cast<char>(d >> 24);
    out += static_cast<char>(d >> 16);
    out += static_cast<char>(d >> 8);
    out += static_cast<char>(d);
  }
  out.append(data.begin(), data.end());
  return out;
}

inline void write_file(const std::string& path, const std::string& bytes, bool gzip) {
  if (!gzip) {
    std::ofstream(path, std::ios::binary) << bytes;
    return;
  }
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

// A small data set in Fashion-MNIST's files: n images of 28x28, labels i % 10.
inline void write_idx_dataset(const std::string& dir, const std::string& prefix, int n, bool gzip) {
  std::vector<uint8_t> pixels(n * 28 * 28), labels(n);
  for (int i = 0; i < n; ++i) {
    labels[i] = static_cast<uint8_t>(i % 10);
    for (int p = 0; p < 784; ++p) pixels[i * 784 + p] = static_cast<uint8_t>((p / 28 == labels[i] * 2) ? 255 : (i + p) % 40);
  }
  const std::string ext = gzip ? ".gz" : "";
  write_file(dir + "/" + prefix + "-images-idx3-ubyte" + ext, idx_bytes({static_cast<uint32_t>(n), 28, 28}, pixels), gzip);
  write_file(dir + "/" + prefix + "-labels-idx1-ubyte" + ext, idx_bytes({static_cast<uint32_t>(n)}, labels), gzip);
}

}  // namespace cnnbench::testing
