#include "control/backups.h"

#include <algorithm>
#include <exception>
#include <map>
#include <set>
#include <thread>

#include "control/coordinator.h"
#include "io/error.h"
#include "plan/validation.h"
#include "planner/plan_draft.h"
#include "sim/simulator.h"

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
  for (std::size_t s = 0; s < at.size(); ++s) {
    const auto& [device, chosen] = at[s].at(choice.step);
    choice.stages.emplace_back(device, chosen);
    std::vector<int> holders{device};
    for (int d = 0; d < static_cast<int>(held.size()); ++d) {
      const bool holds = std::any_of(held[d].begin(), held[d].end(), [&](const v1::BackupRef& ref) {
        return ref.step() == choice.step && ref.layer_begin() == ranges[s].first && ref.layer_end() == ranges[s].second;
      });
      if (holds && d != device) holders.push_back(d);
    }
    choice.holders.push_back(std::move(holders));
  }
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

void attachRestore(std::vector<v1::StageAssignment>& assignments, const BackupChoice& choice, const Cluster& holders) {
  for (v1::StageAssignment& a : assignments) {
    a.clear_weights();
    a.clear_restore();
    a.set_start_step(choice.step);
    const std::string& self = a.group(a.rank()).name();
    for (std::size_t s = 0; s < choice.stages.size(); ++s) {
      const v1::BackupRef& ref = choice.stages[s].second;
      if (ref.layer_end() <= a.layer_begin() || a.layer_end() <= ref.layer_begin()) continue;
      int from = choice.stages[s].first;
      for (const int d : choice.holders[s]) {
        if (holders.device(d).name == self) from = d;
      }
      const Device& holder = holders.device(from);
      v1::BackupSource* source = a.add_restore();
      *source->mutable_ref() = ref;
      source->set_name(holder.name);
      if (holder.name != self) source->set_address(holder.address);
    }
  }
}

double restoreMs(const Plan& plan, const Cluster& over, const CostModel& cost, const BackupChoice& choice,
                 const Cluster& holders) {
  // Per chosen state, the devices of `over` holding it.
  std::vector<std::vector<int>> held_by(choice.stages.size());
  for (std::size_t s = 0; s < choice.stages.size(); ++s) {
    for (const int h : choice.holders[s]) {
      if (const auto d = over.find(holders.device(h).name)) held_by[s].push_back(*d);
    }
  }
  constexpr double kNoHolder = 1e12;  // a state no device of `over` holds cannot be restored
  std::vector<double> sending(over.size(), 0.0);
  double unreachable = 0;
  for (const Stage& stage : plan.stages) {
    for (const DeviceShare& m : stage.members) {
      for (std::size_t s = 0; s < choice.stages.size(); ++s) {
        const v1::BackupRef& ref = choice.stages[s].second;
        const int begin = std::max(stage.layer_begin, ref.layer_begin());
        const int end = std::min(stage.layer_end, ref.layer_end());
        if (begin >= end) continue;
        const auto& by = held_by[s];
        if (std::find(by.begin(), by.end(), m.device) != by.end()) continue;  // its own
        if (by.empty()) {
          unreachable += kNoHolder;
          continue;
        }
        sending[by.front()] += cost.wireMs(by.front(), m.device, cost.backupBytes(begin, end));
      }
    }
  }
  return unreachable + *std::max_element(sending.begin(), sending.end());
}

Plan placeNearState(Plan plan, const Cluster& over, const CostModel& cost, const BackupChoice& choice,
                    const Cluster& holders, std::int64_t steps) {
  constexpr int kMostStages = 6;
  const int n = plan.stageCount();
  if (n < 2 || n > kMostStages || over.size() == 0) return plan;
  const auto total_ms = [&](const Plan& p) {
    return restoreMs(p, over, cost, choice, holders) + static_cast<double>(steps) * simulate(p, cost).iteration_ms;
  };
  double best_ms = 0;
  try {
    best_ms = total_ms(plan);
  } catch (const std::exception&) {
    return plan;
  }
  std::vector<std::vector<DeviceShare>> sets;
  for (const Stage& s : plan.stages) sets.push_back(s.members);
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  Plan best = plan;
  Plan candidate = plan;
  while (std::next_permutation(order.begin(), order.end())) {
    for (int i = 0; i < n; ++i) candidate.stages[i].members = sets[order[i]];
    try {
      if (!validatePlan(candidate, cost).empty()) continue;  // e.g. a stage too big for its new devices
      const double ms = total_ms(candidate);
      if (ms >= best_ms) continue;
      best = candidate;
      best_ms = ms;
    } catch (const std::exception&) {
    }
  }
  return best;
}

std::optional<Plan> planOnHeldState(const Plan& shape, const Cluster& over, const CostModel& cost,
                                    const BackupChoice& choice, const Cluster& holders) {
  constexpr int kMostStages = 10;
  constexpr int kMostPlans = 4096;  // plans simulated at most
  const int n = static_cast<int>(choice.stages.size());
  const int micro = shape.microBatchSize();
  if (n == 0 || n > kMostStages || micro <= 0) return std::nullopt;
  // The chosen states in layer order, which must tile the model, and per state the devices
  // of `over` holding it (sorted, for intersections).
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  const auto ref = [&](int i) -> const v1::BackupRef& { return choice.stages[order[i]].second; };
  std::sort(order.begin(), order.end(), [&](int a, int b) {
    return choice.stages[a].second.layer_begin() < choice.stages[b].second.layer_begin();
  });
  std::vector<std::vector<int>> held_by(n);
  for (int i = 0; i < n; ++i) {
    if (i > 0 && ref(i).layer_begin() != ref(i - 1).layer_end()) return std::nullopt;
    for (const int h : choice.holders[order[i]]) {
      if (const auto d = over.find(holders.device(h).name)) held_by[i].push_back(*d);
    }
    std::sort(held_by[i].begin(), held_by[i].end());
  }

  std::optional<Plan> best;
  double best_ms = 0;
  int tried = 0;
  Plan skeleton = shape;
  skeleton.cluster = over.name();
  // Every way to cut the states into runs; for each, every choice of distinct holders. The
  // shares come from the cost model's split, as a planner's would (materialize).
  for (std::uint32_t cuts = 0; cuts < (1u << (n - 1)) && tried < kMostPlans; ++cuts) {
    PlanDraft draft;
    std::vector<std::pair<int, int>> runs;  // [first, last] state of each run
    for (int i = 0; i < n; ++i) {
      if (i == 0 || (cuts >> (i - 1)) & 1u) {
        runs.emplace_back(i, i);
        draft.cuts.push_back(ref(i).layer_begin());
      } else {
        runs.back().second = i;
      }
    }
    draft.cuts.push_back(ref(n - 1).layer_end());
    std::vector<std::vector<int>> eligible;
    for (const auto& [first, last] : runs) {
      std::vector<int> both = held_by[first];
      for (int i = first + 1; i <= last; ++i) {
        std::vector<int> next;
        std::set_intersection(both.begin(), both.end(), held_by[i].begin(), held_by[i].end(), std::back_inserter(next));
        both = std::move(next);
      }
      if (both.empty()) break;
      eligible.push_back(std::move(both));
    }
    if (eligible.size() != runs.size()) continue;
    draft.groups.assign(runs.size(), {});
    std::set<int> taken;
    const auto place = [&](const auto& self, std::size_t r) -> void {
      if (tried >= kMostPlans) return;
      if (r == runs.size()) {
        ++tried;
        try {
          const std::optional<Plan> plan = materialize(draft, cost, skeleton);
          if (!plan || !validatePlan(*plan, cost).empty()) return;
          const double ms = simulate(*plan, cost).iteration_ms;
          if (!best || ms < best_ms) {
            best = plan;
            best_ms = ms;
          }
        } catch (const std::exception&) {
          // A plan the simulator cannot run is no plan to resume on.
        }
        return;
      }
      std::vector<int> free;
      for (const int d : eligible[r]) {
        if (!taken.count(d)) free.push_back(d);
      }
      // Every non-empty set of the free holders (a handful: a state's own device and its copies').
      const int k = std::min<int>(static_cast<int>(free.size()), 6);
      for (std::uint32_t pick = 1; pick < (1u << k); ++pick) {
        std::vector<int>& group = draft.groups[r];
        group.clear();
        for (int i = 0; i < k; ++i) {
          if ((pick >> i) & 1u) group.push_back(free[i]);
        }
        for (const int d : group) taken.insert(d);
        self(self, r + 1);
        for (const int d : group) taken.erase(d);
      }
    };
    place(place, 0);
  }
  return best;
}

std::string describeBackups(const BackupChoice& choice, const Cluster& holders) {
  std::string where;
  for (const auto& [device, ref] : choice.stages) {
    where += (where.empty() ? "" : ", ") + std::string("layers [") + std::to_string(ref.layer_begin()) + ", " +
             std::to_string(ref.layer_end()) + ") from " + holders.device(device).name +
             (ref.held_for().empty() ? "" : " (a copy from " + ref.held_for() + ")");
  }
  return where;
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
  if (where) *where = describeBackups(*choice, deployment.cluster());
  try {
    return mergeStageWeights(states, workers);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace stagecraft::control
