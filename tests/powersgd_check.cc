// powersgd_check: runs comm/powersgd.h under mpiexec on gradients from a file, for
// tests/test_powersgd.py to compare with PyTorch's PowerSGD hook on the same inputs.
//   powersgd_check SHAPES INPUT OUTPUT RANK WARMUP FUSION_BYTES STEPS [BACKEND]
// SHAPES: tensors in arena order, e.g. "64x27,16,10x8x3x3" (a single number: a vector).
// INPUT: float32 [ranks][steps][elements], each rank's local gradient (not yet averaged).
// OUTPUT.<rank>: float32, the initial Q factors of every bucket in order, then [steps][elements]
// of what the reduction left in the arena (the average over ranks).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/powersgd.h"

using namespace cnnbench;

namespace {

std::vector<TensorExtent> parse_shapes(const std::string& text) {
  std::vector<TensorExtent> out;
  size_t offset = 0;
  std::stringstream list(text);
  for (std::string shape; std::getline(list, shape, ',');) {
    std::vector<size_t> dims;
    std::stringstream parts(shape);
    for (std::string d; std::getline(parts, d, 'x');) dims.push_back(std::stoul(d));
    size_t count = 1;
    for (size_t d : dims) count *= d;
    TensorExtent e{offset, count};
    if (dims.size() > 1) e.rows = dims[0], e.cols = count / dims[0];
    out.push_back(e);
    offset += count;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  init_mpi(&argc, &argv);
  if (argc < 8) {
    std::cerr << "usage: powersgd_check SHAPES INPUT OUTPUT RANK WARMUP FUSION_BYTES STEPS [BACKEND]\n";
    return 2;
  }
  int code = 0;
  {
    std::unique_ptr<Communicator> comm = make_communicator(argc > 8 ? argv[8] : "mpi");
    const std::vector<TensorExtent> tensors = parse_shapes(argv[1]);
    const size_t elements = tensors.back().offset + tensors.back().count;
    const int steps = std::atoi(argv[7]);
    PowerSgdSettings settings;
    settings.rank = std::atoi(argv[4]);
    settings.warmup_steps = std::atoi(argv[5]);
    const std::vector<Bucket> buckets = plan_buckets(tensors, std::stoul(argv[6]));
    PowerSgd powersgd(buckets, tensors, settings);

    std::ifstream in(argv[2], std::ios::binary);
    std::ofstream out(std::string(argv[3]) + "." + std::to_string(comm->rank()), std::ios::binary);
    for (int b = 0; b < static_cast<int>(buckets.size()); ++b)
      out.write(reinterpret_cast<const char*>(powersgd.q_factors(b).data()), powersgd.q_factors(b).size() * 4);
    std::vector<float> arena(elements);
    for (int step = 0; step < steps; ++step) {
      in.seekg(static_cast<std::streamoff>(((comm->rank() * steps) + step) * elements * 4));
      in.read(reinterpret_cast<char*>(arena.data()), elements * 4);
      if (!in) {
        std::cerr << "powersgd_check: " << argv[2] << " is too short\n";
        code = 1;
        break;
      }
      for (float& v : arena) v /= static_cast<float>(comm->size());  // as the loss gradient is pre-scaled
      for (int b = 0; b < static_cast<int>(buckets.size()); ++b) powersgd.reduce(*comm, arena.data(), b);
      out.write(reinterpret_cast<const char*>(arena.data()), elements * 4);
    }
    if (comm->rank() == 0)
      std::printf("%zu buckets, %zu of %zu tensors compressed, %zu of %zu elements sent per step\n", buckets.size(),
                  powersgd.compressed_tensors(), tensors.size(), powersgd.wire_elements(), elements);
  }
  finalize_mpi();
  return code;
}
