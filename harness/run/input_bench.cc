#include "harness/run/input_bench.h"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

#include "harness/cli/run_settings.h"
#include "harness/report/result_fields.h"
#include "harness/report/result_files.h"
#include "harness/report/run_context.h"
#include "harness/report/tf_log.h"
#include "harness/run/real_data.h"
#include "harness/run/run_setup.h"

namespace cnnbench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// CPUs this process may run on (taskset, cgroups' cpusets, Slurm's binding).
int cpus_allowed() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return CPU_COUNT(&set);
}

// Takes `count` batches from the pipeline, starting a new epoch whenever one runs out.
void take_batches(BatchPipeline& pipeline, int64_t count, int64_t& taken, int64_t& epoch) {
  for (int64_t i = 0; i < count; ++i) {
    if (taken == pipeline.steps_per_epoch()) {
      pipeline.start_epoch(++epoch);
      taken = 0;
    }
    pipeline.next_images();
    ++taken;
  }
}

}  // namespace

void run_input_benchmark(const Config& config, Communicator& comm) {
  const bool leader = comm.rank() == 0;
  RunSettings settings;
  std::string error;
  try {
    settings = resolve_settings(config, comm.size(), 1);
    settings.classes = head_classes(config, settings);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (comm.report_errors_together(error)) throw ErrorsReported{2};

  const ModelInfo& model = settings.model;
  DataSplits data = find_shards(settings.dataset, config.data_dir, comm, error);  // collective
  try {
    if (!error.empty()) throw std::runtime_error(error);
    data = load_data(settings.dataset, config.data_dir, model.image_size, settings.classes, std::move(data),
                     config.train_augmentation, /*with_test=*/false);
    if (data.channels != model.channels || data.height != model.image_size || data.width != model.image_size)
      throw std::runtime_error(fmt::format("{}: images are {}x{}x{}, model {} takes {}x{}x{}", config.data_dir,
                                           data.channels, data.height, data.width, model.name, model.channels,
                                           model.image_size, model.image_size));
    if (data.train_count / comm.size() < settings.batch_size)
      throw std::runtime_error("--batch_size: larger than a rank's share of the training set");
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (comm.report_errors_together(error)) throw ErrorsReported{2};
  // every rank loaded the same data set, or none goes on (collective)
  if (comm.report_errors_together(check_ranks_read_the_same_data(data, config.data_dir, comm))) throw ErrorsReported{2};

  const int workers = static_cast<int>(config.num_data_workers);
  const std::unique_ptr<BatchPipeline> pipeline =
      make_pipeline(data, true, settings.batch_size, comm, config, model.image_size, settings.classes);
  if (leader) {
    fmt::print("Input pipeline benchmark: {} ({}), {}x{}x{} training examples for {}\n", config.data_dir,
               data.describe_train(), model.channels, model.image_size, model.image_size, model.name);
    fmt::print("{} rank{} x {} worker{}, batch {} per rank, {} CPUs allowed on rank 0\n", comm.size(),
               comm.size() == 1 ? "" : "s", workers, workers == 1 ? "" : "s", settings.batch_size, cpus_allowed());
    fmt::print("Running warm up\n");
    std::fflush(stdout);
  }
  int64_t taken = 0, epoch = 0;
  pipeline->start_epoch(epoch);
  take_batches(*pipeline, settings.warmup_steps, taken, epoch);
  pipeline->reset_capacity();
  comm.barrier();
  if (leader) fmt::print("Done warm up\nStep\tImg/sec\n");
  // Each rank takes its batches as fast as they come; rank 0 prints its own rate times the ranks.
  const auto start = Clock::now();
  auto window = start;
  for (int64_t done = 0; done < settings.timed_steps;) {
    const int64_t chunk = std::min<int64_t>(config.display_every, settings.timed_steps - done);
    take_batches(*pipeline, chunk, taken, epoch);
    done += chunk;
    if (leader) {
      const double rate = static_cast<double>(chunk * settings.global_batch) / seconds_since(window);
      fmt::print("{}\timages/sec: {:.1f}\n", done, rate);
      std::fflush(stdout);
    }
    window = Clock::now();
  }
  double seconds = seconds_since(start);
  comm.allreduce_max(&seconds, 1);
  double capacity = pipeline->images_per_sec_capacity();  // of the workers' busy time, all ranks
  comm.allreduce_sum(&capacity, 1);
  const int64_t images = settings.timed_steps * settings.global_batch;
  const double rate = static_cast<double>(images) / seconds;
  const int all_workers = workers * comm.size();
  if (!leader) return;
  fmt::print("Delivered {:.2f} images/sec ({:.2f} per worker; the workers' busy time alone would give {:.2f})\n", rate,
             rate / all_workers, capacity);

  const RunContext context = collect_run_context();
  nlohmann::json doc = {{"schema", "cnnbench.input/1"},
                        {"context", to_json(context)},
                        {"config", nlohmann::json::object()},
                        {"run",
                         {{"model", model.name},
                          {"dataset", settings.dataset},
                          {"data", data.describe_train()},
                          {"format", data.format()},
                          {"ranks", comm.size()},
                          {"workers_per_rank", workers},
                          {"batch_size", settings.batch_size},
                          {"image_size", model.image_size},
                          {"cpus_allowed", cpus_allowed()}}},
                        {"result",
                         {{"images", images},
                          {"seconds", seconds},
                          {"images_per_sec", rate},
                          {"images_per_sec_per_worker", rate / all_workers},
                          {"busy_time_images_per_sec", capacity}}}};
  for (const auto& [key, value] : config_values(config)) doc["config"][key] = value;
  std::string path = config.result_json;
  if (path.empty()) {
    char stamp[32];
    const std::time_t t = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::gmtime(&t));
    path = fmt::format("{}/input_{}_{}r_{}w_{}_{}.json", config.benchmark_log_dir, model.name, comm.size(), workers,
                       stamp, getpid());
  }
  make_folders(config.benchmark_log_dir);
  // a setting that is not UTF-8 (a Latin-1 path) is written as U+FFFD, never lost to an exception
  write_file_atomically(path, doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  append_csv_row(config.benchmark_log_dir + "/input.csv", input_csv_header(),
                 {context.time_utc, model.name, doc["run"]["format"].get<std::string>(), std::to_string(comm.size()),
                  std::to_string(workers), std::to_string(settings.batch_size), std::to_string(cpus_allowed()),
                  fmt::format("{:.6g}", rate), fmt::format("{:.6g}", rate / all_workers)});
  fmt::print("Results: {} (JSON), {}/input.csv\n", path, config.benchmark_log_dir);
  print_total_images_per_sec(stdout, rate);  // last, as every mode's log ends
}

}  // namespace cnnbench
