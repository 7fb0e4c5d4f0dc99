// kernels/cuda/pool.cc — CudaPlan's max, average and global average pooling (cuDNN, and kernels
// of our own for max pooling whose windows tile the input).
#include "kernels/cuda/plan_internal.h"

#include <memory>
#include <stdexcept>

#include "kernels/cuda/pool_kernels.h"

namespace cnnbench::cuda {

// cuDNN's NHWC max pooling took 14 ms of VGG16's 94 ms fp16 step (b256, H100): windows that
// tile the input get kernels of their own (pool_kernels.h). So do overlapping ones (ResNet's
// 3x3/2: cuDNN's backward took 1.5 ms at b256 on an H100, 333 GB/s) where a gradient flows back:
// the forward keeps each window's maximum's place (one byte an output element, beside the
// arena) and the backward gathers from it.
bool CudaPlan::tiled_max_pool(const Node& node) const {
  if (node.kind != OpKind::max_pool) return false;  // asked of every node: the input has no inputs
  const Shape& in = graph_.nodes[node.inputs[0]].out;
  return node.pool.kernel == node.pool.stride && node.pool.pad == 0 &&
         node.out.h * node.pool.kernel == in.h && node.out.w * node.pool.kernel == in.w &&
         cuda::max_pool_tiled_fits(node.out.n, node.out.c, node.out.h, node.out.w);
}

// Overlapping windows whose input wants a gradient: kernels of ours (pool_kernels.h), the
// windows' maxima's places kept from forward to backward.
bool CudaPlan::indexed_max_pool(const Node& node) const {
  if (node.kind != OpKind::max_pool) return false;  // asked of every node: the input has no inputs
  const Shape& in = graph_.nodes[node.inputs[0]].out;
  return !tiled_max_pool(node) && wants_grad(node.inputs[0]) &&
         cuda::max_pool_indexed_fits(in.n, in.c, in.h, in.w, node.out.h, node.out.w, node.pool.kernel);
}

// A ReLU run in place whose output only a tiling max pool reads (VGG's conv -> ReLU -> pool):
// the pool's backward passes the ReLU's mask on, since a window's maximum is the ReLU's output
// there (positive, or the ReLU passed nothing and the gradient is zero). The ReLU's gradient then
// arrives masked: its producer's backward only reads it (a convolution's bias gradient) and the
// ReLU has no backward of its own. The pool, or -1.
int CudaPlan::masking_pool(int relu) const {
  const Node& r = graph_.nodes[relu];
  if (!fuse_ || r.kind != OpKind::relu || tensors_.alias_of[relu] == relu || consumers_[relu].size() != 1 ||
      !wants_grad(relu))
    return -1;
  const Node& pool = graph_.nodes[consumers_[relu][0]];
  return tiled_max_pool(pool) && !accumulates(pool, 0) ? pool.id : -1;
}

void CudaPlan::compile_pool(const Node& node) {
  NodeState& s = nodes_[node.id];
  const Node& src = graph_.nodes[node.inputs[0]];
  s.pool = std::make_unique<PoolDesc>();
  // window kh x kw moved by sh x sw; global average pooling is one window over the whole map
  int kh = static_cast<int>(node.pool.kernel), kw = kh, sh = static_cast<int>(node.pool.stride), sw = sh,
      pad = static_cast<int>(node.pool.pad);
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  if (node.kind == OpKind::avg_pool)
    mode = node.pool.count_include_pad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                       : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  if (node.kind == OpKind::global_avg_pool) {
    mode = CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    kh = sh = static_cast<int>(src.out.h);
    kw = sw = static_cast<int>(src.out.w);
    pad = 0;
  }
  CUDA_CHECK(cudnnSetPooling2dDescriptor(s.pool->d, mode, CUDNN_NOT_PROPAGATE_NAN, kh, kw, pad, pad, sh, sw));
  auto xd = std::shared_ptr<TensorDesc>(nhwc_desc(src.out, type_));
  int n, c, h, w;
  CUDA_CHECK(cudnnGetPooling2dForwardOutputDim(s.pool->d, xd->d, &n, &c, &h, &w));
  if (h != node.out.h || w != node.out.w) throw std::logic_error("cuDNN's pooling output shape differs from the graph's");
  const bool tiled = tiled_max_pool(node), indexed = indexed_max_pool(node);
  const Shape i = src.out, o = node.out;
  const int64_t kk = node.pool.kernel, ss = node.pool.stride, pp = node.pool.pad;
  if (indexed) s.pool_index = DeviceBuffer(static_cast<size_t>(o.elements()));
  Launch cudnn_forward = [this, &node, &s, xd] {
    const float one = 1.0f, zero = 0.0f;
    CUDA_CHECK(
        cudnnPoolingForward(cudnn_, s.pool->d, &one, xd->d, out_[node.inputs[0]], &zero, s.out->d, out_[node.id]));
  };
  if (tiled)
    push_forward(node.id, [this, &node, i, o, kk] {
      cuda::max_pool_forward_tiled(out_[node.inputs[0]], out_[node.id], i.n, i.c, i.h, i.w, o.h, o.w, kk, type_,
                                   stream_);
    });
  else if (indexed)  // inference (evaluation) keeps no places: cuDNN's forward
    push_forward(
        node.id,
        [this, &node, &s, i, o, kk, ss, pp] {
          cuda::max_pool_forward_indexed(out_[node.inputs[0]], out_[node.id], s.pool_index.as<uint8_t>(), i.n, i.c,
                                         i.h, i.w, o.h, o.w, kk, ss, pp, type_, stream_);
        },
        cudnn_forward);
  else
    push_forward(node.id, std::move(cudnn_forward));
  if (!wants_grad(src.id)) return;
  const bool acc = accumulates(node, 0);
  if (tiled) {
    const bool relu_mask = masking_pool(src.id) == node.id;
    push_backward(node.id, [this, &node, i, o, kk, acc, relu_mask] {
      cuda::max_pool_backward_tiled(out_[node.inputs[0]], diff_[node.id], diff_[node.inputs[0]], i.n, i.c, i.h, i.w,
                                    o.h, o.w, kk, acc, relu_mask, type_, stream_);
    });
    return;
  }
  if (indexed) {
    push_backward(node.id, [this, &node, &s, i, o, kk, ss, pp, acc] {
      cuda::max_pool_backward_indexed(s.pool_index.as<uint8_t>(), diff_[node.id], diff_[node.inputs[0]], i.n, i.c,
                                      i.h, i.w, o.h, o.w, kk, ss, pp, acc, type_, stream_);
    });
    return;
  }
  push_backward(node.id, [this, &node, &s, xd, acc] {
    const float one = 1.0f, beta = acc ? 1.0f : 0.0f;
    CUDA_CHECK(cudnnPoolingBackward(cudnn_, s.pool->d, &one, s.out->d, out_[node.id], s.out->d, diff_[node.id],
                                    xd->d, out_[node.inputs[0]], &beta, xd->d, diff_[node.inputs[0]]));
  });
}

}  // namespace cnnbench::cuda
