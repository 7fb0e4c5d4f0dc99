#include "harness/report/epoch_metrics.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace cnnbench {

EpochMetrics join_epoch_parts(const EpochMetrics& before, const EpochMetrics& after) {
  EpochMetrics m = after;
  const double a = static_cast<double>(before.train_steps), b = static_cast<double>(after.train_steps);
  m.train_steps = before.train_steps + after.train_steps;
  m.train_loss = (before.train_loss * a + after.train_loss * b) / (a + b);
  m.train_top1 = (before.train_top1 * a + after.train_top1 * b) / (a + b);  // one global batch a step
  m.seconds = before.seconds + after.seconds;
  m.input_stall_sec = before.input_stall_sec + after.input_stall_sec;
  // images a second over the joined steps: each part's images from its own rate
  const double images = before.images_per_sec * before.seconds + after.images_per_sec * after.seconds;
  m.images_per_sec = images / m.seconds;
  m.compute_images_per_sec = images / (m.seconds - m.input_stall_sec);
  return m;
}

nlohmann::json epoch_json(const EpochMetrics& m) {
  nlohmann::json j = {{"epoch", m.epoch},
                      {"train_loss", m.train_loss},
                      {"train_top1", m.train_top1},
                      {"learning_rate", m.learning_rate},
                      {"seconds", m.seconds},
                      {"images_per_sec", m.images_per_sec},
                      {"compute_images_per_sec", m.compute_images_per_sec},
                      {"input_stall_sec", m.input_stall_sec},
                      {"images", m.images},
                      {"train_steps", m.train_steps}};
  if (m.evaluated) {
    j["test_loss"] = m.test_loss;
    j["test_top1"] = m.test_top1;
    j["test_top5"] = m.test_top5;
    if (m.elapsed_sec >= 0) j["elapsed_sec"] = m.elapsed_sec;
  }
  return j;
}

EpochMetrics epoch_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("an epoch is not an object");
  auto number = [&](const char* name, bool required) -> double {
    const auto it = j.find(name);
    if (it == j.end()) {
      if (required) throw std::runtime_error(std::string("an epoch has no ") + name);
      return -1;
    }
    // a diverged loss is written as null (JSON has no NaN)
    if (it->is_null() && std::string(name).ends_with("loss")) return std::numeric_limits<double>::quiet_NaN();
    if (!it->is_number() || !std::isfinite(it->get<double>()))
      throw std::runtime_error(std::string("an epoch's ") + name + " is not a number");
    return it->get<double>();
  };
  EpochMetrics m;
  const double epoch = number("epoch", true), images = number("images", true);
  if (epoch < 1 || epoch > 1e9 || epoch != std::floor(epoch) || images < 0 || images > 9e18 ||
      images != std::floor(images))
    throw std::runtime_error("an epoch's number or images are not whole counts");
  m.epoch = static_cast<int64_t>(epoch);
  m.images = static_cast<int64_t>(images);
  const double train_steps = number("train_steps", false);  // -1: written before it was kept
  if (train_steps > 9e18 || (train_steps >= 0 && train_steps != std::floor(train_steps)))
    throw std::runtime_error("an epoch's train_steps is not a whole count");
  m.train_steps = train_steps < 0 ? 0 : static_cast<int64_t>(train_steps);
  m.train_loss = number("train_loss", true);
  m.train_top1 = number("train_top1", true);
  m.learning_rate = number("learning_rate", true);
  m.seconds = number("seconds", true);
  m.images_per_sec = number("images_per_sec", true);
  m.compute_images_per_sec = number("compute_images_per_sec", true);
  m.input_stall_sec = number("input_stall_sec", true);
  m.evaluated = j.contains("test_top1");
  if (m.evaluated) {
    m.test_loss = number("test_loss", true);
    m.test_top1 = number("test_top1", true);
    m.test_top5 = number("test_top5", true);
    m.elapsed_sec = number("elapsed_sec", false);
  }
  return m;
}

}  // namespace cnnbench
