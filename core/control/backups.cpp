#include "control/backups.h"

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <thread>

#include "control/coordinator.h"
#include "io/error.h"

namespace stagecraft::control {

std::optional<BackupChoice> chooseBackups(std::span<const std::pair<int, int>> ranges,
                                          std::span<const std::vector<v1::BackupRef>> held, std::int64_t at_most) {
  if (ranges.empty()) return std::nullopt;
  // Per stage: step -> (device, ref), own states winning over neighbours' copies.
  std::vector<std::map<std::int64_t, std::pair<int, v1::BackupRef>>> at(ranges.size());
  for (int d = 0; d < static_cast<int>(held.size()); ++d) {
    for (const v1::BackupRef& ref : held[d]) {
      if (ref.step() > at_most) continue;
      for (std::size_t s = 0; s < ranges.size(); ++s) {
        if (ref.layer_begin() != ranges[s].first || ref.layer_end() != ranges[s].second) continue;
        auto [it, added] = at[s].try_emplace(ref.step(), d, ref);
        if (!added && it->second.second.held_for().size() > 0 && ref.held_for().empty()) it->second = {d, ref};
      }
    }
  }
  std::set<std::int64_t> common;
  for (const auto& [step, where] : at[0]) common.insert(step);
  for (std::size_t s = 1; s < at.size(); ++s) {
    std::erase_if(common, [&](std::int64_t step) { return !at[s].contains(step); });
  }
  if (common.empty()) return std::nullopt;
  BackupChoice choice;
  choice.step = *common.rbegin();
  for (const auto& stage : at) choice.stages.push_back(stage.at(choice.step));
  return choice;
}

std::optional<std::int64_t> twiceHeldStep(std::span<const std::pair<int, int>> ranges,
                                          std::span<const std::vector<v1::BackupRef>> held) {
  if (ranges.empty()) return std::nullopt;
  // Per stage: step -> the devices holding it.
  std::vector<std::map<std::int64_t, std::set<int>>> at(ranges.size());
  for (int d = 0; d < static_cast<int>(held.size()); ++d) {
    for (const v1::BackupRef& ref : held[d]) {
      for (std::size_t s = 0; s < ranges.size(); ++s) {
        if (ref.layer_begin() == ranges[s].first && ref.layer_end() == ranges[s].second) at[s][ref.step()].insert(d);
      }
    }
  }
  std::optional<std::int64_t> best;
  for (const auto& [step, devices] : at[0]) {
    const bool everywhere = std::all_of(at.begin(), at.end(), [&, step = step](const auto& stage) {
      const auto it = stage.find(step);
      return it != stage.end() && it->second.size() >= 2;
    });
    if (everywhere) best = step;  // ascending: the last one found is the newest
  }
  return best;
}

std::vector<std::pair<int, int>> stageRanges(const Coordinator& deployment) {
  std::vector<std::pair<int, int>> ranges;
  for (const v1::StageAssignment& a : deployment.assignments()) {
    if (a.rank() == 0) ranges.emplace_back(a.layer_begin(), a.layer_end());
  }
  return ranges;
}

std::vector<std::vector<v1::BackupRef>> listBackups(Coordinator& deployment, const std::vector<std::string>* live,
                                                    std::chrono::milliseconds deadline) {
  const Cluster& cluster = deployment.cluster();
  const int n = cluster.size();
  std::vector<std::vector<v1::BackupRef>> held(n);
  std::vector<std::thread> threads;
  for (int d = 0; d < n; ++d) {
    const std::string& name = cluster.device(d).name;
    if (cluster.device(d).address.empty()) continue;
    if (live && std::find(live->begin(), live->end(), name) == live->end()) continue;
    threads.emplace_back([&, d] {
      try {
        const v1::BackupList list = deployment.workerClient(d).listBackups(deployment.job(), deadline);
        held[d].assign(list.backups().begin(), list.backups().end());
      } catch (const std::exception&) {
        // A worker that cannot say what it holds holds nothing usable.
      }
    });
  }
  for (auto& t : threads) t.join();
  return held;
}

std::optional<ModelWeights> gatherBackups(Coordinator& deployment, std::span<const std::string> live,
                                          std::int64_t at_most, std::chrono::milliseconds deadline,
                                          std::string* where) {
  const std::vector<std::pair<int, int>> ranges = stageRanges(deployment);
  const std::vector<std::string> live_names(live.begin(), live.end());
  const std::vector<std::vector<v1::BackupRef>> held = listBackups(deployment, &live_names, deadline);
  const std::optional<BackupChoice> choice = chooseBackups(ranges, held, at_most);
  if (!choice) return std::nullopt;
  std::vector<std::thread> threads;
  const int stages = static_cast<int>(choice->stages.size());
  std::vector<v1::StageWeights> states(stages);
  std::vector<std::string> workers(stages);
  std::vector<std::exception_ptr> errors(stages);
  for (int s = 0; s < stages; ++s) {
    threads.emplace_back([&, s] {
      const auto& [device, ref] = choice->stages[s];
      try {
        WorkerClient& client = deployment.workerClient(device);
        workers[s] = client.endpoint().name;
        states[s] = client.getBackup(ref, deadline);
      } catch (...) {
        errors[s] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) return std::nullopt;
  }
  if (where) {
    where->clear();
    for (int s = 0; s < stages; ++s) {
      const auto& ref = choice->stages[s].second;
      *where += (s ? ", " : "") + std::string("layers [") + std::to_string(ref.layer_begin()) + ", " +
                std::to_string(ref.layer_end()) + ") from " + workers[s] +
                (ref.held_for().empty() ? "" : " (a copy from " + ref.held_for() + ")");
    }
  }
  try {
    return mergeStageWeights(states, workers);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace stagecraft::control
