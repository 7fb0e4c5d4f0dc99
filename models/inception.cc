// Inception v3 (Szegedy et al. 2015, "Rethinking the Inception Architecture") as
// tf_cnn_benchmarks defines it (models/inception_model.py, Inceptionv3Model): 299 x 299 input,
// every convolution followed by batch norm (epsilon 0.001) and ReLU, no auxiliary head, no
// dropout; the 8 x 8 average pool and the 2048 -> classes linear layer.
// Differences, said here so nobody has to find them: tf_cnn_benchmarks' batch norm learns only a
// shift (scale=False), this one a scale too, as torchvision's does (one more parameter per
// channel, 17,216 in all); its momentum is 0.1, not tf's decay 0.999 (running statistics only).
// 'SAME' padding of the stride-1 windows is symmetric here as in TensorFlow (odd kernels);
// 'SAME' average pooling divides by the window's pixels inside the image (count_include_pad
// false), as TensorFlow's does.
#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

namespace {

enum class Pad { same, valid };

// cnn.conv(channels, kernel_h, kernel_w, stride, stride, mode) with use_batch_norm.
int conv(GraphBuilder& b, int x, int64_t channels, int64_t kernel_h, int64_t kernel_w, const std::string& name,
         int64_t stride = 1, Pad pad = Pad::same) {
  const int64_t pad_h = pad == Pad::same ? kernel_h / 2 : 0, pad_w = pad == Pad::same ? kernel_w / 2 : 0;
  const int c = b.conv_rect(x, channels, kernel_h, kernel_w, stride, pad_h, pad_w, name, false, Init::he_normal_fan_in);
  return b.relu(b.batch_norm(c, name + ".bn", 1e-3f), name + ".relu");
}

// ('apool', 3, 3, 1, 1, 'SAME') and ('mpool', 3, 3, 2, 2, 'VALID')
int same_avg_pool(GraphBuilder& b, int x, const std::string& name) { return b.avg_pool(x, 3, 1, 1, name, false); }
int valid_max_pool(GraphBuilder& b, int x, const std::string& name) { return b.max_pool(x, 3, 2, 0, name); }

// 35 x 35: 1x1 | 1x1 -> 5x5 | 1x1 -> 3x3 -> 3x3 | avg pool -> 1x1 (n)
int inception_a(GraphBuilder& b, int x, int64_t n, const std::string& name) {
  const int c0 = conv(b, x, 64, 1, 1, name + ".b0");
  const int c1 = conv(b, conv(b, x, 48, 1, 1, name + ".b1_0"), 64, 5, 5, name + ".b1_1");
  int c2 = conv(b, x, 64, 1, 1, name + ".b2_0");
  c2 = conv(b, conv(b, c2, 96, 3, 3, name + ".b2_1"), 96, 3, 3, name + ".b2_2");
  const int c3 = conv(b, same_avg_pool(b, x, name + ".b3_pool"), n, 1, 1, name + ".b3_1");
  return b.concat({c0, c1, c2, c3}, name);
}

// 35 -> 17: 3x3 s2 | 1x1 -> 3x3 -> 3x3 s2 | max pool s2
int inception_b(GraphBuilder& b, int x, const std::string& name) {
  const int c0 = conv(b, x, 384, 3, 3, name + ".b0", 2, Pad::valid);
  int c1 = conv(b, conv(b, x, 64, 1, 1, name + ".b1_0"), 96, 3, 3, name + ".b1_1");
  c1 = conv(b, c1, 96, 3, 3, name + ".b1_2", 2, Pad::valid);
  return b.concat({c0, c1, valid_max_pool(b, x, name + ".b2_pool")}, name);
}

// 17 x 17, the factorised 7x7s: 1x1 | 1x1 -> 1x7 -> 7x1 | 1x1 -> 7x1 -> 1x7 -> 7x1 -> 1x7 | avg pool -> 1x1
int inception_c(GraphBuilder& b, int x, int64_t n, const std::string& name) {
  const int c0 = conv(b, x, 192, 1, 1, name + ".b0");
  int c1 = conv(b, conv(b, x, n, 1, 1, name + ".b1_0"), n, 1, 7, name + ".b1_1");
  c1 = conv(b, c1, 192, 7, 1, name + ".b1_2");
  int c2 = conv(b, conv(b, x, n, 1, 1, name + ".b2_0"), n, 7, 1, name + ".b2_1");
  c2 = conv(b, conv(b, c2, n, 1, 7, name + ".b2_2"), n, 7, 1, name + ".b2_3");
  c2 = conv(b, c2, 192, 1, 7, name + ".b2_4");
  const int c3 = conv(b, same_avg_pool(b, x, name + ".b3_pool"), 192, 1, 1, name + ".b3_1");
  return b.concat({c0, c1, c2, c3}, name);
}

// 17 -> 8: 1x1 -> 3x3 s2 | 1x1 -> 1x7 -> 7x1 -> 3x3 s2 | max pool s2
int inception_d(GraphBuilder& b, int x, const std::string& name) {
  const int c0 = conv(b, conv(b, x, 192, 1, 1, name + ".b0_0"), 320, 3, 3, name + ".b0_1", 2, Pad::valid);
  int c1 = conv(b, conv(b, x, 192, 1, 1, name + ".b1_0"), 192, 1, 7, name + ".b1_1");
  c1 = conv(b, conv(b, c1, 192, 7, 1, name + ".b1_2"), 192, 3, 3, name + ".b1_3", 2, Pad::valid);
  return b.concat({c0, c1, valid_max_pool(b, x, name + ".b2_pool")}, name);
}

// 8 x 8, the expanded filter bank: 1x1 | 1x1 -> {1x3, 3x1} | 1x1 -> 3x3 -> {1x3, 3x1} | pool -> 1x1;
// tf_cnn_benchmarks' ('share',) columns read the same 1x1 (and 3x3) output twice.
int inception_e(GraphBuilder& b, int x, bool max_pool, const std::string& name) {
  const int c0 = conv(b, x, 320, 1, 1, name + ".b0");
  const int s1 = conv(b, x, 384, 1, 1, name + ".b1_0");
  const int c1 = conv(b, s1, 384, 1, 3, name + ".b1_1");
  const int c2 = conv(b, s1, 384, 3, 1, name + ".b2_1");
  const int s3 = conv(b, conv(b, x, 448, 1, 1, name + ".b3_0"), 384, 3, 3, name + ".b3_1");
  const int c3 = conv(b, s3, 384, 1, 3, name + ".b3_2");
  const int c4 = conv(b, s3, 384, 3, 1, name + ".b4_2");
  const int pool = max_pool ? b.max_pool(x, 3, 1, 1, name + ".b5_pool") : same_avg_pool(b, x, name + ".b5_pool");
  const int c5 = conv(b, pool, 192, 1, 1, name + ".b5_1");
  return b.concat({c0, c1, c2, c3, c4, c5}, name);
}

}  // namespace

Graph build_inception3(int64_t batch_size) {
  GraphBuilder b("inception3", {batch_size, 3, 299, 299});
  int x = conv(b, b.input(), 32, 3, 3, "conv0", 2, Pad::valid);  // 149
  x = conv(b, x, 32, 3, 3, "conv1", 1, Pad::valid);               // 147
  x = conv(b, x, 64, 3, 3, "conv2");                              // 147
  x = valid_max_pool(b, x, "pool0");                              // 73
  x = conv(b, x, 80, 1, 1, "conv3", 1, Pad::valid);               // 73
  x = conv(b, x, 192, 3, 3, "conv4", 1, Pad::valid);              // 71
  x = valid_max_pool(b, x, "pool1");                              // 35
  x = inception_a(b, x, 32, "mixed");                             // 35 x 35 x 256
  x = inception_a(b, x, 64, "mixed_1");                           // 288
  x = inception_a(b, x, 64, "mixed_2");                           // 288
  x = inception_b(b, x, "mixed_3");                               // 17 x 17 x 768
  x = inception_c(b, x, 128, "mixed_4");
  x = inception_c(b, x, 160, "mixed_5");
  x = inception_c(b, x, 160, "mixed_6");
  x = inception_c(b, x, 192, "mixed_7");
  x = inception_d(b, x, "mixed_8");                               // 8 x 8 x 1280
  x = inception_e(b, x, false, "mixed_9");                        // 8 x 8 x 2048
  x = inception_e(b, x, true, "mixed_10");
  x = b.global_avg_pool(x, "pool");                               // tf_cnn_benchmarks' 8x8 'VALID' average pool
  return b.finish(b.linear(x, 1000, "fc"));
}

}  // namespace cnnbench
