#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"

namespace stagecraft {

/// What every planner is asked for.
/// The largest global batch makePlan() plans for; beyond it a plan search would take
/// minutes (the planners' work grows with the batch's divisors and sample splits).
inline constexpr int kMaxBatchSize = 65536;

struct PlanRequest {
  int batch_size = 64;
  /// Micro-batches per iteration; 0 lets makePlan() choose among the batch's divisors.
  int microbatches = 0;
  Schedule schedule = Schedule::OneFOneB;
};

/// A planner's answer: a plan with its estimate, or the reason there is none.
struct PlanOutcome {
  bool feasible = false;
  Plan plan;
  PlanEstimate estimate;
  /// The simulator's iteration time of `plan` (feasible plans only): the figure planners
  /// make their final choice by, and the one `plan`, `run` and the console predict with.
  double simulated_ms = 0;
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
  /// False for plain data parallelism, which has no pipeline to fill: left to choose,
  /// it takes the whole batch as one micro-batch.
  virtual bool pipelined() const { return true; }
};

/// hybrid, dp, dp-weighted, gpipe, pipedream, exhaustive.
std::vector<std::string> plannerNames();

/// Throws Error listing the names when `name` is unknown.
std::unique_ptr<Planner> makePlanner(std::string_view name);

/// Runs `planner`, timing it; checks the request (batch divisible by micro-batches...)
/// and throws Error for a bad one. With microbatches == 0 it runs the planner for every
/// divisor of the batch up to kMaxAutoMicrobatches and keeps the feasible plan the
/// simulator finds fastest.
constexpr int kMaxAutoMicrobatches = 64;
PlanOutcome makePlan(const Planner& planner, const CostModel& cost, const PlanRequest& request);

// Helpers shared by the planners.

/// A plan skeleton with the request's batch, schedule and the cost model's optimizer.
Plan emptyPlan(const CostModel& cost, const PlanRequest& request, std::string_view planner);

/// Estimates and simulates `plan`; infeasible (reason set) when it breaks a memory limit.
PlanOutcome finishOutcome(Plan plan, const CostModel& cost);

/// The finalist the simulator finds fastest, finished as by finishOutcome. Planners search
/// on the closed-form estimate (estimatePlan), which can be off the simulated iteration by
/// tens of percent on unequal pipelines, and make the last choice here. Invalid finalists
/// are skipped; with none valid the first one's outcome (and reason) is returned.
PlanOutcome chooseBySimulation(std::vector<Plan> finalists, const CostModel& cost);

/// The reason no plan can fit the model on the cluster: names the device with the most
/// memory and by how much it falls short of the smallest possible stage.
std::string explainNoFit(const CostModel& cost, const PlanRequest& request);

}  // namespace stagecraft
