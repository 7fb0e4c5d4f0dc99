// kernels/onednn/matmul_weight_grad.cc — the weight gradient of a bf16 1x1 convolution as one
// oneDNN matmul on channels-last activations, where that matmul runs on AMX:
//   dW (oc x ic) = dY^T (oc x K) * X (K x ic),  K = n * oh * ow,
// dY^T read in place through its strides, dW written straight into the plain fp32 arena.
//
// Why: on CPUs with AMX, oneDNN 2.6 runs bf16 convolutions on nhwc activations, and its
// backward-weights kernel ran resnet50's 1x1 layers (batch 32, 2 threads) at 150-500 GFLOP/s,
// where its AMX matmul on the same bytes ran up to 1.35 TFLOP/s (results/amx_bf16/). A strided
// 1x1 convolution reads every stride-th pixel: those rows of X are gathered first into a tensor
// of the activation arena that lives for this step only.
#include "kernels/onednn/plan_internal.h"

#include <omp.h>

#include <cstring>

namespace cnnbench::onednn {

namespace {

// Rows (n, y * stride, x * stride) of an nhwc tensor, `channels` bf16 values each, into a dense
// (n, oh, ow) x channels matrix.
void gather_strided_rows(const uint16_t* src, uint16_t* dst, int64_t n, int64_t h, int64_t w, int64_t oh,
                         int64_t ow, int64_t stride, int64_t channels, int threads) {
  const size_t row_bytes = static_cast<size_t>(channels) * sizeof(uint16_t);
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        std::memcpy(dst + ((i * oh + y) * ow + x) * channels,
                    src + ((i * h + y * stride) * w + x * stride) * channels, row_bytes);
}

}  // namespace

// What both AMX matmul paths take (this file's and matmul_data_grad.cc's): a bf16 1x1
// convolution, ungrouped and unpadded, whose input and output gradient are channels-last.
bool OnednnPlan::channels_last_bf16_1x1(const Node& node, const Node& in, const WeightedState& s) const {
  const ConvAttrs& c = node.conv;
  if (!own_kernels_ || act_dt_ != dt::bf16 || c.groups != 1 || c.kernel_h != 1 || c.kernel_w != 1 || c.pad_h != 0 ||
      c.pad_w != 0)
    return false;
  return s.src.get_desc() == memory::desc(dims(in), dt::bf16, tag::nhwc) &&
         diff_[node.id].get_desc() == memory::desc(dims(node), dt::bf16, tag::nhwc);
}

// The matmul c = a b, where oneDNN runs it on AMX's tiles: elsewhere oneDNN's convolution kernel
// is the one measured (and, without AMX, bf16 activations are not nhwc in the first place).
std::optional<dnnl::matmul::primitive_desc> OnednnPlan::amx_matmul(const memory::desc& a, const memory::desc& b,
                                                                   const memory::desc& c) const {
  try {
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine_);
    if (std::string(pd.impl_info_str()).find("amx") != std::string::npos) return pd;
  } catch (const dnnl::error&) {
  }
  return std::nullopt;
}

bool OnednnPlan::compile_matmul_weight_grad(const Node& node, const Node& in, const WeightedState& s) {
  const ConvAttrs& c = node.conv;
  if (c.bias || !channels_last_bf16_1x1(node, in, s)) return false;

  const memory::dim oc = node.out.c, ic = in.out.c, rows = node.out.n * node.out.h * node.out.w;
  const memory::desc a_md({oc, rows}, dt::bf16, memory::dims{1, oc});  // dY^T, read through strides
  const memory::desc b_md({rows, ic}, dt::bf16, memory::dims{ic, 1});
  const memory::desc c_md({oc, ic}, dt::f32, memory::dims{ic, 1});
  const std::optional<dnnl::matmul::primitive_desc> pd = amx_matmul(a_md, b_md, c_md);
  if (!pd) return false;

  const bool strided = c.stride != 1;
  const memory gathered =
      strided ? alloc(memory::desc({node.out.n, ic, node.out.h, node.out.w}, dt::bf16, tag::nhwc)) : memory();
  const memory dy = diff_[node.id];
  std::vector<memory> uses = {s.src, dy};
  if (strided) uses.push_back(gathered);
  backward_.push_back({{}, {},
                       [this, mm = dnnl::matmul(*pd), a_md, b_md, c_md, x = s.src, dy, gathered, strided,
                        dw = s.diff_weights_plain, shape = in.out, out = node.out, stride = c.stride] {
                         void* rows_of_x = x.get_data_handle();
                         if (strided) {
                           gather_strided_rows(static_cast<const uint16_t*>(rows_of_x),
                                               static_cast<uint16_t*>(gathered.get_data_handle()), shape.n,
                                               shape.h, shape.w, out.h, out.w, stride, shape.c, threads_);
                           rows_of_x = gathered.get_data_handle();
                         }
                         mm.execute(stream_, {{DNNL_ARG_SRC, memory(a_md, engine_, dy.get_data_handle())},
                                              {DNNL_ARG_WEIGHTS, memory(b_md, engine_, rows_of_x)},
                                              {DNNL_ARG_DST, memory(c_md, engine_, dw.get_data_handle())}});
                       },
                       uses});
  ++matmul_weight_grads_;
  return true;
}

}  // namespace cnnbench::onednn
