// NASNet-A (Zoph et al. 2018, "Learning Transferable Architectures") under tf_cnn_benchmarks'
// names `nasnet` and `nasnetlarge` (ImageNet) and `nasnet` with --data_name=cifar10, built as
// slim defines it (models/tf1_only/nasnet_model.py and nasnet_utils.py there): a stem, normal cells
// that keep the size, and reduction cells that halve it, each cell five pairs of operations on
// its two inputs (the last two cells' outputs), summed, its unused sums concatenated.
//   mobile:  224 x 224, 44 filters, 12 normal cells ("4 @ 1056"), stem multiplier 1
//   large:   331 x 331, 168 filters, 18 normal cells ("6 @ 4032"), stem multiplier 3, the
//            normal cell after a reduction reading the cell before the reduction's input
//   cifar10: 32 x 32, 32 filters, 18 normal cells ("6 @ 768"), a 3x3 convolution as the stem
// tf_cnn_benchmarks calls the builders without classes, so there is no auxiliary head and no
// dropout: the network ends with ReLU and the global average pool, then tf_cnn_benchmarks' own
// fully connected layer. Batch norm epsilon 0.001 (cifar10: 0.00001) as slim's arg scopes.
// Differences, said here so nobody has to find them:
// - tf_cnn_benchmarks calls slim's builders without the NASNet arg scopes (nasnet_*_arg_scope),
//   so there every convolution takes slim.conv2d's defaults: a bias and a ReLU before the batch
//   norm, which learns no scale. That is not the published network; this is (with the arg
//   scopes, as Keras's NASNetMobile and NASNetLarge, whose parameter counts it matches).
// - No drop path. The mobile model has none; the large and cifar10 ones ramp its drop
//   probability up from 0 over 250,000 and 937,500 steps, so a benchmark's steps drop
//   (nearly) nothing, but a long training run would be regularised less than slim's.
// - 'SAME' padding symmetric (TensorFlow puts a stride-2 window's odd padding pixel at the
//   bottom and right; the output sizes are the same), as in models/mobilenet.cc.
// - The ReLU of one tensor, and the parameter-free pooling of one tensor, are computed once
//   where slim writes them once per branch (TensorFlow's graph optimizer merges them too).
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "models/graph_builder.h"
#include "models/model_zoo.h"

namespace cnnbench {

namespace {

// An operation of a cell: separable_KxK_2 (ReLU, separable convolution, batch norm, twice),
// none (the identity, or a 1x1 convolution where the shape changes), 3x3 avg or max pooling.
enum class Op { sep3, sep5, sep7, none, avg3, max3 };

struct CellDef {
  const char* name;
  Op ops[10];             // left and right operation of each of the five sums
  int inputs[10];         // which hidden state each reads: 0 the cell's input, 1 the previous one, 2.. the sums
  bool used[7];           // hidden states read by a sum (not in the output)
};

// nasnet_utils.py's NasNetANormalCell and NasNetAReductionCell
const CellDef kNormal{"cell",
                      {Op::sep5, Op::sep3, Op::sep5, Op::sep3, Op::avg3, Op::none, Op::avg3, Op::avg3, Op::sep3, Op::none},
                      {0, 1, 1, 1, 0, 1, 1, 1, 0, 0},
                      {true, false, false, false, false, false, false}};
const CellDef kReduction{"reduction_cell",
                         {Op::sep5, Op::sep7, Op::max3, Op::sep7, Op::avg3, Op::sep5, Op::none, Op::avg3, Op::sep3, Op::max3},
                         {0, 1, 0, 1, 0, 1, 3, 2, 2, 0},
                         {true, true, true, false, false, false, false}};

class Nasnet {
 public:
  Nasnet(GraphBuilder& b, const NasnetConfig& config) : b_(b), config_(config) {}

  Graph build() {
    const int reductions = 2;  // num_reduction_layers
    std::vector<int> reduction_at;
    for (int k = 1; k <= reductions; ++k) reduction_at.push_back(k * config_.num_cells / (reductions + 1));
    std::vector<int> outputs{-1};  // cell_outputs; -1 for slim's None
    int net;
    if (config_.imagenet_stem) {
      // 3x3 stride-2 'VALID' convolution and batch norm, then two reduction cells at 1/4 and
      // 1/2 of the filters
      const int64_t stem_filters = static_cast<int64_t>(32 * config_.stem_multiplier);
      net = b_.batch_norm(b_.conv(b_.input(), stem_filters, 3, 2, 0, "conv0"), "conv0_bn", config_.bn_epsilon);
      outputs.push_back(net);
      double scaling = 0.25;
      for (int i = 0; i < 2; ++i, scaling *= 2) {
        net = cell(kReduction, net, outputs[outputs.size() - 2], scaling, 2, "cell_stem_" + std::to_string(i));
        outputs.push_back(net);
      }
    } else {
      const int64_t stem_filters = static_cast<int64_t>(config_.filters * config_.stem_multiplier);
      net = b_.batch_norm(b_.conv(b_.input(), stem_filters, 3, 1, 1, "l1_stem_3x3"), "l1_stem_bn", config_.bn_epsilon);
      outputs.push_back(net);
    }
    double scaling = 1;
    int prev = -1;
    for (int n = 0; n < config_.num_cells; ++n) {
      if (config_.skip_reduction_layer_input) prev = outputs[outputs.size() - 2];
      for (size_t r = 0; r < reduction_at.size(); ++r)
        if (reduction_at[r] == n) {
          scaling *= 2;
          net = cell(kReduction, net, outputs[outputs.size() - 2], scaling, 2, "reduction_cell_" + std::to_string(r));
          outputs.push_back(net);
        }
      if (!config_.skip_reduction_layer_input) prev = outputs[outputs.size() - 2];
      net = cell(kNormal, net, prev, scaling, 1, "cell_" + std::to_string(n));
      outputs.push_back(net);
    }
    net = b_.global_avg_pool(relu(net, "final_layer.relu"), "final_layer.global_pool");
    return b_.finish(b_.linear(net, config_.classes, "fc"));  // tf_cnn_benchmarks' affine layer
  }

 private:
  int bn(int x, const std::string& name) { return b_.batch_norm(x, name, config_.bn_epsilon); }
  int conv1x1(int x, int64_t filters, int64_t stride, const std::string& name) {
    return b_.conv(x, filters, 1, stride, 0, name);
  }
  // One ReLU per tensor, however many branches read it.
  int relu(int x, const std::string& name) {
    const auto found = relus_.find(x);
    if (found != relus_.end()) return found->second;
    return relus_[x] = b_.relu(x, name);
  }

  // nasnet_utils.factorized_reduction: halve the size without dropping pixels. Path 1 reads the
  // even rows and columns (slim: a 1x1 stride-2 average pool, here the 1x1 convolution's own
  // stride), path 2 the odd ones (the input padded at the bottom and right, its first row and
  // column dropped, subsampled), each a 1x1 convolution to half the filters, concatenated.
  int factorized_reduction(int x, int64_t filters, int64_t stride, const std::string& scope) {
    if (filters % 2 != 0) throw std::invalid_argument(scope + ": a factorized reduction needs an even number of filters");
    if (stride == 1) return bn(conv1x1(x, filters, 1, scope + ".path_conv"), scope + ".path_bn");
    const int path1 = conv1x1(x, filters / 2, stride, scope + ".path1_conv");
    const int odd = b_.shortcut(x, b_.shape(x).c, stride, scope + ".path2_shift", 1);
    const int path2 = conv1x1(odd, filters / 2, 1, scope + ".path2_conv");
    return bn(b_.concat({path1, path2}, scope + ".path_concat"), scope + ".final_path_bn");
  }

  // _stacked_separable_conv: ReLU, depthwise KxK (depth multiplier 1), pointwise 1x1 to
  // `filters`, batch norm; twice, the stride in the first only
  int separable(int x, int64_t kernel, int64_t stride, int64_t filters, const std::string& scope) {
    for (int layer = 1; layer <= 2; ++layer, stride = 1) {
      const std::string at = fmt_kernel(kernel, layer);
      x = relu(x, scope + ".relu_" + std::to_string(layer));
      x = b_.depthwise_conv(x, kernel, stride, kernel / 2, scope + ".separable_" + at + ".depthwise");
      x = conv1x1(x, filters, 1, scope + ".separable_" + at + ".pointwise");
      x = bn(x, scope + ".bn_sep_" + at);
    }
    return x;
  }
  static std::string fmt_kernel(int64_t kernel, int layer) {
    return std::to_string(kernel) + "x" + std::to_string(kernel) + "_" + std::to_string(layer);
  }

  // 3x3 'SAME' pooling; the average divides by the pixels inside the image, as TensorFlow's
  int pool(int x, Op op, int64_t stride, const std::string& name) {
    const auto key = std::make_tuple(x, op == Op::avg3, stride);
    const auto found = pools_.find(key);
    if (found != pools_.end()) return found->second;
    return pools_[key] = op == Op::avg3 ? b_.avg_pool(x, 3, stride, 1, name, false) : b_.max_pool(x, 3, stride, 1, name);
  }

  // NasNetABaseCell._apply_conv_operation (drop path aside: see the top of this file)
  int operation(int x, Op op, int64_t stride, int64_t filters, const std::string& scope) {
    const int64_t in = b_.shape(x).c;
    switch (op) {
      case Op::sep3: return separable(x, 3, stride, filters, scope);
      case Op::sep5: return separable(x, 5, stride, filters, scope);
      case Op::sep7: return separable(x, 7, stride, filters, scope);
      case Op::none:
        if (stride == 1 && in == filters) return x;
        return bn(conv1x1(relu(x, scope + ".relu"), filters, stride, scope + ".1x1"), scope + ".bn_1");
      case Op::avg3:
      case Op::max3: {
        const int pooled = pool(x, op, stride, scope + (op == Op::avg3 ? ".avg_pool" : ".max_pool"));
        return in == filters ? pooled : bn(conv1x1(pooled, filters, 1, scope + ".1x1"), scope + ".bn_1");
      }
    }
    throw std::logic_error("nasnet: unknown operation");
  }

  // NasNetABaseCell.__call__: `net` the last cell's output, `prev` the one before (-1: none)
  int cell(const CellDef& def, int net, int prev, double filter_scaling, int64_t stride, const std::string& scope) {
    const int64_t filters = static_cast<int64_t>(config_.filters * filter_scaling);
    // _reduce_prev_layer: the previous output brought to this cell's size and filters
    if (prev < 0) {
      prev = net;
    } else if (b_.shape(prev).w != b_.shape(net).w) {
      prev = factorized_reduction(relu(prev, scope + ".prev_relu"), filters, 2, scope + ".prev");
    } else if (b_.shape(prev).c != filters) {
      prev = bn(conv1x1(relu(prev, scope + ".prev_relu"), filters, 1, scope + ".prev_1x1"), scope + ".prev_bn");
    }
    std::vector<int> hidden{bn(conv1x1(relu(net, scope + ".relu"), filters, 1, scope + ".1x1"), scope + ".beginning_bn"),
                            prev};
    for (int i = 0; i < 5; ++i) {
      const std::string at = scope + ".comb_iter_" + std::to_string(i);
      int sides[2];
      for (int side = 0; side < 2; ++side) {
        const int from = def.inputs[2 * i + side];
        // the stride applies to the cell's inputs, not to its own sums
        sides[side] = operation(hidden[from], def.ops[2 * i + side], from < 2 ? stride : 1, filters,
                                at + (side == 0 ? ".left" : ".right"));
      }
      hidden.push_back(b_.add(sides[0], sides[1], at + ".combine"));
    }
    // _combine_unused_states: the unused states, brought to the last one's size and filters
    const Shape last = b_.shape(hidden.back());
    std::vector<int> unused;
    for (size_t i = 0; i < hidden.size(); ++i) {
      if (def.used[i]) continue;
      const Shape s = b_.shape(hidden[i]);
      if (s.h != last.h || s.c != last.c)
        hidden[i] = factorized_reduction(hidden[i], last.c, s.h != last.h ? 2 : 1,
                                         scope + ".cell_output.reduction_" + std::to_string(i));
      unused.push_back(hidden[i]);
    }
    return b_.concat(unused, scope + ".cell_output");
  }

  GraphBuilder& b_;
  const NasnetConfig& config_;
  std::map<int, int> relus_;
  std::map<std::tuple<int, bool, int64_t>, int> pools_;
};

}  // namespace

Graph build_nasnet(const NasnetConfig& config, int64_t batch_size) {
  GraphBuilder b(config.name, {batch_size, 3, config.image_size, config.image_size});
  return Nasnet(b, config).build();
}

// nasnet_model.py's _mobile_imagenet_config, _large_imagenet_config and _cifar_config
Graph build_nasnet_mobile(int64_t batch_size) {
  return build_nasnet({"nasnet", 224, true, 1.0, 12, 44, false, 1e-3f, 1000}, batch_size);
}
Graph build_nasnet_large(int64_t batch_size) {
  return build_nasnet({"nasnetlarge", 331, true, 3.0, 18, 168, true, 1e-3f, 1000}, batch_size);
}
Graph build_nasnet_cifar(int64_t batch_size) {
  return build_nasnet({"nasnet", 32, false, 3.0, 18, 32, false, 1e-5f, 10}, batch_size);
}

}  // namespace cnnbench
