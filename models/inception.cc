// Inception v3 (Szegedy et al. 2015, "Rethinking the Inception Architecture") and v4 (Szegedy et
// al. 2016, "Inception-v4, Inception-ResNet") as tf_cnn_benchmarks defines them
// (models/inception_model.py, Inceptionv3Model and Inceptionv4Model): 299 x 299 input, every
// convolution followed by batch norm (epsilon 0.001) and ReLU. v3: no auxiliary head, no dropout;
// the 8 x 8 average pool and the 2048 -> classes linear layer. v4: the mean over the 8 x 8 maps,
// dropout (keep 0.8) and the 1536 -> classes linear layer.
// Differences, said here so nobody has to find them: tf_cnn_benchmarks' batch norm learns only a
// shift (scale=False), this one a scale too, as torchvision's does (one more parameter per
// channel, 17,216 in all); its momentum is 0.1, not tf's decay 0.999 (running statistics only).
// 'SAME' padding of the stride-1 windows is symmetric here as in TensorFlow (odd kernels);
// 'SAME' average pooling divides by the window's pixels inside the image (count_include_pad
// false), as TensorFlow's does.
#include <string>

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

// Inception v4's stem after its three convolutions (147 x 147 x 64): max pool | 3x3 s2 (73 x 73 x
// 160); 1x1 -> 3x3 | 1x1 -> 7x1 -> 1x7 -> 3x3 (71 x 71 x 192); 3x3 s2 | max pool (35 x 35 x 384).
int inception_v4_stem(GraphBuilder& b, int x) {
  x = b.concat({valid_max_pool(b, x, "stem_a.pool"), conv(b, x, 96, 3, 3, "stem_a.conv", 2, Pad::valid)}, "stem_a");
  const int c0 = conv(b, conv(b, x, 64, 1, 1, "stem_b.b0_0"), 96, 3, 3, "stem_b.b0_1", 1, Pad::valid);
  int c1 = conv(b, conv(b, x, 64, 1, 1, "stem_b.b1_0"), 64, 7, 1, "stem_b.b1_1");
  c1 = conv(b, conv(b, c1, 64, 1, 7, "stem_b.b1_2"), 96, 3, 3, "stem_b.b1_3", 1, Pad::valid);
  x = b.concat({c0, c1}, "stem_b");
  return b.concat({conv(b, x, 192, 3, 3, "stem_c.conv", 2, Pad::valid), valid_max_pool(b, x, "stem_c.pool")}, "stem_c");
}

// 35 x 35 x 384: avg pool -> 1x1 | 1x1 | 1x1 -> 3x3 | 1x1 -> 3x3 -> 3x3, 96 channels each
int inception_v4_a(GraphBuilder& b, int x, const std::string& name) {
  const int c0 = conv(b, same_avg_pool(b, x, name + ".b0_pool"), 96, 1, 1, name + ".b0_1");
  const int c1 = conv(b, x, 96, 1, 1, name + ".b1");
  const int c2 = conv(b, conv(b, x, 64, 1, 1, name + ".b2_0"), 96, 3, 3, name + ".b2_1");
  int c3 = conv(b, conv(b, x, 64, 1, 1, name + ".b3_0"), 96, 3, 3, name + ".b3_1");
  c3 = conv(b, c3, 96, 3, 3, name + ".b3_2");
  return b.concat({c0, c1, c2, c3}, name);
}

// Reduction A (k, l, m, n = 192, 224, 256, 384), 35 -> 17: max pool | 3x3 s2 | 1x1 -> 3x3 -> 3x3 s2
int inception_v4_reduction_a(GraphBuilder& b, int x) {
  const int c1 = conv(b, x, 384, 3, 3, "reduction_a.b1", 2, Pad::valid);
  int c2 = conv(b, conv(b, x, 192, 1, 1, "reduction_a.b2_0"), 224, 3, 3, "reduction_a.b2_1");
  c2 = conv(b, c2, 256, 3, 3, "reduction_a.b2_2", 2, Pad::valid);
  return b.concat({valid_max_pool(b, x, "reduction_a.b0_pool"), c1, c2}, "reduction_a");
}

// 17 x 17 x 1024: avg pool -> 1x1 | 1x1 | 1x1 -> 1x7 -> 7x1 | 1x1 -> 1x7 -> 7x1 -> 1x7 -> 7x1
int inception_v4_b(GraphBuilder& b, int x, const std::string& name) {
  const int c0 = conv(b, same_avg_pool(b, x, name + ".b0_pool"), 128, 1, 1, name + ".b0_1");
  const int c1 = conv(b, x, 384, 1, 1, name + ".b1");
  int c2 = conv(b, conv(b, x, 192, 1, 1, name + ".b2_0"), 224, 1, 7, name + ".b2_1");
  c2 = conv(b, c2, 256, 7, 1, name + ".b2_2");
  int c3 = conv(b, conv(b, x, 192, 1, 1, name + ".b3_0"), 192, 1, 7, name + ".b3_1");
  c3 = conv(b, conv(b, c3, 224, 7, 1, name + ".b3_2"), 224, 1, 7, name + ".b3_3");
  c3 = conv(b, c3, 256, 7, 1, name + ".b3_4");
  return b.concat({c0, c1, c2, c3}, name);
}

// Reduction B, 17 -> 8: max pool | 1x1 -> 3x3 s2 | 1x1 -> 1x7 -> 7x1 -> 3x3 s2
int inception_v4_reduction_b(GraphBuilder& b, int x) {
  const int c1 = conv(b, conv(b, x, 192, 1, 1, "reduction_b.b1_0"), 192, 3, 3, "reduction_b.b1_1", 2, Pad::valid);
  int c2 = conv(b, conv(b, x, 256, 1, 1, "reduction_b.b2_0"), 256, 1, 7, "reduction_b.b2_1");
  c2 = conv(b, conv(b, c2, 320, 7, 1, "reduction_b.b2_2"), 320, 3, 3, "reduction_b.b2_3", 2, Pad::valid);
  return b.concat({valid_max_pool(b, x, "reduction_b.b0_pool"), c1, c2}, "reduction_b");
}

// 8 x 8 x 1536: avg pool -> 1x1 | 1x1 | 1x1 -> {1x3, 3x1} | 1x1 -> 1x3 -> 3x1 -> {3x1, 1x3}, 256
// channels each; tf_cnn_benchmarks' ('share',) columns read the 384 and 512 outputs twice.
int inception_v4_c(GraphBuilder& b, int x, const std::string& name) {
  const int c0 = conv(b, same_avg_pool(b, x, name + ".b0_pool"), 256, 1, 1, name + ".b0_1");
  const int c1 = conv(b, x, 256, 1, 1, name + ".b1");
  const int s2 = conv(b, x, 384, 1, 1, name + ".b2_0");
  const int c2 = conv(b, s2, 256, 1, 3, name + ".b2_1");
  const int c3 = conv(b, s2, 256, 3, 1, name + ".b3_1");
  int s4 = conv(b, conv(b, x, 384, 1, 1, name + ".b4_0"), 448, 1, 3, name + ".b4_1");
  s4 = conv(b, s4, 512, 3, 1, name + ".b4_2");
  const int c4 = conv(b, s4, 256, 3, 1, name + ".b4_3");
  const int c5 = conv(b, s4, 256, 1, 3, name + ".b5_3");
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

Graph build_inception4(int64_t batch_size) {
  GraphBuilder b("inception4", {batch_size, 3, 299, 299});
  int x = conv(b, b.input(), 32, 3, 3, "conv0", 2, Pad::valid);  // 149
  x = conv(b, x, 32, 3, 3, "conv1", 1, Pad::valid);               // 147
  x = conv(b, x, 64, 3, 3, "conv2");                              // 147
  x = inception_v4_stem(b, x);                                    // 35 x 35 x 384
  for (int i = 0; i < 4; ++i) x = inception_v4_a(b, x, "inception_a" + std::to_string(i));
  x = inception_v4_reduction_a(b, x);                             // 17 x 17 x 1024
  for (int i = 0; i < 7; ++i) x = inception_v4_b(b, x, "inception_b" + std::to_string(i));
  x = inception_v4_reduction_b(b, x);                             // 8 x 8 x 1536
  for (int i = 0; i < 3; ++i) x = inception_v4_c(b, x, "inception_c" + std::to_string(i));
  x = b.dropout(b.global_avg_pool(x, "pool"), 0.2f, "dropout");   // tf_cnn_benchmarks' dropout(0.8): keep 0.8
  return b.finish(b.linear(x, 1000, "fc"));
}

}  // namespace cnnbench
