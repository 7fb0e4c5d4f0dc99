#include "harness/run/time_to_accuracy.h"

#include <fmt/format.h>

#include <algorithm>

namespace cnnbench {

bool TimeToAccuracy::observe(double test_top1, double seconds_now, int64_t epochs_now, int64_t images_now) {
  ++evaluations;
  best_top1 = std::max(best_top1, test_top1);
  if (target <= 0 || reached || test_top1 < target) return false;
  reached = true;
  seconds = seconds_now;
  epochs = epochs_now;
  images = images_now;
  top1 = test_top1;
  return true;
}

std::string TimeToAccuracy::line() const {
  const std::string resumed =
      first_epoch > 0 ? fmt::format(" (seconds since resuming after epoch {})", first_epoch) : "";
  if (reached)
    return fmt::format("time to {:.2f}% test top-1: {:.1f} s, {} epochs, {} images (reached {:.2f}%){}", 100 * target,
                       seconds, epochs, images, 100 * top1, resumed);
  return fmt::format("time to {:.2f}% test top-1: not reached (best {:.2f}% in {} evaluations)", 100 * target,
                     100 * best_top1, evaluations);
}

nlohmann::json TimeToAccuracy::to_json() const {
  nlohmann::json j = {{"target_top_1_accuracy", target}, {"reached", reached},
                      {"best_test_top1", best_top1},     {"evaluations", evaluations},
                      {"first_epoch", first_epoch}};
  if (reached) {
    j["seconds"] = seconds;
    j["epochs"] = epochs;
    j["images"] = images;
    j["test_top1"] = top1;
  }
  return j;
}

double accuracy_target(double target_top_1_accuracy, double stop_at_top_1_accuracy) {
  return target_top_1_accuracy > 0 ? target_top_1_accuracy : stop_at_top_1_accuracy;
}

}  // namespace cnnbench
