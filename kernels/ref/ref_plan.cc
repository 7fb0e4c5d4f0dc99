#include "kernels/ref/ref_plan.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <vector>

#include "kernels/ref/batch_norm.h"
#include "kernels/ref/conv.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/linear.h"
#include "kernels/ref/lrn.h"
#include "kernels/ref/loss.h"
#include "kernels/ref/pool.h"
#include "kernels/ref/sgd.h"
#include "kernels/top_k.h"

namespace cnnbench {
namespace {

ref::ConvGeometry conv_geometry(const Shape& in, const Node& node) {
  const ConvAttrs& c = node.conv;
  ref::ConvGeometry g{};
  g.n = in.n, g.c = in.c, g.h = in.h, g.w = in.w, g.k = c.out_channels, g.r = c.kernel_h, g.t = c.kernel_w;
  g.stride = c.stride, g.pad = c.pad_h, g.pad_w = c.pad_w, g.oh = node.out.h, g.ow = node.out.w;
  g.groups = c.groups;
  return g;
}

ref::LrnGeometry lrn_geometry(const Shape& in, const Node& node) {
  return {in.n, in.c, in.h * in.w, node.lrn.radius, node.lrn.bias, node.lrn.alpha, node.lrn.beta};
}

ref::PoolGeometry pool_geometry(const Shape& in, const Node& node) {
  return {in.n, in.c, in.h, in.w, node.pool.kernel, node.pool.stride, node.pool.pad,
          node.out.h, node.out.w, node.pool.count_include_pad};
}

ref::ShortcutGeometry shortcut_geometry(const Shape& in, const Node& node) {
  return {in.n, in.c, in.h, in.w, node.out.c, node.out.h, node.out.w, node.shortcut.stride,
          node.shortcut.pad_front, node.shortcut.offset};
}

class RefPlan final : public Plan {
  // Adds the lifetime of a scope to one node's forward or backward time when timing is on.
  struct Timer {
    Timer(RefPlan* plan, int node, double LayerTime::*phase) : plan(plan), node(node), phase(phase) {
      if (plan->layer_timing_) start = std::chrono::steady_clock::now();
    }
    ~Timer() {
      if (!plan->layer_timing_) return;
      const auto end = std::chrono::steady_clock::now();
      plan->layer_times_[node].*phase += std::chrono::duration<double>(end - start).count();
      if (plan->layer_span_hook_) plan->layer_span_hook_(node, phase == &LayerTime::backward_sec, start, end);
    }
    RefPlan* plan;
    int node;
    double LayerTime::*phase;
    std::chrono::steady_clock::time_point start;
  };

 public:
  RefPlan(const Graph& graph, const PlanOptions& options)
      : Plan(graph), input_grad_(options.input_grad), input_nhwc_(options.input_nhwc) {
    if (options.compute != DType::f32)
      throw std::invalid_argument(std::string("backend 'ref' computes in fp32 only, not ") +
                                  dtype_name(options.compute));
    const size_t count = graph_.nodes.size();
    out_.resize(count);
    diff_.resize(count);
    saved_mean_.resize(count);
    saved_var_.resize(count);
    for (const Node& node : graph_.nodes) {
      out_[node.id].resize(node.out.elements());
      diff_[node.id].resize(node.out.elements());
      if (node.kind == OpKind::batch_norm) {
        saved_mean_[node.id].resize(node.out.c);
        saved_var_[node.id].resize(node.out.c);
      }
    }
  }

  void set_input(const float* images) override {
    if (!input_nhwc_) {
      std::copy_n(images, out_[0].size(), out_[0].data());
      return;
    }
    const Shape& s = graph_.input().out;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t p = 0; p < s.h * s.w; ++p) out_[0][(n * s.c + c) * s.h * s.w + p] = images[(n * s.h * s.w + p) * s.c + c];
  }

  void forward(Mode mode) override {
    if (mode == Mode::training) begin_dropout_step();
    for (const Node& node : graph_.nodes) {
      if (node.kind == OpKind::input) continue;
      params_needed(node.id);
      const Timer timer(this, node.id, &LayerTime::forward_sec);
      const float* x = out_[node.inputs[0]].data();
      const Shape& in = graph_.nodes[node.inputs[0]].out;
      float* y = out_[node.id].data();
      switch (node.kind) {
        case OpKind::input: break;
        case OpKind::conv:
          ref::conv_forward(x, param(node, 0), node.conv.bias ? param(node, 1) : nullptr, y,
                            conv_geometry(in, node));
          break;
        case OpKind::batch_norm: {
          const ref::BatchNormGeometry g{in.n, in.c, in.h * in.w, node.batch_norm.epsilon};
          float* running_mean = buffer(node, 0);
          float* running_var = buffer(node, 1);
          if (mode == Mode::training) {
            ref::batch_norm_forward_training(x, param(node, 0), param(node, 1), y,
                                             saved_mean_[node.id].data(), saved_var_[node.id].data(), g);
            ref::update_running_stats(saved_mean_[node.id].data(), saved_var_[node.id].data(),
                                      running_mean, running_var, node.batch_norm.momentum, g);
          } else {
            ref::batch_norm_forward_inference(x, param(node, 0), param(node, 1), running_mean,
                                              running_var, y, g);
          }
          break;
        }
        case OpKind::relu: ref::relu_forward(x, y, in.elements()); break;
        case OpKind::relu6: ref::relu6_forward(x, y, in.elements()); break;
        case OpKind::lrn: ref::lrn_forward(x, y, lrn_geometry(in, node)); break;
        case OpKind::dropout:
          if (mode == Mode::training)
            ref::dropout_forward(x, y, in.elements(), dropout_seed_, node.id, dropout_step_, node.dropout.rate);
          else
            std::copy_n(x, in.elements(), y);
          break;
        case OpKind::max_pool: ref::max_pool_forward(x, y, pool_geometry(in, node)); break;
        case OpKind::avg_pool: ref::avg_pool_forward(x, y, pool_geometry(in, node)); break;
        case OpKind::global_avg_pool: ref::global_avg_pool_forward(x, y, in.n * in.c, in.h * in.w); break;
        case OpKind::linear:
          ref::linear_forward(x, param(node, 0), node.linear.bias ? param(node, 1) : nullptr, y,
                              {in.n, in.per_sample(), node.out.c});
          break;
        case OpKind::add: ref::add_forward(x, out_[node.inputs[1]].data(), y, in.elements()); break;
        case OpKind::shortcut: ref::shortcut_forward(x, y, shortcut_geometry(in, node)); break;
        case OpKind::concat: {
          std::vector<const float*> xs;
          for (int u : node.inputs) xs.push_back(out_[u].data());
          ref::concat_forward(xs, concat_channels(node), y, in.n, in.h * in.w);
          break;
        }
      }
    }
  }

  LossResult loss(const int32_t* labels) override {
    const Node& logits = graph_.logits();
    LossResult result;
    result.top1_correct = count_top_k(out_[logits.id].data(), labels, logits.out.n, logits.out.c, 1);
    result.top5_correct = count_top_k(out_[logits.id].data(), labels, logits.out.n, logits.out.c, 5);
    result.loss = ref::softmax_cross_entropy(out_[logits.id].data(), labels, diff_[logits.id].data(),
                                             logits.out.n, logits.out.c, label_smoothing_);
    if (const float scale = loss_gradient_scale_ * loss_scale_; scale != 1.0f)
      for (float& d : diff_[logits.id]) d *= scale;
    return result;
  }

  void set_output_grad(const float* grad) override {
    std::copy_n(grad, diff_[graph_.output].size(), diff_[graph_.output].data());
  }

  void backward() override {
    for (int id = 0; id < graph_.output; ++id) std::fill(diff_[id].begin(), diff_[id].end(), 0.0f);
    for (int id = graph_.output; id >= 1; --id) {
      const Node& node = graph_.nodes[id];
      const int src = node.inputs[0];
      if (src == 0 && !input_grad_ && node.params.empty() && node.inputs.size() == 1) continue;
      const Timer timer(this, id, &LayerTime::backward_sec);
      const float* x = out_[src].data();
      const Shape& in = graph_.nodes[src].out;
      const float* dy = diff_[id].data();
      float* dx = diff_[src].data();
      switch (node.kind) {
        case OpKind::input: break;
        case OpKind::conv: {
          const auto g = conv_geometry(in, node);
          {
            const Timer weights(this, id, &LayerTime::weight_grad_sec);
            ref::conv_backward_weights(x, dy, grad(node, 0), node.conv.bias ? grad(node, 1) : nullptr, g);
          }
          if (src != 0 || input_grad_) ref::conv_backward_data(dy, param(node, 0), dx, g);
          break;
        }
        case OpKind::batch_norm:
          ref::batch_norm_backward(x, dy, param(node, 0), saved_mean_[id].data(), saved_var_[id].data(),
                                   dx, grad(node, 0), grad(node, 1),
                                   {in.n, in.c, in.h * in.w, node.batch_norm.epsilon});
          break;
        case OpKind::relu: ref::relu_backward(x, dy, dx, in.elements()); break;
        case OpKind::relu6: ref::relu6_backward(x, dy, dx, in.elements()); break;
        case OpKind::lrn: ref::lrn_backward(x, dy, dx, lrn_geometry(in, node)); break;
        case OpKind::dropout:
          ref::dropout_backward(dy, dx, in.elements(), dropout_seed_, id, dropout_step_, node.dropout.rate);
          break;
        case OpKind::max_pool: ref::max_pool_backward(x, dy, dx, pool_geometry(in, node)); break;
        case OpKind::avg_pool: ref::avg_pool_backward(dy, dx, pool_geometry(in, node)); break;
        case OpKind::global_avg_pool: ref::global_avg_pool_backward(dy, dx, in.n * in.c, in.h * in.w); break;
        case OpKind::linear: {
          const ref::LinearGeometry g{in.n, in.per_sample(), node.out.c};
          {
            const Timer weights(this, id, &LayerTime::weight_grad_sec);
            ref::linear_backward_weights(x, dy, grad(node, 0), node.linear.bias ? grad(node, 1) : nullptr, g);
          }
          if (src != 0 || input_grad_) ref::linear_backward_data(dy, param(node, 0), dx, g);
          break;
        }
        case OpKind::add: ref::add_backward(dy, dx, diff_[node.inputs[1]].data(), in.elements()); break;
        case OpKind::shortcut: ref::shortcut_backward(dy, dx, shortcut_geometry(in, node)); break;
        case OpKind::concat: {
          std::vector<float*> dxs;
          for (int u : node.inputs) dxs.push_back(diff_[u].data());
          ref::concat_backward(dy, dxs, concat_channels(node), in.n, in.h * in.w);
          break;
        }
      }
      for (int index : layout_.params_of_node[id]) gradient_ready(index);
    }
  }

  void sgd_step(const SgdConfig& config, float learning_rate, size_t offset, size_t count) override {
    if (config.lars) {
      for_each_param_in(layout(), static_cast<int64_t>(offset), static_cast<int64_t>(count), [&](const ArenaEntry& e) {
        ref::lars_update(params_.data() + e.offset, grads_.data() + e.offset, momentum_.data() + e.offset, e.elements,
                         learning_rate, config.momentum, config.weight_decay, config.lars_eta, lars_adapts(*e.spec),
                         config.nesterov, config.gradient_scale);
      });
      return;
    }
    for_each_decay_run(layout(), static_cast<int64_t>(offset), static_cast<int64_t>(count), config.decay_batch_norm,
                       config.weight_decay,
                       [&](int64_t at, int64_t n, bool decays) {
                         ref::sgd_update(params_.data() + at, grads_.data() + at, momentum_.data() + at, n,
                                         learning_rate, config.momentum, decays ? config.weight_decay : 0.0f,
                                         config.nesterov, config.gradient_scale);
                       });
  }

  void read_output(int node, float* dst) override {
    std::copy(out_.at(node).begin(), out_.at(node).end(), dst);
  }

  void read_input_grad(float* dst) override {
    if (!input_grad_) throw std::logic_error("plan was built without input_grad");
    if (!input_nhwc_) {
      std::copy(diff_[0].begin(), diff_[0].end(), dst);
      return;
    }
    const Shape& s = graph_.input().out;
    for (int64_t n = 0; n < s.n; ++n)
      for (int64_t c = 0; c < s.c; ++c)
        for (int64_t p = 0; p < s.h * s.w; ++p) dst[(n * s.h * s.w + p) * s.c + c] = diff_[0][(n * s.c + c) * s.h * s.w + p];
  }

 private:
  float* param(const Node& node, int i) { return params_.data() + layout_.param(node.id, i).offset; }
  std::vector<int64_t> concat_channels(const Node& node) const {
    std::vector<int64_t> channels;
    for (int u : node.inputs) channels.push_back(graph_.nodes[u].out.c);
    return channels;
  }
  float* grad(const Node& node, int i) { return grads_.data() + layout_.param(node.id, i).offset; }
  float* buffer(const Node& node, int i) { return buffers_.data() + layout_.buffer(node.id, i).offset; }

  bool input_grad_, input_nhwc_;
  std::vector<std::vector<float>> out_, diff_, saved_mean_, saved_var_;
};

}  // namespace

std::unique_ptr<Plan> make_ref_plan(const Graph& graph, const PlanOptions& options) {
  return std::make_unique<RefPlan>(graph, options);
}

}  // namespace cnnbench
