#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"

namespace stagecraft {

/// What every planner is asked for.
struct PlanRequest {
  int batch_size = 64;
  int microbatches = 8;
  Schedule schedule = Schedule::OneFOneB;
};

/// A planner's answer: a plan with its estimate, or the reason there is none.
struct PlanOutcome {
  bool feasible = false;
  Plan plan;
  PlanEstimate estimate;
  std::string reason;   ///< why no plan fits, naming the device and the shortfall
  double plan_ms = 0;   ///< wall time spent planning
};

/// Turns a model on a cluster into a plan. Implementations are stateless; `plan` may be
/// called concurrently.
class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  /// Fills everything but plan_ms, which makePlan() measures.
  virtual PlanOutcome plan(const CostModel& cost, const PlanRequest& request) const = 0;
};

/// hybrid, dp, dp-weighted, gpipe, pipedream, exhaustive.
std::vector<std::string> plannerNames();

/// Throws Error listing the names when `name` is unknown.
std::unique_ptr<Planner> makePlanner(std::string_view name);

/// Runs `planner`, timing it; checks the request (batch divisible by micro-batches...)
/// and throws Error for a bad one.
PlanOutcome makePlan(const Planner& planner, const CostModel& cost, const PlanRequest& request);

// Helpers shared by the planners.

/// A plan skeleton with the request's batch, schedule and the cost model's optimizer.
Plan emptyPlan(const CostModel& cost, const PlanRequest& request, std::string_view planner);

/// Estimates `plan`; infeasible (reason set) when it breaks a memory limit.
PlanOutcome finishOutcome(Plan plan, const CostModel& cost);

/// The reason no plan can fit the model on the cluster: names the device with the most
/// memory and by how much it falls short of the smallest possible stage.
std::string explainNoFit(const CostModel& cost, const PlanRequest& request);

}  // namespace stagecraft
