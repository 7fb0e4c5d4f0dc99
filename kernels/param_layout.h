// kernels/param_layout.h — ParamLayout: where each learnable tensor and each running-statistics
// buffer of a graph lives in its arena. Parameters are laid out in backward order (the last
// layer first), so the gradients that backward produces first form a contiguous prefix: a
// fusion bucket is then a slice of the gradient arena.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/graph.h"

namespace cnnbench {

struct ArenaEntry {
  int node = -1;   // graph node that owns the tensor
  int index = 0;   // position in node.params (or node.buffers)
  const ParamSpec* spec = nullptr;
  int64_t offset = 0, elements = 0;
  bool batch_norm = false;  // a batch norm's scale or shift
};

struct ParamLayout {
  std::vector<ArenaEntry> params;   // backward order
  std::vector<ArenaEntry> buffers;  // running mean/variance, same order
  int64_t param_elements = 0, buffer_elements = 0;
  // params_of_node[node] lists the indices into `params` of that node's tensors, in
  // node.params order; likewise buffers_of_node.
  std::vector<std::vector<int>> params_of_node, buffers_of_node;

  static ParamLayout of(const Graph& graph);
  const ArenaEntry& param(int node, int index) const { return params[params_of_node[node][index]]; }
  const ArenaEntry& buffer(int node, int index) const {
    return buffers[buffers_of_node[node][index]];
  }
};

// Calls f(entry) for each parameter tensor inside [offset, offset + count) of the arena; a tensor
// cut by the range is a std::logic_error (gradient buckets hold whole tensors). Allocates nothing.
template <class F>
void for_each_param_in(const ParamLayout& layout, int64_t offset, int64_t count, F&& f) {
  for (const ArenaEntry& e : layout.params) {
    const int64_t end = e.offset + e.elements;
    if (end <= offset || e.offset >= offset + count) continue;
    if (e.offset < offset || end > offset + count)
      throw std::logic_error("an optimizer step over part of tensor " + e.spec->name);
    f(e);
  }
}

// Calls f(offset, count, decays) over the arena range [offset, offset + count) in runs of whole
// tensors that all take weight decay or all take none: batch norm's scales and shifts take none
// unless decay_batch_norm (SgdConfig). With it, or without any decay, one call over the range.
template <class F>
void for_each_decay_run(const ParamLayout& layout, int64_t offset, int64_t count, bool decay_batch_norm,
                        float weight_decay, F&& f) {
  if (decay_batch_norm || weight_decay == 0) return f(offset, count, true);
  int64_t run_start = 0, run_end = -1;  // run_end < 0: no run open
  bool run_decays = true;
  for_each_param_in(layout, offset, count, [&](const ArenaEntry& e) {
    const bool decays = !e.batch_norm;
    if (run_end >= 0 && (decays != run_decays || e.offset != run_end)) {
      f(run_start, run_end - run_start, run_decays);
      run_end = -1;
    }
    if (run_end < 0) {
      run_start = e.offset;
      run_decays = decays;
    }
    run_end = e.offset + e.elements;
  });
  if (run_end >= 0) f(run_start, run_end - run_start, run_decays);
}

// Whether LARS scales a tensor's rate: weights (convolution, linear), not biases or batch-norm
// scales and shifts (1-D), as MLPerf's reference leaves them out.
inline bool lars_adapts(const ParamSpec& spec) { return spec.dims.size() > 1; }

// Fills parameters and buffers as their ParamSpec::init says. Each tensor draws from its own
// stream derived from `seed` and its name, so the result does not depend on the layout order.
void init_parameters(const ParamLayout& layout, float* params, float* buffers, uint64_t seed);

}  // namespace cnnbench
