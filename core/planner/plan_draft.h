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
};

/// The plan of `draft`: shares by CostModel::splitMicroBatch, members that get no
/// samples dropped. nullopt when a group cannot hold its micro-batch share.
std::optional<Plan> materialize(const PlanDraft& draft, const CostModel& cost, const Plan& skeleton);

/// Hill-climbs from `start` on the estimated iteration time: moves cuts, moves, adds,
/// drops and swaps devices between groups, merges neighbouring stages. Stops at a local
/// optimum or after `budget_ms` of wall time.
PlanDraft refineDraft(PlanDraft start, const CostModel& cost, const Plan& skeleton, double budget_ms);

/// Estimated iteration time of a draft; +infinity when it does not fit.
double draftIterationMs(const PlanDraft& draft, const CostModel& cost, const Plan& skeleton);

}  // namespace stagecraft
