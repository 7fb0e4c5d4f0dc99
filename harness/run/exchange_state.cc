#include "harness/run/exchange_state.h"

#include <fmt/format.h>

#include <exception>
#include <filesystem>
#include <random>
#include <stdexcept>

#include "harness/report/result_files.h"
#include "harness/run/checkpoint.h"

namespace cnnbench {

namespace {
constexpr const char* kKind = "powersgd";  // the only exchange that keeps state between steps
}

std::string save_exchange_state(const GradientExchange* exchange, Communicator& comm, const std::string& checkpoint) {
  if (!exchange) return "";
  const std::string state = exchange->state();
  if (state.empty()) return "";
  char id[17] = {};  // rank 0's draw, the same on every rank
  if (comm.rank() == 0) {
    std::random_device device;
    const uint64_t draw = (static_cast<uint64_t>(device()) << 32) ^ device();
    fmt::format_to_n(id, 16, "{:016x}", draw);
  }
  comm.broadcast(id, 16, 0);
  make_folders(std::filesystem::path(checkpoint).parent_path().string());
  write_rank_state(checkpoint, comm.rank(), comm.size(), kKind, id, state);
  return id;
}

bool resume_exchange_state(GradientExchange* exchange, Communicator& comm, const std::string& checkpoint,
                           const std::string& id) {
  if (!exchange) return false;
  const std::string fresh = exchange->state();
  if (fresh.empty()) return false;
  std::string why;
  try {
    if (id.empty()) throw std::runtime_error(checkpoint + " was written without PowerSGD state");
    const std::string state = read_rank_state(checkpoint, comm.rank(), comm.size(), kKind, id);
    try {
      exchange->restore_state(state);
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(rank_state_path(checkpoint, comm.rank()) + ": " + e.what());
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  // the first rank that could not (the number of ranks: none): all must agree, or their
  // allreduces would differ in size
  double first_failed = why.empty() ? -static_cast<double>(comm.size()) : -static_cast<double>(comm.rank());
  comm.allreduce_max(&first_failed, 1);
  const int failed_rank = static_cast<int>(-first_failed);
  if (failed_rank == comm.size()) {
    if (comm.rank() == 0)
      fmt::print("Resuming PowerSGD's error feedback and Q factors from the {} rank state files beside {}\n", comm.size(),
                 checkpoint);
    return true;
  }
  exchange->restore_state(fresh);
  if (comm.rank() == failed_rank)
    fmt::print(stderr, "cnnbench: PowerSGD state not resumed on any rank ({}): error feedback and Q start afresh, "
                       "after the uncompressed warm-up steps\n", why);
  return false;
}

}  // namespace cnnbench
