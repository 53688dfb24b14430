#pragma once
// A training run on disk: the model, its weights and optimizer state at a step, the plan and
// how it trains (v1::Checkpoint). Written atomically so a crash mid-write leaves the
// previous checkpoint whole.

#include <string>

#include "cluster/cluster.h"
#include "control/assignments.h"
#include "control/replan.h"
#include "model/model_spec.h"
#include "plan/plan.h"
#include "stagecraft/v1/checkpoint.pb.h"

namespace stagecraft::control {

/// <dir>/checkpoint.pb
std::string checkpointPath(const std::string& dir);

v1::Checkpoint makeCheckpoint(const ModelWeights& weights, const ModelSpec& model, const Plan& plan,
                              const Cluster& cluster, const TrainingOptions& options);

/// Creates `dir` when missing, writes <dir>/checkpoint.pb.tmp, flushes it to disk and
/// renames it over checkpoint.pb. Throws Error naming the path on failure.
void writeCheckpoint(const std::string& dir, const v1::Checkpoint& checkpoint);

/// Reads <dir>/checkpoint.pb. Throws Error (naming the path) when it is missing, not a
/// checkpoint or inconsistent (no weights, weights of another step).
v1::Checkpoint readCheckpoint(const std::string& dir);

/// What the checkpoint holds, in the coordinator's terms.
ModelWeights checkpointWeights(const v1::Checkpoint& checkpoint);
TrainingOptions checkpointOptions(const v1::Checkpoint& checkpoint);

}  // namespace stagecraft::control
