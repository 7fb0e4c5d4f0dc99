// Checkpoints: what is written reads back whole, and a damaged or forged one is refused with one
// line naming the file. The forged ones carry a correct checksum, as fuzz_checkpoint's inputs do:
// a checksum proves only that the bytes are those written, not that the writer was cnnbench.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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
  const std::string path = write_checkpoint(dir, written, {fuzz::tiny_model, 3, 120, 42, ""});
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
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir + "/checkpoint-epoch-000" + std::to_string(i % 10) + ".ckpt";
    std::ofstream(path, std::ios::binary) << cases[i].first;
    const std::string m = testing::error_of([&] { read_checkpoint(path, plan, fuzz::tiny_model); });
    EXPECT_EQ(m, cases[i].second.empty() ? "" : path + ": " + cases[i].second) << "case " << i;
  }
}

}  // namespace
}  // namespace cnnbench
