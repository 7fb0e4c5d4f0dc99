// harness/data/jpeg_decode.h — JPEG to RGB with libjpeg-turbo: a whole image, or only the part a
// crop needs (the rows and iMCU columns around a window, as TensorFlow's decode_and_crop_jpeg),
// reduced by libjpeg-turbo's DCT scaling (1/2, 1/4, 1/8) as far as the size wanted allows. Errors
// and warnings (a truncated file, bad Huffman data) are errors naming the file: a benchmark must
// not train on half-grey images without saying so. CMYK is refused, and so is any image of more
// than 64 megapixels (8192 x 8192), before anything is decoded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cnnbench {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // height x width x 3
};

// Decodes a JPEG file to RGB, reduced by 1/2, 1/4 or 1/8 while its shorter side stays >= min_side.
RgbImage decode_jpeg(const std::string& path, int min_side);
// The same for JPEG bytes in memory; `name` (a file, a shard and offset) is what errors name.
RgbImage decode_jpeg_bytes(const unsigned char* data, size_t size, const std::string& name, int min_side);
// The width and height alone (no pixels), with the same checks of the header.
RgbImage read_jpeg_header(const unsigned char* data, size_t size, const std::string& name);
// A file's bytes into `bytes` (reused: no allocation once it is large enough).
void read_file_bytes(const std::string& path, std::vector<unsigned char>& bytes);

// A window of an image, in pixels (x0, y0 the top-left corner; edges, not centres).
struct PixelWindow {
  double x0 = 0, y0 = 0, w = 0, h = 0;
};

// What decode_jpeg_window made: `image` holds the decoded part, and `window` is the window asked
// for in `image`'s pixels (shifted by the part's offset, divided by the DCT scale).
struct DecodedWindow {
  RgbImage image;
  PixelWindow window;
  int scale_denom = 1;
};

// Decodes the part of an image that `choose(width, height)` asks for (called once the header is
// read, with the full size), with two pixels around it for bilinear sampling, reduced while the
// window's shorter side stays >= min_side. `out` is reused from call to call.
void decode_jpeg_window(const unsigned char* data, size_t size, const std::string& name,
                        const std::function<PixelWindow(int width, int height)>& choose, int min_side,
                        DecodedWindow& out);

}  // namespace cnnbench
