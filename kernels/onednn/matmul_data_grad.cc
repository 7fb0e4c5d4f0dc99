// kernels/onednn/matmul_data_grad.cc — the data gradient of a bf16 1x1 convolution of stride 1 as
// one oneDNN matmul on channels-last activations, where that matmul runs on AMX:
//   dX (K x ic) = dY (K x oc) * W (oc x ic),  K = n * h * w,
// dY and dX read and written in place (an nhwc tensor is that matrix), W reordered each step from
// the plain fp32 weights into the layout the matmul asks for.
//
// Why: on CPUs with AMX, oneDNN 2.6 runs the data gradient of bf16 convolutions on nhwc
// activations with an older JIT kernel (`jit:avx512_core_amx_bf16`, not the brgemm kernels its
// forward 1x1 convolution and its matmul use); resnet50's stride-1 1x1 layers took 101 ms of a
// 1.15 s step there (batch 32, 2 threads), and 88 as matmuls (11 of its 12 shapes 1.04-1.63x
// faster, one 0.87x; results/amx_bf16/matmul_data_grad/). A strided 1x1 layer's data gradient is
// zero between the pixels it read: it stays with oneDNN's convolution.
#include "kernels/onednn/plan_internal.h"

namespace cnnbench::onednn {

bool OnednnPlan::compile_matmul_data_grad(const Node& node, const Node& in, const WeightedState& s) {
  if (node.conv.stride != 1 || !channels_last_bf16_1x1(node, in, s)) return false;

  const memory::dim oc = node.out.c, ic = in.out.c, rows = node.out.n * node.out.h * node.out.w;
  const memory::desc a_md({rows, oc}, dt::bf16, memory::dims{oc, 1});
  const memory::desc c_md({rows, ic}, dt::bf16, memory::dims{ic, 1});
  const std::optional<dnnl::matmul::primitive_desc> pd =
      amx_matmul(a_md, memory::desc({oc, ic}, dt::bf16, tag::any), c_md);
  if (!pd) return false;

  // The weights as the matmul reads them: an (oc x ic) view of the plain oihw arena, reordered
  // by a backward step (the arena changes at every update).
  const memory plain_2d(memory::desc({oc, ic}, dt::f32, tag::ab), engine_, s.weights_plain.get_data_handle());
  const memory weights = weights_in(plain_2d, pd->weights_desc(), {&backward_});
  const memory dy = diff_[node.id];
  const memory target = grad_target(in.id, s.src.get_desc());  // nhwc, as the input
  backward_.push_back({{}, {},
                       [this, mm = dnnl::matmul(*pd), a_md, c_md, dy, weights, target] {
                         mm.execute(stream_, {{DNNL_ARG_SRC, memory(a_md, engine_, dy.get_data_handle())},
                                              {DNNL_ARG_WEIGHTS, weights},
                                              {DNNL_ARG_DST, memory(c_md, engine_, target.get_data_handle())}});
                       },
                       {dy, weights, target}});
  finish_grad(in.id, target);
  ++matmul_data_grads_;
  return true;
}

}  // namespace cnnbench::onednn
