// harness/run/exchange_state.h — the gradient exchange's own state in checkpoints: with
// --compression=powersgd every rank keeps an error feedback of its own and Q factors, and a
// resumed run that started them afresh would redo the warm-up and lose what the error feedback
// held back. Each rank writes its state beside the checkpoint before rank 0 writes the
// checkpoint, so a checkpoint that exists has all of them; a resume takes them only if every
// rank can, otherwise all ranks start the state afresh (saying so), as they must agree on it.
#pragma once

#include <string>

#include "comm/communicator.h"
#include "comm/gradient_exchange.h"

namespace cnnbench {

// Every rank, before rank 0 writes `checkpoint`; returns false, writing nothing, when the
// exchange keeps no state. Throws std::runtime_error naming the file when it cannot be written.
bool save_exchange_state(const GradientExchange* exchange, const Communicator& comm, const std::string& checkpoint);

// Every rank, after loading `checkpoint` and attaching the exchange. Returns whether the state
// was restored (false: no state kept, or started afresh on every rank, rank 0 saying why).
bool resume_exchange_state(GradientExchange* exchange, Communicator& comm, const std::string& checkpoint);

}  // namespace cnnbench
