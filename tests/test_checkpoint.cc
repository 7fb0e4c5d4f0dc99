// Checkpoints: what is written reads back whole, and a damaged or forged one is refused with one
// line naming the file. The forged ones carry a correct checksum, as fuzz_checkpoint's inputs do:
// a checksum proves only that the bytes are those written, not that the writer was cnnbench.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "comm/powersgd.h"
#include "fuzz/fuzz_plan.h"
#include "harness/run/checkpoint.h"
#include "test_util.h"

namespace cnnbench {
namespace {

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

uint64_t fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A checkpoint file as the writer lays it out: magic, header length, header, payload, checksum.
std::string sealed(const std::string& header, uint64_t length, size_t payload_floats) {
  std::string out = "CNNBCKP1";
  out.append(reinterpret_cast<const char*>(&length), sizeof(length));
  out += header;
  out.append(payload_floats * sizeof(float), '\0');
  const uint64_t sum = fnv1a(out);
  out.append(reinterpret_cast<const char*>(&sum), sizeof(sum));
  return out;
}

TEST(Checkpoint, WrittenStateReadsBack) {
  const std::string dir = fresh_dir("ckpt_ok");
  fuzz::TinyPlan written, read;
  init_parameters(written.layout(), written.parameters().data(), written.buffers().data(), 5);
  for (size_t i = 0; i < written.momentum().size(); ++i) written.momentum()[i] = 0.5f * static_cast<float>(i);
  const std::string path = write_checkpoint(dir, written, {fuzz::tiny_model, 3, 120, 42, "", -1, std::nullopt, ""});
  EXPECT_EQ(path, dir + "/checkpoint-epoch-0003.ckpt");
  const CheckpointInfo info = read_checkpoint(path, read, fuzz::tiny_model);
  EXPECT_EQ(info.epochs_done, 3);
  EXPECT_EQ(info.steps_done, 120);
  EXPECT_EQ(info.seed, 42u);
  for (size_t i = 0; i < written.parameters().size(); ++i) {
    EXPECT_EQ(read.parameters()[i], written.parameters()[i]);
    EXPECT_EQ(read.momentum()[i], written.momentum()[i]);
  }
  EXPECT_EQ(testing::error_of([&] { read_checkpoint(path, read, "resnet20"); }),
            path + ": holds model \"fuzz_tiny\", not resnet20");
  EXPECT_LT(info.training_seconds, 0);  // not written: unknown
  EXPECT_FALSE(info.time_to_accuracy);

  // the training time and the time-to-accuracy state, for a resumed run to count on
  CheckpointInfo timed{fuzz::tiny_model, 4, 160, 42, "", -1, std::nullopt, "0123abcd"};
  timed.training_seconds = 81.5;
  TimeToAccuracy t;
  t.target = 0.9;
  t.observe(0.85, 0.4, 40.0, 2, 1000);
  t.observe(0.91, 0.3, 80.0, 4, 2000);
  timed.time_to_accuracy = t;
  const CheckpointInfo back = read_checkpoint(write_checkpoint(dir, written, timed), read, fuzz::tiny_model);
  EXPECT_EQ(back.training_seconds, 81.5);
  ASSERT_TRUE(back.time_to_accuracy);
  EXPECT_EQ(back.time_to_accuracy->to_json(), t.to_json());
  EXPECT_TRUE(back.time_to_accuracy->reached);
  EXPECT_EQ(back.time_to_accuracy->epochs, 4);
  EXPECT_EQ(back.time_to_accuracy->evaluations, 2);
  EXPECT_EQ(back.rank_state_id, "0123abcd");
  EXPECT_EQ(info.rank_state_id, "");  // none written
}

// A diverged evaluation (loss not finite) never reaches a target; NaN accuracy neither.
TEST(TimeToAccuracy, OnlyAFiniteEvaluationAtTheTargetReachesIt) {
  TimeToAccuracy t;
  t.target = 0.9;
  EXPECT_FALSE(t.observe(1.0, std::numeric_limits<double>::quiet_NaN(), 10, 1, 100));
  EXPECT_FALSE(t.observe(std::numeric_limits<double>::quiet_NaN(), 0.5, 20, 2, 200));
  EXPECT_FALSE(t.observe(0.89, 0.5, 30, 3, 300));
  EXPECT_TRUE(t.observe(0.9, 0.4, 40, 4, 400));
  EXPECT_FALSE(t.observe(0.95, 0.3, 50, 5, 500));  // the first time only
  EXPECT_EQ(t.seconds, 40);
  EXPECT_EQ(t.images, 400);
  EXPECT_EQ(t.best_top1, 0.95);
  EXPECT_EQ(t.evaluations, 5);
  EXPECT_EQ(t.line(), "time to 90.00% test top-1: 40.0 s, 4 epochs, 400 images (reached 90.00%)");
  // the rank counts its seconds cover: noted while the target is ahead, said where not the run's
  TimeToAccuracy moved;
  moved.target = 0.9;
  moved.ranks = {2};
  moved.trained_on(2);
  EXPECT_FALSE(moved.mixes_ranks(2));
  moved.trained_on(4);
  EXPECT_EQ(moved.ranks, (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(moved.mixes_ranks(4));
  EXPECT_TRUE(moved.observe(0.95, 0.2, 60, 6, 600));
  moved.trained_on(8);  // reached: the time is 2 and 4 ranks' still
  EXPECT_EQ(moved.ranks, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(moved.line(4), "time to 90.00% test top-1: 60.0 s, 6 epochs, 600 images (reached 95.00%) (trained on 2, "
                           "then 4 ranks: not this run's configuration's time)");
  EXPECT_EQ(TimeToAccuracy::from_json(moved.to_json()).ranks, moved.ranks);
  TimeToAccuracy unknown;  // a checkpoint of an earlier version: not known, not noted
  unknown.trained_on(4);
  EXPECT_TRUE(unknown.ranks.empty());
  EXPECT_FALSE(unknown.mixes_ranks(4));
  TimeToAccuracy none;
  none.target = 0.99;
  none.observe(0.5, 1.0, 1, 1, 1);
  EXPECT_EQ(none.line(), "time to 99.00% test top-1: not reached (best 50.00% in 1 evaluations)");
}

// Every epoch so far rides in the header (a resumed run's results hold the epochs before it; a
// diverged loss is JSON's null and reads back as NaN), and the newest checkpoint is the one of
// most epochs, past the 4 digits of the names' padding.
TEST(Checkpoint, HistoryReadsBackAndTheNewestHasTheMostEpochs) {
  const std::string dir = fresh_dir("ckpt_history");
  fuzz::TinyPlan plan;
  CheckpointInfo info{fuzz::tiny_model, 2, 80, 42, "", -1, std::nullopt, ""};
  EpochMetrics first, second;
  first.epoch = 1, first.images = 1280, first.train_loss = 2.1, first.seconds = 3.5;
  first.evaluated = true, first.test_top1 = 0.4, first.test_loss = 1.9, first.test_top5 = 0.8, first.elapsed_sec = 4.25;
  second.epoch = 2, second.images = 2560, second.train_loss = std::numeric_limits<double>::quiet_NaN();
  info.history = std::vector<EpochMetrics>{first, second};
  info.ranks_trained = {2, 4};
  const CheckpointInfo back = read_checkpoint_header(write_checkpoint(dir, plan, info));
  EXPECT_EQ(back.ranks_trained, (std::vector<int64_t>{2, 4}));
  ASSERT_TRUE(back.history);
  ASSERT_EQ(back.history->size(), 2u);
  EXPECT_EQ((*back.history)[0].images, 1280);
  EXPECT_TRUE((*back.history)[0].evaluated);
  EXPECT_EQ((*back.history)[0].elapsed_sec, 4.25);
  EXPECT_EQ((*back.history)[0].test_top1, 0.4);
  EXPECT_FALSE((*back.history)[1].evaluated);
  EXPECT_TRUE(std::isnan((*back.history)[1].train_loss));
  // a checkpoint without history (an earlier version's) has none
  EXPECT_FALSE(read_checkpoint_header(write_checkpoint(dir, plan, {fuzz::tiny_model, 3, 120, 42, "", -1, std::nullopt,
                                                                   ""}))
                   .history);
  for (const int64_t epochs : {9999, 10000, 998})
    write_checkpoint(dir, plan, {fuzz::tiny_model, epochs, epochs * 40, 42, "", -1, std::nullopt, ""});
  const std::vector<std::string> newest_first = list_checkpoints(dir);
  ASSERT_EQ(newest_first.size(), 5u);
  EXPECT_EQ(newest_first[0], dir + "/checkpoint-epoch-10000.ckpt");
  EXPECT_EQ(newest_first[1], dir + "/checkpoint-epoch-9999.ckpt");
  EXPECT_EQ(newest_first[2], dir + "/checkpoint-epoch-0998.ckpt");
}

// Found by fuzz_checkpoint: a header that was not JSON escaped as nlohmann's parse_error (not the
// documented std::runtime_error naming the file; `cnnbench --resume` listed it without the file);
// a 64-bit header length could wrap the bounds check; a count of 1e300 converted to int64
// out of range (undefined behaviour) and a negative one was taken as the epochs done.
TEST(Checkpoint, ForgedHeadersAreRefusedNamingTheFile) {
  const std::string dir = fresh_dir("ckpt_forged");
  fuzz::TinyPlan plan;
  const size_t payload = 2 * plan.parameters().size() + plan.buffers().size();
  auto header = [&](const std::string& epochs, const std::string& model = "\"fuzz_tiny\"") {
    return "{\"buffers\":" + std::to_string(plan.buffers().size()) + ",\"epochs_done\":" + epochs +
           ",\"model\":" + model + ",\"parameters\":" + std::to_string(plan.parameters().size()) +
           ",\"seed\":1,\"steps_done\":10}";
  };
  const std::string good = header("2");
  // the good header with `more` in place of its closing brace
  auto with = [&](const std::string& more) { return good.substr(0, good.size() - 1) + more; };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {sealed(good, good.size(), payload), ""},
      {sealed("{\"model\":\"fuzz_tiny\",\"steps_done\"*}", 33, payload), "header is not JSON"},
      {sealed(good, ~uint64_t{0} - 15, payload), "header runs past the end"},
      {sealed(good, good.size() + 4 * payload + 1, payload), "header runs past the end"},
      {sealed("[1,2]", 5, payload), "header is not a JSON object"},
      {sealed(header("1e300"), header("1e300").size(), payload), "header's epochs_done is not a whole number >= 0"},
      {sealed(header("-1"), header("-1").size(), payload), "header's epochs_done is not a whole number >= 0"},
      {sealed(header("\"2\""), header("\"2\"").size(), payload), "header's epochs_done is not a whole number >= 0"},
      {sealed(header("2", "3"), header("2", "3").size(), payload), "header's model is not a name"},
      {sealed(header("2", "\"a\\nb\""), header("2", "\"a\\nb\"").size(), payload),
       "holds model \"a\\nb\", not fuzz_tiny"},
      {sealed("{}", 2, payload), "header has no model"},
      {sealed(good, good.size(), payload - 1), "payload size is wrong"},
      {sealed(with(",\"training_seconds\":-1}"), with(",\"training_seconds\":-1}").size(), payload),
       "header's training_seconds is not a number of seconds"},
      {sealed(with(",\"training_seconds\":\"9\"}"), with(",\"training_seconds\":\"9\"}").size(), payload),
       "header's training_seconds is not a number of seconds"},
      {sealed(with(",\"time_to_accuracy\":[]}"), with(",\"time_to_accuracy\":[]}").size(), payload),
       "header's time_to_accuracy is not an object"},
      {sealed(with(",\"rank_state_id\":5}"), with(",\"rank_state_id\":5}").size(), payload),
       "header's rank_state_id is not an id"},
      {sealed(with(",\"time_to_accuracy\":{\"target_top_1_accuracy\":2}}"),
              with(",\"time_to_accuracy\":{\"target_top_1_accuracy\":2}}").size(), payload),
       "header's time_to_accuracy.target_top_1_accuracy is missing or out of range"},
      {sealed(with(",\"loss_scale\":{\"scale\":0,\"good_in_a_row\":1,\"skipped\":0}}"),
              with(",\"loss_scale\":{\"scale\":0,\"good_in_a_row\":1,\"skipped\":0}}").size(), payload),
       "header's loss_scale is not a scale in (0, 2^24] and two counts"},
      {sealed(with(",\"loss_scale\":{\"scale\":8,\"skipped\":0}}"),
              with(",\"loss_scale\":{\"scale\":8,\"skipped\":0}}").size(), payload),
       "header's loss_scale is not a scale in (0, 2^24] and two counts"},
      {sealed(with(",\"loss_scale\":{\"scale\":8,\"good_in_a_row\":-1,\"skipped\":0}}"),
              with(",\"loss_scale\":{\"scale\":8,\"good_in_a_row\":-1,\"skipped\":0}}").size(), payload),
       "header's loss_scale is not a scale in (0, 2^24] and two counts"},
      {sealed(with(",\"loss_scale\":[8]}"), with(",\"loss_scale\":[8]}").size(), payload),
       "header's loss_scale is not a scale in (0, 2^24] and two counts"},
      {sealed(with(",\"ranks_trained\":[2,0]}"), with(",\"ranks_trained\":[2,0]}").size(), payload),
       "header's ranks_trained is not a list of rank counts"},
      {sealed(with(",\"ranks_trained\":[]}"), with(",\"ranks_trained\":[]}").size(), payload),
       "header's ranks_trained is not a list of rank counts"},
      {sealed(with(",\"time_to_accuracy\":{\"target_top_1_accuracy\":0.9,\"reached\":false,\"best_test_top1\":0,"
                   "\"evaluations\":0,\"clock_complete\":true,\"ranks\":[2.5]}}"),
              with(",\"time_to_accuracy\":{\"target_top_1_accuracy\":0.9,\"reached\":false,\"best_test_top1\":0,"
                   "\"evaluations\":0,\"clock_complete\":true,\"ranks\":[2.5]}}")
                  .size(),
              payload),
       "header's time_to_accuracy.ranks is missing or out of range"},
      {sealed(with(",\"test_set\":{\"fingerprint\":\"ab\",\"from_epoch\":0}}"),
              with(",\"test_set\":{\"fingerprint\":\"ab\",\"from_epoch\":0}}").size(), payload),
       "header's test_set is not a fingerprint and an epoch"},
      {sealed(with(",\"test_set\":{\"fingerprint\":7,\"from_epoch\":1}}"),
              with(",\"test_set\":{\"fingerprint\":7,\"from_epoch\":1}}").size(), payload),
       "header's test_set is not a fingerprint and an epoch"},
      {sealed(with(",\"time_to_accuracy\":{\"target_top_1_accuracy\":0.9,\"reached\":false,\"best_test_top1\":0,"
                   "\"evaluations\":0,\"clock_complete\":true,\"evaluated_from_epoch\":0}}"),
              with(",\"time_to_accuracy\":{\"target_top_1_accuracy\":0.9,\"reached\":false,\"best_test_top1\":0,"
                   "\"evaluations\":0,\"clock_complete\":true,\"evaluated_from_epoch\":0}}")
                  .size(),
              payload),
       "header's time_to_accuracy.evaluated_from_epoch is missing or out of range"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir + "/checkpoint-epoch-000" + std::to_string(i % 10) + ".ckpt";
    std::ofstream(path, std::ios::binary) << cases[i].first;
    const std::string m = testing::error_of([&] { read_checkpoint(path, plan, fuzz::tiny_model); });
    EXPECT_EQ(m, cases[i].second.empty() ? "" : path + ": " + cases[i].second) << "case " << i;
  }
}

// A loss scaler's state reads back, and a resumed scaler goes on from it: a dynamic one at the
// scale and the run of good steps it had reached, a static one at its flag's scale.
TEST(Checkpoint, TheLossScalersStateReadsBackAndRestores) {
  const std::string dir = fresh_dir("ckpt_loss_scale");
  fuzz::TinyPlan plan;
  CheckpointInfo written{fuzz::tiny_model, 2, 80, 1, "", -1, std::nullopt, ""};
  written.loss_scale = LossScaleState{4096, 3, 2};
  const std::string path = write_checkpoint(dir, plan, written);
  const CheckpointInfo info = read_checkpoint(path, plan, fuzz::tiny_model);
  ASSERT_TRUE(info.loss_scale.has_value());
  EXPECT_EQ(info.loss_scale->scale, 4096);
  EXPECT_EQ(info.loss_scale->good_in_a_row, 3);
  EXPECT_EQ(info.loss_scale->skipped, 2);
  EXPECT_FALSE(read_checkpoint(write_checkpoint(dir, plan, {fuzz::tiny_model, 3, 90, 1, "", -1, std::nullopt, ""}), plan,
                               fuzz::tiny_model)
                   .loss_scale.has_value());

  LossScaler dynamic(65536, true, 4);
  dynamic.restore(*info.loss_scale);
  EXPECT_EQ(dynamic.scale(), 4096);
  EXPECT_EQ(dynamic.skipped_steps(), 2);
  EXPECT_TRUE(dynamic.record(true));  // the fourth good step in a row doubles it
  EXPECT_EQ(dynamic.scale(), 8192);
  LossScaler fixed(128, false, 1);
  fixed.restore(*info.loss_scale);
  EXPECT_EQ(fixed.scale(), 128);
  EXPECT_EQ(fixed.skipped_steps(), 2);
}

// The test set a run evaluates on (a --resume may change it) and the first epoch evaluated on it
// read back, with time to accuracy's first epoch, which makes the time no configuration's.
TEST(Checkpoint, TheTestSetAndItsFirstEpochReadBack) {
  const std::string dir = fresh_dir("ckpt_test_set");
  fuzz::TinyPlan plan;
  CheckpointInfo retested{fuzz::tiny_model, 4, 100, 1, "", -1, std::nullopt, ""};
  retested.test_set_fingerprint = "00c0ffee00c0ffee";
  retested.test_set_from_epoch = 3;
  retested.time_to_accuracy = TimeToAccuracy{};
  retested.time_to_accuracy->target = 0.5;
  retested.time_to_accuracy->test_set_changed(3);
  const CheckpointInfo back = read_checkpoint(write_checkpoint(dir, plan, retested), plan, fuzz::tiny_model);
  EXPECT_EQ(back.test_set_fingerprint, "00c0ffee00c0ffee");
  EXPECT_EQ(back.test_set_from_epoch, 3);
  ASSERT_TRUE(back.time_to_accuracy.has_value());
  EXPECT_EQ(back.time_to_accuracy->evaluated_from_epoch, 3);
  EXPECT_FALSE(back.time_to_accuracy->comparable(1));
  TimeToAccuracy one_test_set;
  one_test_set.target = 0.5;
  EXPECT_TRUE(one_test_set.comparable(1));
}

// --max_ckpts_to_keep: the one just written and the newest before it stay, with nothing of
// another kind touched: a higher-numbered damaged leftover, a name that is not a number, a link.
TEST(Checkpoint, OnlyTheNewestBeforeTheOneWrittenAreRemoved) {
  const std::string dir = fresh_dir("ckpt_keep");
  for (const char* name : {"checkpoint-epoch-0001.ckpt", "checkpoint-epoch-0002.ckpt", "checkpoint-epoch-0003.ckpt",
                           "checkpoint-epoch-0004.ckpt", "checkpoint-epoch-0009.ckpt", "checkpoint-epoch-0010-best.ckpt",
                           "checkpoint-epoch-0001.rank-0000.state", "checkpoint-epoch-0001.rank-0001.state",
                           "checkpoint-epoch-0003.rank-0000.state", "notes.txt"})
    std::ofstream(dir + "/" + name) << "x";
  std::filesystem::create_symlink(dir + "/notes.txt", dir + "/checkpoint-epoch-0000.ckpt");
  EXPECT_EQ(remove_older_checkpoints(checkpoint_path(dir, 4), 2), 2);
  std::set<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir)) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"checkpoint-epoch-0000.ckpt", "checkpoint-epoch-0003.ckpt",
                                         "checkpoint-epoch-0003.rank-0000.state", "checkpoint-epoch-0004.ckpt",
                                         "checkpoint-epoch-0009.ckpt", "checkpoint-epoch-0010-best.ckpt", "notes.txt"}));
  EXPECT_EQ(remove_older_checkpoints(checkpoint_path(dir, 4), 0), 0) << "0 keeps every one";
  EXPECT_EQ(remove_older_checkpoints(checkpoint_path(dir, 4), 1), 1);
  EXPECT_TRUE(std::filesystem::exists(checkpoint_path(dir, 4)));
  EXPECT_FALSE(std::filesystem::exists(checkpoint_path(dir, 3)));
}

// A rank's own state beside a checkpoint reads back only for the same checkpoint id, rank, number
// of ranks and kind, and whole.
TEST(RankState, ReadsBackOnlyForTheRunThatWroteIt) {
  const std::string dir = fresh_dir("rank_state");
  const std::string checkpoint = dir + "/checkpoint-epoch-0002.ckpt";
  const std::string state("\x01\x00\xff state bytes", 15);
  write_rank_state(checkpoint, 1, 4, "powersgd", "id1", state);
  const std::string path = dir + "/checkpoint-epoch-0002.rank-0001.state";
  EXPECT_TRUE(std::filesystem::exists(dir + "/checkpoint-epoch-0002.rank-0001.next.state"));
  EXPECT_EQ(read_rank_state(checkpoint, 1, 4, "powersgd", "id1"), state) << "killed before the commit: the next one";
  commit_rank_state(checkpoint, 1);
  EXPECT_EQ(rank_state_path(checkpoint, 1), path);
  EXPECT_FALSE(std::filesystem::exists(dir + "/checkpoint-epoch-0002.rank-0001.next.state"));
  EXPECT_EQ(read_rank_state(checkpoint, 1, 4, "powersgd", "id1"), state);
  // the checkpoint written again under its name: until the commit, the old state stays for the
  // old checkpoint and the new one is found for the new
  write_rank_state(checkpoint, 1, 4, "powersgd", "id9", "new state");
  EXPECT_EQ(read_rank_state(checkpoint, 1, 4, "powersgd", "id1"), state);
  EXPECT_EQ(read_rank_state(checkpoint, 1, 4, "powersgd", "id9"), "new state");
  std::filesystem::remove(dir + "/checkpoint-epoch-0002.rank-0001.next.state");
  EXPECT_EQ(testing::error_of([&] { read_rank_state(checkpoint, 1, 4, "powersgd", "id2"); }),
            path + ": belongs to another checkpoint than " + checkpoint);  // another run's, left in the folder
  EXPECT_EQ(testing::error_of([&] { read_rank_state(checkpoint, 1, 2, "powersgd", "id1"); }),
            path + ": was written by a run of 4 ranks, not 2");
  EXPECT_EQ(testing::error_of([&] { read_rank_state(checkpoint, 1, 4, "other", "id1"); }), path + ": holds no other state");
  EXPECT_EQ(testing::error_of([&] { read_rank_state(checkpoint, 0, 4, "powersgd", "id1"); }),
            dir + "/checkpoint-epoch-0002.rank-0000.state: cannot open");
  std::filesystem::copy_file(path, rank_state_path(checkpoint, 3));
  EXPECT_EQ(testing::error_of([&] { read_rank_state(checkpoint, 3, 4, "powersgd", "id1"); }),
            rank_state_path(checkpoint, 3) + ": is not rank 3's");
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  EXPECT_EQ(testing::error_of([&] { read_rank_state(checkpoint, 1, 4, "powersgd", "id1"); }),
            path + ": checksum mismatch (truncated or damaged)");
  std::ofstream(path, std::ios::binary) << sealed("{\"model\":\"fuzz_tiny\"}", 21, 0);  // a checkpoint's magic
  EXPECT_EQ(testing::error_of([&] { read_rank_state(checkpoint, 1, 4, "powersgd", "id1"); }),
            path + ": not a cnnbench rank state file");
}

// PowerSGD's state goes out and back whole, and only into a PowerSgd of the same buckets and rank.
TEST(PowerSgdState, RestoresWhatItSavedAndRefusesAnotherShape) {
  const std::vector<TensorExtent> tensors = {{0, 64 * 36, 64, 36}, {64 * 36, 64}, {64 * 36 + 64, 50 * 20, 50, 20}};
  const std::vector<Bucket> buckets = plan_buckets(tensors, 0);
  PowerSgd a(buckets, tensors, {2, 3, 7}), b(buckets, tensors, {2, 3, 8});
  ASSERT_NE(a.q_factors(0), b.q_factors(0));  // other seeds: other first Q
  const std::string saved = a.state();
  b.restore(saved);
  EXPECT_EQ(b.q_factors(0), a.q_factors(0));
  EXPECT_EQ(b.q_factors(2), a.q_factors(2));
  EXPECT_EQ(b.state(), saved);
  PowerSgd rank4(buckets, tensors, {4, 3, 7});
  const std::string before = rank4.state();
  EXPECT_THROW(rank4.restore(saved), std::invalid_argument);
  EXPECT_EQ(rank4.state(), before);  // unchanged
  EXPECT_THROW(b.restore(saved.substr(0, saved.size() - 1)), std::invalid_argument);
  EXPECT_THROW(b.restore(saved + "x"), std::invalid_argument);
  PowerSgd one_bucket(plan_buckets(tensors, 1 << 20), tensors, {2, 3, 7});
  EXPECT_THROW(one_bucket.restore(saved), std::invalid_argument);
}

}  // namespace
}  // namespace cnnbench
