// kernels/onednn/activation_plan.cc — places the oneDNN plan's tensors in its activation arena:
// each tensor's lifetime on the two timelines a plan runs (a training step: set_input, the
// training forward list, loss(), the backward list; an inference step: set_input, the inference
// forward list, loss()), then kernels/memory_plan.h's offsets.
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "kernels/memory_plan.h"
#include "kernels/onednn/plan_internal.h"

namespace cnnbench::onednn {

namespace {

enum Timeline { training = 0, inference = 1 };

// A blocked layout whose channels are padded to the block: oneDNN keeps the padding zero and
// some primitives rely on it. Such a tensor may share bytes only where its life starts at a
// step, before which the plan zeroes its padding (zero_padding_at_).
bool padded(const memory::desc& md) {
  size_t dense = memory::data_type_size(md.data_type());
  for (const memory::dim d : md.dims()) dense *= static_cast<size_t>(d);
  return md.get_size() > dense;
}

}  // namespace

// Activations and gradients grow with the batch; the weights, their gradients and momentum do not.
void OnednnPlan::check_memory_budget() const {
  if (host_memory_budget_ == 0) return;
  const double fixed = 4.0 * sizeof(float) * static_cast<double>(layout_.param_elements);
  const double need = static_cast<double>(activation_bytes_) + fixed, budget = static_cast<double>(host_memory_budget_);
  if (need <= budget) return;
  const int64_t batch = graph_.batch_size();
  const double per_image = static_cast<double>(activation_bytes_) / static_cast<double>(batch);
  const int64_t fits = largest_batch_that_fits(batch, static_cast<double>(activation_bytes_), budget - fixed);
  const auto gib = gib_text;
  throw std::invalid_argument(
      "batch " + std::to_string(batch) + " needs about " + gib(need) + " a rank (activations and gradients " +
      gib(static_cast<double>(activation_bytes_)) + ", " + std::to_string(static_cast<int64_t>(per_image / (1 << 20))) +
      " MiB an image; weights, gradients and momentum " + gib(fixed) + ") and this rank's share of the memory available "
      "(the host's, within a container's limit) is " + gib(budget) + ": " +
      (fits >= 1 ? "the largest batch that fits is about " + std::to_string(fits) : std::string("not even batch 1 fits")));
}

void OnednnPlan::place_activations() {
  std::unordered_map<dnnl_memory_t, size_t> index;
  std::vector<PlannedBuffer> buffers;
  for (const memory& m : placements_) {
    index[m.get()] = buffers.size();
    PlannedBuffer b;
    b.bytes = m.get_desc().get_size();
    b.lives.resize(2);
    b.shared = true;  // may share; share_memory_ decides below
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
  // loss() reads the logits and writes their gradient on both timelines (set_output_grad() too);
  // read_output() may read the logits even after backward
  for (const memory& m : {mem_[graph_.logits().id], mem_[graph_.output], logits_plain_}) {
    use(m, training, training_loss);
    use(m, training, training_end);
    use(m, inference, inference_loss);
  }
  for (const memory& m : {dlogits_plain_, diff_[graph_.logits().id], diff_[graph_.output]}) {
    use(m, training, training_loss);
    use(m, inference, inference_loss);
  }
  if (input_grad_) use(diff_[0], training, training_end);  // read_input_grad() after backward
  // The gradient of a node nothing reads is never written, only read by its own backward steps:
  // it must stay the arena's zeros, not another tensor's values.
  for (size_t n = 0; n < diff_.size(); ++n)
    if (static_cast<int>(n) != graph_.output && consumers_[n].empty())
      if (const auto it = index.find(diff_[n].get(true)); it != index.end()) buffers[it->second].shared = false;
  // A padded tensor's life must start at a step, where its padding can be zeroed first (not at
  // set_input() or loss(), which run outside the step lists).
  auto starts_at_a_step = [&](const PlannedBuffer& b) {
    const Lifetime& t = b.lives[training];
    const Lifetime& i = b.lives[inference];
    return (t.empty() || (t.first >= 1 && t.first != training_loss)) &&
           (i.empty() || (i.first >= 1 && i.first != inference_loss));
  };
  std::vector<bool> is_padded(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    is_padded[i] = padded(placements_[i].get_desc());
    if (is_padded[i] && !starts_at_a_step(buffers[i])) buffers[i].shared = false;
  }
  // poison_dead_tensors fills what could share, shared or not
  std::vector<bool> shareable(buffers.size());
  for (size_t i = 0; i < buffers.size(); ++i) {
    shareable[i] = buffers[i].shared;
    buffers[i].shared = buffers[i].shared && share_memory_;
  }
  // read_output() can read a node at a point of the step only if no later tensor took its bytes
  const std::pair<Timeline, int> read_points[3] = {
      {training, training_loss}, {training, training_end}, {inference, inference_loss}};
  for (int point = 0; point < 3; ++point) {
    const auto [timeline, end] = read_points[point];
    std::vector<bool>& kept = kept_at_[point];
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
  check_memory_budget();
  activations_ = Arena((activation_bytes_ + sizeof(float) - 1) / sizeof(float));
  char* base = reinterpret_cast<char*>(activations_.data());
  for (size_t i = 0; i < placements_.size(); ++i) placements_[i].set_data_handle(base + plan.offsets[i]);
  backward_first_time_ = training_loss + 1;
  zero_padding_at_[training].assign(static_cast<size_t>(training_end) + 1, {});
  zero_padding_at_[inference].assign(static_cast<size_t>(inference_loss) + 1, {});
  for (size_t i = 0; i < placements_.size(); ++i)
    if (is_padded[i] && (buffers[i].shared || (poison_dead_ && shareable[i])))
      for (const Timeline timeline : {training, inference})
        if (!buffers[i].lives[timeline].empty())
          zero_padding_at_[timeline][static_cast<size_t>(buffers[i].lives[timeline].first)].push_back(placements_[i]);
  if (poison_dead_)
    for (size_t i = 0; i < placements_.size(); ++i)
      if (shareable[i])
        poisoned_.push_back({placements_[i],
                             {buffers[i].lives[training].first, buffers[i].lives[inference].first},
                             {buffers[i].lives[training].last, buffers[i].lives[inference].last}});
  placements_.clear();
}

}  // namespace cnnbench::onednn
