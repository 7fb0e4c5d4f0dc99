#include "harness/run/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "harness/cli/bounded_file.h"
#include "harness/cli/limits.h"
#include "harness/report/result_files.h"
#include "kernels/device_plan.h"

namespace cnnbench {
namespace {

constexpr char kMagic[8] = {'C', 'N', 'N', 'B', 'C', 'K', 'P', '1'};

uint64_t fnv1a(const char* data, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  return h;
}

void append(std::string& out, const void* p, size_t n) {
  if (n > 0) out.append(static_cast<const char*>(p), n);  // an empty span's data() may be null
}

[[noreturn]] void bad(const std::string& path, const std::string& why) { throw std::runtime_error(path + ": " + why); }

// Both files are framed alike: magic, the header's length, the header (JSON), the payload, and
// a checksum of all before it.
std::string frame(const char (&magic)[8], const nlohmann::json& header, const std::vector<std::pair<const void*, size_t>>& payload) {
  const std::string text = header.dump();
  const uint64_t length = text.size();
  std::string out;
  append(out, magic, sizeof(magic));
  append(out, &length, sizeof(length));
  out += text;
  for (const auto& [data, bytes] : payload) append(out, data, bytes);
  const uint64_t sum = fnv1a(out.data(), out.size());
  append(out, &sum, sizeof(sum));
  return out;
}

struct Unframed {
  nlohmann::json header;
  size_t payload_at = 0, payload_bytes = 0;
  uint64_t checksum = 0;  // the file's own, as checked
};

// Checks the frame of `bytes` (read from `path`, a file of `kind`); throws naming the file.
Unframed unframe(const std::string& bytes, const char (&magic)[8], const std::string& path, const std::string& kind) {
  if (bytes.size() < sizeof(magic) + 16 || bytes.compare(0, sizeof(magic), magic, sizeof(magic)) != 0)
    bad(path, "not a cnnbench " + kind);
  uint64_t sum;
  std::memcpy(&sum, bytes.data() + bytes.size() - sizeof(sum), sizeof(sum));
  if (fnv1a(bytes.data(), bytes.size() - sizeof(sum)) != sum) bad(path, "checksum mismatch (truncated or damaged)");
  uint64_t length;
  std::memcpy(&length, bytes.data() + sizeof(magic), sizeof(length));
  const size_t header_at = sizeof(magic) + sizeof(length);
  // compared with what is left, not added to header_at: a huge length must not wrap around
  if (length > bytes.size() - header_at - sizeof(sum)) bad(path, "header runs past the end");
  // A checksum only proves the file is as written: the header is still checked field by field,
  // each a JSON value of the type the writer gives it.
  Unframed out;
  try {
    out.header = nlohmann::json::parse(bytes.substr(header_at, length));
  } catch (const nlohmann::json::exception&) {
    bad(path, "header is not JSON");
  }
  if (!out.header.is_object()) bad(path, "header is not a JSON object");
  out.payload_at = header_at + length;
  out.payload_bytes = bytes.size() - out.payload_at - sizeof(sum);
  out.checksum = sum;
  return out;
}

// A regular file only (a FIFO would block, /dev/zero would fill memory): the cap is far above any
// model's weights and momentum (vgg16's are 1.1 GB) and only stops what is not a checkpoint.
std::string slurp(const std::string& path) {
  try {
    return read_bounded_file(path, uint64_t{64} << 30, "a cnnbench checkpoint");
  } catch (const BoundedFileError& e) {
    // "cannot open" kept for a missing file: callers and messages name it so
    if (!std::filesystem::exists(path)) throw std::runtime_error(path + ": cannot open");
    throw std::runtime_error(e.what());
  }
}

constexpr char kRankStateMagic[8] = {'C', 'N', 'N', 'B', 'R', 'S', 'T', '1'};

}  // namespace

std::string checkpoint_path(const std::string& dir, int64_t epochs_done) {
  char name[64];
  std::snprintf(name, sizeof(name), "checkpoint-epoch-%04lld.ckpt", static_cast<long long>(epochs_done));
  return dir + "/" + name;
}

std::string write_checkpoint(const std::string& dir, Plan& plan, const CheckpointInfo& info) {
  make_folders(dir);
  const std::string path = checkpoint_path(dir, info.epochs_done);
  if (DevicePlan* device = plan.device()) device->download_state();  // its state is on its GPU
  nlohmann::json header = {{"model", info.model},
                           {"epochs_done", info.epochs_done},
                           {"steps_done", info.steps_done},
                           {"seed", info.seed},
                           {"parameters", plan.parameters().size()},
                           {"buffers", plan.buffers().size()}};
  if (info.training_seconds >= 0) header["training_seconds"] = info.training_seconds;
  if (info.time_to_accuracy) header["time_to_accuracy"] = info.time_to_accuracy->to_json();
  if (!info.rank_state_id.empty()) header["rank_state_id"] = info.rank_state_id;
  if (info.run.is_object()) header["run"] = info.run;
  if (info.stopped_at_target) header["stopped_at_target"] = true;
  if (!info.ranks_trained.empty()) header["ranks_trained"] = info.ranks_trained;
  if (info.loss_scale)
    header["loss_scale"] = {{"scale", info.loss_scale->scale},
                            {"good_in_a_row", info.loss_scale->good_in_a_row},
                            {"skipped", info.loss_scale->skipped}};
  if (!info.test_set_fingerprint.empty())
    header["test_set"] = {{"fingerprint", info.test_set_fingerprint}, {"from_epoch", info.test_set_from_epoch}};
  if (info.history) {
    header["history"] = nlohmann::json::array();
    for (const EpochMetrics& m : *info.history) header["history"].push_back(epoch_json(m));
  }
  write_file_atomically(path, frame(kMagic, header,
                                    {{plan.parameters().data(), plan.parameters().size_bytes()},
                                     {plan.momentum().data(), plan.momentum().size_bytes()},
                                     {plan.buffers().data(), plan.buffers().size_bytes()}}));
  return path;
}

namespace {

// The header of a whole checkpoint, checked field by field; the payload's place in `bytes`.
CheckpointInfo parse_header(const std::string& bytes, const std::string& path, Unframed& framed) {
  framed = unframe(bytes, kMagic, path, "checkpoint");
  const uint64_t checksum = framed.checksum;
  const nlohmann::json& header = framed.header;
  auto fail = [&](const std::string& why) -> CheckpointInfo { bad(path, why); };
  auto field = [&](const char* name) -> const nlohmann::json& {
    const auto it = header.find(name);
    if (it == header.end()) bad(path, std::string("header has no ") + name);
    return *it;
  };
  auto count = [&](const char* name) -> uint64_t {  // a whole number >= 0
    const nlohmann::json& v = field(name);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      bad(path, std::string("header's ") + name + " is not a whole number >= 0");
    return v.get<uint64_t>();
  };
  if (!field("model").is_string()) return fail("header's model is not a name");
  CheckpointInfo info;
  info.model = field("model").get<std::string>();
  info.parameters = count("parameters");
  info.buffers = count("buffers");
  const uint64_t epochs_done = count("epochs_done"), steps_done = count("steps_done"), seed = count("seed");
  if (epochs_done > INT64_MAX || steps_done > INT64_MAX) return fail("epoch or step count out of range");
  if (info.parameters > (uint64_t{1} << 40) || info.buffers > (uint64_t{1} << 40) ||
      framed.payload_bytes != (2 * info.parameters + info.buffers) * sizeof(float))
    return fail("payload size is wrong");
  if (const auto it = header.find("training_seconds"); it != header.end()) {
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0 || it->get<double>() > 1e15)
      return fail("header's training_seconds is not a number of seconds");
    info.training_seconds = it->get<double>();
  }
  if (const auto it = header.find("time_to_accuracy"); it != header.end()) {
    try {
      info.time_to_accuracy = TimeToAccuracy::from_json(*it);
    } catch (const std::exception& e) {
      return fail(std::string("header's ") + e.what());
    }
  }
  if (const auto it = header.find("rank_state_id"); it != header.end()) {
    if (!it->is_string() || it->get<std::string>().empty()) return fail("header's rank_state_id is not an id");
    info.rank_state_id = it->get<std::string>();
  }
  if (const auto it = header.find("stopped_at_target"); it != header.end()) {
    if (!it->is_boolean()) return fail("header's stopped_at_target is not true or false");
    info.stopped_at_target = it->get<bool>();
  }
  if (const auto it = header.find("ranks_trained"); it != header.end() && !read_rank_counts(*it, info.ranks_trained))
    return fail("header's ranks_trained is not a list of rank counts");
  if (const auto it = header.find("run"); it != header.end()) {
    if (!it->is_object()) return fail("header's run is not an object");
    info.run = *it;
  }
  if (const auto it = header.find("history"); it != header.end()) {
    if (!it->is_array()) return fail("header's history is not a list of epochs");
    info.history.emplace();
    try {
      for (const nlohmann::json& e : *it) info.history->push_back(epoch_from_json(e));
    } catch (const std::exception& e) {
      return fail(std::string("header's history: ") + e.what());
    }
  }
  if (const auto it = header.find("test_set"); it != header.end()) {
    const nlohmann::json& v = *it;
    const bool ok = v.is_object() && v.contains("fingerprint") && v["fingerprint"].is_string() &&
                    !v["fingerprint"].get<std::string>().empty() && v["fingerprint"].get<std::string>().size() <= 64 &&
                    v.contains("from_epoch") && v["from_epoch"].is_number_integer() &&
                    v["from_epoch"].get<int64_t>() >= 1 && v["from_epoch"].get<int64_t>() <= (int64_t{1} << 40);
    if (!ok) return fail("header's test_set is not a fingerprint and an epoch");
    info.test_set_fingerprint = v["fingerprint"].get<std::string>();
    info.test_set_from_epoch = v["from_epoch"].get<int64_t>();
  }
  if (const auto it = header.find("loss_scale"); it != header.end()) {
    const nlohmann::json& v = *it;
    auto whole = [&](const char* name) {  // a count that fits an int64_t
      return v.contains(name) && (v[name].is_number_unsigned() || v[name].is_number_integer()) &&
             v[name].get<int64_t>() >= 0;
    };
    const bool scale_ok = v.is_object() && v.contains("scale") && v["scale"].is_number() &&
                          v["scale"].get<double>() > 0 && v["scale"].get<double>() <= max_loss_scale;
    if (!scale_ok || !whole("good_in_a_row") || !whole("skipped"))
      return fail("header's loss_scale is not a scale in (0, 2^24] and two counts");
    info.loss_scale = LossScaleState{v["scale"].get<double>(), v["good_in_a_row"].get<int64_t>(),
                                     v["skipped"].get<int64_t>()};
  }
  info.epochs_done = static_cast<int64_t>(epochs_done);
  info.steps_done = static_cast<int64_t>(steps_done);
  info.seed = seed;
  info.path = path;
  info.checksum = checksum;
  return info;
}

}  // namespace

CheckpointInfo read_checkpoint_header(const std::string& path) {
  Unframed framed;
  return parse_header(slurp(path), path, framed);
}

CheckpointInfo read_checkpoint(const std::string& path, Plan& plan, const std::string& model) {
  const std::string bytes = slurp(path);
  Unframed framed;
  CheckpointInfo info = parse_header(bytes, path, framed);
  if (info.model != model) bad(path, "holds model " + nlohmann::json(info.model).dump() + ", not " + model);  // quoted
  const size_t params = plan.parameters().size(), buffers = plan.buffers().size();
  if (info.parameters != params || info.buffers != buffers) bad(path, "sizes differ from this model's");
  const char* p = bytes.data() + framed.payload_at;
  std::memcpy(plan.parameters().data(), p, params * sizeof(float));
  std::memcpy(plan.momentum().data(), p + params * sizeof(float), params * sizeof(float));
  std::memcpy(plan.buffers().data(), p + 2 * params * sizeof(float), buffers * sizeof(float));
  if (DevicePlan* device = plan.device()) device->upload_state();
  return info;
}

namespace {

// checkpoint-epoch-NNNN.ckpt's NNNN; -1 where the rest of the name is not a number (not ours)
long long checkpoint_epoch(const std::string& path) {
  const std::string stem = std::filesystem::path(path).stem().string();
  if (stem.rfind("checkpoint-epoch-", 0) != 0) return -1;
  const std::string name = stem.substr(std::strlen("checkpoint-epoch-"));
  return name.find_first_not_of("0123456789") == std::string::npos && !name.empty() && name.size() < 19
             ? std::stoll(name)
             : -1;
}

}  // namespace

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint-epoch-", 0) == 0 && entry.path().extension() == ".ckpt") paths.push_back(entry.path().string());
  }
  // by the epoch's number, not the name: 4 digits of padding end at epoch 9999
  std::sort(paths.begin(), paths.end(), [&](const std::string& a, const std::string& b) {
    const long long ea = checkpoint_epoch(a), eb = checkpoint_epoch(b);
    return ea != eb ? ea > eb : a > b;
  });
  return paths;
}

int remove_older_checkpoints(const std::string& written, int64_t keep) {
  const long long newest = checkpoint_epoch(written);
  if (keep <= 0 || newest < 0) return 0;
  const std::string dir = std::filesystem::path(written).parent_path().string();
  int kept = 0, removed = 0;
  for (const std::string& checkpoint : list_checkpoints(dir)) {
    const long long epoch = checkpoint_epoch(checkpoint);
    // a higher one is a damaged leftover the resume skipped (this run writes over it in time);
    // a name that is not a number is not one cnnbench wrote
    if (epoch > newest || epoch < 0) continue;
    if (kept++ < keep) continue;  // the written one counts first
    const std::filesystem::path path = checkpoint;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(std::filesystem::symlink_status(path, ec))) continue;  // not one we wrote
    const std::string ranks_prefix = path.stem().string() + ".rank-";
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(ranks_prefix, 0) == 0 && name.ends_with(".state")) std::filesystem::remove(entry.path(), ec);
    }
    removed += std::filesystem::remove(path, ec);
  }
  return removed;
}

namespace {

std::string rank_state_name(const std::string& checkpoint, int rank, const char* kind) {
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), ".rank-%04d%s.state", rank, kind);
  const std::string stem = checkpoint.ends_with(".ckpt") ? checkpoint.substr(0, checkpoint.size() - 5) : checkpoint;
  return stem + suffix;
}

}  // namespace

std::string rank_state_path(const std::string& checkpoint, int rank) { return rank_state_name(checkpoint, rank, ""); }
std::string next_rank_state_path(const std::string& checkpoint, int rank) {
  return rank_state_name(checkpoint, rank, ".next");
}

void write_rank_state(const std::string& checkpoint, int rank, int ranks, const std::string& kind,
                      const std::string& id, const std::string& state) {
  const nlohmann::json header = {{"kind", kind}, {"id", id}, {"rank", rank}, {"ranks", ranks}, {"bytes", state.size()}};
  write_file_atomically(next_rank_state_path(checkpoint, rank),
                        frame(kRankStateMagic, header, {{state.data(), state.size()}}));
}

void commit_rank_state(const std::string& checkpoint, int rank) {
  std::error_code ec;
  std::filesystem::rename(next_rank_state_path(checkpoint, rank), rank_state_path(checkpoint, rank), ec);
  if (ec)
    throw std::runtime_error(next_rank_state_path(checkpoint, rank) + ": cannot rename to " +
                             rank_state_path(checkpoint, rank) + ": " + ec.message());
}

namespace {

std::string read_rank_state_file(const std::string& path, const std::string& checkpoint, int rank, int ranks,
                                 const std::string& kind, const std::string& id) {
  const std::string bytes = slurp(path);
  const Unframed framed = unframe(bytes, kRankStateMagic, path, "rank state file");
  const nlohmann::json& h = framed.header;
  auto is = [&](const char* name, const nlohmann::json& want) { return h.contains(name) && h[name] == want; };
  if (!is("kind", kind)) bad(path, "holds no " + kind + " state");
  if (!is("id", id)) bad(path, "belongs to another checkpoint than " + checkpoint);
  if (!is("ranks", ranks))
    bad(path, "was written by a run of " + (h.contains("ranks") ? h["ranks"].dump() : std::string("?")) + " ranks, not " +
                  std::to_string(ranks));
  if (!is("rank", rank)) bad(path, "is not rank " + std::to_string(rank) + "'s");
  if (!is("bytes", framed.payload_bytes)) bad(path, "payload size is wrong");
  return bytes.substr(framed.payload_at, framed.payload_bytes);
}

}  // namespace

std::string read_rank_state(const std::string& checkpoint, int rank, int ranks, const std::string& kind,
                            const std::string& id) {
  try {
    return read_rank_state_file(rank_state_path(checkpoint, rank), checkpoint, rank, ranks, kind, id);
  } catch (const std::runtime_error&) {
    // killed between the checkpoint's write and the commit: its state is still the next one
    std::error_code ec;
    if (!std::filesystem::exists(next_rank_state_path(checkpoint, rank), ec)) throw;
    try {
      return read_rank_state_file(next_rank_state_path(checkpoint, rank), checkpoint, rank, ranks, kind, id);
    } catch (const std::runtime_error&) {
    }
    throw;
  }
}

std::optional<CheckpointInfo> load_newest_checkpoint(const std::string& dir, Plan& plan, const std::string& model,
                                                     std::string* skipped) {
  for (const std::string& path : list_checkpoints(dir)) {
    try {
      return read_checkpoint(path, plan, model);
    } catch (const std::exception& e) {
      if (skipped) *skipped += std::string(skipped->empty() ? "" : "; ") + e.what();
    }
  }
  return std::nullopt;
}

}  // namespace cnnbench
