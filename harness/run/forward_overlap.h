// harness/run/forward_overlap.h — --overlap_forward: a step's updates wait for the next forward
// pass instead of holding up the step's end. After backward every bucket's update is pending;
// the next forward announces each layer before it reads its parameters (Plan's params-needed
// hook), and the layer's buckets are then waited for and updated, with the rate and optimizer
// settings of the step that made their gradients. The gradients still on the wire when
// backward ends thus travel while forward computes the layers whose parameters are already
// updated. Each element's update is the same arithmetic as before, so training is
// bit-identical to updating at the end of the step. With forward priority the communication
// thread sends the buckets the forward pass needs first (the first layers') ahead of older ones.
#pragma once

#include <chrono>
#include <vector>

#include "comm/gradient_exchange.h"
#include "comm/timeline.h"
#include "kernels/plan.h"

namespace cnnbench {

// What the pending updates cost the forward pass they ran in.
struct OverlapStats {
  double wait_sec = 0;     // the compute thread waited for a bucket's reduction (exposed)
  double update_sec = 0;   // optimizer updates applied
  double comm_sec = 0;     // the previous step's reduction time, all of it
  double comm_after_backward_sec = 0;  // of which ran after that step's backward had ended
  // of which ran while this forward pass computed: comm_after_backward_sec - wait_sec
  double hidden_sec() const { return comm_after_backward_sec > wait_sec ? comm_after_backward_sec - wait_sec : 0; }
};

class ForwardOverlap {
 public:
  // Installs itself as plan's params-needed hook; `exchange` is a host reducer whose buckets
  // address plan's gradient arena (the plan outlives this object).
  ForwardOverlap(Plan& plan, GradientExchange& exchange, bool forward_priority, Timeline* timeline = nullptr);
  ~ForwardOverlap();
  ForwardOverlap(const ForwardOverlap&) = delete;
  ForwardOverlap& operator=(const ForwardOverlap&) = delete;

  // After backward: every bucket's update is pending, to be applied with these settings.
  void defer(const SgdConfig& sgd, float learning_rate);
  // Applies every update still pending (waiting for its reduction) and ends the exchange's
  // step; returns what the pending updates cost since the last call. Before backward
  // overwrites the gradients, and before anything reads the parameters outside forward
  // (evaluation of another kind, checkpoints, the end of a run).
  OverlapStats finish();
  // Exchanges finish() has ended so far, and the reducer's bytes sent when the first `count` of
  // them had ended (count 0: when this object was made), kept for the last two counts alone (-1
  // for others). Exchanges follow one another (each begins in the backward after its predecessor
  // ended in forward), so the bytes between two such points are those exchanges' own; a step's
  // own exchange ends in the next step's forward.
  int64_t exchanges_finished() const { return finished_; }
  bool exchange_open() const { return open_; }  // a step's exchange is on its way, not yet ended
  int64_t bytes_sent_when_finished(int64_t count) const {
    return count >= 0 && count <= finished_ && count + 1 >= finished_ ? sent_at_[count % 2] : -1;
  }

 private:
  void apply(int bucket);

  Plan& plan_;
  GradientExchange& exchange_;
  Timeline* timeline_;
  std::vector<std::vector<int>> buckets_of_node_;  // per graph node: the buckets holding its parameters
  std::vector<char> pending_;                      // per bucket
  int pending_count_ = 0;
  bool open_ = false;  // defer() was called and finish() not yet
  SgdConfig sgd_;
  float learning_rate_ = 0;
  std::chrono::steady_clock::time_point backward_end_;
  OverlapStats stats_;
  int64_t finished_ = 0;
  int64_t sent_at_[2] = {0, 0};  // [k % 2]: when the k-th exchange ended (0: at construction)
};

}  // namespace cnnbench
