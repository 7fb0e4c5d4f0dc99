#include "harness/run/forward_overlap.h"

#include <algorithm>
#include <stdexcept>

namespace cnnbench {

namespace {

double seconds_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

ForwardOverlap::ForwardOverlap(Plan& plan, GradientExchange& exchange, bool forward_priority, Timeline* timeline)
    : plan_(plan), exchange_(exchange), timeline_(timeline), sent_at_{exchange.bytes_sent(), 0} {
  if (plan.device()) throw std::invalid_argument("--overlap_forward: CPU backends only (mpi, gloo allreduce)");
  const std::vector<Bucket>& buckets = exchange.buckets();
  const ParamLayout& layout = plan.layout();
  buckets_of_node_.resize(plan.graph().nodes.size());
  for (int node = 0; node < static_cast<int>(buckets_of_node_.size()); ++node)
    for (int index : layout.params_of_node[node]) {
      const auto offset = static_cast<size_t>(plan.exchange_offset(index));
      const auto holds = std::find_if(buckets.begin(), buckets.end(),
                                      [&](const Bucket& b) { return offset >= b.offset && offset < b.offset + b.count; });
      if (holds == buckets.end()) throw std::logic_error("--overlap_forward: a parameter tensor outside every bucket");
      const int b = static_cast<int>(holds - buckets.begin());
      std::vector<int>& list = buckets_of_node_[node];
      if (std::find(list.begin(), list.end(), b) == list.end()) list.push_back(b);
    }
  pending_.assign(buckets.size(), 0);
  exchange.set_forward_priority(forward_priority);
  plan.set_params_needed_hook([this](int node) {
    if (pending_count_ == 0) return;
    for (int b : buckets_of_node_[node]) apply(b);
  });
}

ForwardOverlap::~ForwardOverlap() { plan_.set_params_needed_hook(nullptr); }

void ForwardOverlap::defer(const SgdConfig& sgd, float learning_rate) {
  if (open_) throw std::logic_error("--overlap_forward: the previous step's exchange was not finished");
  open_ = true;
  sgd_ = sgd;
  learning_rate_ = learning_rate;
  backward_end_ = std::chrono::steady_clock::now();
  std::fill(pending_.begin(), pending_.end(), 1);
  pending_count_ = static_cast<int>(pending_.size());
}

void ForwardOverlap::apply(int b) {
  if (!pending_[b]) return;
  stats_.wait_sec += exchange_.wait_for_bucket(b);
  const auto start = std::chrono::steady_clock::now();
  const Bucket& bucket = exchange_.buckets()[b];
  plan_.sgd_step(sgd_, learning_rate_, bucket.offset, bucket.count);
  const auto end = std::chrono::steady_clock::now();
  stats_.update_sec += seconds_between(start, end);
  if (timeline_) timeline_->span(Track::update, "update", start, end, {.bucket = b});
  pending_[b] = 0;
  --pending_count_;
}

OverlapStats ForwardOverlap::finish() {
  if (open_) {
    // the first layers' buckets first, as forward would have asked for them
    for (int b = static_cast<int>(pending_.size()) - 1; b >= 0; --b) apply(b);
    open_ = false;
    const ReducerStepStats step = exchange_.end_step(backward_end_);
    stats_.comm_sec = step.comm_sec;
    stats_.comm_after_backward_sec = step.comm_after_sec;
    sent_at_[++finished_ % 2] = exchange_.bytes_sent();
  }
  const OverlapStats out = stats_;
  stats_ = {};
  return out;
}

}  // namespace cnnbench
