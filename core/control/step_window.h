#pragma once

// The telemetry of a deployment's last few steps, for calibrations that one slow step does
// not decide: a step that another process on the machine slowed, or whose backup copies
// competed with its passes, re-timed a device at 1.5x its speed while the steps around it
// said 1.0x.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::control {

/// Steps a run's compute factors are the medians of (StepWindow).
inline constexpr std::size_t kFactorSteps = 5;

/// The reports of the last `keep` steps that every member of one deployment reported, and
/// that no member took a backup in (its copies run beside the passes and would pass for slow
/// compute). Steps up to `warmup_through` are not kept: a deployment's first step warms up
/// (allocations, first calls). Members report independently and out of step with each
/// other; a step is complete once all have.
class StepWindow {
 public:
  StepWindow() = default;
  StepWindow(int members, std::size_t keep, std::int64_t warmup_through);

  /// Member `member`'s report of its step `report.step()`; ignored for a member out of range.
  void add(int member, const v1::IterationReport& report);
  /// The complete steps kept, oldest first, each one report per member in member order.
  const std::vector<std::vector<v1::IterationReport>>& steps() const { return complete_; }
  /// The newest complete step's number; 0 when there is none.
  std::int64_t newestStep() const { return complete_.empty() ? 0 : complete_.back().front().step(); }

 private:
  int members_ = 0;
  std::size_t keep_ = 0;
  std::int64_t warmup_through_ = 0;
  std::map<std::int64_t, std::vector<std::optional<v1::IterationReport>>> pending_;
  std::vector<std::vector<v1::IterationReport>> complete_;
};

/// computeFactors (replan.h) of each step, and per device the median over the steps: a
/// device one step slowed keeps the speed the others measured. Throws Error when `steps` is
/// empty or a step does not have one report per member.
std::vector<double> medianFactors(const Plan& plan, const CostModel& cost,
                                  std::span<const std::vector<v1::IterationReport>> steps);

/// medianFactors for the devices that compute in `plan` (a member with samples), by device
/// name, finite and positive only: what a CostBasis keeps. Empty when `steps` is empty or
/// does not fit the plan.
std::map<std::string, double> measuredFactors(const Plan& plan, const CostModel& uncalibrated,
                                              std::span<const std::vector<v1::IterationReport>> steps);

}  // namespace stagecraft::control
