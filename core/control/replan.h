#pragma once
// Re-planning a running job: the whole model's weights gathered from the stages of one
// plan and cut again for another, devices' speeds calibrated by what the workers
// measured, and a cluster narrowed to the devices still alive. Plain data in, results
// out: no network, so each piece is testable on its own.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "plan/plan.h"
#include "io/stage_weights.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::control {

/// The whole model's state at one step, by layer. Worker tensors are named
/// "<global layer index>.<name>" (parameters and buffers) or "<global layer index>.<name>#<state>"
/// (the optimizer's state of that parameter), so they move between splits unchanged.
struct ModelWeights {
  std::int64_t step = 0;                          ///< iterations completed
  std::map<int, std::vector<v1::Tensor>> layers;  ///< global layer index -> its tensors
  /// Whether any tensor carries optimizer state ("#" in its name).
  bool hasOptimizerState() const;
};

/// Joins the weights of one member of each stage (`stages[i]` from worker `workers[i]`).
/// Throws Error naming the worker when a tensor's name has no layer index or a layer
/// outside its stage's range, when two stages hold the same layer, when the stages were
/// at different steps, or when their ranges leave a gap before the last layer.
ModelWeights mergeStageWeights(std::span<const v1::StageWeights> stages, std::span<const std::string> workers);

/// The tensors of layers [begin, end), in layer order, at `weights.step`. Throws Error
/// for an empty or negative range (the worker checks the tensors against its stage).
v1::StageWeights sliceWeights(const ModelWeights& weights, int begin, int end);

/// Gives each assignment the slice of its layer range and start_step = weights.step, so
/// the new deployment continues where the old one stopped.
void attachWeights(std::vector<v1::StageAssignment>& assignments, const ModelWeights& weights);

/// Forward + backward milliseconds in an iteration report's timeline (the member's own
/// compute, emulated slowdown included; waits and transfers excluded).
double measuredComputeMs(const v1::IterationReport& report);

/// Per cluster device, the measured over the predicted compute time (forward + backward)
/// of its members in `plan`, where `latest[m]` is the latest IterationReport of member m
/// (members in stage order, then member order, as buildAssignments numbers them) and the
/// prediction is `cost`'s time for that member's share of every micro-batch. Passes that
/// overlap an "allreduce" event are left out of both: the ring's CPU work stretches them,
/// and the cost model prices that work on its own. A device without a measurement (no
/// compute events yet or none clear of the ring, no samples, or outside the plan) gets the
/// geometric mean of the measured devices' factors (1 when none is measured), so unmeasured
/// devices stay comparable with measured ones. Where devices share a machine's CPUs, the
/// prediction is the simulated one (slower while the others compute there), so the factor
/// does not count that sharing twice. Feed it to CostModel::setComputeFactors.
/// Throws Error when `latest` does not have one report per member.
std::vector<double> computeFactors(const Plan& plan, const CostModel& cost, std::span<const v1::IterationReport> latest);

/// computeFactors for the devices the latest reports really measured (a member with samples
/// and a report after step 0), by device name, finite and positive only: what a CostBasis
/// keeps. `uncalibrated` prices with profiles or FLOPs only. Empty when nothing is measured
/// or the reports do not fit the plan.
std::map<std::string, double> measuredFactors(const Plan& plan, const CostModel& uncalibrated,
                                              std::span<const v1::IterationReport> latest);

/// `factors` (one per device of `cluster`) of the devices that compute in `plan` (a member
/// with samples) and that `reported` says were measured (by member, in the plan's order),
/// by device name, finite and positive only.
std::map<std::string, double> namedFactors(const Plan& plan, const Cluster& cluster, std::span<const double> factors,
                                           const std::function<bool(std::size_t member)>& reported);

/// `cost.cluster()` with each device's gflops divided by its computeFactors factor
/// (measured over predicted compute time, the passes beside an all-reduce left out; a
/// device without a measurement moves by the measured devices' geometric mean, so
/// unmeasured devices stay comparable with measured ones). Throws Error when `latest` does
/// not have one report per member.
Cluster calibrateCluster(const Plan& plan, const CostModel& cost, std::span<const v1::IterationReport> latest);

/// "a, b, c": device names for a message or a report.
std::string joinNames(std::span<const std::string> names);

/// `cluster` reduced to the devices named in `live` (in the cluster's order), with only the
/// links between them. Throws Error for a name the cluster lacks, or when none is left.
Cluster restrictCluster(const Cluster& cluster, std::span<const std::string> live);

/// `plan` (over `cluster`) without its members on the devices named in `lost`, expressed
/// over `survivors` (a cluster holding every device the plan keeps, by name): the
/// survivors of a group split the lost members' samples in proportion to their own shares,
/// so every stage still computes whole micro-batches. nullopt when a stage loses every
/// member. Throws Error when a kept device is missing from `survivors`.
std::optional<Plan> withoutDevices(const Plan& plan, const Cluster& cluster, const Cluster& survivors,
                                   std::span<const std::string> lost);

}  // namespace stagecraft::control
