#pragma once

#include <QCoreApplication>
#include <QString>
#include <optional>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"

namespace stagecraft::gui {

/// The result of a structural edit: the new plan, or why the edit is refused.
struct PlanEditResult {
  std::optional<Plan> plan;
  QString refusal;  ///< one translated sentence when `plan` is empty
};

/// The structural edits a person can make to a plan, as pure functions. They refuse
/// what cannot be represented (a stage without layers or devices) and accept what is
/// merely invalid (a device over its memory), which validation then explains. Shares of
/// every stage an edit touches are re-split with core's CostModel::splitMicroBatch.
class PlanEdits {
  Q_DECLARE_TR_FUNCTIONS(PlanEdits)

 public:
  /// Moves the cut between stage `boundary` and `boundary + 1` so the latter starts at `layer`.
  static PlanEditResult moveBoundary(const Plan& plan, const CostModel& cost, int boundary, int layer);
  /// Moves `layers` (and every layer between them and `stage`) from a neighbouring stage into `stage`.
  static PlanEditResult moveLayersToStage(const Plan& plan, const CostModel& cost, std::vector<int> layers, int stage);
  /// Puts `device` into the group of `stage`, taking it out of its current group if any.
  static PlanEditResult addDeviceToStage(const Plan& plan, const CostModel& cost, int device, int stage);
  /// Takes `device` out of its group; it becomes unused.
  static PlanEditResult removeDevice(const Plan& plan, const CostModel& cost, int device);
  /// Splits the costliest stage with two or more layers: the fastest unused device (or,
  /// without one, the second half of the stage's group) takes its back half.
  static PlanEditResult addStage(const Plan& plan, const CostModel& cost);
  /// Removes `stage`: its layers go to the previous stage (the next for stage 0), its
  /// devices become unused.
  static PlanEditResult removeStage(const Plan& plan, const CostModel& cost, int stage);
  static PlanEditResult setBatch(const Plan& plan, const CostModel& cost, int batch, int microbatches);
  static PlanEditResult setSchedule(const Plan& plan, const CostModel& cost, Schedule schedule);

  /// Re-splits every stage's micro-batch among its members: core's splitMicroBatch, or
  /// in proportion to device speed when the group cannot hold it (the plan is then
  /// invalid, and validation says which device is short of memory).
  static void resplitAll(Plan& plan, const CostModel& cost);
  static void resplit(Plan& plan, const CostModel& cost, int stage);
};

/// Plans compare equal when every field and stage does.
bool samePlan(const Plan& a, const Plan& b);

}  // namespace stagecraft::gui
