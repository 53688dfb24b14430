#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "planner/planner.h"

namespace stagecraft {

// The planners behind makePlanner(), one per file.

/// How the hybrid planner spends its time; the defaults are what makePlanner("hybrid") gives.
struct HybridOptions {
  /// Clusters with more devices than this run the DP over each ordering's first devices
  /// only, with groups no wider than a micro-batch's samples (hybrid_planner.cpp).
  int whole_orderings_up_to = 64;
  /// Threads the device orderings' DPs share; 0: one per core. The plan does not depend on it.
  unsigned threads = 0;
};

/// Asteroid-style DP over (layers x devices x stages) with memory limits, run over
/// several device orderings and refined by local search.
std::unique_ptr<Planner> makeHybridPlanner(HybridOptions options = {});
/// One stage on every device; `weighted` splits the batch by speed, else evenly.
std::unique_ptr<Planner> makeDataParallelPlanner(bool weighted);
/// Even layer split, one device per stage, in cluster order.
std::unique_ptr<Planner> makeGPipePlanner();
/// PipeDream's partitioner, which assumes every device is the same.
std::unique_ptr<Planner> makePipeDreamPlanner();
/// The optimum under the cost model by enumeration; for small instances only. Of the
/// kExhaustiveFinalists best plans by estimate it returns the one the simulator finds fastest.
std::unique_ptr<Planner> makeExhaustivePlanner();

constexpr size_t kExhaustiveFinalists = 16;
/// The exhaustive search's finalists: the kExhaustiveFinalists valid plans with the lowest
/// estimatePlan iteration time, lowest first (so front() is the proven optimum under the
/// estimate); empty when no plan fits or the instance is too large to enumerate.
std::vector<Plan> exhaustiveFinalists(const CostModel& cost, const PlanRequest& request);

}  // namespace stagecraft
