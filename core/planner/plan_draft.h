#pragma once

#include <optional>
#include <vector>

#include "cost/cost_model.h"
#include "planner/planner.h"

namespace stagecraft {

/// A plan before its shares are computed: where the layers are cut and which devices
/// form each stage's group. Planners search over drafts; shares always come from the
/// cost model's split, so a draft determines its plan.
struct PlanDraft {
  std::vector<int> cuts;                ///< stage s runs layers [cuts[s], cuts[s+1])
  std::vector<std::vector<int>> groups; ///< devices of each stage, in member order

  int stageCount() const { return static_cast<int>(groups.size()); }
  bool operator==(const PlanDraft&) const = default;
};

/// The plan of `draft`: shares by CostModel::splitMicroBatch, members that get no
/// samples dropped. nullopt when a group cannot hold its micro-batch share.
std::optional<Plan> materialize(const PlanDraft& draft, const CostModel& cost, const Plan& skeleton);

/// What a draft is judged by: the closed-form estimate (estimatePlan: fast, what the search
/// runs on) or the simulator (exact under the cost model, slower; for the last steps).
enum class DraftObjective { Estimated, Simulated };

/// Hill-climbs from `start` on the iteration time: moves cuts, moves, adds, drops and swaps
/// devices between groups, merges neighbouring stages. Stops at a local optimum or after
/// `budget_ms` of wall time.
PlanDraft refineDraft(PlanDraft start, const CostModel& cost, const Plan& skeleton, double budget_ms,
                      DraftObjective objective = DraftObjective::Estimated);

/// Iteration time of a draft by `objective`; +infinity when it does not fit.
double draftIterationMs(const PlanDraft& draft, const CostModel& cost, const Plan& skeleton,
                        DraftObjective objective = DraftObjective::Estimated);

}  // namespace stagecraft
