#include "harness/run/checkpoint.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "harness/report/result_files.h"
#include "kernels/device_plan.h"

namespace cnnbench {
namespace {

constexpr char kMagic[8] = {'C', 'N', 'N', 'B', 'C', 'K', 'P', '1'};

uint64_t fnv1a(const char* data, size_t n, uint64_t h = 1469598103934665603ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(data[i])) * 1099511628211ull;
  return h;
}

void append(std::string& out, const void* p, size_t n) { out.append(static_cast<const char*>(p), n); }

[[noreturn]] void bad(const std::string& path, const std::string& why) { throw std::runtime_error(path + ": " + why); }

}  // namespace

std::string write_checkpoint(const std::string& dir, Plan& plan, const CheckpointInfo& info) {
  make_folders(dir);
  char name[64];
  std::snprintf(name, sizeof(name), "checkpoint-epoch-%04lld.ckpt", static_cast<long long>(info.epochs_done));
  const std::string path = dir + "/" + name;
  if (DevicePlan* device = plan.device()) device->download_state();  // its state is on its GPU
  nlohmann::json header = {{"model", info.model},
                           {"epochs_done", info.epochs_done},
                           {"steps_done", info.steps_done},
                           {"seed", info.seed},
                           {"parameters", plan.parameters().size()},
                           {"buffers", plan.buffers().size()}};
  if (info.training_seconds >= 0) header["training_seconds"] = info.training_seconds;
  if (info.time_to_accuracy) header["time_to_accuracy"] = info.time_to_accuracy->to_json();
  const std::string text = header.dump();
  const uint64_t length = text.size();
  std::string out;
  append(out, kMagic, sizeof(kMagic));
  append(out, &length, sizeof(length));
  out += text;
  append(out, plan.parameters().data(), plan.parameters().size_bytes());
  append(out, plan.momentum().data(), plan.momentum().size_bytes());
  append(out, plan.buffers().data(), plan.buffers().size_bytes());
  const uint64_t sum = fnv1a(out.data(), out.size());
  append(out, &sum, sizeof(sum));
  write_file_atomically(path, out);
  return path;
}

CheckpointInfo read_checkpoint(const std::string& path, Plan& plan, const std::string& model) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  auto fail = [&](const std::string& why) -> CheckpointInfo { bad(path, why); };
  if (bytes.size() < sizeof(kMagic) + 16 || bytes.compare(0, sizeof(kMagic), kMagic, sizeof(kMagic)) != 0)
    return fail("not a cnnbench checkpoint");
  uint64_t sum;
  std::memcpy(&sum, bytes.data() + bytes.size() - sizeof(sum), sizeof(sum));
  if (fnv1a(bytes.data(), bytes.size() - sizeof(sum)) != sum) return fail("checksum mismatch (truncated or damaged)");
  uint64_t length;
  std::memcpy(&length, bytes.data() + sizeof(kMagic), sizeof(length));
  const size_t header_at = sizeof(kMagic) + sizeof(length);
  // compared with what is left, not added to header_at: a huge length must not wrap around
  if (length > bytes.size() - header_at - sizeof(sum)) return fail("header runs past the end");
  // A checksum only proves the file is as written: the header is still checked field by field,
  // each a JSON value of the type the writer gives it.
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.substr(header_at, length));
  } catch (const nlohmann::json::exception&) {
    return fail("header is not JSON");
  }
  if (!header.is_object()) return fail("header is not a JSON object");
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
  if (field("model") != model) return fail("holds model " + field("model").dump() + ", not " + model);  // quoted
  const size_t params = plan.parameters().size(), buffers = plan.buffers().size();
  if (count("parameters") != params || count("buffers") != buffers) return fail("sizes differ from this model's");
  const uint64_t epochs_done = count("epochs_done"), steps_done = count("steps_done"), seed = count("seed");
  if (epochs_done > INT64_MAX || steps_done > INT64_MAX) return fail("epoch or step count out of range");
  const size_t payload = (2 * params + buffers) * sizeof(float);
  if (header_at + length + payload + sizeof(sum) != bytes.size()) return fail("payload size is wrong");
  CheckpointInfo info;
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
  const char* p = bytes.data() + header_at + length;
  std::memcpy(plan.parameters().data(), p, params * sizeof(float));
  std::memcpy(plan.momentum().data(), p + params * sizeof(float), params * sizeof(float));
  std::memcpy(plan.buffers().data(), p + 2 * params * sizeof(float), buffers * sizeof(float));
  if (DevicePlan* device = plan.device()) device->upload_state();
  info.model = model;
  info.epochs_done = static_cast<int64_t>(epochs_done);
  info.steps_done = static_cast<int64_t>(steps_done);
  info.seed = seed;
  info.path = path;
  return info;
}

std::optional<CheckpointInfo> load_newest_checkpoint(const std::string& dir, Plan& plan, const std::string& model,
                                                     std::string* skipped) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint-epoch-", 0) == 0 && entry.path().extension() == ".ckpt") paths.push_back(entry.path().string());
  }
  std::sort(paths.rbegin(), paths.rend());  // zero-padded epochs: newest first
  for (const std::string& path : paths) {
    try {
      return read_checkpoint(path, plan, model);
    } catch (const std::exception& e) {
      if (skipped) *skipped += std::string(skipped->empty() ? "" : "; ") + e.what();
    }
  }
  return std::nullopt;
}

}  // namespace cnnbench
