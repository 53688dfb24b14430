#pragma once
// Finding the state a run replays from after a loss: every stage's rank-0 member keeps its
// last few states and its neighbour holds copies (see TrainingOptions::backup_every). The
// newest step that every stage of the deployment still has on a live device wins.

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cluster/cluster.h"
#include "control/replan.h"
#include "cost/cost_model.h"
#include "plan/plan.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::control {

class Coordinator;

/// Where each stage's state at one step is held.
struct BackupChoice {
  std::int64_t step = 0;
  /// Per stage (in `ranges` order): the device (index into what `held` is indexed by) and
  /// the state to fetch from it.
  std::vector<std::pair<int, v1::BackupRef>> stages;
  /// Per stage: every device holding that state (the one in `stages` first).
  std::vector<std::vector<int>> holders;
};

/// The newest step, at most `at_most`, at which every layer range of `ranges` is held by
/// some device, where `held[d]` lists what device d holds (empty for a device that is gone).
/// A device's own state is preferred to a neighbour's copy. nullopt when no step is
/// common to all.
std::optional<BackupChoice> chooseBackups(std::span<const std::pair<int, int>> ranges,
                                          std::span<const std::vector<v1::BackupRef>> held, std::int64_t at_most);

/// The newest step at which every layer range of `ranges` is held by two different devices
/// of `held` (a stage's own copy and its neighbour's): a step the run can still replay from
/// after losing any one device. nullopt when there is none.
std::optional<std::int64_t> twiceHeldStep(std::span<const std::pair<int, int>> ranges,
                                          std::span<const std::vector<v1::BackupRef>> held);

/// Has each assignment start from `choice` (its step; the states held by the devices of
/// `holders`, the cluster `held` was indexed by) instead of the seed: a restore source for
/// every chosen state that overlaps its layers, taken from the assignment's own worker
/// when that holds it, from the chosen holder otherwise. Only the states a worker lacks
/// travel, and straight from the worker that holds them.
void attachRestore(std::vector<v1::StageAssignment>& assignments, const BackupChoice& choice, const Cluster& holders);

/// Milliseconds to bring every member of `plan` (over `over`, priced by `cost`) the state
/// of its layers at `choice` that its device does not hold: each holder (matched to `over`
/// by name) sends what its receivers lack over its own link, one after another; the
/// busiest holder's total.
double restoreMs(const Plan& plan, const Cluster& over, const CostModel& cost, const BackupChoice& choice,
                 const Cluster& holders);

/// `plan` with the member sets of its stages exchanged among its stages so that bringing
/// them their state (restoreMs) and then training `steps` steps is predicted to take the
/// least time: the devices that hold a stage's state take it unless elsewhere it trains
/// enough faster. Plans of more than 6 stages are returned as they are.
Plan placeNearState(Plan plan, const Cluster& over, const CostModel& cost, const BackupChoice& choice,
                    const Cluster& holders, std::int64_t steps);

/// The fastest plan (simulated under `cost`, over `over`) that moves no state: its stages
/// are runs of `choice`'s layer ranges, each on devices of `over` that hold every state of
/// its run (matched to `holders` by name), its members' shares by CostModel::splitMicroBatch.
/// Batch, micro-batches, schedule and the rest come from `shape`. nullopt when no such plan
/// fits, or `choice` has more than 10 stages.
std::optional<Plan> planOnHeldState(const Plan& shape, const Cluster& over, const CostModel& cost,
                                    const BackupChoice& choice, const Cluster& holders);

/// "layers [0, 3) from w0, layers [3, 8) from w2 (a copy from w1)": where each stage's
/// state of `choice` is held (`holders`: the cluster its devices are of).
std::string describeBackups(const BackupChoice& choice, const Cluster& holders);

/// The layer range of every stage of `deployment` (its rank-0 members' assignments).
std::vector<std::pair<int, int>> stageRanges(const Coordinator& deployment);

/// What each device of `deployment` holds for its job, asked in parallel (indexed like its
/// cluster); a device not in `live` (every device when `live` is null), without an address,
/// or that does not answer within `deadline` holds nothing.
std::vector<std::vector<v1::BackupRef>> listBackups(Coordinator& deployment, const std::vector<std::string>* live,
                                                    std::chrono::milliseconds deadline);

/// What `deployment`'s devices named in `live` hold for its job, the newest consistent step
/// (chooseBackups) fetched and joined. nullopt when there is none, or a device fails while
/// it is fetched. `where`, when given, says which worker held each stage's state.
std::optional<ModelWeights> gatherBackups(Coordinator& deployment, std::span<const std::string> live,
                                          std::int64_t at_most, std::chrono::milliseconds deadline,
                                          std::string* where = nullptr);

}  // namespace stagecraft::control
