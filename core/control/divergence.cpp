#include "control/divergence.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace stagecraft::control {

double DivergenceWatch::level() const {
  if (recent_.empty()) return 0;
  std::vector<double> losses;
  for (const auto& [step, loss] : recent_) losses.push_back(loss);
  std::nth_element(losses.begin(), losses.begin() + losses.size() / 2, losses.end());
  return losses[losses.size() / 2];
}

std::optional<Divergence> DivergenceWatch::observe(std::int64_t step, double loss) {
  if (!rule_.enabled) return std::nullopt;
  // A replayed step replaces what was seen from it on.
  while (!recent_.empty() && recent_.back().first >= step) recent_.pop_back();
  const double running = level();
  if (!std::isfinite(loss)) return Divergence{step, loss, running, "the loss is not finite", 0};
  if (static_cast<int>(recent_.size()) >= rule_.warmup && running > 0 &&
      loss > rule_.factor * std::max(running, start_level_)) {
    char why[160];
    std::snprintf(why, sizeof why, "the loss %.4g is %.0fx its running level %.4g", loss, loss / running, running);
    return Divergence{step, loss, running, why, 0};
  }
  recent_.emplace_back(step, loss);
  if (start_level_ == 0 && static_cast<int>(recent_.size()) == std::max(rule_.warmup, 1)) start_level_ = level();
  while (static_cast<int>(recent_.size()) > rule_.window) recent_.pop_front();
  return std::nullopt;
}

}  // namespace stagecraft::control
