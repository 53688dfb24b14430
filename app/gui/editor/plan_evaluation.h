#pragma once

#include <QStringList>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"
#include "sim/simulator.h"

namespace stagecraft::gui {

/// What the console shows about a plan after every edit: core's validation problems and,
/// when the plan is valid, core's estimate and simulation. Per-device vectors are indexed
/// by cluster device.
struct PlanEvaluation {
  bool valid = false;
  /// validatePlan's sentences (English, from core), empty when valid.
  QStringList problems;
  double samples_per_second = 0;  ///< simulated; 0 when invalid
  double iteration_ms = 0;        ///< simulated; 0 when invalid
  double bubble_fraction = 0;     ///< simulated; 0 when invalid
  double estimated_samples_per_second = 0;  ///< closed-form estimate; 0 when invalid
  int microbatches = 0;
  int micro_batch_size = 0;
  std::vector<int> stage_of_device;          ///< -1 for an unused device
  std::vector<double> busy_fraction;         ///< simulated compute / iteration
  /// Peak memory: simulated when valid, else core's 1F1B memory of the member's share.
  std::vector<double> memory_bytes;
  std::vector<double> memory_limit_bytes;
  std::vector<bool> device_over_memory;
  /// Per stage: forward + backward ms of one micro-batch on its slowest member.
  std::vector<double> stage_compute_ms;
  /// Per stage: the stage itself is broken (no device, no layers) or holds a device over
  /// its memory; the editor outlines such lanes red.
  std::vector<bool> stage_has_problem;
  /// Per stage: how long its busiest member is occupied in the simulated iteration
  /// (the longer of its compute and its link time); empty when invalid.
  std::vector<double> stage_busy_ms;
  /// The stage that bounds the iteration (the largest stage_busy_ms; the slowest compute
  /// without a simulation); -1 for fewer than two stages.
  int bottleneck_stage = -1;
  std::vector<TimelineEvent> timeline;
  double evaluate_ms = 0;  ///< wall time spent computing this evaluation
};

/// Validates `plan` and, when valid, estimates and simulates it. Never throws for a bad
/// plan: what is wrong ends up in `problems`.
PlanEvaluation evaluatePlan(const Plan& plan, const CostModel& cost);

}  // namespace stagecraft::gui
