// tests/fuzz/fuzz_plan.h — TinyPlan: a Plan that holds the arenas of a tiny graph (batch norm
// and a linear layer on 2 x 2 images: 16 parameters, 4 running statistics) and runs nothing.
// Checkpoints are written from it and read into it; the fuzz build needs no backend.
#pragma once

#include <string>

#include "kernels/plan.h"
#include "models/graph_builder.h"

namespace cnnbench::fuzz {

inline const std::string tiny_model = "fuzz_tiny";

inline Graph tiny_graph() {
  GraphBuilder b(tiny_model, {1, 2, 2, 2});
  const int x = b.batch_norm(b.input(), "bn");
  return b.finish(b.linear(x, 2, "fc"));
}

class TinyPlan final : public Plan {
 public:
  TinyPlan() : Plan(tiny_graph()) {}
  void set_input(const float*) override {}
  void forward(Mode) override {}
  LossResult loss(const int32_t*) override { return {}; }
  void set_output_grad(const float*) override {}
  void backward() override {}
  void sgd_step(const SgdConfig&, float, size_t, size_t) override {}
  void read_output(int, float*) override {}
  void read_input_grad(float*) override {}
};

}  // namespace cnnbench::fuzz
