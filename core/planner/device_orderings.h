#pragma once
// The hybrid planner's search space: where its DP may cut a model, and the device orderings
// whose contiguous runs become stage groups.

#include <vector>

#include "cluster/cluster.h"
#include "model/model_spec.h"

namespace stagecraft {

/// Device orderings to run the DP over; each ordering's contiguous ranges are the groups the
/// DP can form. Every ordering on five devices or fewer; by speed, memory, tier and network
/// domain above, with more variants up to 16 devices.
std::vector<std::vector<int>> deviceOrderings(const Cluster& cluster);

/// Cut candidates: every layer boundary for short models, else boundaries that split the
/// compute into nearly equal blocks.
std::vector<int> cutCandidates(const ModelSpec& model);

}  // namespace stagecraft
