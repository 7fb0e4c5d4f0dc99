// harness/run/run_setup.h — what every kind of run does first on every rank: agree on the
// configuration, pick threads, resolve settings, build the model and compile the plan (errors
// gathered and printed once by rank 0), start from rank 0's weights, and attach the gradient
// reducer that averages gradients across ranks.
#pragma once

#include <memory>
#include <string>

#include "comm/communicator.h"
#include "comm/gradient_reducer.h"
#include "harness/cli/config.h"
#include "harness/cli/run_settings.h"
#include "harness/run/forward_overlap.h"
#include "kernels/plan.h"
#include "kernels/search_choices.h"

namespace cnnbench {

struct RunSetup {
  RunSettings settings;
  Graph graph;
  std::unique_ptr<Plan> plan;
  int threads = 1;
  size_t host_memory_share = 0;  // on a CPU, the plan's limit: this rank's share of the host's MemAvailable (0: none)
  std::unique_ptr<SearchChoices> search_choices;  // on a GPU with --algorithm_cache, the file's choices
};

// Throws ErrorsReported (already printed) if any rank cannot set up.
RunSetup set_up_run(const Config& config, Communicator& comm);
// The plan of the settings' precision and layout on this rank's device: its memory allocated and
// first-touched anew (set_up_run's, and each --repeats run's).
// The seed of a rank's dropout masks: from --seed and the rank (each rank its own, as each its own images).
// The CPUs this rank may use: those the launcher bound it to, or, where it did not bind the
// ranks (each sees every CPU of the host), the host's CPUs shared among its ranks.
int rank_cpus(const Communicator& comm);
uint64_t dropout_seed(const Config& config, int rank);
// The plan for this run: its options from the flags, label smoothing, and dropout_seed().
// On a CPU each rank may take the setup's host_memory_share bytes (the ranks of a host agree on
// it); on a GPU the search reads and adds to the setup's search_choices, saved to --algorithm_cache
// when it added any (a file that cannot be written is a note, and the run goes on).
std::unique_ptr<Plan> compile_run_plan(const Config& config, const RunSettings& settings, const Graph& graph,
                                       const Communicator& comm, const RunSetup& setup);
// Seeded initial weights, then rank 0's broadcast to all.
void start_from_rank0_weights(Plan& plan, const Communicator& comm, uint64_t seed);
// Whether ranks average gradients: more than one rank, training, not --variable_update=independent.
bool exchanges_gradients(const Communicator& comm, const Config& config, const RunSettings& settings);
// --compression as the element type on the wire (powersgd: fp32 factors), and PowerSGD's
// settings (null unless --compression=powersgd).
WireType wire_type(const std::string& compression);
std::unique_ptr<PowerSgdSettings> powersgd_settings(const Config& config);
// A reducer hooked to the plan's backward, or null when gradients are not exchanged.
std::unique_ptr<GradientExchange> attach_reducer(Plan& plan, Communicator& comm, const Config& config,
                                                const RunSettings& settings);
// --overlap_forward: the reducer's updates left to the next forward pass (null without a
// reducer or the flag).
std::unique_ptr<ForwardOverlap> attach_forward_overlap(Plan& plan, GradientExchange* reducer, const Config& config,
                                                       Timeline* timeline);
// Notes (rank 0, stderr) for the gradient exchange's flags given to a run that exchanges no
// gradients, saying why (one rank, forward only, --variable_update=independent); its results
// record them as not applied.
void note_unused_exchange_flags(const Config& config, const Communicator& comm, const RunSettings& settings);
// --hierarchical_allreduce with every rank on one host: no sum crosses a host, so the whole
// allreduce is MPI's within the host, whatever --allreduce names; the note saying so ("" where
// the flag is off, on one rank, or on several hosts).
std::string one_host_hierarchical_note(const Config& config, const Communicator& comm);
// "Devices" and "Backend" lines of the header.
std::string devices_text(const Communicator& comm, const Plan& plan);
std::string backend_text(const Config& config, const Communicator& comm, int threads, bool exchanging,
                         const Plan& plan);

// Collective over MPI_COMM_WORLD, before any communicator is built (each backend connects by its
// own rank's flags) and before the runs that print and exit: throws ConfigError naming the first
// setting on which some rank differs from rank 0.
void check_ranks_agree(const Config& config);

}  // namespace cnnbench
