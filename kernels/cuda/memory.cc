// kernels/cuda/memory.cc — places the cuda plan's activations and their gradients in one device
// arena (kernels/memory_plan.h), and says how much memory a plan that does not fit would need.
//
// Lifetimes come from the graph, one node a time unit, on the two timelines a plan runs (a
// training step: set_input, forward in node order, loss(), backward in reverse node order; an
// inference step: set_input, forward, loss()). Every forward step of a node writes its output and
// reads its inputs'; every backward step of a node reads its output, its inputs' outputs and its
// own gradient, and writes (or adds to) its inputs' gradients. That is more than most ops touch,
// never less, so the plan can only keep a tensor too long. A ReLU in place shares its producer's
// tensors (alias_of_): their uses count as one tensor's.
//
// Outputs live from their forward step to their own backward step: the activations a step keeps
// for backward. Gradients live from their first consumer's backward step to their own, so most
// of them take bytes an activation no longer needs: the arena is about the activations' size
// where every tensor in bytes of its own needed both.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/cuda/plan_internal.h"
#include "kernels/memory_plan.h"

namespace cnnbench::cuda {

namespace {

enum Timeline { training = 0, inference = 1 };

}  // namespace

void CudaPlan::place_tensors() {
  const int count = static_cast<int>(graph_.nodes.size());
  const int loss_time = count + 1, end_time = 2 * count + 2;
  const auto fwd = [](int n) { return n + 1; };
  const auto bwd = [&](int n) { return loss_time + count - n; };  // the last node first

  std::vector<PlannedBuffer> buffers;
  std::vector<int> out_index(count, -1), diff_index(count, -1);
  for (const Node& node : graph_.nodes) {
    if (alias_of_[node.id] != node.id) continue;
    PlannedBuffer b;
    b.lives.resize(2);
    b.shared = share_memory_;
    b.bytes = stored_shape(node.id).elements() * dtype_size(out_type(node.id));
    out_index[node.id] = static_cast<int>(buffers.size());
    buffers.push_back(b);
    if (!wants_grad(node.id)) continue;
    b.bytes = stored_shape(node.id).elements() * esize();
    diff_index[node.id] = static_cast<int>(buffers.size());
    buffers.push_back(b);
  }
  const auto out_use = [&](int n, Timeline t, int time) { buffers[out_index[alias_of_[n]]].lives[t].use(time); };
  const auto diff_use = [&](int n, int time) {
    if (const int i = diff_index[alias_of_[n]]; i >= 0) buffers[i].lives[training].use(time);
  };
  for (const Node& node : graph_.nodes) {
    for (const Timeline t : {training, inference}) out_use(node.id, t, fwd(node.id));
    out_use(node.id, training, bwd(node.id));
    diff_use(node.id, bwd(node.id));
    for (const int u : node.inputs) {
      for (const Timeline t : {training, inference}) out_use(u, t, fwd(node.id));
      out_use(u, training, bwd(node.id));
      diff_use(u, bwd(node.id));
    }
  }
  // BN+add+ReLU runs the batch norm at the add's place both ways: its input is read there in
  // forward and backward, and its input's gradient written there
  for (const Node& node : graph_.nodes)
    if (const int add = fused_into_add_[node.id]; add >= 0) {
      for (const Timeline t : {training, inference}) out_use(node.inputs[0], t, fwd(add));
      out_use(node.inputs[0], training, bwd(add));
      diff_use(node.inputs[0], bwd(add));
    }
  // loss() reads the logits and writes their gradient on both timelines (set_output_grad() the
  // output's); read_output() reads the logits even after backward, read_input_grad() the images'
  for (const int n : {graph_.logits().id, graph_.output}) {
    for (const Timeline t : {training, inference}) out_use(n, t, loss_time);
    out_use(n, training, end_time);
    if (const int i = diff_index[alias_of_[n]]; i >= 0)
      for (const Timeline t : {training, inference}) buffers[i].lives[t].use(loss_time);
  }
  diff_use(0, end_time);
  // The images stay from one set_input() to the next, across steps (synthetic data sets them once).
  buffers[out_index[0]].shared = false;
  // The gradient of a node nothing reads is never written, only read by its own backward steps:
  // it keeps bytes of its own, zeroed below.
  for (int n = 0; n < count; ++n)
    if (diff_index[n] >= 0 && n != graph_.output && consumers_[n].empty()) buffers[diff_index[n]].shared = false;

  const MemoryPlan plan = plan_memory(buffers, 256);
  tensor_bytes_ = plan.total_bytes;
  unshared_tensor_bytes_ = plan.unshared_bytes;
  d_tensors_ = DeviceBuffer(std::max<size_t>(tensor_bytes_, 256));
  CUDA_CHECK(cudaMemset(d_tensors_.data(), 0, d_tensors_.bytes()));
  char* base = d_tensors_.as<char>();
  for (const Node& node : graph_.nodes) {
    const int root = alias_of_[node.id];
    out_[node.id] = base + plan.offsets[out_index[root]];
    diff_[node.id] = diff_index[root] >= 0 ? base + plan.offsets[diff_index[root]] : nullptr;
  }
}

size_t CudaPlan::working_memory_bytes() const { return tensor_bytes_ + workspace_.bytes(); }
size_t CudaPlan::unshared_working_memory_bytes() const { return unshared_tensor_bytes_ + workspace_.bytes(); }

int64_t CudaPlan::peak_device_memory_bytes() const { return peak_device_bytes_; }

void CudaPlan::sample_device_memory() {
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) == cudaSuccess)
    peak_device_bytes_ = std::max(peak_device_bytes_, static_cast<int64_t>(total - free));
}

// An allocation the device refused: what the plan holds, what it asked for, and the batch that
// would fit, from the activations' bytes per image (the part of a plan that grows with the batch).
std::string CudaPlan::out_of_memory(const OutOfMemory& e) const {
  const auto gib = gib_text;
  const int64_t batch = graph_.batch_size();
  std::string s = "GPU out of memory at batch " + std::to_string(batch) + ": " + gib(static_cast<double>(e.asked)) +
                  " asked with " + gib(static_cast<double>(e.free)) + " free of " + gib(static_cast<double>(e.total));
  if (tensor_bytes_ == 0 || batch <= 0) return s;
  const double per_image = static_cast<double>(tensor_bytes_) / static_cast<double>(batch);
  // the arena may have what the request lacks: room for it is its own bytes less the shortfall
  const double arena = static_cast<double>(tensor_bytes_);
  const int64_t fits = largest_batch_that_fits(batch, arena, arena - static_cast<double>(e.asked - std::min(e.asked, e.free)));
  s += " (activations and gradients: " + gib(static_cast<double>(tensor_bytes_)) + ", " +
       std::to_string(static_cast<int64_t>(per_image / (1 << 20))) + " MiB per image)";
  s += fits >= 1 ? "; the largest batch that fits is about " + std::to_string(fits)
                 : "; not even batch 1 fits beside what this plan holds";
  return s;
}

}  // namespace cnnbench::cuda
