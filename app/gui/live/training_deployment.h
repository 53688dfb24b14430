#pragma once
// TrainingController's deployed job, shared by the files that implement the controller.

#include <chrono>
#include <cstdint>
#include <memory>

#include "control/training_run.h"
#include "live/training_controller.h"

namespace stagecraft::gui {

using Clock = std::chrono::steady_clock;

/// Steps into a deployment after which the console re-prices it with the speeds training
/// measured (as `stagecraft-cli run --calibrate-after`'s default).
inline constexpr std::int64_t kCalibrateAfterSteps = 3;
/// Then again this often: the first steps of a deployment run slower than the rest (warm-up),
/// so a prediction calibrated on them alone undersells the plan.
inline constexpr std::int64_t kRecalibrateEverySteps = 10;

inline double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// One deployed job, owned by the controller's thread.
struct TrainingController::Deployment {
  std::unique_ptr<control::TrainingRun> run;
  std::uint64_t generation = 0;
  Clock::time_point run_started{};
  /// The deployed plan's prediction the charts show: the run's, then calibrated from
  /// training at calibrate_at, and again every kRecalibrateEverySteps steps.
  double predicted = 0;
  std::int64_t calibrate_at = 0;
  bool calibrated = false;  ///< calibrated at least once (a better plan is looked for then)
};

}  // namespace stagecraft::gui
