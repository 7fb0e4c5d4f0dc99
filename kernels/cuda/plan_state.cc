// kernels/cuda/plan_state.cc — CudaPlan's state between host and device: upload_state() and
// download_state() (plain <-> device layouts), reading outputs and gradients out, seeding the
// output gradient, and the device arena's gradient offsets.
#include "kernels/cuda/plan_internal.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/tensor_kernels.h"

namespace cnnbench::cuda {

void CudaPlan::upload_state() {
  wait();
  std::vector<float> staged(device_params_);
  to_device_layout(params_.data(), staged.data());
  d_params_.upload(staged.data(), staged.size() * 4);
  to_device_layout(momentum_.data(), staged.data());
  d_momentum_.upload(staged.data(), staged.size() * 4);
  std::vector<float> buffers(device_buffers_);
  for (size_t i = 0; i < layout_.buffers.size(); ++i)
    std::copy_n(buffers_.data() + layout_.buffers[i].offset, layout_.buffers[i].elements,
                buffers.data() + buffer_offset_[i]);
  d_buffers_.upload(buffers.data(), buffers.size() * 4);
}

void CudaPlan::download_state() {
  download_parameters();
  std::vector<float> staged(device_params_);
  d_grads_.download(staged.data(), staged.size() * 4);
  to_plain_layout(staged.data(), grads_.data());
  d_momentum_.download(staged.data(), staged.size() * 4);
  to_plain_layout(staged.data(), momentum_.data());
  std::vector<float> buffers(device_buffers_);
  d_buffers_.download(buffers.data(), buffers.size() * 4);
  for (size_t i = 0; i < layout_.buffers.size(); ++i)
    std::copy_n(buffers.data() + buffer_offset_[i], layout_.buffers[i].elements,
                buffers_.data() + layout_.buffers[i].offset);
}

void CudaPlan::download_parameters() {
  wait();
  std::vector<float> staged(device_params_);
  d_params_.download(staged.data(), staged.size() * 4);
  to_plain_layout(staged.data(), params_.data());
}

int64_t CudaPlan::gradient_offset(int param_index) const { return param_offset_[param_index]; }
int64_t CudaPlan::gradient_elements() const { return device_params_; }

void CudaPlan::set_output_grad(const float* grad) {
  const Node& out = graph_.logits();
  std::vector<float> nhwc = to_nhwc(out, grad);
  DeviceBuffer& staging = staging_for(nhwc.size());
  CUDA_CHECK(cudaMemcpyAsync(staging.data(), nhwc.data(), nhwc.size() * 4, cudaMemcpyHostToDevice, stream_));
  cuda::convert(staging.data(), DType::f32, diff_[out.id], type_, out.out.elements(), 1.0f, stream_);
  wait();
}

void CudaPlan::read_output(int node, float* dst) {
  if (node < 0 || node >= static_cast<int>(graph_.nodes.size()))
    throw std::out_of_range("read_output: no node " + std::to_string(node));
  const Node& n = graph_.nodes[node];
  if (tensors_.fused_relu_of[node] >= 0 || tensors_.fused_into_add[node] >= 0)
    throw std::logic_error("read_output: node '" + n.name + "' shares its buffer with a fused " +
                           (tensors_.fused_into_add[node] >= 0 ? "add + ReLU" : "ReLU") + "; build the plan with fuse = false");
  if (!out_[node])
    throw std::logic_error("read_output: node '" + n.name + "' is folded into the convolutions around it and never "
                           "stored; build the plan with fuse = false");
  std::vector<float> nhwc = download_stored(node, out_[node], out_type(node));
  from_nhwc(n, nhwc.data(), dst);
}

// A node's tensor as the device stores it, in fp32 and the graph's channels (the padded input's
// fourth channel dropped).
std::vector<float> CudaPlan::download_stored(int node, const void* src, DType type) {
  const Shape graph = graph_.nodes[node].out, stored = stored_shape(node);
  std::vector<float> values(stored.elements());
  download_as_f32(src, type, values);
  if (stored.c == graph.c) return values;
  std::vector<float> kept(graph.elements());
  for (int64_t p = 0; p < graph.n * graph.h * graph.w; ++p)
    std::copy_n(values.data() + p * stored.c, graph.c, kept.data() + p * graph.c);
  return kept;
}

void CudaPlan::read_input_grad(float* dst) {
  if (!input_grad_) throw std::logic_error("plan was built without input_grad");
  const Node& in = graph_.input();
  std::vector<float> nhwc = download_stored(0, diff_[0], type_);
  if (input_nhwc_)
    std::copy(nhwc.begin(), nhwc.end(), dst);
  else
    from_nhwc(in, nhwc.data(), dst);
}

// ---- layouts ----
// Conv weights O x I x H x W <-> O x H x W x I; a linear layer reading C x H x W features
// (H*W > 1) has its columns permuted alike. Everything else keeps its layout.
template <bool to_device>
void CudaPlan::permute(const float* from, float* to) const {
  for (size_t k = 0; k < layout_.params.size(); ++k) {
    const ArenaEntry& e = layout_.params[k];
    const Node& node = graph_.nodes[e.node];
    const float* src = from + (to_device ? e.offset : param_offset_[k]);
    float* dst = to + (to_device ? param_offset_[k] : e.offset);
    std::copy_n(src, e.elements, dst);
    if (e.index != 0) continue;
    int64_t o = 0, c = 0, hw = 0;
    if (node.kind == OpKind::conv) {
      o = node.conv.out_channels;
      c = graph_.nodes[node.inputs[0]].out.c / node.conv.groups;
      hw = node.conv.kernel_h * node.conv.kernel_w;
    } else if (node.kind == OpKind::linear) {
      const Shape& in = graph_.nodes[node.inputs[0]].out;
      o = node.linear.out_features;
      c = in.c;
      hw = in.h * in.w;
    }
    if (hw <= 1) continue;
    for (int64_t oo = 0; oo < o; ++oo)
      for (int64_t cc = 0; cc < c; ++cc)
        for (int64_t p = 0; p < hw; ++p) {
          const int64_t plain = (oo * c + cc) * hw + p, device = (oo * hw + p) * c + cc;
          if (to_device)
            dst[device] = src[plain];
          else
            dst[plain] = src[device];
        }
  }
}
void CudaPlan::to_device_layout(const float* plain, float* device) const { permute<true>(plain, device); }
void CudaPlan::to_plain_layout(const float* device, float* plain) const { permute<false>(device, plain); }

std::vector<float> CudaPlan::to_nhwc(const Node& node, const float* nchw) {
  const Shape& s = node.out;
  std::vector<float> out(s.elements());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t p = 0; p < s.h * s.w; ++p) out[(n * s.h * s.w + p) * s.c + c] = nchw[(n * s.c + c) * s.h * s.w + p];
  return out;
}

void CudaPlan::from_nhwc(const Node& node, const float* nhwc, float* nchw) {
  const Shape& s = node.out;
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t c = 0; c < s.c; ++c)
      for (int64_t p = 0; p < s.h * s.w; ++p) nchw[(n * s.c + c) * s.h * s.w + p] = nhwc[(n * s.h * s.w + p) * s.c + c];
}

DeviceBuffer& CudaPlan::staging_for(size_t floats) {
  if (staging_.bytes() < floats * 4) staging_ = DeviceBuffer(floats * 4);
  return staging_;
}

void CudaPlan::download_as_f32(const void* src, DType type, std::vector<float>& dst) {
  wait();
  const void* from = src;
  if (type != DType::f32) {
    DeviceBuffer& staging = staging_for(dst.size());
    cuda::convert(src, type, staging.data(), DType::f32, static_cast<int64_t>(dst.size()), 1.0f, stream_);
    wait();
    from = staging.data();
  }
  CUDA_CHECK(cudaMemcpy(dst.data(), from, dst.size() * 4, cudaMemcpyDeviceToHost));
}

}  // namespace cnnbench::cuda
