#include "control/stragglers.h"

#include <cmath>

namespace stagecraft::control {

std::map<std::string, double> relativeFactors(const std::map<std::string, double>& factors) {
  double log_sum = 0;
  int n = 0;
  for (const auto& [name, f] : factors) {
    if (std::isfinite(f) && f > 0) {
      log_sum += std::log(f);
      ++n;
    }
  }
  std::map<std::string, double> out;
  if (n == 0) return out;
  const double mean = std::exp(log_sum / n);
  for (const auto& [name, f] : factors) {
    if (std::isfinite(f) && f > 0) out[name] = f / mean;
  }
  return out;
}

void StragglerWatch::reset() {
  slow_since_.clear();
  reported_.clear();
}

std::vector<std::string> StragglerWatch::observe(std::int64_t step, const std::map<std::string, double>& relative) {
  std::vector<std::string> now;
  for (const auto& [name, r] : relative) {
    if (r <= rule_.slower_by) {
      slow_since_.erase(name);
      reported_.erase(name);
      continue;
    }
    // Slow at `step`: counted from the step before the first slow one was seen.
    const auto [it, added] = slow_since_.try_emplace(name, step - 1);
    if (step - it->second >= rule_.steps && reported_.insert(name).second) now.push_back(name);
  }
  return now;
}

}  // namespace stagecraft::control
