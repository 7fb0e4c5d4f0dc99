// MobileNet v2 (Sandler et al. 2018) as tf_cnn_benchmarks' `mobilenet` builds it
// (models/tf1_only/mobilenet_v2.py, slim's V2_DEF at depth multiplier 1): a 3x3 stride-2
// convolution to 32 channels, 17 inverted residual blocks (1x1 expansion by 6 -> 3x3 depthwise ->
// 1x1 linear projection, each convolution with batch norm, ReLU6 after the first two, the input
// added back where stride and channels allow), a 1x1 convolution to 1280 channels, the global
// average pool, dropout (slim's keep probability 0.8), slim's logits layer (a 1x1 convolution
// with bias, here the same linear layer) and tf_cnn_benchmarks' own final fully connected layer
// on top of it (CNNModel adds one to every model; slim's logits already are one). So it is
// torchvision's mobilenet_v2 (3,504,872 parameters) plus a classes x classes layer.
// Batch norm epsilon 0.001 as slim's; 'SAME' padding symmetric (TensorFlow puts a stride-2
// window's odd padding pixel at the bottom and right; the output sizes are the same).
#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

namespace {

// slim.conv2d with its normalizer and (unless linear) ReLU6
int conv_bn(GraphBuilder& b, int x, int64_t channels, int64_t kernel, int64_t stride, const std::string& name,
            bool relu6 = true) {
  const int c = b.conv(x, channels, kernel, stride, kernel / 2, name);
  const int bn = b.batch_norm(c, name + ".bn", 1e-3f);
  return relu6 ? b.relu6(bn, name + ".relu6") : bn;
}

// ops.expanded_conv: expansion (skipped at factor 1) -> depthwise -> projection [+ input]
int inverted_residual(GraphBuilder& b, int x, int64_t expansion, int64_t channels, int64_t stride,
                      const std::string& name) {
  const int64_t in_channels = b.shape(x).c;
  int y = expansion == 1 ? x : conv_bn(b, x, in_channels * expansion, 1, 1, name + ".expand");
  y = b.relu6(b.batch_norm(b.depthwise_conv(y, 3, stride, 1, name + ".depthwise"), name + ".depthwise.bn", 1e-3f),
              name + ".depthwise.relu6");
  y = conv_bn(b, y, channels, 1, 1, name + ".project", false);
  return stride == 1 && in_channels == channels ? b.add(y, x, name + ".add") : y;
}

}  // namespace

Graph build_mobilenet(int64_t batch_size) {
  GraphBuilder b("mobilenet", {batch_size, 3, 224, 224});
  int x = conv_bn(b, b.input(), 32, 3, 2, "conv0");  // 112
  struct Block {
    int64_t expansion, channels, stride;
  };
  const Block blocks[] = {{1, 16, 1}, {6, 24, 2}, {6, 24, 1}, {6, 32, 2}, {6, 32, 1}, {6, 32, 1},
                          {6, 64, 2}, {6, 64, 1}, {6, 64, 1}, {6, 64, 1}, {6, 96, 1}, {6, 96, 1},
                          {6, 96, 1}, {6, 160, 2}, {6, 160, 1}, {6, 160, 1}, {6, 320, 1}};
  int i = 0;
  for (const Block& block : blocks)
    x = inverted_residual(b, x, block.expansion, block.channels, block.stride, "block" + std::to_string(++i));
  x = conv_bn(b, x, 1280, 1, 1, "conv_last");  // 7 x 7 x 1280
  x = b.dropout(b.global_avg_pool(x, "pool"), 0.2f, "dropout");
  x = b.linear(x, 1000, "logits");  // slim's Conv2d_1c_1x1
  return b.finish(b.linear(x, 1000, "fc"));  // tf_cnn_benchmarks' affine layer after the model
}

}  // namespace cnnbench
