// tests/test_files.h — writes small data sets in the exact published file formats.
#pragma once

#include <jpeglib.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
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

// A learnable data set in CIFAR-10's binary files (dir/cifar-10-batches-bin/data_batch_1..5.bin,
// test_batch.bin; records of 1 label byte + 1024 red, 1024 green, 1024 blue bytes): label i % 10,
// each class a colour of its own under noise, so random crops and flips keep what tells them apart.
inline void write_cifar10_dataset(const std::string& dir, int per_train_batch, int test_records) {
  const std::string root = dir + "/cifar-10-batches-bin";
  std::filesystem::create_directories(root);
  auto batch = [](int records, int seed) {
    std::string bytes;
    uint32_t state = 2463534242u + static_cast<uint32_t>(seed);
    for (int r = 0; r < records; ++r) {
      const int label = (r + seed) % 10;
      bytes += static_cast<char>(label);
      const int colour[3] = {60 + 40 * (label % 4), 60 + 60 * ((label / 4) % 3), 220 - 16 * label};
      for (int plane = 0; plane < 3; ++plane)
        for (int p = 0; p < 1024; ++p) {
          state ^= state << 13, state ^= state >> 17, state ^= state << 5;  // xorshift32
          bytes += static_cast<char>(std::clamp(colour[plane] + static_cast<int>(state % 61) - 30, 0, 255));
        }
    }
    return bytes;
  };
  for (int b = 1; b <= 5; ++b) write_file(root + "/data_batch_" + std::to_string(b) + ".bin", batch(per_train_batch, b), false);
  write_file(root + "/test_batch.bin", batch(test_records, 0), false);
}

// A w x h JPEG of `components` channels in `space`, quality `quality`, each row's samples from
// `fill(row, y)` (w x components bytes); `configure` may change the settings (a scan script)
// before compression starts.
template <class Fill>
void write_jpeg_rows(const std::string& path, int w, int h, int components, J_COLOR_SPACE space, int quality,
                     Fill fill, const std::function<void(jpeg_compress_struct&)>& configure = {}) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  FILE* f = std::fopen(path.c_str(), "wb");
  jpeg_stdio_dest(&cinfo, f);
  cinfo.image_width = w;
  cinfo.image_height = h;
  cinfo.input_components = components;
  cinfo.in_color_space = space;
  jpeg_set_defaults(&cinfo);
  if (space == JCS_CMYK) cinfo.write_Adobe_marker = TRUE;
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (configure) configure(cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<unsigned char> row(w * components);
  while (cinfo.next_scanline < cinfo.image_height) {
    fill(row.data(), static_cast<int>(cinfo.next_scanline));
    JSAMPROW p = row.data();
    jpeg_write_scanlines(&cinfo, &p, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::fclose(f);
  jpeg_destroy_compress(&cinfo);
}

// write_jpeg's pattern: sample c of pixel x in row y.
inline unsigned char jpeg_pattern(int x, int y, int c, int seed) {
  return static_cast<unsigned char>((x * (c + 1) + y * 2 + seed * 40) % 256);
}

// A w x h JPEG (RGB, or grey) of a smooth pattern that depends on `seed`.
inline void write_jpeg(const std::string& path, int w, int h, int seed, bool grey = false) {
  const int components = grey ? 1 : 3;
  write_jpeg_rows(path, w, h, components, grey ? JCS_GRAYSCALE : JCS_RGB, 90, [&](unsigned char* row, int y) {
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < components; ++c) row[x * components + c] = jpeg_pattern(x, y, c, seed);
  });
}

// A w x h CMYK JPEG as Adobe's software writes them (an Adobe marker, inks stored inverted): the
// inverted inks are write_jpeg's red, green and blue pattern, black's is `k`, so it shows that
// pattern darkened by k / 255.
inline void write_cmyk_jpeg(const std::string& path, int w, int h, int seed, int k) {
  write_jpeg_rows(path, w, h, 4, JCS_CMYK, 95, [&](unsigned char* row, int y) {
    for (int x = 0; x < w; ++x) {
      for (int c = 0; c < 3; ++c) row[x * 4 + c] = jpeg_pattern(x, y, c, seed);
      row[x * 4 + 3] = static_cast<unsigned char>(k);
    }
  });
}

// root/train/<class>/ and root/val/<class>/ JPEG folders: `per_class` training and 1 validation
// image in each of `classes` classes.
inline void write_jpeg_folders(const std::string& root, int classes, int per_class) {
  for (const char* split : {"train", "val"})
    for (int c = 0; c < classes; ++c) {
      const std::string dir = root + "/" + split + "/n0" + std::to_string(1000 + c);
      std::filesystem::create_directories(dir);
      const int n = std::string(split) == "train" ? per_class : 1;
      for (int i = 0; i < n; ++i) write_jpeg(dir + "/img" + std::to_string(i) + ".JPEG", 300 + 20 * i, 260, c * 7 + i);
    }
}

}  // namespace cnnbench::testing
