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

#include "control/replan.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::control {

class Coordinator;

/// Where each stage's state at one step is held.
struct BackupChoice {
  std::int64_t step = 0;
  /// Per stage (in `ranges` order): the device (index into what `held` is indexed by) and
  /// the state to fetch from it.
  std::vector<std::pair<int, v1::BackupRef>> stages;
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
