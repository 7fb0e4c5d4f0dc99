#include "kernels/param_layout.h"

#include <cmath>
#include <random>

namespace cnnbench {

ParamLayout ParamLayout::of(const Graph& graph) {
  ParamLayout layout;
  layout.params_of_node.resize(graph.nodes.size());
  layout.buffers_of_node.resize(graph.nodes.size());
  for (auto node = graph.nodes.rbegin(); node != graph.nodes.rend(); ++node) {
    for (int i = 0; i < static_cast<int>(node->params.size()); ++i) {
      const ParamSpec& spec = node->params[i];
      layout.params_of_node[node->id].push_back(static_cast<int>(layout.params.size()));
      layout.params.push_back(
          {node->id, i, &spec, layout.param_elements, spec.elements(), node->kind == OpKind::batch_norm});
      layout.param_elements += spec.elements();
    }
    for (int i = 0; i < static_cast<int>(node->buffers.size()); ++i) {
      const ParamSpec& spec = node->buffers[i];
      layout.buffers_of_node[node->id].push_back(static_cast<int>(layout.buffers.size()));
      layout.buffers.push_back({node->id, i, &spec, layout.buffer_elements, spec.elements()});
      layout.buffer_elements += spec.elements();
    }
  }
  return layout;
}

namespace {

uint64_t hash_name(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;  // FNV-1a
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

// Box-Muller over our own uniform draws: identical on every standard library.
void fill(const ArenaEntry& e, float* dst, uint64_t seed) {
  const ParamSpec& spec = *e.spec;
  std::mt19937_64 rng(hash_name(spec.name, seed));
  auto uniform01 = [&] { return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0); };
  auto normal = [&](double stddev) {
    return stddev * std::sqrt(-2.0 * std::log(uniform01())) * std::cos(2.0 * M_PI * uniform01());
  };
  for (int64_t i = 0; i < e.elements; ++i) {
    double v = 0;
    switch (spec.init) {
      case Init::zeros: v = 0; break;
      case Init::ones: v = 1; break;
      case Init::he_normal_fan_out: v = normal(std::sqrt(2.0 / spec.fan_out)); break;
      case Init::he_normal_fan_in: v = normal(std::sqrt(2.0 / spec.fan_in)); break;
      case Init::normal_0_01: v = normal(0.01); break;
      case Init::uniform_fan_in: {
        const double bound = 1.0 / std::sqrt(static_cast<double>(spec.fan_in));
        v = (2.0 * uniform01() - 1.0) * bound;
        break;
      }
    }
    dst[i] = static_cast<float>(v);
  }
}

}  // namespace

void init_parameters(const ParamLayout& layout, float* params, float* buffers, uint64_t seed) {
  for (const ArenaEntry& e : layout.params) fill(e, params + e.offset, seed);
  for (const ArenaEntry& e : layout.buffers) fill(e, buffers + e.offset, seed);
}

}  // namespace cnnbench
