#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

#include "cost/cost_model.h"

namespace stagecraft::control {

/// What a backup really costs the steps, measured from the step times: the steps after a
/// backup step b while its copies are under way (b + 1 copies the state beside its forward
/// and backward; then the copy is paced over the sender's link, sent and parsed by the
/// neighbour) against the steps clear of one. The model's price (backupCost) counts copies
/// at the profiled copy speed; the bytes also land in fresh pages on both sides and are
/// parsed on the receiver, which on a worker with a small CPU quota cost tens of times more
/// (runtime_throughput: 134 MB copied to a 0.2-core worker every other step made those
/// steps 2-4x as long).
class BackupMeter {
 public:
  /// Steps whose copies are in flight at once from a backup step on, when they take no time
  /// on the link: the copy beside the next step and its crossing.
  static constexpr int kWindow = 2;
  /// The window of copies that take `link_ms` on the sender's link at steps of `step_ms`:
  /// kWindow and the steps the link takes (the serialising, sending and parsing come at its
  /// end). Counted in kWindow alone, a 1 Gbit/s link's 0.4-0.8 s fell on steps counted as
  /// clear, and the backups that cost 8-15 % of a step were measured within 5 %.
  static int windowFor(double link_ms, double step_ms);
  /// Steps between backups at the least until their cost is measured: clear steps remain
  /// between them to compare with, and a model that prices them far too low (the local
  /// demo's: 0 ms against ~350 measured) costs a short run two backups, not one a step.
  static constexpr std::int64_t kProbeEvery = 5;

  /// Forgets everything: a new deployment, whose first `skip` steps (faulting every buffer
  /// in for the first time) are not counted, with backups whose copies are under way for
  /// `window` steps after each (windowFor).
  void reset(int skip, int window = kWindow);
  int window() const { return window_; }
  /// Steps between backups at the least until their cost is measured: kProbeEvery, and
  /// more where the window is longer, so that clear steps remain between the windows.
  std::int64_t probeEvery() const { return std::max<std::int64_t>(kProbeEvery, window_ + 2); }
  /// A completed step (`step`: iterations done) of `ms`; `backed_up`: a backup of this step
  /// is taken (the schedule's due(step)). Steps must come in order; a step back (a replay)
  /// starts a new count.
  void observe(std::int64_t step, double ms, bool backed_up);
  /// The extra milliseconds one backup costs the steps (never negative), once at least two
  /// backups' windows and three clear steps were seen; empty before.
  std::optional<double> costMs() const;
  /// The mean of the clear steps seen (0 before any).
  double clearStepMs() const;
  /// Steps between backups that keep them within `budget` of a step (backupStride), for
  /// backups the model prices at `priced` and steps of `step_ms` (the run's step time as known
  /// now). Before the cost is measured: the model's price at `step_ms`, with at least
  /// probeEvery() steps between. Once measured: the measured cost at the clear steps' time,
  /// but never below the model's price.
  /// The meter reads the difference of noisy step times (one round of copies on four local
  /// workers read 28 to 242 ms, and the stride that followed the low reading cost 13 % of a
  /// step), while the model counts the copies' CPU as if none of it hid in the pipeline's
  /// idle time; where the meter reads more (fresh pages, a small CPU quota), it counts.
  std::int64_t stride(const BackupCost& priced, double step_ms, double budget) const;

 private:
  int skip_ = 0;
  int window_ = kWindow;
  std::int64_t last_step_ = -1;
  std::int64_t last_backup_ = -1;  // the newest backup step seen
  double clear_sum_ = 0, window_sum_ = 0;
  int clear_n_ = 0, window_n_ = 0, backups_ = 0;
};

}  // namespace stagecraft::control
