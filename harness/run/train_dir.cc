#include "harness/run/train_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "harness/report/result_files.h"

namespace cnnbench {
namespace {

std::string text_of(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

std::string this_host() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() < 12 && s.find_first_not_of("0123456789") == std::string::npos;
}

// Removes the old run's checkpoints and their ranks' state files (rank 0).
void remove_checkpoints(const std::string& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const bool marker = name == "results-written";  // the old run's results, not this one's
    if (!marker && name.rfind("checkpoint-epoch-", 0) != 0) continue;
    if (!marker && !name.ends_with(".ckpt") && !name.ends_with(".state")) continue;
    std::error_code removed;
    std::filesystem::remove(entry.path(), removed);
    if (removed) throw std::runtime_error(entry.path().string() + ": cannot remove: " + removed.message());
  }
}

// Holds a lock on train_dir/.lock for the rest of the process (rank 0): another run given the
// folder while this one trains is refused instead of writing its checkpoints between this run's.
// A POSIX record lock, so that the refusal can name the holder's pid; the file stays empty (a
// refused run changes nothing). A folder where no lock can be made (read-only) is left to the
// checks that refuse it.
void lock_train_dir(const std::string& dir) {
  static int held = -1;
  if (held >= 0) return;
  try {
    make_folders(dir);
  } catch (const std::exception&) {
    return;
  }
  const int fd = ::open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  struct flock whole = {};
  whole.l_type = F_WRLCK;
  whole.l_whence = SEEK_SET;
  if (::fcntl(fd, F_SETLK, &whole) != 0) {
    struct flock holder = whole;
    const bool named = ::fcntl(fd, F_GETLK, &holder) == 0 && holder.l_type != F_UNLCK && holder.l_pid > 0;
    ::close(fd);
    throw std::runtime_error(fmt::format("--train_dir: {} is in use by another run{}: one run at a time",
                                         printable(dir, 4096), named ? fmt::format(" (pid {})", holder.l_pid) : ""));
  }
  held = fd;
}

}  // namespace

std::string results_marker_path(const std::string& train_dir) { return train_dir + "/results-written"; }

nlohmann::json run_identity(const Config& config, const RunSettings& settings, double learning_rate,
                            int64_t train_examples, uint64_t data_fingerprint, double schedule_epochs) {
  // resolved values, not the flags' text: "0.10;82" and "0.1;82" are one schedule, and "auto" is
  // the data set's recipe
  std::string schedule;
  if (!config.piecewise_learning_rate_schedule.empty()) {
    const PiecewiseSchedule parsed = parse_piecewise_schedule(config.piecewise_learning_rate_schedule);
    for (size_t i = 0; i < parsed.rates.size(); ++i)
      schedule += fmt::format("{}{}", i ? ";" : "", parsed.rates[i]) +
                  (i < parsed.boundaries.size() ? fmt::format(";{}", parsed.boundaries[i]) : "");
  }
  std::string augmentation = config.train_augmentation;
  if (augmentation == "auto" && settings.dataset == "cifar10") augmentation = "crop_flip";
  if (augmentation == "auto" && settings.dataset == "fashion_mnist") augmentation = "none";
  if (config.learning_rate_base_batch > 0)
    learning_rate *= static_cast<double>(settings.global_batch) / static_cast<double>(config.learning_rate_base_batch);
  nlohmann::json id = {{"model", settings.model.name},
                       {"dataset", settings.dataset},
                       {"train_examples", std::to_string(train_examples)},
                       {"data_fingerprint", fmt::format("{:016x}", data_fingerprint)},
                       {"seed", std::to_string(config.seed)},
                       {"global_batch", std::to_string(settings.global_batch)},
                       {"precision", std::string(dtype_name(settings.precision))},
                       {"optimizer", config.optimizer},
                       {"weight_decay", fmt::format("{}", config.weight_decay)},
                       {"learning_rate", fmt::format("{}", learning_rate)},
                       {"piecewise_learning_rate_schedule", schedule},
                       {"num_learning_rate_warmup_epochs", fmt::format("{}", config.num_learning_rate_warmup_epochs)},
                       {"cosine_learning_rate", config.cosine_learning_rate ? "true" : "false"},
                       {"label_smoothing", fmt::format("{}", config.label_smoothing)},
                       {"train_augmentation", augmentation},
                       {"variable_update", config.variable_update},
                       {"compression", config.compression}};
  // a head of another size is another model; the model's own head adds no key, so checkpoints
  // written before the key existed still resume
  if (settings.classes > 0 && settings.classes != settings.model.classes) id["classes"] = std::to_string(settings.classes);
  if (config.optimizer != "sgd") {
    id["momentum"] = fmt::format("{}", config.momentum);
    id["nesterov"] = config.nesterov ? "true" : "false";
  }
  if (config.optimizer == "lars") id["lars_eta"] = fmt::format("{}", config.lars_eta);
  if (config.optimizer != "lars" && config.weight_decay > 0)
    id["weight_decay_on_batch_norm"] = config.weight_decay_on_batch_norm ? "true" : "false";
  if (config.compression == "powersgd") id["powersgd_rank"] = std::to_string(config.powersgd_rank);
  // a cosine schedule's length is --num_epochs: another length is another schedule
  if (config.cosine_learning_rate) id["cosine_epochs"] = fmt::format("{}", schedule_epochs);
  return id;
}

std::string identity_differences(const CheckpointInfo& theirs, const nlohmann::json& ours) {
  std::string out;
  auto differ = [&](const std::string& key, const std::string& their_value, const std::string& our_value) {
    if (their_value == our_value) return;
    if (key == "data_fingerprint") {  // a hash means nothing to a user: say what differs
      out += fmt::format("{}other data in --data_dir (fingerprint {}, this run: {})", out.empty() ? "" : ", ",
                         their_value, our_value);
      return;
    }
    // no classes key: the model's own head (run_identity)
    const std::string unset = key == "classes" ? "the model's own" : "none";
    out += fmt::format("{}{} {} (this run: {})", out.empty() ? "" : ", ", key, their_value.empty() ? unset : their_value,
                       our_value.empty() ? unset : our_value);
  };
  if (!theirs.run.is_object()) {  // an earlier version's checkpoint
    differ("model", theirs.model, text_of(ours.at("model")));
    differ("seed", std::to_string(theirs.seed), text_of(ours.at("seed")));
    return out;
  }
  for (const auto& [key, value] : ours.items()) {
    // recorded since 2026-11-27, 2026-11-28 and 2026-11-29
    if ((key == "train_examples" || key == "cosine_epochs" || key == "data_fingerprint") && !theirs.run.contains(key))
      continue;
    // before the flag (2026-11-29), batch norm's parameters took weight decay
    const std::string before = key == "weight_decay_on_batch_norm" ? "true" : "";
    differ(key, theirs.run.contains(key) ? text_of(theirs.run.at(key)) : before, text_of(value));
  }
  for (const auto& [key, value] : theirs.run.items())
    if (!ours.contains(key)) differ(key, text_of(value), "");
  return out;
}

int clear_stale_temporaries(const std::string& dir) {
  const std::string host = this_host();
  int cleared = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const auto tmp = name.rfind(".tmp.");
    // only what cnnbench writes here: checkpoints and their ranks' state files
    if (tmp == std::string::npos || name.rfind("checkpoint-epoch-", 0) != 0 || !entry.is_regular_file()) continue;
    std::string writer = name.substr(tmp + 5);  // HOST.PID, or PID
    const auto dot = writer.rfind('.');
    if (dot != std::string::npos) {
      if (writer.substr(0, dot) != host) continue;  // another host's writer may still run
      writer = writer.substr(dot + 1);
    }
    if (!all_digits(writer)) continue;
    const pid_t pid = static_cast<pid_t>(std::stoll(writer));
    if (pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH)) continue;  // still running (or not ours to ask)
    std::error_code removed;
    if (std::filesystem::remove(entry.path(), removed)) ++cleared;
  }
  return cleared;
}

namespace {

// Rank 0's text sent to every rank (its length first).
std::string broadcast_text(const Communicator& comm, std::string text) {
  uint64_t length = text.size();
  comm.broadcast(&length, sizeof length, 0);
  text.resize(length);
  if (length > 0) comm.broadcast(text.data(), length, 0);
  return text;
}

}  // namespace

TrainDirStart open_train_dir(const Config& config, const nlohmann::json& identity, Plan& plan, int64_t total_steps,
                             int64_t steps_per_epoch, Communicator& comm) {
  const bool leader = comm.rank() == 0;
  const std::string& dir = config.train_dir;
  TrainDirStart start;
  // Rank 0 alone reads the folder and decides (every rank taking the same path through the
  // collectives after): which checkpoint to resume from, or to start afresh over another run's.
  std::string error, skipped, chosen;
  bool afresh = false;  // --overwrite_train_dir over another run's checkpoints
  if (leader) {
    try {
      std::error_code ec;
      if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
        throw std::runtime_error("--train_dir: " + printable(dir, 4096) + " is a file, not a folder");
      lock_train_dir(dir);
      const std::vector<std::string> found = list_checkpoints(dir);
      if (!found.empty() && !config.resume) {
        if (!config.overwrite_train_dir)
          throw std::runtime_error(fmt::format(
              "--train_dir: {} holds the checkpoints of a run (newest: {}): --resume continues it, "
              "--overwrite_train_dir starts afresh and removes them",
              printable(dir, 4096), std::filesystem::path(found.front()).filename().string()));
        afresh = true;
      }
      if (config.resume) {
        for (const std::string& path : found) {
          CheckpointInfo header;
          try {
            header = read_checkpoint_header(path);
          } catch (const std::exception& e) {
            skipped += std::string(skipped.empty() ? "" : "; ") + e.what();
            continue;
          }
          const std::string differences = identity_differences(header, identity);
          if (!differences.empty()) {
            if (!config.overwrite_train_dir)
              throw std::runtime_error(fmt::format(
                  "--resume: {} is another run's checkpoint ({}); --overwrite_train_dir starts afresh and removes it",
                  printable(path, 4096), differences));
            afresh = true;
          } else {
            chosen = path;
          }
          break;
        }
        // checkpoints there, none whole: starting from scratch would write over them
        if (!found.empty() && chosen.empty() && !afresh && !config.overwrite_train_dir)
          throw std::runtime_error(fmt::format(
              "--resume: no checkpoint in {} reads back whole ({}); --overwrite_train_dir starts afresh and removes them",
              printable(dir, 4096), skipped));
      }
      if (!skipped.empty()) fmt::print(stderr, "cnnbench: skipped damaged checkpoints: {}\n", skipped);
      // the folder is this run's from here on: the old run's files go, and so do killed writes' leftovers
      if (afresh) {
        remove_checkpoints(dir);
        fmt::print("Removed the checkpoints of another run from {} (--overwrite_train_dir)\n", dir);
      }
      clear_stale_temporaries(dir);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (comm.report_errors_together(error)) throw ErrorsReported{2};
  chosen = broadcast_text(comm, chosen);
  error.clear();
  if (!chosen.empty()) {
    try {  // every rank loads the checkpoint rank 0 chose, or the job stops
      start.resumed = read_checkpoint(chosen, plan, identity.at("model").get<std::string>());
    } catch (const std::exception& e) {
      error = "--resume: " + std::string(e.what());
    }
  }
  if (comm.report_errors_together(error)) throw ErrorsReported{2};
  if (!chosen.empty() && comm.size() > 1) {
    // each rank read the file at that path on its own host: where the folder is not shared, the
    // copies must be the same file, or the ranks would train on from different weights (and
    // rank 0 would write its mix over its own good checkpoint)
    const auto& r = *start.resumed;
    const std::vector<std::string> read = comm.gather_strings(
        fmt::format("{:016x} (epoch {}, step {})", r.checksum, r.epochs_done, r.steps_done));
    if (read[comm.rank()] != read[0])
      error = fmt::format("--resume: this rank's {} is not rank 0's: checksum {} against {}; every rank must read the "
                          "same checkpoint (a shared --train_dir, or copies made once the run had stopped)",
                          printable(chosen, 4096), read[comm.rank()], read[0]);
    if (comm.report_errors_together(error)) throw ErrorsReported{2};
  }
  if (const auto& r = start.resumed) {
    // a run stopped at --stop_at_top_1_accuracy stays complete while this run's stop is no higher
    // than what it reached (its history says; a checkpoint of an earlier version: complete)
    bool still_stopped = r->stopped_at_target;
    if (still_stopped && r->history) {
      double reached = -1;
      for (const EpochMetrics& m : *r->history)
        if (m.evaluated) reached = m.test_top1;
      still_stopped = config.stop_at_top_1_accuracy > 0 && reached >= config.stop_at_top_1_accuracy;
    }
    start.complete = r->steps_done >= total_steps || still_stopped;
    // an earlier version wrote no history and no marker: its results were written. Rank 0 looks
    // and tells the others: every rank takes the same path after (collectives), even where a
    // shared file system shows the marker to some ranks later than to others
    std::error_code ec;
    uint8_t written = !r->history || (leader && std::filesystem::exists(results_marker_path(dir), ec));
    comm.broadcast(&written, sizeof written, 0);
    start.results_written = written != 0;
  }
  if (config.resume && leader && !afresh && !start.complete) {
    if (start.resumed && steps_per_epoch > 0 && start.resumed->steps_done % steps_per_epoch != 0)
      fmt::print("Resuming from {} ({} steps done: {:.4g} epochs)\n", start.resumed->path, start.resumed->steps_done,
                 static_cast<double>(start.resumed->steps_done) / static_cast<double>(steps_per_epoch));
    else if (start.resumed)
      fmt::print("Resuming from {} ({} epoch{} done)\n", start.resumed->path, start.resumed->epochs_done,
                 start.resumed->epochs_done == 1 ? "" : "s");
    else
      fmt::print("No checkpoint in {}: starting from scratch\n", dir);
  }
  return start;
}

}  // namespace cnnbench
