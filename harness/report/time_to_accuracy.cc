#include "harness/report/time_to_accuracy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace cnnbench {

bool TimeToAccuracy::observe(double test_top1, double test_loss, double seconds_now, int64_t epochs_now,
                             int64_t images_now) {
  ++evaluations;
  if (!std::isfinite(test_loss) || !std::isfinite(test_top1)) return false;  // diverged: not an accuracy
  best_top1 = std::max(best_top1, test_top1);
  if (target <= 0 || reached || !(test_top1 >= target)) return false;
  reached = true;
  seconds = seconds_now;
  epochs = epochs_now;
  images = images_now;
  top1 = test_top1;
  return true;
}

void TimeToAccuracy::trained_on(int64_t n) {
  if (!reached && !ranks.empty() && ranks.back() != n) ranks.push_back(n);
}

bool TimeToAccuracy::mixes_ranks(int64_t run_ranks) const {
  return std::any_of(ranks.begin(), ranks.end(), [&](int64_t n) { return n != run_ranks; });
}

void TimeToAccuracy::test_set_changed(int64_t epoch) {
  reached = false;
  seconds = 0;
  epochs = images = evaluations = 0;
  top1 = best_top1 = 0;
  evaluated_from_epoch = epoch;
}

std::string TimeToAccuracy::line(int64_t run_ranks) const {
  std::string clock = clock_complete ? "" : " (seconds since a resume: the checkpoint did not hold the time before)";
  if (evaluated_from_epoch > 1)
    clock += fmt::format(" (evaluated on this test set from epoch {}: a --resume changed it)", evaluated_from_epoch);
  if (run_ranks > 0 && mixes_ranks(run_ranks)) {
    std::string counts;
    for (size_t i = 0; i < ranks.size(); ++i) counts += fmt::format("{}{}", i == 0 ? "" : ", then ", ranks[i]);
    clock += fmt::format(" (trained on {} rank{}: not this run's configuration's time)", counts,
                         ranks.back() == 1 ? "" : "s");
  }
  if (reached)
    return fmt::format("time to {:.2f}% test top-1: {:.1f} s, {} epochs, {} images (reached {:.2f}%){}", 100 * target,
                       seconds, epochs, images, 100 * top1, clock);
  return fmt::format("time to {:.2f}% test top-1: not reached (best {:.2f}% in {} evaluations{})", 100 * target,
                     100 * best_top1, evaluations,
                     evaluated_from_epoch > 1
                         ? fmt::format(" on this test set from epoch {}: a --resume changed it", evaluated_from_epoch)
                         : "");
}

nlohmann::json TimeToAccuracy::to_json() const {
  nlohmann::json j = {{"target_top_1_accuracy", target}, {"reached", reached},
                      {"best_test_top1", best_top1},     {"evaluations", evaluations},
                      {"clock_complete", clock_complete}};
  if (!ranks.empty()) j["ranks"] = ranks;
  if (evaluated_from_epoch > 1) j["evaluated_from_epoch"] = evaluated_from_epoch;
  if (reached) {
    j["seconds"] = seconds;
    j["epochs"] = epochs;
    j["images"] = images;
    j["test_top1"] = top1;
  }
  return j;
}

TimeToAccuracy TimeToAccuracy::from_json(const nlohmann::json& j) {
  auto bad = [](const std::string& field) -> std::runtime_error {
    return std::runtime_error("time_to_accuracy." + field + " is missing or out of range");
  };
  auto number = [&](const char* field, double low, double high) {
    const auto it = j.find(field);
    if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < low ||
        it->get<double>() > high)
      throw bad(field);
    return it->get<double>();
  };
  auto flag = [&](const char* field) {
    const auto it = j.find(field);
    if (it == j.end() || !it->is_boolean()) throw bad(field);
    return it->get<bool>();
  };
  if (!j.is_object()) throw std::runtime_error("time_to_accuracy is not an object");
  TimeToAccuracy t;
  t.target = number("target_top_1_accuracy", 0, 1);
  t.reached = flag("reached");
  t.best_top1 = number("best_test_top1", 0, 1);
  t.evaluations = static_cast<int64_t>(number("evaluations", 0, 1e15));
  t.clock_complete = flag("clock_complete");
  if (const auto it = j.find("ranks"); it != j.end() && !read_rank_counts(*it, t.ranks))  // absent before 2026-11-28
    throw bad("ranks");
  if (j.contains("evaluated_from_epoch"))  // absent: every evaluation on the one test set
    t.evaluated_from_epoch = static_cast<int64_t>(number("evaluated_from_epoch", 1, 1e15));
  if (t.reached) {
    t.seconds = number("seconds", 0, 1e15);
    t.epochs = static_cast<int64_t>(number("epochs", 0, 1e15));
    t.images = static_cast<int64_t>(number("images", 0, 1e18));
    t.top1 = number("test_top1", 0, 1);
  }
  return t;
}

bool read_rank_counts(const nlohmann::json& j, std::vector<int64_t>& out) {
  const bool counts = j.is_array() && !j.empty() && j.size() <= 1000 &&
                      std::all_of(j.begin(), j.end(), [](const nlohmann::json& n) {
                        return n.is_number_integer() && n.get<int64_t>() >= 1 && n.get<int64_t>() <= (int64_t{1} << 24);
                      });
  if (!counts) return false;
  out.clear();
  for (const nlohmann::json& n : j) out.push_back(n.get<int64_t>());
  return true;
}

double accuracy_target(double target_top_1_accuracy, double stop_at_top_1_accuracy) {
  return target_top_1_accuracy > 0 ? target_top_1_accuracy : stop_at_top_1_accuracy;
}

}  // namespace cnnbench
