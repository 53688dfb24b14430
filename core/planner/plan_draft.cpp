#include "planner/plan_draft.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "sim/simulator.h"

namespace stagecraft {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// A move must gain at least this fraction to count, so the climb cannot cycle on noise.
constexpr double kMinGain = 1e-9;

}  // namespace

std::optional<Plan> materialize(const PlanDraft& draft, const CostModel& cost, const Plan& skeleton) {
  Plan plan = skeleton;
  plan.stages.clear();
  const int S = draft.stageCount();
  plan.stages.resize(S);  // inFlight() needs the stage count
  for (int s = 0; s < S; ++s) {
    // Members in device order: one canonical plan per grouping, whatever the search
    // path that found it (member order only decides who holds which samples).
    std::vector<int> group = draft.groups[s];
    std::sort(group.begin(), group.end());
    if (group.empty() || draft.cuts[s] >= draft.cuts[s + 1]) return std::nullopt;
    const auto shares = cost.splitMicroBatch(group, draft.cuts[s], draft.cuts[s + 1],
                                             plan.microBatchSize(), plan.inFlight(s));
    if (!shares) return std::nullopt;
    Stage& st = plan.stages[s];
    st.layer_begin = draft.cuts[s];
    st.layer_end = draft.cuts[s + 1];
    for (size_t k = 0; k < group.size(); ++k) {
      if ((*shares)[k] > 0) st.members.push_back({group[k], (*shares)[k]});
    }
  }
  return plan;
}

double draftIterationMs(const PlanDraft& draft, const CostModel& cost, const Plan& skeleton, DraftObjective objective) {
  const auto plan = materialize(draft, cost, skeleton);
  if (!plan) return kInf;
  const PlanEstimate e = estimatePlan(*plan, cost);
  if (!e.fits) return kInf;
  return objective == DraftObjective::Simulated ? simulate(*plan, cost).iteration_ms : e.iteration_ms;
}

PlanDraft refineDraft(PlanDraft best, const CostModel& cost, const Plan& skeleton, double budget_ms,
                      DraftObjective objective) {
  const auto start = std::chrono::steady_clock::now();
  auto out_of_time = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() > budget_ms;
  };
  const int devices = cost.deviceCount();
  double best_ms = draftIterationMs(best, cost, skeleton, objective);

  auto try_draft = [&](PlanDraft&& candidate) {
    const double ms = draftIterationMs(candidate, cost, skeleton, objective);
    if (ms < best_ms * (1 - kMinGain)) {
      best = std::move(candidate);
      best_ms = ms;
      return true;
    }
    return false;
  };

  bool improved = true;
  while (improved && !out_of_time()) {
    improved = false;
    const int S = best.stageCount();

    // Move a cut by a few layers either way.
    for (int c = 1; c < S && !improved; ++c) {
      for (int step : {1, -1, 2, -2, 4, -4, 8, -8}) {
        const int at = best.cuts[c] + step;
        if (at <= best.cuts[c - 1] || at >= best.cuts[c + 1]) continue;
        PlanDraft d = best;
        d.cuts[c] = at;
        if (try_draft(std::move(d))) {
          improved = true;
          break;
        }
      }
    }
    if (improved) continue;

    std::vector<int> stage_of(devices, -1);
    for (int s = 0; s < S; ++s) {
      for (int dev : best.groups[s]) stage_of[dev] = s;
    }

    // `best` with device `dev` moved from stage `from` to stage `to` (-1: out of the plan).
    const auto moved = [&](int dev, int from, int to) {
      PlanDraft d = best;
      if (from >= 0) {
        auto& g = d.groups[from];
        g.erase(std::find(g.begin(), g.end(), dev));
      }
      if (to >= 0) d.groups[to].push_back(dev);
      return d;
    };

    // Move one device to another stage, out of the plan, or into it.
    for (int dev = 0; dev < devices && !improved; ++dev) {
      const int from = stage_of[dev];
      if (from >= 0 && best.groups[from].size() == 1) continue;
      for (int to = -1; to < S && !improved; ++to) {
        if (to != from) improved = try_draft(moved(dev, from, to));
      }
    }
    if (improved || out_of_time()) continue;

    // Move one device to a neighbouring stage and the cut between them by a layer or two:
    // a stage that gains a member can take more layers, and either move alone may lose.
    for (int dev = 0; dev < devices && !improved && !out_of_time(); ++dev) {
      const int from = stage_of[dev];
      if (from < 0 || best.groups[from].size() == 1) continue;
      for (int to : {from - 1, from + 1}) {
        if (to < 0 || to >= S || improved) continue;
        const int c = std::max(from, to);  // cuts[c] lies between the two stages
        for (int step : {1, -1, 2, -2}) {
          const int at = best.cuts[c] + step;
          if (at <= best.cuts[c - 1] || at >= best.cuts[c + 1]) continue;
          PlanDraft d = moved(dev, from, to);
          d.cuts[c] = at;
          if ((improved = try_draft(std::move(d)))) break;
        }
      }
    }
    if (improved || out_of_time()) continue;

    // Swap two devices of different stages (or one in the plan with one outside it).
    for (int a = 0; a < devices && !improved; ++a) {
      for (int b = a + 1; b < devices && !improved; ++b) {
        const int sa = stage_of[a], sb = stage_of[b];
        if (sa == sb) continue;
        PlanDraft d = best;
        if (sa >= 0) *std::find(d.groups[sa].begin(), d.groups[sa].end(), a) = b;
        if (sb >= 0) *std::find(d.groups[sb].begin(), d.groups[sb].end(), b) = a;
        improved = try_draft(std::move(d));
      }
      if (out_of_time()) break;
    }
    if (improved || out_of_time()) continue;

    // Swap the device groups of two stages, keeping the cuts: the same pipeline in another
    // order, for when memory or links favour the other way round.
    for (int a = 0; a < S && !improved; ++a) {
      for (int b = a + 1; b < S && !improved; ++b) {
        PlanDraft d = best;
        std::swap(d.groups[a], d.groups[b]);
        improved = try_draft(std::move(d));
      }
    }
    if (improved || out_of_time()) continue;

    // Merge two neighbouring stages into one.
    for (int s = 0; s + 1 < S && !improved; ++s) {
      PlanDraft d = best;
      d.groups[s].insert(d.groups[s].end(), d.groups[s + 1].begin(), d.groups[s + 1].end());
      d.groups.erase(d.groups.begin() + s + 1);
      d.cuts.erase(d.cuts.begin() + s + 1);
      improved = try_draft(std::move(d));
    }
    if (improved) continue;

    // Drop a stage, its layers going to a neighbour (its devices fall idle).
    for (int s = 0; s < S && S > 1 && !improved; ++s) {
      for (int into : {s - 1, s + 1}) {
        if (into < 0 || into >= S || improved) continue;
        PlanDraft d = best;
        d.groups.erase(d.groups.begin() + s);
        // Removing cut s hands the layers to the stage before; cut s + 1 to the one after.
        d.cuts.erase(d.cuts.begin() + (into < s ? s : s + 1));
        improved = try_draft(std::move(d));
      }
    }
    if (improved) continue;

    // Split a stage, handing one side to an idle device.
    for (int s = 0; s < S && !improved; ++s) {
      const int b = best.cuts[s], e = best.cuts[s + 1];
      if (e - b < 2) continue;
      const int span = e - b;
      for (int at : {b + span / 2, b + span / 4, b + 3 * span / 4, b + 1, e - 1}) {
        if (at <= b || at >= e || improved) continue;
        for (int dev = 0; dev < devices && !improved; ++dev) {
          if (stage_of[dev] >= 0) continue;
          for (bool idle_first : {false, true}) {
            PlanDraft d = best;
            d.cuts.insert(d.cuts.begin() + s + 1, at);
            d.groups.insert(d.groups.begin() + (idle_first ? s : s + 1), std::vector<int>{dev});
            improved = try_draft(std::move(d));
            if (improved) break;
          }
        }
      }
    }
    if (improved || out_of_time()) continue;

    // Split a stage in two: layers at their compute midpoint, the group in halves.
    for (int s = 0; s < S && !improved; ++s) {
      const int b = best.cuts[s], e = best.cuts[s + 1];
      if (e - b < 2 || best.groups[s].size() < 2) continue;
      const ModelSpec& model = cost.model();
      const double half = (model.forwardFlops(b, e) + model.backwardFlops(b, e)) / 2;
      int mid = b + 1;
      while (mid + 1 < e && model.forwardFlops(b, mid) + model.backwardFlops(b, mid) < half) ++mid;
      for (int m : {mid, mid - 1, mid + 1}) {
        if (m <= b || m >= e || improved) continue;
        // A copy: try_draft replaces `best` when it improves, which frees its groups.
        const std::vector<int> g = best.groups[s];
        for (size_t take = 1; take < g.size() && !improved; ++take) {
          PlanDraft d = best;
          d.groups[s] = std::vector<int>(g.begin(), g.begin() + take);
          d.groups.insert(d.groups.begin() + s + 1, std::vector<int>(g.begin() + take, g.end()));
          d.cuts.insert(d.cuts.begin() + s + 1, m);
          improved = try_draft(std::move(d));
        }
      }
    }
  }
  return best;
}

}  // namespace stagecraft
