#include "harness/data/imagenet_recipe.h"

#include <algorithm>
#include <cmath>

#include "harness/data/augmentation.h"

namespace cnnbench {
namespace {

// Where output column (or row) i samples the source: two neighbours and the weight of the second.
struct Tap {
  int lo, hi;
  float f;
};

void make_taps(double start, double length, int64_t size, int limit, bool flip, std::vector<Tap>& taps) {
  taps.resize(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const int64_t t = flip ? size - 1 - i : i;
    const double s = std::clamp(start + (t + 0.5) * length / size - 0.5, 0.0, limit - 1.0);
    const int lo = static_cast<int>(s);
    taps[i] = {lo, std::min(lo + 1, limit - 1), static_cast<float>(s - lo)};
  }
}

// Bilinear sample of `window` of `image` into size x size, normalised, CHW.
void resample(const RgbImage& image, const PixelWindow& window, int64_t size, bool flip, float* out) {
  static const Augmentation norm = augmentation_for("imagenet", false);
  thread_local std::vector<Tap> xs, ys;
  make_taps(window.x0, window.w, size, image.width, flip, xs);
  make_taps(window.y0, window.h, size, image.height, false, ys);
  float scale[3], shift[3];  // (v / 255 - mean) / stddev = v * scale + shift
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.0f / (255.0f * norm.stddev[c]);
    shift[c] = -norm.mean[c] / norm.stddev[c];
  }
  const size_t stride = static_cast<size_t>(image.width) * 3, plane = static_cast<size_t>(size * size);
  for (int64_t oy = 0; oy < size; ++oy) {
    const uint8_t* top = image.pixels.data() + ys[oy].lo * stride;
    const uint8_t* bottom = image.pixels.data() + ys[oy].hi * stride;
    const float fy = ys[oy].f;
    float* row = out + oy * size;
    for (int64_t ox = 0; ox < size; ++ox) {
      const Tap& x = xs[ox];
      const uint8_t *a = top + x.lo * 3, *b = top + x.hi * 3, *c = bottom + x.lo * 3, *d = bottom + x.hi * 3;
      for (int k = 0; k < 3; ++k) {
        const float upper = a[k] + (b[k] - a[k]) * x.f, lower = c[k] + (d[k] - c[k]) * x.f;
        row[k * plane + ox] = (upper + (lower - upper) * fy) * scale[k] + shift[k];
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

ImagenetCrop imagenet_crop(int width, int height, bool training, int64_t size, const std::vector<Box>& boxes,
                           std::mt19937_64& rng) {
  const double W = width, H = height;
  if (!training) {  // the shorter side to size x 256/224, then the centre size x size
    const double crop = std::min(W, H) * static_cast<double>(size) / static_cast<double>(size * 256 / 224);
    return {{(W - crop) / 2, (H - crop) / 2, crop, crop}, false};
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
  return {{x0, y0, w, h}, (rng() & 1) != 0};
}

void make_imagenet_example(const unsigned char* jpeg, size_t bytes, const std::string& name, bool training,
                           int64_t size, const std::vector<Box>& boxes, std::mt19937_64& rng, float* out) {
  thread_local DecodedWindow decoded;  // its pixels reused from image to image
  ImagenetCrop crop;
  decode_jpeg_window(
      jpeg, bytes, name,
      [&](int width, int height) {
        crop = imagenet_crop(width, height, training, size, boxes, rng);
        return crop.window;
      },
      static_cast<int>(size), decoded);
  resample(decoded.image, decoded.window, size, crop.flip, out);
}

void make_imagenet_example(const RgbImage& image, bool training, int64_t size, const std::vector<Box>& boxes,
                           std::mt19937_64& rng, float* out) {
  const ImagenetCrop crop = imagenet_crop(image.width, image.height, training, size, boxes, rng);
  resample(image, crop.window, size, crop.flip, out);
}

}  // namespace cnnbench
