#include "harness/data/jpeg_decode.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>  // before jpeglib.h, which needs FILE and size_t
#include <memory>
#include <stdexcept>

#include <jpeglib.h>
#include <jerror.h>  // after jpeglib.h

namespace cnnbench {
namespace {

constexpr uint64_t max_jpeg_pixels = uint64_t{64} << 20;  // 8192 x 8192
// A progressive JPEG's scans each walk every block of their component, and a valid one can hold
// about 2,000 (a band of coefficients at a time, a bit at a time): an 8192 x 8192 grey file of
// 1.5 MB with 704 scans took 15.3 s to decode here, every epoch (0.25 s with the usual 6 scans).
// Encoders write about 10 (mozjpeg's searched scripts a few dozen); libjpeg-turbo's own tools
// stop at 500.
constexpr int max_jpeg_scans = 500;

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  std::longjmp(e->jump, 1);
}

[[noreturn]] void fail_decode(ErrorManager& e, const char* why) {
  std::snprintf(e.message, sizeof(e.message), "%s", why);
  std::longjmp(e.jump, 1);
}

// libjpeg calls it as it goes through the data: stops a file past max_jpeg_scans.
void on_progress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  const int scan = reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number;
  if (scan <= max_jpeg_scans) return;
  char why[JMSG_LENGTH_MAX];
  std::snprintf(why, sizeof(why), "more than %d progressive scans (encoders write about 10)", max_jpeg_scans);
  fail_decode(*reinterpret_cast<ErrorManager*>(cinfo->err), why);
}

// Warnings (a truncated file, bad Huffman data) are errors too, but for stray bytes before a
// marker: the image data are whole (a few ImageNet files have them before their end marker).
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code != JWRN_EXTRANEOUS_DATA) on_error(cinfo);
}

#if JPEG_LIB_VERSION >= 70
int dct_rows(const jpeg_decompress_struct& cinfo) { return cinfo.min_DCT_v_scaled_size; }
#else
int dct_rows(const jpeg_decompress_struct& cinfo) { return cinfo.min_DCT_scaled_size; }
#endif

// The largest of 1, 2, 4, 8 that keeps `shorter` / denominator >= min_side.
unsigned dct_denominator(double shorter, int min_side) {
  unsigned denom = 1;
  while (denom < 8 && shorter / (denom * 2) >= std::max(1, min_side)) denom *= 2;
  return denom;
}

// One row of libjpeg's CMYK output to RGB. Adobe's files (the CMYK JPEGs photographs have: an
// Adobe marker) store the inks inverted, so each byte is the light let through: R = C' K' / 255;
// without the marker, R = (255 - C)(255 - K) / 255. As PIL and TensorFlow's decoder convert them.
void cmyk_to_rgb(const unsigned char* cmyk, unsigned char* rgb, int width, bool adobe_inverted) {
  for (int x = 0; x < width; ++x, cmyk += 4, rgb += 3) {
    const int k = adobe_inverted ? cmyk[3] : 255 - cmyk[3];
    for (int c = 0; c < 3; ++c) {
      const int ink = adobe_inverted ? cmyk[c] : 255 - cmyk[c];
      rgb[c] = static_cast<unsigned char>((ink * k + 127) / 255);
    }
  }
}

enum class Decode { header, whole, window };

// One decoder for the three uses; no std::string or other destructor-bearing local may live across
// a libjpeg call (its errors longjmp out).
void decode(const unsigned char* data, size_t size, const std::string& name, Decode what, int min_side,
            const std::function<PixelWindow(int, int)>* choose, DecodedWindow& out) {
  jpeg_decompress_struct cinfo;
  ErrorManager errors;
  cinfo.err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = on_error;
  errors.pub.emit_message = on_message;
  jpeg_create_decompress(&cinfo);
  jpeg_progress_mgr progress{};
  progress.progress_monitor = on_progress;
  cinfo.progress = &progress;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw std::runtime_error(name + ": corrupt or unsupported JPEG: " + errors.message);
  }
  if (size == 0) fail_decode(errors, "no bytes");
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  // CMYK (and YCCK) JPEGs, as ImageNet's training set holds about 22: decoded as CMYK, then made RGB
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  // A header can announce 65500 x 65500 in a few hundred bytes: a progressive one took 25 s and
  // gigabytes of coefficient buffers before the data ran out. Real photographs are far smaller.
  if (uint64_t{cinfo.image_width} * cinfo.image_height > max_jpeg_pixels) {
    char why[JMSG_LENGTH_MAX];
    std::snprintf(why, sizeof(why), "%ux%u is more than the %llu megapixels cnnbench decodes", cinfo.image_width,
                  cinfo.image_height, static_cast<unsigned long long>(max_jpeg_pixels >> 20));
    fail_decode(errors, why);
  }
  RgbImage& image = out.image;
  const int full_w = static_cast<int>(cinfo.image_width), full_h = static_cast<int>(cinfo.image_height);
  if (what == Decode::header) {
    image.width = full_w;
    image.height = full_h;
    jpeg_destroy_decompress(&cinfo);
    return;
  }
  PixelWindow window{0, 0, static_cast<double>(full_w), static_cast<double>(full_h)};
  if (what == Decode::window) window = (*choose)(full_w, full_h);
  const unsigned denom =
      dct_denominator(what == Decode::window ? std::min(window.w, window.h) : std::min(full_w, full_h), min_side);
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  cinfo.scale_num = 1;
  cinfo.scale_denom = denom;
  jpeg_start_decompress(&cinfo);
  // the window in output pixels, two wider on each side: one for the bilinear taps, and one more
  // as a part's outermost pixels come out of chroma upsampling without their neighbours
  const double d = denom;
  const auto clamp_to = [](double v, JDIMENSION limit) {
    return static_cast<JDIMENSION>(std::clamp(v, 0.0, static_cast<double>(limit)));
  };
  JDIMENSION x_first = 0, width = cinfo.output_width;
  JDIMENSION y_first = 0, y_end = cinfo.output_height;
  if (what == Decode::window) {
    x_first = clamp_to(std::floor(window.x0 / d) - 2, cinfo.output_width);
    const JDIMENSION x_end = clamp_to(std::ceil((window.x0 + window.w) / d) + 2, cinfo.output_width);
    // whole iMCU rows skipped, as a precaution: libjpeg-turbo's issue 915 (fixed after Debian 12's
    // 2.1.5) has jpeg_skip_scanlines hand back wrong rows after a skip ending inside a row group
    // of a scaled 4:2:0 image. The test's odd skips at 1/2, 1/4 and 1/8 did not show it here.
    const JDIMENSION imcu_rows = static_cast<JDIMENSION>(cinfo.max_v_samp_factor * dct_rows(cinfo));
    y_first = clamp_to(std::floor(window.y0 / d) - 2, cinfo.output_height) / imcu_rows * imcu_rows;
    y_end = clamp_to(std::ceil((window.y0 + window.h) / d) + 2, cinfo.output_height);
    if (x_end <= x_first || y_end <= y_first) fail_decode(errors, "the crop window is outside the image");
    width = x_end - x_first;
    if (width < cinfo.output_width) jpeg_crop_scanline(&cinfo, &x_first, &width);  // widened to whole iMCUs
    if (y_first > 0) jpeg_skip_scanlines(&cinfo, y_first);
  }
  image.width = static_cast<int>(cinfo.output_width);
  image.height = static_cast<int>(y_end - y_first);
  const size_t rgb_bytes = static_cast<size_t>(image.width) * image.height * 3;
  try {
    // a CMYK row is read past the image's end, then converted into its place
    image.pixels.resize(rgb_bytes + (cmyk ? static_cast<size_t>(image.width) * 4 : 0));
  } catch (...) {  // out of memory: the decoder's buffers go too
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  while (cinfo.output_scanline < y_end) {
    unsigned char* rgb = image.pixels.data() + static_cast<size_t>(cinfo.output_scanline - y_first) * image.width * 3;
    JSAMPROW row = cmyk ? image.pixels.data() + rgb_bytes : rgb;
    jpeg_read_scanlines(&cinfo, &row, 1);
    if (cmyk) cmyk_to_rgb(row, rgb, image.width, cinfo.saw_Adobe_marker);
  }
  image.pixels.resize(rgb_bytes);
  // rows below the window are never decoded (their damage goes unseen until a crop reaches them)
  if (cinfo.output_scanline < cinfo.output_height)
    jpeg_abort_decompress(&cinfo);
  else
    jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  out.scale_denom = static_cast<int>(denom);
  out.window = {window.x0 / d - x_first, window.y0 / d - y_first, window.w / d, window.h / d};
}

}  // namespace

void read_file_bytes(const std::string& path, std::vector<unsigned char>& bytes) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  struct stat info;
  if (!file || fstat(fileno(file.get()), &info) != 0) throw std::runtime_error(path + ": cannot open");
  bytes.resize(static_cast<size_t>(info.st_size));
  if (std::fread(bytes.data(), 1, bytes.size(), file.get()) != bytes.size())
    throw std::runtime_error(path + ": cannot read");
}

RgbImage decode_jpeg(const std::string& path, int min_side) {
  std::vector<unsigned char> bytes;
  read_file_bytes(path, bytes);
  return decode_jpeg_bytes(bytes.data(), bytes.size(), path, min_side);
}

RgbImage decode_jpeg_bytes(const unsigned char* data, size_t size, const std::string& name, int min_side) {
  DecodedWindow out;
  decode(data, size, name, Decode::whole, min_side, nullptr, out);
  return std::move(out.image);
}

RgbImage read_jpeg_header(const unsigned char* data, size_t size, const std::string& name) {
  DecodedWindow out;
  decode(data, size, name, Decode::header, 1, nullptr, out);
  return std::move(out.image);
}

void decode_jpeg_window(const unsigned char* data, size_t size, const std::string& name,
                        const std::function<PixelWindow(int width, int height)>& choose, int min_side,
                        DecodedWindow& out) {
  decode(data, size, name, Decode::window, min_side, &choose, out);
}

}  // namespace cnnbench
