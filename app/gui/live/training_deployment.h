#pragma once
// TrainingController's deployed job, shared by the files that implement the controller.

#include <chrono>
#include <cstdint>
#include <memory>

#include "control/training_run.h"
#include "live/training_controller.h"

namespace stagecraft::gui {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// One deployed job, owned by the controller's thread.
struct TrainingController::Deployment {
  std::unique_ptr<control::TrainingRun> run;
  std::uint64_t generation = 0;
  Clock::time_point run_started{};
};

}  // namespace stagecraft::gui
