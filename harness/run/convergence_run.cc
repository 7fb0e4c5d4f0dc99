#include "harness/run/convergence_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include "harness/compare/baseline.h"
#include "harness/data/input_pipeline.h"
#include "harness/report/convergence_record.h"
#include "harness/report/event_file.h"
#include "harness/report/result_fields.h"
#include "harness/report/result_files.h"
#include "harness/report/run_context.h"
#include "harness/report/run_summary.h"
#include "harness/report/tf_log.h"
#include "harness/run/progress_bar.h"
#include "harness/report/time_to_accuracy.h"
#include "harness/report/timeline_file.h"
#include "harness/run/checkpoint.h"
#include "harness/run/checkpoint_trigger.h"
#include "harness/run/epoch_loop.h"
#include "harness/run/fault_injection.h"
#include "harness/run/evaluation.h"
#include "harness/run/exchange_state.h"
#include "harness/run/lr_schedule.h"
#include "harness/run/real_data.h"
#include "harness/run/resume_carry.h"
#include "harness/run/run_setup.h"
#include "harness/run/step_loop.h"
#include "harness/run/train_dir.h"

namespace cnnbench {

namespace {

// After the checkpoint a stop signal asked for: every rank ends, exit 128 + the signal's number.
[[noreturn]] void stop_for_signal(int signal, const std::string& checkpoint, int64_t steps_done, bool leader) {
  if (leader) {
    fmt::print("Stopped by {} after step {}: {} written; --resume goes on from there\n", signal_name(signal),
               steps_done, checkpoint);
    std::fflush(stdout);
  }
  throw ErrorsReported{128 + signal};
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
    // a --num_batches benchmark that evaluates nothing needs no test split (tf_cnn_benchmarks' train/ folders)
    data = load_data(settings.dataset, config.data_dir, in.h, setup.graph.num_classes(), std::move(data),
                     config.train_augmentation, config.evaluates_test_set());
    steps = data.train_count / comm.size() / std::max<int64_t>(1, settings.batch_size);
    // --num_batches (without --num_epochs) trains that many steps: a benchmark on real data
    if (config.steps_benchmark() && steps > 0) {
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
    if (!config.baseline.empty()) {  // before, not after, the training
      baseline = read_baseline(config.baseline);
      check_baseline_workload(*baseline, config.baseline,
                              baseline_workload(settings, "convergence", config.backend, setup.graph.num_classes(),
                                                config.fuse_ops, config.data_format));
    }
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (comm.report_errors_together(error)) throw ErrorsReported{2};
  // every rank loaded the same data set, or none goes on (collective)
  if (comm.report_errors_together(check_ranks_read_the_same_data(data, config.data_dir, comm))) throw ErrorsReported{2};

  start_from_rank0_weights(plan, comm, config.seed);
  int64_t first_epoch = 0, steps_done = 0;
  // time-to-accuracy: the training time and the state before a resume come from the checkpoint
  TimeToAccuracy to_target;
  to_target.target = accuracy_target(config.target_top_1_accuracy, config.stop_at_top_1_accuracy);
  double seconds_before = 0;
  std::optional<CheckpointInfo> resumed_from;
  std::vector<EpochMetrics> carried;  // the epochs before a resume (resume_carry.h has the rest)
  std::vector<int64_t> ranks_trained;
  std::optional<EpochMetrics> epoch_begun;
  bool complete = false;              // nothing to train: a finished run whose results were lost
  // the test set the run evaluates on (training and test data's fingerprint: the training data is
  // the checkpoint's, checked below) and the first epoch evaluated on it
  const std::string test_set = fmt::format("{:016x}", data.fingerprint);
  int64_t test_set_from_epoch = 1;
  const nlohmann::json identity =
      run_identity(config, settings, settings.learning_rate, data.train_count, data.train_fingerprint, total_epochs);
  if (!config.train_dir.empty()) {
    const TrainDirStart opened = open_train_dir(config, identity, plan, total_steps, steps, comm);
    complete = opened.complete;
    if (opened.complete && !opened.results_written && leader)
      fmt::print("{}: the run is complete, but its results were not written (it stopped after its last checkpoint): "
                 "writing them from the checkpoint's epochs\n",
                 opened.resumed->path);
    if (opened.complete && opened.results_written) {
      if (leader && opened.resumed->stopped_at_target)
        fmt::print("{}: the run is complete: it reached --stop_at_top_1_accuracy after {} epoch{} ({} steps): "
                   "nothing to train\n",
                   opened.resumed->path, opened.resumed->epochs_done, opened.resumed->epochs_done == 1 ? "" : "s",
                   opened.resumed->steps_done);
      else if (leader && opened.resumed->steps_done > total_steps)  // resumed with a smaller --num_epochs
        fmt::print("{}: the checkpoint is past this run's end ({} epoch{}, {} steps done; this run trains {}): "
                   "nothing to train\n",
                   opened.resumed->path, opened.resumed->epochs_done, opened.resumed->epochs_done == 1 ? "" : "s",
                   opened.resumed->steps_done, total_steps);
      else if (leader)
        fmt::print("{}: the run is complete ({} epoch{}, {} steps done of {}): nothing to train\n",
                   opened.resumed->path, opened.resumed->epochs_done, opened.resumed->epochs_done == 1 ? "" : "s",
                   opened.resumed->steps_done, total_steps);
      return;
    }
    if (const auto& found = opened.resumed) {
      resumed_from = found;
      CarriedOver c = carry_over(*found,
                                 {opened.complete, steps, settings.global_batch, test_set, data.test_count,
                                  config.data_dir, leader},
                                 to_target);
      first_epoch = c.first_epoch;
      steps_done = c.steps_done;
      seconds_before = c.seconds_before;
      carried = std::move(c.epochs);
      epoch_begun = std::move(c.epoch_begun);
      ranks_trained = std::move(c.ranks_trained);
      test_set_from_epoch = c.test_set_from_epoch;
      plan.set_dropout_seed(dropout_seed(config, comm.rank()), static_cast<uint64_t>(steps_done));  // the masks go on
    }
  }
  // this run's rank count joins the run's, where it trains anything
  const int64_t ranks_now = comm.size();
  if (steps_done == 0) {
    ranks_trained = to_target.ranks = {ranks_now};
  } else if (!complete && !ranks_trained.empty() && ranks_trained.back() != ranks_now) {
    if (leader)
      fmt::print("The run trained on {} rank{} before this resume, on {} from here{}\n", ranks_trained.back(),
                 ranks_trained.back() == 1 ? "" : "s", ranks_now,
                 to_target.target > 0 && !to_target.reached
                     ? ": its time to accuracy will be of both rank counts, and compare leaves it out"
                     : "");
    ranks_trained.push_back(ranks_now);
  }
  if (!complete) to_target.trained_on(ranks_now);
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
  // none where nothing is evaluated: the test split was not loaded (a train/ folder alone)
  const std::unique_ptr<BatchPipeline> test_pipeline =
      config.evaluates_test_set() ? make_pipeline(data, false, settings.batch_size, comm, config, image_size, classes)
                                  : nullptr;
  BatchPipeline& train_input = *train_pipeline;

  // the header's steps and epochs are this data's, not the data set's published size
  RunSettings shown = settings;
  shown.timed_steps = total_steps;
  shown.epochs = total_epochs;
  TfLog log(leader ? stdout : nullptr, shown, config);
  log.header(devices_text(comm, *setup.plan), backend_text(config, comm, setup.threads, reducer != nullptr, *setup.plan),
             setup.graph);
  note_unused_exchange_flags(config, comm, settings);
  if (leader) {
    // files in memory and JPEG folders: an epoch is the training set rounded down to whole global
    // batches, the rest a different part each epoch (TFRecord shards are one stream: nothing left out)
    const int64_t per_epoch = steps * settings.global_batch, left_out = data.train_count - per_epoch;
    const bool streamed = data.tfrecords();
    fmt::print("Training on {} ({}; {} steps per epoch{}), testing on {} images, {:.4g} epochs ({} steps)\n",
               config.data_dir, data.describe_train(), train_input.steps_per_epoch(),
               streamed || left_out == 0
                   ? ""
                   : fmt::format(": {} of the {} images, a different {} left out each epoch", per_epoch,
                                 data.train_count, left_out),
               data.test_count, total_epochs, total_steps);
    if (!streamed && left_out * 100 > data.train_count)
      fmt::print(stderr,
                 "cnnbench: note: each epoch trains {} of the {} training images ({:.1f}% left out, a different part "
                 "each epoch): the global batch of {} ({} rank{} x --batch_size={}) does not divide the training set\n",
                 per_epoch, data.train_count, 100.0 * static_cast<double>(left_out) / static_cast<double>(data.train_count),
                 settings.global_batch, comm.size(), comm.size() == 1 ? "" : "s", settings.batch_size);
    // a JPEG folder of 100 classes in resnet50's 1000 outputs learns; the header was the only sign
    if (const int64_t heads = setup.graph.num_classes(); data.classes < heads)
      fmt::print(stderr, "cnnbench: note: {} holds {} classes and {} has {} outputs: the other {} are never a label "
                 "(--num_classes={} builds a head of {})\n", config.data_dir, data.classes, settings.model.name, heads,
                 heads - data.classes, data.classes, data.classes);
  }
  const bool terminal = draws_progress_bar(config, leader);
  const SgdConfig sgd = sgd_config(config);
  const std::unique_ptr<LossScaler> scaler = make_loss_scaler(config);
  // the scale it had reached: the initial one, halved again over skipped steps, was the old way
  if (scaler && resumed_from && resumed_from->loss_scale) scaler->restore(*resumed_from->loss_scale);

  // the result's name is claimed now, by its per-epoch CSV
  ResultNames names;
  std::string claim_error;
  if (leader) {
    try {
      names = claim_result_names(config, settings, comm.size());
    } catch (const std::exception& e) {
      claim_error = e.what();
    }
  }
  if (comm.report_errors_together(claim_error)) throw ErrorsReported{2};
  // a run that ends before its first epoch (diverged, failed) leaves no empty CSV behind
  struct UnusedClaim {
    std::string path;
    ~UnusedClaim() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove(path, ec);
    }
  } unused_claim{names.claimed ? names.epochs_csv : ""};
  std::vector<EpochMetrics> history = carried;
  double run_seconds = 0, run_stall_sec = 0;
  int64_t run_images = 0;
  const auto training_start = std::chrono::steady_clock::now();
  auto training_seconds = [&] {
    return seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - training_start).count();
  };
  // --save_model_steps, --save_model_secs and stop signals: checkpoints inside an epoch
  const std::unique_ptr<CheckpointTrigger> trigger =
      config.train_dir.empty() ? nullptr : std::make_unique<CheckpointTrigger>(config, comm);
  EpochRun epoch_run{config,       settings,       comm,          plan,     reducer.get(), overlap.get(),
                     scaler.get(), timeline.get(), events_file.get(), schedule, sgd,       train_input,
                     steps,        epochs,         terminal,      trigger.get(), {}};
  // Every rank: its own state (PowerSGD's) before the checkpoint that names it, then rank 0
  // writes the checkpoint (and removes those past --max_ckpts_to_keep); no rank goes on, or
  // stops, before it is whole. An epoch's checkpoint written inside it goes by its name too.
  std::optional<EpochMetrics> inside_epoch;  // a checkpoint inside an epoch: its figures so far
  auto save_checkpoint = [&](int64_t epoch_named, bool stopping) {
    const std::string path = checkpoint_path(config.train_dir, epoch_named);
    const std::string rank_state_id = save_exchange_state(reducer.get(), comm, path);
    if (!rank_state_id.empty()) comm.barrier();
    if (leader) {
      const auto writing = std::chrono::steady_clock::now();
      CheckpointInfo info{settings.model.name, epoch_named, steps_done, config.seed, "", -1, std::nullopt, ""};
      info.run = identity;
      info.stopped_at_target = stopping;
      info.training_seconds = training_seconds();
      if (to_target.target > 0) info.time_to_accuracy = to_target;
      info.ranks_trained = ranks_trained;
      info.rank_state_id = rank_state_id;
      info.history = history;
      if (inside_epoch) info.history->push_back(*inside_epoch);
      if (scaler) info.loss_scale = scaler->state();
      info.test_set_fingerprint = test_set;
      info.test_set_from_epoch = test_set_from_epoch;
      slow_checkpoint_if_asked();  // CNNBENCH_TEST_SLOW_CHECKPOINT_MS
      write_checkpoint(config.train_dir, plan, info);
      remove_older_checkpoints(path, config.max_ckpts_to_keep);
      if (timeline)
        timeline->span(Track::checkpoint, "checkpoint", writing, std::chrono::steady_clock::now(), {.step = steps_done});
    }
    comm.barrier();
    if (!rank_state_id.empty()) commit_rank_state(path, comm.rank());  // the checkpoint naming it is whole
    trigger->written();
    return path;
  };
  if (trigger)
    epoch_run.checkpoint_inside_epoch = [&](int64_t done, const EpochMetrics& so_far) {
      inside_epoch = epoch_begun && epoch_begun->epoch == so_far.epoch ? join_epoch_parts(*epoch_begun, so_far) : so_far;
      inside_epoch->images = done * settings.global_batch;
      const std::string path = save_checkpoint(done / steps + 1, false);
      inside_epoch.reset();
      if (leader && trigger->stop_signal() == 0)
        fmt::print("Checkpoint at step {} (epoch {}, step {} of {}): {}\n", done, done / steps + 1, done % steps, steps,
                   path);
      std::fflush(stdout);  // a log read while the run goes on (or after it is killed) shows it
    };
  // a stop signal's end, its checkpoint written: the timeline so far, then every rank stops
  auto stop_after_checkpoint = [&](int64_t epoch_named) {
    if (timeline && write_timeline(comm, *timeline, config.timeline) && leader)
      fmt::print("{}", timeline_line(config.timeline, *timeline));
    stop_for_signal(trigger->stop_signal(), checkpoint_path(config.train_dir, epoch_named), steps_done, leader);
  };
  const int64_t resumed_inside_epoch = steps_done - first_epoch * steps;  // steps of first_epoch done before
  if (leader && !complete && !config.train_dir.empty()) {  // results written before are not this run's
    std::error_code ec;
    std::filesystem::remove(results_marker_path(config.train_dir), ec);
  }
  for (int64_t epoch = first_epoch; epoch < epochs && !complete; ++epoch) {
    const int64_t epoch_steps = std::min<int64_t>(steps, total_steps - epoch * steps);
    const int64_t skip = epoch == first_epoch ? resumed_inside_epoch : 0;
    const auto start = std::chrono::steady_clock::now();
    EpochMetrics m = train_epoch(epoch_run, epoch, skip, epoch_steps, steps_done);
    if (trigger && trigger->stop_signal() != 0 && steps_done < epoch * steps + epoch_steps)
      stop_after_checkpoint(epoch + 1);
    m.images = steps_done * settings.global_batch;
    run_seconds += m.seconds;
    run_stall_sec += m.input_stall_sec;
    run_images += (epoch_steps - skip) * settings.global_batch;
    if (epoch_begun && epoch_begun->epoch == m.epoch) m = join_epoch_parts(*epoch_begun, m);
    const bool last = epoch + 1 == epochs && !config.steps_benchmark();
    const double every = config.eval_during_training_every_n_epochs;
    if (last || evaluation_due(epoch + 1, every)) {
      const EvalResult e = evaluate(plan, *test_pipeline, comm, timeline.get());
      m.evaluated = true;
      m.test_loss = e.loss;
      m.test_top1 = e.top1;
      m.test_top5 = e.top5;
      // the same figure on every rank: rank 0's clock, the images all ranks trained
      double elapsed = training_seconds();
      comm.broadcast(&elapsed, sizeof elapsed, 0);
      m.elapsed_sec = elapsed;
      if (to_target.observe(m.test_top1, m.test_loss, elapsed, m.epoch, steps_done * settings.global_batch) && leader)
        fmt::print("Reached the target: {}\n", to_target.line(comm.size()));
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
      // an epoch a --resume started inside: its training figures are the steps this run trained
      const std::string part = m.train_steps < epoch_steps
                                   ? fmt::format(" (the {} of {} steps since the resume)", m.train_steps, epoch_steps)
                                   : "";
      fmt::print("Epoch {}/{}: loss {:.4f}, train top-1 {:.2f}%{}{} | {:.1f} img/s ({:.1f} without input stalls, {:.2f} s "
                 "stalled) | lr {:.5g} | {:.1f} s\n",
                 m.epoch, epochs, m.train_loss, 100 * m.train_top1, part,
                 m.evaluated ? fmt::format(" | test top-1 {:.2f}% top-5 {:.2f}% loss {:.4f}", 100 * m.test_top1,
                                           100 * m.test_top5, m.test_loss)
                             : "",
                 m.images_per_sec, m.compute_images_per_sec, m.input_stall_sec, m.learning_rate, m.seconds);
      std::fflush(stdout);
      make_folders(config.benchmark_log_dir);
      write_file_atomically(names.epochs_csv, epochs_csv(history));
      unused_claim.path.clear();
    }
    const bool stopping = config.stop_at_top_1_accuracy > 0 && m.evaluated && m.test_top1 >= config.stop_at_top_1_accuracy;
    if (!config.train_dir.empty())
      save_checkpoint(epoch + 1, stopping);
    else
      comm.barrier();  // no rank goes on (or stops) before the others
    if (timeline)
      timeline->span(Track::compute, "epoch " + std::to_string(epoch + 1), start, std::chrono::steady_clock::now());
    // a signal during the epoch's last step, its evaluation or its checkpoint: the epoch ended
    // as usual first
    if (trigger && epoch + 1 < epochs && !stopping && trigger->stop_agreed())
      stop_after_checkpoint(epoch + 1);
    if (stopping) {
      if (leader) fmt::print("Reached test top-1 {:.2f}% >= {:.2f}%: stopping\n", 100 * m.test_top1,
                             100 * config.stop_at_top_1_accuracy);
      break;
    }
  }
  double capacity = train_input.images_per_sec_capacity(), slowest = capacity > 0 ? capacity / workers : HUGE_VAL;
  comm.allreduce_sum(&capacity, 1);
  comm.allreduce_min(&slowest, 1);  // the rank every step waits for
  const InputVerdict input = input_verdict(capacity, workers * comm.size(), run_images, run_seconds, run_stall_sec,
                                           {setup.threads, workers, setup.plan->device() ? 0 : rank_cpus(comm)}, slowest);
  const bool traced = timeline && write_timeline(comm, *timeline, config.timeline);
  const int hosts = comm.hosts();
  if (!leader) return;
  if (complete && run_images == 0) {  // results written again from the checkpoint: its epochs' speed
    for (const EpochMetrics& m : history) run_seconds += m.seconds, run_stall_sec += m.input_stall_sec;
    if (!history.empty()) run_images = history.back().images;
  }
  if (complete && !history.empty()) {  // nothing trained: the epochs' CSV from the checkpoint's (each epoch writes it)
    make_folders(config.benchmark_log_dir);
    write_file_atomically(names.epochs_csv, epochs_csv(history));
    unused_claim.path.clear();
  }
  fmt::print("{}\n", input.line());
  if (to_target.target > 0) fmt::print("{}\n", to_target.line(comm.size()));
  // the speed over this run's training epochs (evaluations and checkpoints left out)
  const double images_per_sec = run_seconds > 0 ? static_cast<double>(run_images) / run_seconds : 0;
  if (baseline && images_per_sec > 0) fmt::print("Scaling: {}\n", baseline->text(images_per_sec, comm.size()));
  const RunContext context = collect_run_context();
  ConvergenceOutcome outcome{config,       settings, context,     comm.size(), hosts,
                             reducer ? comm.backend() : "none", reducer && config.overlap_forward,
                             steps,        first_epoch, steps_done, history,     run_seconds,
                             run_images,   baseline ? &*baseline : nullptr, input, to_target, peak_rss_bytes(),
                             &setup.graph};
  outcome.input_format = data.format();
  outcome.train_images = data.train_count;
  outcome.test_set_from_epoch = test_set_from_epoch;
  outcome.data_fingerprint = test_set;
  if (scaler) {
    outcome.loss_scale = scaler->scale();
    outcome.skipped_steps = scaler->skipped_steps();
    fmt::print("loss scaling: final scale {:g}, {} step{} skipped for inf/NaN gradients\n", scaler->scale(),
               scaler->skipped_steps(), scaler->skipped_steps() == 1 ? "" : "s");
  }
  const std::string json_path = write_convergence_results(outcome, names);
  if (!config.train_dir.empty()) {  // a --resume of this finished run now has nothing left to do
    try {
      write_file_atomically(results_marker_path(config.train_dir), json_path + "\n");
    } catch (const std::exception& e) {
      fmt::print(stderr, "cnnbench: {} (a --resume would write the results again)\n", e.what());
    }
  }
  fmt::print("Results: {} (JSON), {} (per epoch), {}/results.csv (row appended)\n", json_path, names.epochs_csv,
             config.benchmark_log_dir);
  if (traced) fmt::print("{}", timeline_line(config.timeline, *timeline));
  if (events_file) fmt::print("Summaries: {} ({} events)\n", events_file->path(), events_file->events());
  if (!history.empty() && history.back().evaluated)
    fmt::print("final test top-1 accuracy: {:.4f}\n", history.back().test_top1);
  // last, as every mode's log ends: the speed over this run's training epochs
  print_total_images_per_sec(stdout, images_per_sec);
}

}  // namespace cnnbench
