#include "control/backup_meter.h"

#include <algorithm>
#include <cmath>

namespace stagecraft::control {

int BackupMeter::windowFor(double link_ms, double step_ms) {
  constexpr int kLongest = 64;  // a link so slow that the copies outlast this many steps
  if (!(link_ms > 0)) return kWindow;
  if (!(step_ms > 0)) return kLongest;
  return kWindow + static_cast<int>(std::min<double>(std::ceil(link_ms / step_ms), kLongest - kWindow));
}

void BackupMeter::reset(int skip, int window) {
  *this = BackupMeter{};
  skip_ = skip;
  window_ = std::max(1, window);
}

void BackupMeter::observe(std::int64_t step, double ms, bool backed_up) {
  if (step <= last_step_) last_backup_ = -1;  // a replay: the copies before it are gone
  last_step_ = step;
  if (skip_ > 0) {
    --skip_;
  } else if (ms > 0) {
    const bool in_window = last_backup_ >= 0 && step - last_backup_ >= 1 && step - last_backup_ <= window_;
    if (in_window) {
      window_sum_ += ms;
      ++window_n_;
      if (step - last_backup_ == 1) ++backups_;
    } else {
      clear_sum_ += ms;
      ++clear_n_;
    }
  }
  if (backed_up) last_backup_ = step;
}

std::optional<double> BackupMeter::costMs() const {
  if (backups_ < 2 || clear_n_ < 3 || window_n_ == 0) return std::nullopt;
  const double extra_per_step = window_sum_ / window_n_ - clear_sum_ / clear_n_;
  // A backup's window is window_ steps long (shorter where the next backup cuts it).
  const double steps_per_backup = static_cast<double>(window_n_) / backups_;
  return std::max(0.0, extra_per_step * steps_per_backup);
}

double BackupMeter::clearStepMs() const { return clear_n_ > 0 ? clear_sum_ / clear_n_ : 0; }

std::int64_t BackupMeter::stride(const BackupCost& priced, double step_ms, double budget) const {
  const std::optional<double> measured = costMs();
  if (!measured) return std::max(backupStride(priced, step_ms, budget), probeEvery());
  BackupCost cost = priced;
  cost.cpu_ms = std::max(*measured, priced.cpu_ms);
  return backupStride(cost, clearStepMs(), budget);
}

}  // namespace stagecraft::control
