// harness/run/exchange_state.h — the gradient exchange's own state in checkpoints: with
// --compression=powersgd every rank keeps an error feedback of its own and Q factors, and a
// resumed run that started them afresh would redo the warm-up and lose what the error feedback
// held back. Each rank writes its state beside the checkpoint, under an id rank 0 draws, before
// rank 0 writes the checkpoint naming that id; so a checkpoint that names one has all of them,
// and a state file another run left under the same name is not taken. A resume takes them only
// if every rank can; otherwise all ranks start the state afresh (saying why), as they must agree.
#pragma once

#include <string>

#include "comm/communicator.h"
#include "comm/gradient_exchange.h"

namespace cnnbench {

// Every rank, before rank 0 writes `checkpoint`: returns the id to put in the checkpoint's
// header (CheckpointInfo::rank_state_id), or "" having written nothing when the exchange keeps
// no state. Throws std::runtime_error naming the file when it cannot be written.
std::string save_exchange_state(const GradientExchange* exchange, Communicator& comm, const std::string& checkpoint);

// Every rank, after loading `checkpoint` (whose header named `id`) and attaching the exchange.
// Returns whether the state was restored (false: none kept, or started afresh on every rank,
// the first rank that could not take its own saying why).
bool resume_exchange_state(GradientExchange* exchange, Communicator& comm, const std::string& checkpoint,
                           const std::string& id);

}  // namespace cnnbench
