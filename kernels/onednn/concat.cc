// kernels/onednn/concat.cc — channel concatenation in the oneDNN plan: a copy on the host in
// the layouts oneDNN chose for each input and for the output (blocked like the first input),
// and its backward the same walk
// the other way, each input's gradient a slice of the output's.
#include "kernels/onednn/plan_internal.h"

#include <algorithm>
#include <cstring>

namespace cnnbench::onednn {

namespace {

// Calls f(k, x_offset, y_offset, count) over every element, `count` elements contiguous in both:
// input k's channel c lands at channel start[k] + c of the output. Whole channel blocks of an
// input blocked like the output and starting on a block are rows of w x block elements (a
// densenet's running concatenation); the other channels go element by element. Each (image, row)
// is one unit of parallel work.
struct ConcatWalk {
  std::vector<BlockedLayout> x;
  BlockedLayout y;
  std::vector<int64_t> channels, start;
  int64_t n, h, w;
  template <class F>
  void run(F&& f) const {
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t r = 0; r < h; ++r)
        for (size_t k = 0; k < x.size(); ++k) {
          const int64_t block = x[k].block;
          int64_t c = 0;
          if (block > 1 && block == y.block && start[k] % block == 0 && x[k].stride_w == block && y.stride_w == block)
            for (; c + block <= channels[k]; c += block) f(k, x[k].offset(b, c, r, 0), y.offset(b, start[k] + c, r, 0), w * block);
          for (; c < channels[k]; ++c) {
            const int64_t xb = x[k].offset(b, c, r, 0), yb = y.offset(b, start[k] + c, r, 0);
            for (int64_t col = 0; col < w; ++col) f(k, xb + col * x[k].stride_w, yb + col * y.stride_w, int64_t{1});
          }
        }
  }
};

ConcatWalk concat_walk(const Graph& graph, const Node& node, const std::vector<memory>& inputs, const memory& out) {
  ConcatWalk walk{{}, layout_of(out, node), {}, {}, node.out.n, node.out.h, node.out.w};
  int64_t start = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    walk.x.push_back(layout_of(inputs[k], node));
    walk.channels.push_back(graph.nodes[node.inputs[k]].out.c);
    walk.start.push_back(start);
    start += walk.channels.back();
  }
  return walk;
}

// Typed element pointers of the plan's compute type (fp32, or bf16 as raw 16-bit words).
template <class T>
std::vector<T*> handles(const std::vector<memory>& ms) {
  std::vector<T*> out;
  for (const memory& m : ms) out.push_back(static_cast<T*>(m.get_data_handle()));
  return out;
}

// True where m's layout pads the channels to a whole block (the padding must read as zeros).
bool padded(const memory& m, const Shape& s) {
  const memory::desc md = m.get_desc();
  return md.get_size() > static_cast<size_t>(s.elements()) * memory::data_type_size(md.data_type());
}

}  // namespace

void OnednnPlan::compile_concat_forward(const Node& node) {
  std::vector<memory> inputs;
  for (int u : node.inputs) {
    if (flat_[u]) throw std::invalid_argument(where(node, "concatenates a 2-D tensor"));
    inputs.push_back(mem_[u]);
  }
  // Blocked like the first input even where a slice starts inside a block (a densenet's 12
  // channels a layer): the walk maps each channel, and what reads the output (batch norm,
  // convolution) runs 2-3x slower on the plain layout (densenet40_k12: batch norm 63% of a step).
  const int64_t block = layout_of(inputs[0], node).block;
  const tag out_tag = block == 16 ? tag::nChw16c : block == 8 ? tag::nChw8c : block == 4 ? tag::nChw4c : tag::nchw;
  mem_[node.id] = alloc(memory::desc(dims(node), act_dt_, out_tag));
  std::vector<memory> uses = inputs;
  uses.push_back(mem_[node.id]);
  auto host = [xs = inputs, y = mem_[node.id], wide = act_dt_ == dt::f32, pad = padded(mem_[node.id], node.out),
               walk = concat_walk(graph_, node, inputs, mem_[node.id])] {
    // channels past the last block's end are padding: zero them, as the bytes may be shared
    if (pad) std::memset(y.get_data_handle(), 0, y.get_desc().get_size());
    auto copy = [&](auto* out, const auto& in) {
      walk.run([&](size_t k, int64_t xi, int64_t yi, int64_t count) { std::copy_n(in[k] + xi, count, out + yi); });
    };
    if (wide)
      copy(static_cast<float*>(y.get_data_handle()), handles<const float>(xs));
    else
      copy(static_cast<uint16_t*>(y.get_data_handle()), handles<const uint16_t>(xs));
  };
  forward_training_.push_back({{}, {}, host, uses});
  forward_inference_.push_back({{}, {}, host, uses});
}

// Each input's gradient is its slice of the output's: written straight into the input's
// gradient where nothing was summed there yet, else into a buffer that finish_grad adds.
void OnednnPlan::compile_concat_backward(const Node& node) {
  std::vector<memory> targets, padded_targets;
  for (int u : node.inputs) {
    targets.push_back(grad_target(u, mem_[u].get_desc()));
    if (padded(targets.back(), graph_.nodes[u].out)) padded_targets.push_back(targets.back());
  }
  std::vector<memory> uses = targets;
  uses.push_back(diff_[node.id]);
  backward_.push_back({{}, {}, [dy = diff_[node.id], dxs = targets, pads = padded_targets, wide = act_dt_ == dt::f32,
                                walk = concat_walk(graph_, node, targets, diff_[node.id])] {
                         for (const memory& dx : pads) std::memset(dx.get_data_handle(), 0, dx.get_desc().get_size());
                         auto scatter = [&](const auto* in, const auto& out) {
                           walk.run([&](size_t k, int64_t xi, int64_t yi, int64_t count) {
                             std::copy_n(in + yi, count, out[k] + xi);
                           });
                         };
                         if (wide)
                           scatter(static_cast<const float*>(dy.get_data_handle()), handles<float>(dxs));
                         else
                           scatter(static_cast<const uint16_t*>(dy.get_data_handle()), handles<uint16_t>(dxs));
                       },
                       uses});
  for (size_t k = 0; k < node.inputs.size(); ++k) finish_grad(node.inputs[k], targets[k]);
}

}  // namespace cnnbench::onednn
