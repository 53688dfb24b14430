#pragma once
// Which steps a run's stages back up after. Every stage must back up after the same steps,
// or no step is held by all of them: the steps are counted from one every stage is told
// (the deployment's first step; a Start's backup_after), not from zero, so a stride that
// changes between segments never skips the next backup.

#include <algorithm>
#include <cstdint>

namespace stagecraft::control {

struct BackupSchedule {
  std::int64_t every = 0;  ///< steps between backups; 0: none (or, sent in a Start: as deployed)
  std::int64_t after = 0;  ///< backups after steps after + every, after + 2 * every, ...

  bool due(std::int64_t step) const { return every > 0 && step > after && (step - after) % every == 0; }
  /// The newest backup step in (from, to]; 0 when none is.
  std::int64_t lastIn(std::int64_t from, std::int64_t to) const {
    if (every <= 0 || to <= after) return 0;
    const std::int64_t last = after + (to - after) / every * every;
    return last > from && last > after ? last : 0;
  }
  /// Whether `step` is clear of the copies of the backups before it, which slow the `window`
  /// steps after each; with a backup every `window` steps or more often no step is, and every
  /// step counts as clear as any.
  bool clearOf(std::int64_t step, int window) const {
    if (every <= window) return true;
    for (int k = 1; k <= window; ++k) {
      if (due(step - k)) return false;
    }
    return true;
  }
  /// `n` steps between backups from `step` on: the next one n steps after the last backup
  /// taken (`last`), or right after `step` when that is overdue.
  static BackupSchedule next(std::int64_t n, std::int64_t last, std::int64_t step) {
    return {n, std::max(last + n, step + 1) - n};
  }
};

}  // namespace stagecraft::control
