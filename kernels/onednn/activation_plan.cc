// kernels/onednn/activation_plan.cc — places the oneDNN plan's tensors in its activation arena:
// each tensor's lifetime on the two timelines a plan runs (a training step: set_input, the
// training forward list, loss(), the backward list; an inference step: set_input, the inference
// forward list, loss()), then kernels/memory_plan.h's offsets.
#include <unordered_map>

#include "kernels/memory_plan.h"
#include "kernels/onednn/plan_internal.h"

namespace cnnbench::onednn {

namespace {

enum Timeline { training = 0, inference = 1 };

// A blocked layout whose channels are padded to the block: oneDNN keeps the padding zero and
// some primitives rely on it, so such a tensor keeps bytes of its own.
bool padded(const memory::desc& md) {
  size_t dense = memory::data_type_size(md.data_type());
  for (const memory::dim d : md.dims()) dense *= static_cast<size_t>(d);
  return md.get_size() > dense;
}

}  // namespace

void OnednnPlan::place_activations() {
  std::unordered_map<dnnl_memory_t, size_t> index;
  std::vector<PlannedBuffer> buffers;
  for (const memory& m : placements_) {
    index[m.get()] = buffers.size();
    PlannedBuffer b;
    b.bytes = m.get_desc().get_size();
    b.lives.resize(2);
    b.shared = share_memory_ && !padded(m.get_desc());
    buffers.push_back(std::move(b));
  }
  auto use = [&](const memory& m, Timeline timeline, int time) {
    if (const auto it = index.find(m.get(true)); it != index.end()) buffers[it->second].lives[timeline].use(time);
  };
  auto walk = [&](const Steps& steps, Timeline timeline, int start) {
    for (size_t i = 0; i < steps.size(); ++i) {
      for (const auto& [arg, m] : steps[i].args) use(m, timeline, start + static_cast<int>(i));
      for (const memory& m : steps[i].uses) use(m, timeline, start + static_cast<int>(i));
    }
  };
  // time 0: set_input(); then the forward steps; then loss() (or set_output_grad()); then backward
  const int training_loss = static_cast<int>(forward_training_.size()) + 1;
  const int inference_loss = static_cast<int>(forward_inference_.size()) + 1;
  const int training_end = training_loss + 1 + static_cast<int>(backward_.size());
  walk(forward_training_, training, 1);
  walk(backward_, training, training_loss + 1);
  walk(forward_inference_, inference, 1);

  // Images stay from one set_input() to the next, across steps (synthetic data sets them once).
  if (const auto it = index.find(input_user_.get(true)); it != index.end()) buffers[it->second].shared = false;
  // loss() reads the logits and writes their gradient on both timelines (set_output_grad() too)
  for (const memory& m : {mem_[graph_.logits().id], mem_[graph_.output], logits_plain_, dlogits_plain_,
                          diff_[graph_.logits().id], diff_[graph_.output]}) {
    use(m, training, training_loss);
    use(m, inference, inference_loss);
  }
  if (input_grad_) use(diff_[0], training, training_end);  // read_input_grad() after backward
  // read_output() can read a node once forward is done only if no later tensor took its bytes
  for (const Timeline timeline : {training, inference}) {
    const int end = timeline == training ? training_loss : inference_loss;
    std::vector<bool>& kept = kept_after_forward_[timeline];
    kept.assign(mem_.size(), true);
    for (size_t n = 0; n < mem_.size(); ++n)
      if (const auto it = index.find(mem_[n].get(true)); it != index.end() && buffers[it->second].shared) {
        const Lifetime& life = buffers[it->second].lives[timeline];
        kept[n] = life.empty() || life.last >= end;
      }
  }

  const MemoryPlan plan = plan_memory(buffers);
  activation_bytes_ = plan.total_bytes;
  unshared_activation_bytes_ = plan.unshared_bytes;
  activations_ = Arena((activation_bytes_ + sizeof(float) - 1) / sizeof(float));
  char* base = reinterpret_cast<char*>(activations_.data());
  for (size_t i = 0; i < placements_.size(); ++i) placements_[i].set_data_handle(base + plan.offsets[i]);
  placements_.clear();
}

}  // namespace cnnbench::onednn
