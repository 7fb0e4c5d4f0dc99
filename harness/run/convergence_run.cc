#include "harness/run/convergence_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <cmath>
#include <optional>
#include <ctime>
#include <nlohmann/json.hpp>

#include "harness/run/step_loop.h"
#include "harness/run/checkpoint.h"
#include "harness/run/exchange_state.h"
#include "harness/run/fault_injection.h"
#include "harness/data/input_pipeline.h"
#include "harness/run/lr_schedule.h"
#include "harness/run/real_data.h"
#include "harness/compare/baseline.h"
#include "harness/report/event_file.h"
#include "harness/report/csv.h"
#include "harness/report/output_paths.h"
#include "harness/report/result_files.h"
#include "harness/report/result_record.h"
#include "harness/report/run_summary.h"
#include "harness/run/time_to_accuracy.h"
#include "harness/run/train_dir.h"
#include "harness/report/run_context.h"
#include "harness/run/run_setup.h"
#include "harness/report/tf_log.h"
#include "harness/report/timeline_file.h"
#include "kernels/cpu_ops.h"
#include "kernels/device_plan.h"
#include "kernels/top_k.h"

namespace cnnbench {
namespace {

struct EpochMetrics {
  int64_t epoch = 0;  // 1-based
  double train_loss = 0, train_top1 = 0, learning_rate = 0;
  double seconds = 0, images_per_sec = 0, compute_images_per_sec = 0, input_stall_sec = 0;
  bool evaluated = false;
  double test_loss = 0, test_top1 = 0, test_top5 = 0;
};

// Whether the input pipeline held the run back: its workers' rate (images made per second of
// their busy time, all workers of all ranks) against the compute's (images per second of the
// time not spent waiting for input), and the share of the time spent waiting.
struct InputVerdict {
  double pipeline_images_per_sec = 0, compute_images_per_sec = 0, stall_fraction = 0;
  int workers = 0;         // all ranks'
  int workers_needed = 0;  // at the workers' measured rate, to keep up with the compute
  bool input_bound = false;

  std::string line() const {
    return fmt::format("input pipeline: {:.1f} images/sec ({} workers, {:.1f} each), compute {:.1f} images/sec, "
                       "waiting for input {:.1f}% of the time: {}",
                       pipeline_images_per_sec, workers, pipeline_images_per_sec / std::max(1, workers),
                       compute_images_per_sec, 100 * stall_fraction,
                       input_bound ? fmt::format("input-bound (about {} workers would keep up)", workers_needed)
                                   : "not input-bound");
  }
  nlohmann::json to_json() const {
    return {{"pipeline_images_per_sec", pipeline_images_per_sec}, {"compute_images_per_sec", compute_images_per_sec},
            {"stall_fraction", stall_fraction}, {"workers", workers}, {"workers_needed", workers_needed},
            {"input_bound", input_bound}};
  }
};

InputVerdict input_verdict(double capacity, int workers, int64_t images, double seconds, double stall_sec) {
  InputVerdict v;
  v.pipeline_images_per_sec = capacity;
  v.workers = workers;
  v.stall_fraction = seconds > 0 ? stall_sec / seconds : 0;
  v.compute_images_per_sec = seconds > stall_sec ? static_cast<double>(images) / (seconds - stall_sec) : 0;
  const double per_worker = capacity / std::max(1, workers);
  v.workers_needed = per_worker > 0 ? static_cast<int>(std::ceil(v.compute_images_per_sec / per_worker)) : 0;
  // a few percent of waiting is the first batches' and the epochs' starts
  v.input_bound = v.stall_fraction > 0.05;
  return v;
}

struct EvalResult {
  double loss = 0, top1 = 0, top5 = 0;
};

// The pipeline's next batch; with a timeline, a wait for it is an "input stall" span.
const float* next_batch(BatchPipeline& input, Timeline* timeline) {
  const double stalled_before = input.stall_sec();
  const auto start = std::chrono::steady_clock::now();
  const float* images = input.next_images();
  if (timeline && input.stall_sec() > stalled_before)
    timeline->span(Track::input, "input stall", start, std::chrono::steady_clock::now());
  return images;
}

// The whole test set, each rank its shard, counts summed over ranks.
EvalResult evaluate(Plan& plan, BatchPipeline& pipeline, const Communicator& comm, Timeline* timeline) {
  const auto start = std::chrono::steady_clock::now();
  const Graph& g = plan.graph();
  const int64_t n = g.batch_size(), classes = g.num_classes();
  std::vector<float> logits(n * classes), scratch(n * classes);
  double sums[4] = {0, 0, 0, 0};  // loss x images, top-1, top-5, images
  pipeline.start_epoch(0);
  for (int64_t s = 0; s < pipeline.steps_per_epoch(); ++s) {
    plan.set_input(next_batch(pipeline, timeline));
    plan.forward(Mode::inference);
    plan.read_output(g.output, logits.data());
    const int64_t valid = pipeline.current_valid();
    const int32_t* labels = pipeline.current_labels();
    sums[0] += cpu::softmax_cross_entropy(logits.data(), labels, scratch.data(), valid, classes) * valid;
    sums[1] += count_top_k(logits.data(), labels, valid, classes, 1);
    sums[2] += count_top_k(logits.data(), labels, valid, classes, std::min<int64_t>(5, classes));
    sums[3] += valid;
  }
  comm.allreduce_sum(sums, 4);
  if (timeline) timeline->span(Track::compute, "evaluation", start, std::chrono::steady_clock::now());
  return {sums[0] / sums[3], sums[1] / sums[3], sums[2] / sums[3]};
}

nlohmann::json to_json(const EpochMetrics& m) {
  nlohmann::json j = {{"epoch", m.epoch},
                      {"train_loss", m.train_loss},
                      {"train_top1", m.train_top1},
                      {"learning_rate", m.learning_rate},
                      {"seconds", m.seconds},
                      {"images_per_sec", m.images_per_sec},
                      {"compute_images_per_sec", m.compute_images_per_sec},
                      {"input_stall_sec", m.input_stall_sec}};
  if (m.evaluated) {
    j["test_loss"] = m.test_loss;
    j["test_top1"] = m.test_top1;
    j["test_top5"] = m.test_top5;
  }
  return j;
}

std::string epochs_csv(const std::vector<EpochMetrics>& epochs) {
  std::string out =
      "epoch,train_loss,train_top1,test_loss,test_top1,test_top5,learning_rate,seconds,images_per_sec,"
      "compute_images_per_sec,input_stall_sec\n";
  for (const EpochMetrics& m : epochs) {
    auto test = [&](double v) { return m.evaluated ? csv_number(v) : std::string(); };
    out += csv_line({std::to_string(m.epoch), csv_number(m.train_loss), csv_number(m.train_top1), test(m.test_loss),
                     test(m.test_top1), test(m.test_top5), csv_number(m.learning_rate), csv_number(m.seconds),
                     csv_number(m.images_per_sec), csv_number(m.compute_images_per_sec),
                     csv_number(m.input_stall_sec)});
  }
  return out;
}

}  // namespace

void run_convergence(const Config& config, Communicator& comm) {
  const bool leader = comm.rank() == 0;
  RunSetup setup = set_up_run(config, comm);
  const RunSettings& settings = setup.settings;
  Plan& plan = *setup.plan;

  std::string error;
  // ImageNet from TFRecord shards when the folder holds train-*-of-* files (JPEG folders otherwise)
  DataSplits data = find_shards(settings.dataset, config.data_dir, comm, error);
  LrSchedule schedule;
  double total_epochs = config.num_epochs > 0 ? config.num_epochs : 1.0;
  int64_t steps = 0, total_steps = 0;  // per epoch; of the whole run
  std::optional<BaselineSpeed> baseline;   // --baseline
  try {
    if (!error.empty()) throw std::runtime_error(error);
    const Shape& in = setup.graph.input().out;
    data = load_data(settings.dataset, config.data_dir, in.h, setup.graph.num_classes(), std::move(data),
                     config.train_augmentation);
    steps = data.train_count / comm.size() / std::max<int64_t>(1, settings.batch_size);
    // --num_batches (without --num_epochs) trains that many steps: a benchmark on real data
    if (config.num_epochs == 0 && config.num_batches_set && steps > 0) {
      total_steps = config.num_batches;
      total_epochs = static_cast<double>(total_steps) / static_cast<double>(steps);
    } else {
      total_steps = static_cast<int64_t>(std::ceil(total_epochs * static_cast<double>(steps) - 1e-9));
    }
    // a bad --piecewise_learning_rate_schedule is refused here, with the other set-up errors
    schedule = make_lr_schedule(settings.learning_rate, config.piecewise_learning_rate_schedule,
                                config.num_learning_rate_warmup_epochs, config.cosine_learning_rate, total_epochs,
                                settings.global_batch, config.learning_rate_base_batch);
    if (data.channels != in.c || data.height != in.h || data.width != in.w)
      throw std::runtime_error(fmt::format("{}: images are {}x{}x{}, model {} takes {}x{}x{}", config.data_dir,
                                           data.channels, data.height, data.width, settings.model.name, in.c, in.h,
                                           in.w));
    if (data.classes > setup.graph.num_classes())
      throw std::runtime_error(fmt::format("{}: {} classes, model {} has {} outputs", config.data_dir, data.classes,
                                           settings.model.name, setup.graph.num_classes()));
    if (data.train_count / comm.size() < settings.batch_size)
      throw std::runtime_error("--batch_size: larger than a rank's share of the training set");
    // the row written at the end must fit: refused now, not after the training
    if (leader) check_csv_header(config.benchmark_log_dir + "/results.csv", csv_header());
    if (!config.baseline.empty()) baseline = read_baseline(config.baseline);  // before, not after, the training
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (report_errors_together(error)) throw ErrorsReported{2};

  start_from_rank0_weights(plan, comm, config.seed);
  int64_t first_epoch = 0, steps_done = 0;
  // time-to-accuracy: the training time and the state before a resume come from the checkpoint
  TimeToAccuracy to_target;
  to_target.target = accuracy_target(config.target_top_1_accuracy, config.stop_at_top_1_accuracy);
  double seconds_before = 0;
  std::optional<CheckpointInfo> resumed_from;
  const nlohmann::json identity = run_identity(config, settings, settings.learning_rate);
  if (!config.train_dir.empty()) {
    const TrainDirStart opened = open_train_dir(config, identity, plan, total_steps, comm);
    if (opened.complete) {
      if (leader)
        fmt::print("{}: the run is complete ({} epochs, {} steps done of {}): nothing to train\n",
                   opened.resumed->path, opened.resumed->epochs_done, opened.resumed->steps_done, total_steps);
      return;
    }
    if (const auto& found = opened.resumed) {
      resumed_from = found;
      // by steps: a --num_batches run's checkpoint can end inside an epoch
      first_epoch = steps > 0 ? found->steps_done / steps : 0;
      steps_done = found->steps_done;
      const bool same_target = to_target.target <= 0 ||
                               (found->time_to_accuracy && found->time_to_accuracy->target == to_target.target);
      if (found->training_seconds >= 0 && same_target) {
        seconds_before = found->training_seconds;
        if (to_target.target > 0) to_target = *found->time_to_accuracy;
      } else {
        // an earlier version's checkpoint, or another target: the seconds start at the resume
        to_target.clock_complete = first_epoch == 0;
      }
    }
  }
  std::unique_ptr<GradientExchange> reducer = attach_reducer(plan, comm, config, settings);
  if (resumed_from) resume_exchange_state(reducer.get(), comm, resumed_from->path, resumed_from->rank_state_id);
  const std::unique_ptr<Timeline> timeline = start_timeline(comm, config.timeline);
  if (reducer) reducer->set_timeline(timeline.get());
  const std::unique_ptr<ForwardOverlap> overlap = attach_forward_overlap(plan, reducer.get(), config, timeline.get());
  const std::unique_ptr<EventWriter> events_file = open_event_writer(comm, config.summary_dir, config.summary_verbosity);

  const int64_t epochs = (total_steps + steps - 1) / steps;
  const int workers = static_cast<int>(config.num_data_workers);
  const int64_t image_size = setup.graph.input().out.h, classes = setup.graph.num_classes();
  const std::unique_ptr<BatchPipeline> train_pipeline =
      make_pipeline(data, true, settings.batch_size, comm, config, image_size, classes);
  const std::unique_ptr<BatchPipeline> test_pipeline =
      make_pipeline(data, false, settings.batch_size, comm, config, image_size, classes);
  BatchPipeline& train_input = *train_pipeline;
  BatchPipeline& test_input = *test_pipeline;

  TfLog log(leader ? stdout : nullptr, settings, config);
  log.header(devices_text(comm, *setup.plan), backend_text(config, comm, setup.threads, reducer != nullptr, *setup.plan));
  if (leader)
    fmt::print("Training on {} ({}; {} steps per epoch), testing on {} images, {:.4g} epochs ({} steps)\n",
               config.data_dir, data.describe_train(), train_input.steps_per_epoch(), data.test_count, total_epochs,
               total_steps);
  const bool terminal = leader && isatty(STDOUT_FILENO);
  const SgdConfig sgd = sgd_config(config);
  const std::unique_ptr<LossScaler> scaler = make_loss_scaler(config);

  // The result's name is claimed now, by its per-epoch CSV (a header alone until the first
  // epoch), so that runs started in the same second keep a pair of files each.
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::gmtime(&now));
  std::string json_path = config.result_json, csv_path;
  std::string claim_error;
  if (leader) {
    try {
      if (json_path.empty()) {
        make_folders(config.benchmark_log_dir);
        const std::string stem = fmt::format("{}/{}_{}_{}r_{}_{}", config.benchmark_log_dir, settings.model.name,
                                             settings.dataset, comm.size(), stamp, getpid());
        csv_path = write_new_file(stem, "_epochs.csv", epochs_csv({}));
        json_path = csv_path.substr(0, csv_path.size() - std::string("_epochs.csv").size()) + ".json";
      } else {
        csv_path = epochs_csv_path(json_path);
      }
    } catch (const std::exception& e) {
      claim_error = e.what();
    }
  }
  if (report_errors_together(claim_error)) throw ErrorsReported{2};
  // a run that ends before its first epoch (diverged, failed) leaves no empty CSV behind
  struct UnusedClaim {
    std::string path;
    ~UnusedClaim() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove(path, ec);
    }
  } unused_claim{leader && config.result_json.empty() ? csv_path : ""};
  std::vector<EpochMetrics> history;
  double run_seconds = 0, run_stall_sec = 0;
  int64_t run_images = 0;
  const auto training_start = std::chrono::steady_clock::now();
  auto training_seconds = [&] {
    return seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - training_start).count();
  };
  const int64_t resumed_inside_epoch = steps_done - first_epoch * steps;  // steps of first_epoch done before
  for (int64_t epoch = first_epoch; epoch < epochs; ++epoch) {
    const int64_t epoch_steps = std::min<int64_t>(steps, total_steps - epoch * steps);
    const int64_t skip = epoch == first_epoch ? resumed_inside_epoch : 0;
    const int64_t trained = epoch_steps - skip;  // the steps this run trains of this epoch
    train_input.start_epoch(epoch);
    // the batches trained before the resume: drawn and passed over, so the rest are the same ones
    for (int64_t s = 0; s < skip; ++s) train_input.next_images();
    const double stall_before = train_input.stall_sec();
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0, correct = 0, lr = 0;
    for (int64_t s = skip; s < epoch_steps; ++s) {
      const auto step_start = std::chrono::steady_clock::now();
      lr = schedule.at(static_cast<double>(epoch) + static_cast<double>(s) / static_cast<double>(steps));
      plan.set_input(next_batch(train_input, timeline.get()));
      const StepRecord r = train_step(plan, reducer.get(), sgd, static_cast<float>(lr), train_input.current_labels(),
                                      true, scaler.get(), timeline.get(), overlap.get());
      check_finite_loss(r, config, steps_done + 1, /*warmup=*/false, epoch + 1);
      if (timeline)
        timeline->span(Track::compute, "step", step_start, std::chrono::steady_clock::now(), {.step = steps_done});
      loss_sum += r.loss;
      correct += static_cast<double>(r.top1_correct);
      ++steps_done;
      if (events_file && steps_done % config.save_summaries_steps == 0) {
        const double step_sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_start).count();
        events_file->scalar("loss", steps_done, r.loss);
        events_file->scalar("learning_rate", steps_done, lr);
        events_file->scalar("images_per_sec", steps_done, settings.global_batch / step_sec);
        events_file->scalar("allreduce_exposed_sec", steps_done, r.exposed_sec);
        if (scaler) events_file->scalar("loss_scale", steps_done, scaler->scale());
      }
      exit_here_if_asked(comm.rank(), steps_done);
      if (terminal && (s % config.display_every == 0 || s + 1 == epoch_steps)) {
        const int width = 30, done = static_cast<int>(width * (s + 1) / epoch_steps);
        fmt::print("\rEpoch {}/{} [{}{}] {}/{} loss {:.3f}", epoch + 1, epochs, std::string(done, '='),
                   std::string(width - done, ' '), s + 1, epoch_steps, r.loss);
        std::fflush(stdout);
      }
    }
    if (terminal) fmt::print("\n");
    if (overlap) overlap->finish();  // the epoch's last updates, before anything reads the weights
    // batch-norm statistics averaged over ranks: one model to evaluate and to checkpoint
    if (comm.size() > 1) {
      const auto averaging = std::chrono::steady_clock::now();
      DevicePlan* device = plan.device();
      if (device) device->download_state();
      std::vector<double> stats(plan.buffers().begin(), plan.buffers().end());
      comm.allreduce_sum(stats.data(), stats.size());
      for (size_t i = 0; i < stats.size(); ++i) plan.buffers()[i] = static_cast<float>(stats[i] / comm.size());
      if (device) device->upload_state();
      if (timeline)
        timeline->span(Track::compute, "batch-norm statistics averaged", averaging, std::chrono::steady_clock::now());
    }
    EpochMetrics m;
    m.epoch = epoch + 1;
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    double sums[3] = {loss_sum / std::max<int64_t>(1, trained), correct, train_input.stall_sec() - stall_before};
    comm.allreduce_sum(sums, 3);
    comm.allreduce_max(&seconds, 1);
    m.train_loss = sums[0] / comm.size();
    m.train_top1 = sums[1] / static_cast<double>(trained * settings.global_batch);
    m.input_stall_sec = sums[2] / comm.size();
    m.seconds = seconds;
    m.learning_rate = lr;
    m.images_per_sec = static_cast<double>(trained * settings.global_batch) / seconds;
    m.compute_images_per_sec = static_cast<double>(trained * settings.global_batch) / (seconds - m.input_stall_sec);
    run_seconds += m.seconds;
    run_stall_sec += m.input_stall_sec;
    run_images += trained * settings.global_batch;
    // a --num_batches run is a benchmark: it evaluates only where asked to
    const bool last = epoch + 1 == epochs && !(config.num_epochs == 0 && config.num_batches_set);
    const double every = config.eval_during_training_every_n_epochs;
    if (last || (every > 0 && std::fmod(static_cast<double>(epoch + 1), every) < 1e-9)) {
      const EvalResult e = evaluate(plan, test_input, comm, timeline.get());
      m.evaluated = true;
      m.test_loss = e.loss;
      m.test_top1 = e.top1;
      m.test_top5 = e.top5;
      // the same figure on every rank: rank 0's clock, the images all ranks trained
      double elapsed = training_seconds();
      comm.broadcast(&elapsed, sizeof elapsed, 0);
      if (to_target.observe(m.test_top1, m.test_loss, elapsed, m.epoch, steps_done * settings.global_batch) && leader)
        fmt::print("Reached the target: {}\n", to_target.line());
    }
    history.push_back(m);
    if (events_file) {
      events_file->scalar("epoch/train_loss", steps_done, m.train_loss);
      events_file->scalar("epoch/train_top1", steps_done, m.train_top1);
      events_file->scalar("epoch/images_per_sec", steps_done, m.images_per_sec);
      events_file->scalar("epoch/input_stall_sec", steps_done, m.input_stall_sec);
      if (m.evaluated) {
        events_file->scalar("epoch/test_loss", steps_done, m.test_loss);
        events_file->scalar("epoch/test_top1", steps_done, m.test_top1);
        events_file->scalar("epoch/test_top5", steps_done, m.test_top5);
      }
      events_file->flush();
    }
    if (leader) {
      fmt::print("Epoch {}/{}: loss {:.4f}, train top-1 {:.2f}%{} | {:.1f} img/s ({:.1f} without input stalls, {:.2f} s "
                 "stalled) | lr {:.5f} | {:.1f} s\n",
                 m.epoch, epochs, m.train_loss, 100 * m.train_top1,
                 m.evaluated ? fmt::format(" | test top-1 {:.2f}% top-5 {:.2f}% loss {:.4f}", 100 * m.test_top1,
                                           100 * m.test_top5, m.test_loss)
                             : "",
                 m.images_per_sec, m.compute_images_per_sec, m.input_stall_sec, m.learning_rate, m.seconds);
      std::fflush(stdout);
      make_folders(config.benchmark_log_dir);
      write_file_atomically(csv_path, epochs_csv(history));
      unused_claim.path.clear();
    }
    const bool stopping = config.stop_at_top_1_accuracy > 0 && m.evaluated && m.test_top1 >= config.stop_at_top_1_accuracy;
    // every rank's own state (PowerSGD's) before the checkpoint that names it
    std::string rank_state_id;
    if (!config.train_dir.empty()) {
      rank_state_id = save_exchange_state(reducer.get(), comm, checkpoint_path(config.train_dir, epoch + 1));
      if (!rank_state_id.empty()) comm.barrier();
    }
    if (leader) {
      if (!config.train_dir.empty()) {
        const auto writing = std::chrono::steady_clock::now();
        CheckpointInfo info{settings.model.name, epoch + 1, steps_done, config.seed, "", -1, std::nullopt, ""};
        info.run = identity;
        info.stopped_at_target = stopping;
        info.training_seconds = training_seconds();
        if (to_target.target > 0) info.time_to_accuracy = to_target;
        info.rank_state_id = rank_state_id;
        write_checkpoint(config.train_dir, plan, info);
        if (timeline)
          timeline->span(Track::checkpoint, "checkpoint", writing, std::chrono::steady_clock::now(),
                         {.step = steps_done});
      }
    }
    comm.barrier();  // the checkpoint is complete before any rank goes on (or stops)
    if (timeline)
      timeline->span(Track::compute, "epoch " + std::to_string(epoch + 1), start, std::chrono::steady_clock::now());
    if (stopping) {
      if (leader) fmt::print("Reached test top-1 {:.2f}% >= {:.2f}%: stopping\n", 100 * m.test_top1,
                             100 * config.stop_at_top_1_accuracy);
      break;
    }
  }
  double capacity = train_input.images_per_sec_capacity();
  comm.allreduce_sum(&capacity, 1);
  const InputVerdict input = input_verdict(capacity, workers * comm.size(), run_images, run_seconds, run_stall_sec);
  if (timeline) write_timeline(comm, *timeline, config.timeline);
  const int hosts = comm.hosts();
  if (!leader) return;
  fmt::print("{}\n", input.line());
  if (to_target.target > 0) fmt::print("{}\n", to_target.line());
  // the speed over this run's training epochs (evaluations and checkpoints left out)
  const double images_per_sec = run_seconds > 0 ? static_cast<double>(run_images) / run_seconds : 0;
  if (baseline && images_per_sec > 0) fmt::print("Scaling: {}\n", baseline->text(images_per_sec, comm.size()));
  const RunContext context = collect_run_context();
  const std::string allreduce = reducer ? comm.backend() : "none";
  // "run" holds what `cnnbench compare` matches runs by, named as in training results
  nlohmann::json doc = {{"schema", "cnnbench.convergence/1"},
                        {"context", to_json(context)},
                        {"config", nlohmann::json::object()},
                        {"run",
                         {{"model", settings.model.name},
                          {"dataset", settings.dataset},
                          {"synthetic", false},
                          {"mode", "convergence"},
                          {"backend", config.backend},
                          {"precision", dtype_name(settings.precision)},
                          {"ranks", comm.size()},
                          {"hosts", hosts},
                          {"threads_per_rank", setup.threads},
                          {"batch_size_per_rank", settings.batch_size},
                          {"global_batch", settings.global_batch},
                          {"variable_update", config.variable_update},
                          {"allreduce", allreduce},
                          {"fusion_threshold_mb", config.fusion_threshold_mb},
                          {"first_layers_bucket_mb", config.first_layers_bucket_mb},
                          {"compression", config.compression},
                          {"hierarchical_allreduce", config.hierarchical_allreduce},
                          {"overlap_forward", reducer && config.overlap_forward},
                          {"steps_per_epoch", steps},
                          {"first_epoch", first_epoch}}},
                        {"epochs", nlohmann::json::array()}};
  for (const auto& [key, value] : config_values(config)) doc["config"][key] = value;
  for (const EpochMetrics& m : history) doc["epochs"].push_back(to_json(m));
  doc["summary"] = {{"images_per_sec", images_per_sec}, {"training_seconds", run_seconds}, {"images", run_images}};
  if (baseline && images_per_sec > 0) {
    doc["summary"]["baseline_images_per_sec"] = baseline->images_per_sec;
    doc["summary"]["baseline_ranks"] = baseline->ranks;
    doc["summary"]["scaling_efficiency"] = baseline->efficiency(images_per_sec, comm.size());
  }
  doc["input"] = input.to_json();
  if (to_target.target > 0) doc["time_to_accuracy"] = to_target.to_json();
  // a setting that is not UTF-8 (a Latin-1 path) is written as U+FFFD, never lost to an exception
  const std::string json_text = doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (config.result_json.empty()) {
    // the name claimed at the start by its CSV: a JSON there is another run's, never replaced
    json_path = write_new_file(json_path.substr(0, json_path.size() - 5), ".json", json_text);
  } else {
    check_replaceable_result(json_path, "--result_json");
    write_file_atomically(json_path, json_text);
  }

  auto num = [](double v) { return csv_number(v); };
  std::map<std::string, std::string> row = {
      {"time_utc", context.time_utc}, {"model", settings.model.name}, {"dataset", settings.dataset},
      {"synthetic", "false"}, {"mode", "convergence"}, {"backend", config.backend},
      {"precision", dtype_name(settings.precision)}, {"ranks", std::to_string(comm.size())},
      {"hosts", std::to_string(hosts)}, {"threads_per_rank", std::to_string(setup.threads)},
      {"batch_size_per_rank", std::to_string(settings.batch_size)},
      {"global_batch", std::to_string(settings.global_batch)}, {"timed_steps", std::to_string(steps_done)},
      {"variable_update", config.variable_update}, {"allreduce", allreduce},
      {"fusion_threshold_mb", num(config.fusion_threshold_mb)}, {"compression", config.compression},
      {"images_per_sec", images_per_sec > 0 ? num(images_per_sec) : ""},
      {"peak_rss_bytes", std::to_string(peak_rss_bytes())}, {"host", context.host},
      {"git_revision", context.git_revision}, {"json_file", json_path}};
  if (!history.empty()) row["final_loss"] = num(history.back().train_loss);
  if (baseline && images_per_sec > 0) row["scaling_efficiency"] = num(baseline->efficiency(images_per_sec, comm.size()));
  if (!history.empty() && history.back().evaluated) row["test_top1"] = num(history.back().test_top1);
  // a time that leaves out epochs before a resume is not a time to accuracy: no target in the row
  if (to_target.target > 0 && to_target.clock_complete) {
    row["target_top_1_accuracy"] = num(to_target.target);
    // not reached: the accuracy columns stay empty, which compare reads as "not reached"
    if (to_target.reached) {
      row["time_to_accuracy_sec"] = num(to_target.seconds);
      row["epochs_to_accuracy"] = std::to_string(to_target.epochs);
      row["images_to_accuracy"] = std::to_string(to_target.images);
    }
  }
  make_folders(config.benchmark_log_dir);
  append_csv_row(config.benchmark_log_dir + "/results.csv", csv_header(), csv_row_by_name(row));
  fmt::print("Results: {} (JSON), {} (per epoch), {}/results.csv (row appended)\n", json_path, csv_path,
             config.benchmark_log_dir);
  if (timeline) fmt::print("{}", timeline_line(config.timeline, *timeline));
  if (events_file) fmt::print("Summaries: {} ({} events)\n", events_file->path(), events_file->events());
  if (!history.empty() && history.back().evaluated)
    fmt::print("final test top-1 accuracy: {:.4f}\n", history.back().test_top1);
}

}  // namespace cnnbench
