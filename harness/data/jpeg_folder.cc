#include "harness/data/jpeg_folder.h"

#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

namespace cnnbench {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t max_jpeg_pixels = uint64_t{64} << 20;  // 8192 x 8192

bool is_jpeg(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".jpeg" || ext == ".jpg";
}

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

// Warnings (a truncated file, bad Huffman data) are errors too: a benchmark must not train on
// half-grey images without saying so.
void on_message(j_common_ptr cinfo, int level) {
  if (level < 0) on_error(cinfo);
}

// Bilinear sample of the region (x0, y0, w, h) of `image` into size x size, normalised, CHW.
void resample(const RgbImage& image, double x0, double y0, double w, double h, int64_t size, bool flip,
              const Augmentation& norm, float* out) {
  for (int64_t oy = 0; oy < size; ++oy) {
    const double sy = std::clamp(y0 + (oy + 0.5) * h / size - 0.5, 0.0, image.height - 1.0);
    const int y_lo = static_cast<int>(sy), y_hi = std::min(y_lo + 1, image.height - 1);
    const double fy = sy - y_lo;
    for (int64_t ox = 0; ox < size; ++ox) {
      const int64_t tx = flip ? size - 1 - ox : ox;
      const double sx = std::clamp(x0 + (tx + 0.5) * w / size - 0.5, 0.0, image.width - 1.0);
      const int x_lo = static_cast<int>(sx), x_hi = std::min(x_lo + 1, image.width - 1);
      const double fx = sx - x_lo;
      for (int c = 0; c < 3; ++c) {
        auto at = [&](int y, int x) { return static_cast<double>(image.pixels[(y * image.width + x) * 3 + c]); };
        const double v = (1 - fy) * ((1 - fx) * at(y_lo, x_lo) + fx * at(y_lo, x_hi)) +
                         fy * ((1 - fx) * at(y_hi, x_lo) + fx * at(y_hi, x_hi));
        out[(c * size + oy) * size + ox] = static_cast<float>((v / 255.0 - norm.mean[c]) / norm.stddev[c]);
      }
    }
  }
}

// The share of `box` (fractions of a W x H image) inside the crop (x0, y0, w, h) in pixels.
double covered_fraction(const Box& box, double W, double H, double x0, double y0, double w, double h) {
  const double bx0 = box.xmin * W, by0 = box.ymin * H, bx1 = box.xmax * W, by1 = box.ymax * H;
  const double ix = std::max(0.0, std::min(bx1, x0 + w) - std::max(bx0, x0));
  const double iy = std::max(0.0, std::min(by1, y0 + h) - std::max(by0, y0));
  return ix * iy / ((bx1 - bx0) * (by1 - by0));
}

}  // namespace

JpegFolder scan_jpeg_folder(const std::string& root, const std::vector<std::string>* classes) {
  if (!fs::is_directory(root)) throw std::runtime_error(root + ": no such folder (expected <class>/*.JPEG inside)");
  JpegFolder f;
  f.root = root;
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory()) found.push_back(entry.path().filename().string());
  std::sort(found.begin(), found.end());
  f.classes = classes ? *classes : found;
  std::map<std::string, int32_t> index;
  for (size_t i = 0; i < f.classes.size(); ++i) index[f.classes[i]] = static_cast<int32_t>(i);
  for (const std::string& name : found) {
    if (!index.count(name)) throw std::runtime_error(root + "/" + name + ": a class the training folder does not have");
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(fs::path(root) / name))
      if (entry.is_regular_file() && is_jpeg(entry.path())) files.push_back(entry.path().string());
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) {
      f.files.push_back(file);
      f.labels.push_back(index[name]);
    }
  }
  if (f.files.empty()) throw std::runtime_error(root + ": no JPEG files in its class folders");
  return f;
}

static RgbImage decode_jpeg_data(const unsigned char* data, size_t size, const std::string& name, int min_side, bool pixels);

RgbImage decode_jpeg(const std::string& path, int min_side) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  const std::vector<unsigned char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_jpeg_bytes(bytes.data(), bytes.size(), path, min_side);
}

RgbImage decode_jpeg_bytes(const unsigned char* data, size_t size, const std::string& name, int min_side) {
  return decode_jpeg_data(data, size, name, min_side, true);
}

RgbImage read_jpeg_header(const unsigned char* data, size_t size, const std::string& name) {
  return decode_jpeg_data(data, size, name, 1, false);
}

// With `pixels` false, only the header: the size, and the checks before any decoding.
static RgbImage decode_jpeg_data(const unsigned char* data, size_t size, const std::string& name, int min_side, bool pixels) {
  RgbImage image;
  jpeg_decompress_struct cinfo;
  ErrorManager errors;
  cinfo.err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = on_error;
  errors.pub.emit_message = on_message;
  jpeg_create_decompress(&cinfo);
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw std::runtime_error(name + ": corrupt or unsupported JPEG: " + errors.message);
  }
  if (size == 0) fail_decode(errors, "no bytes");
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK)
    fail_decode(errors, "CMYK images are not supported");
  // A header can announce 65500 x 65500 in a few hundred bytes: a progressive one took 25 s and
  // gigabytes of coefficient buffers before the data ran out. Real photographs are far smaller.
  if (uint64_t{cinfo.image_width} * cinfo.image_height > max_jpeg_pixels) {
    char why[JMSG_LENGTH_MAX];  // no std::string: longjmp would skip its destructor
    std::snprintf(why, sizeof(why), "%ux%u is more than the %llu megapixels cnnbench decodes", cinfo.image_width,
                  cinfo.image_height, static_cast<unsigned long long>(max_jpeg_pixels >> 20));
    fail_decode(errors, why);
  }
  if (!pixels) {
    image.width = static_cast<int>(cinfo.image_width);
    image.height = static_cast<int>(cinfo.image_height);
    jpeg_destroy_decompress(&cinfo);
    return image;
  }
  cinfo.out_color_space = JCS_RGB;
  const unsigned shorter = std::min(cinfo.image_width, cinfo.image_height);
  unsigned denom = 1;
  while (denom < 8 && shorter / (denom * 2) >= static_cast<unsigned>(min_side)) denom *= 2;
  cinfo.scale_num = 1;
  cinfo.scale_denom = denom;
  jpeg_start_decompress(&cinfo);
  image.width = static_cast<int>(cinfo.output_width);
  image.height = static_cast<int>(cinfo.output_height);
  image.pixels.resize(static_cast<size_t>(image.width) * image.height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * image.width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return image;
}

JpegFolderSource::JpegFolderSource(JpegFolder folder, bool training, int64_t size)
    : folder_(std::move(folder)), training_(training), size_(size) {}

void JpegFolderSource::make(int64_t index, std::mt19937_64& rng, float* out) const {
  const RgbImage image = decode_jpeg(folder_.files[index], imagenet_decode_side(training_, size_));
  make_imagenet_example(image, training_, size_, {}, rng, out);
}

void make_imagenet_example(const RgbImage& image, bool training, int64_t size, const std::vector<Box>& boxes,
                           std::mt19937_64& rng, float* out) {
  static const Augmentation normalisation = augmentation_for("imagenet", false);
  const double W = image.width, H = image.height;
  if (!training) {
    const double scale = imagenet_decode_side(false, size) / std::min(W, H), crop = size / scale;
    resample(image, (W - crop) / 2, (H - crop) / 2, crop, crop, size, false, normalisation, out);
    return;
  }
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  // with boxes, a crop must cover a tenth of one picked at random (TensorFlow's min_object_covered)
  const Box* box = boxes.empty() ? nullptr : &boxes[rng() % boxes.size()];
  double w = 0, h = 0, x0 = 0, y0 = 0;
  bool found = false;
  for (int attempt = 0; attempt < (box ? 100 : 10) && !found; ++attempt) {
    const double area = W * H * (0.08 + 0.92 * unit(rng));
    const double aspect = std::exp(std::log(3.0 / 4.0) + unit(rng) * (std::log(4.0 / 3.0) - std::log(3.0 / 4.0)));
    w = std::round(std::sqrt(area * aspect));
    h = std::round(std::sqrt(area / aspect));
    if (w > 0 && h > 0 && w <= W && h <= H) {
      x0 = std::floor(unit(rng) * (W - w + 1));
      y0 = std::floor(unit(rng) * (H - h + 1));
      found = !box || covered_fraction(*box, W, H, x0, y0, w, h) >= 0.1;
    }
  }
  if (!found) {  // torchvision's fallback: the largest centred crop within the aspect range
    const double ratio = W / H;
    w = ratio < 3.0 / 4.0 ? W : ratio > 4.0 / 3.0 ? std::round(H * 4.0 / 3.0) : W;
    h = ratio < 3.0 / 4.0 ? std::round(W * 4.0 / 3.0) : H;
    x0 = (W - w) / 2;
    y0 = (H - h) / 2;
  }
  resample(image, x0, y0, w, h, size, (rng() & 1) != 0, normalisation, out);
}

}  // namespace cnnbench
