// The exact optimum under the cost model, by enumeration: every stage count, every cut of
// the layers into contiguous stages, every assignment of devices to stages (or to none),
// shares from CostModel::splitMicroBatch. It keeps the kExhaustiveFinalists best plans by the
// closed-form estimate (pruning only what provably cannot enter them) and takes the one the
// simulator finds fastest. It is the yardstick the other planners are tested against.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <vector>

#include "planner/planners.h"

namespace stagecraft {
namespace {

/// Beyond this many candidate plans the search would take tens of seconds.
constexpr double kMaxCandidates = 50'000'000;
/// Masks are 32 bits; the candidate limit keeps the device count far below this anyway.
constexpr int kMaxDevices = 30;
/// estimatePlan sums the same terms in another order; a bound must beat the best by more
/// than rounding before it may discard a branch.
constexpr double kBoundSlack = 1e-9;

/// Plans the search would visit: sum over S of C(L-1, S-1) * (ways to give each of the
/// devices one of S stages or none, every stage getting at least one).
double candidateCount(int layers, int devices) {
  double total = 0;
  for (int stages = 1; stages <= std::min(layers, devices); ++stages) {
    // ways[k]: assignments of the devices seen so far that use exactly k stages (labelled).
    std::vector<double> ways(stages + 1, 0);
    ways[0] = 1;
    for (int d = 0; d < devices; ++d) {
      for (int k = stages; k >= 0; --k) {
        ways[k] = ways[k] * (1 + k) + (k > 0 ? ways[k - 1] * (stages - k + 1) : 0);
      }
    }
    double cuts = 1;  // C(layers - 1, stages - 1)
    for (int i = 1; i < stages; ++i) cuts = cuts * (layers - i) / i;
    total += cuts * ways[stages];
  }
  return total;
}

/// One stage's layers on one device subset: its shares and what it contributes to the
/// lower bound, computed once per (cut, stage, subset).
struct GroupOption {
  bool fits = false;
  std::vector<DeviceShare> members;
  double compute_ms = 0;    ///< slowest member's forward + slowest member's backward
  double allreduce_ms = 0;
};

class ExhaustiveSearch {
 public:
  ExhaustiveSearch(const CostModel& cost, const PlanRequest& request)
      : cost_(cost), plan_(emptyPlan(cost, request, "exhaustive")) {}

  /// The best valid plans by estimate, fastest first; empty when none fits.
  std::vector<Plan> run() {
    const int layers = cost_.layerCount();
    const int devices = cost_.deviceCount();
    for (int stages = 1; stages <= std::min(layers, devices); ++stages) {
      plan_.stages.assign(stages, Stage{});
      cutFrom(0, 0);
    }
    std::vector<Plan> out;
    for (auto& f : finalists_) out.push_back(std::move(f.plan));
    return out;
  }

 private:
  // Chooses stage `s`'s layer range starting at `begin`, then searches the devices.
  void cutFrom(int s, int begin) {
    const int layers = cost_.layerCount();
    const int stages = plan_.stageCount();
    if (s == stages - 1) {
      plan_.stages[s].layer_begin = begin;
      plan_.stages[s].layer_end = layers;
      searchDevices();
      return;
    }
    // Leave at least one layer for each later stage.
    for (int end = begin + 1; end <= layers - (stages - 1 - s); ++end) {
      plan_.stages[s].layer_begin = begin;
      plan_.stages[s].layer_end = end;
      cutFrom(s + 1, end);
    }
  }

  void searchDevices() {
    const size_t subsets = size_t{1} << cost_.deviceCount();
    options_.assign(plan_.stageCount(), std::vector<std::optional<GroupOption>>(subsets));
    assign(0, static_cast<uint32_t>(subsets - 1), 0, 0);
  }

  const GroupOption& option(int s, uint32_t mask) {
    auto& slot = options_[s][mask];
    if (slot) return *slot;
    slot.emplace();
    GroupOption& o = *slot;
    const Stage& stage = plan_.stages[s];
    std::vector<int> group;
    for (uint32_t rest = mask; rest; rest &= rest - 1) group.push_back(std::countr_zero(rest));
    const int in_flight = plan_.inFlight(s);
    const auto shares = cost_.splitMicroBatch(group, stage.layer_begin, stage.layer_end,
                                              plan_.microBatchSize(), in_flight);
    if (!shares) return o;
    double forward = 0, backward = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      const int d = group[i];
      const int samples = (*shares)[i];
      // The same test validatePlan applies; a member with no samples still holds the weights.
      if (cost_.memoryBytes(stage.layer_begin, stage.layer_end, samples, in_flight) > cost_.memoryLimitBytes(d)) {
        return o;
      }
      forward = std::max(forward, cost_.forwardMs(d, stage.layer_begin, stage.layer_end, samples));
      backward = std::max(backward, cost_.backwardMs(d, stage.layer_begin, stage.layer_end, samples));
      o.members.push_back({d, samples});
    }
    o.fits = true;
    o.compute_ms = forward + backward;
    o.allreduce_ms = cost_.exposedAllReduceMs({stage.layer_begin, stage.layer_end, o.members});
    return o;
  }

  // Gives stage `s` a non-empty subset of `free_devices`. `compute_sum` and `compute_max`
  // cover stages [0, s); `first_allreduce` is stage 0's.
  void assign(int s, uint32_t free_devices, double compute_sum, double compute_max, double first_allreduce = 0) {
    const int stages = plan_.stageCount();
    if (s == stages) {
      evaluate();
      return;
    }
    const int later = stages - 1 - s;
    for (uint32_t mask = free_devices; mask; mask = (mask - 1) & free_devices) {
      if (std::popcount(free_devices & ~mask) < later) continue;
      const GroupOption& o = option(s, mask);
      if (!o.fits) continue;
      const double sum = compute_sum + o.compute_ms;
      const double max = std::max(compute_max, o.compute_ms);
      const double allreduce = s == 0 ? o.allreduce_ms : first_allreduce;
      if (full() && lowerBound(sum, max, allreduce) > cutoffMs() * (1 + kBoundSlack)) continue;
      plan_.stages[s].members = o.members;
      assign(s + 1, free_devices & ~mask, sum, max, allreduce);
    }
  }

  // Whatever the later stages and links add, estimatePlan's fill holds every stage's
  // forward and backward once, the slowest stage computes M of them, and stage 0's
  // all-reduce (no gradient trip hides it) ends the iteration.
  double lowerBound(double compute_sum, double compute_max, double first_allreduce) const {
    return std::max(compute_sum, plan_.microbatches * compute_max) + first_allreduce;
  }

  bool full() const { return finalists_.size() >= kExhaustiveFinalists; }
  double cutoffMs() const { return finalists_.back().ms; }

  void evaluate() {
    const double ms = estimatePlan(plan_, cost_).iteration_ms;
    if (full() && ms >= cutoffMs()) return;
    // Sorted by estimate; equal estimates keep the order they were found in.
    const auto at = std::upper_bound(finalists_.begin(), finalists_.end(), ms,
                                     [](double v, const Finalist& f) { return v < f.ms; });
    finalists_.insert(at, {ms, plan_});
    if (finalists_.size() > kExhaustiveFinalists) finalists_.pop_back();
  }

  const CostModel& cost_;
  Plan plan_;  // the candidate being built
  std::vector<std::vector<std::optional<GroupOption>>> options_;  // [stage][device mask]
  struct Finalist {
    double ms;
    Plan plan;
  };
  std::vector<Finalist> finalists_;  // the best plans by estimate, ascending
};

bool tooLargeToEnumerate(const CostModel& cost) {
  return candidateCount(cost.layerCount(), cost.deviceCount()) > kMaxCandidates || cost.deviceCount() > kMaxDevices;
}

class ExhaustivePlanner final : public Planner {
 public:
  std::string_view name() const override { return "exhaustive"; }
  std::string_view description() const override {
    return "the optimum under the cost model by enumerating every plan; small instances only";
  }

  PlanOutcome plan(const CostModel& cost, const PlanRequest& request) const override {
    if (tooLargeToEnumerate(cost)) {
      const double candidates = candidateCount(cost.layerCount(), cost.deviceCount());
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "exhaustive search would weigh %.3g candidate plans for %d layers on %d devices, "
                    "over its limit of %.0f; use a smaller instance or the hybrid planner",
                    candidates, cost.layerCount(), cost.deviceCount(), kMaxCandidates);
      PlanOutcome refused;
      refused.plan = emptyPlan(cost, request, name());
      refused.reason = buf;
      return refused;
    }
    std::vector<Plan> finalists = ExhaustiveSearch(cost, request).run();
    if (finalists.empty()) {
      PlanOutcome none;
      none.plan = emptyPlan(cost, request, name());
      none.reason = explainNoFit(cost, request);
      return none;
    }
    return chooseBySimulation(std::move(finalists), cost);
  }
};

}  // namespace

std::vector<Plan> exhaustiveFinalists(const CostModel& cost, const PlanRequest& request) {
  if (tooLargeToEnumerate(cost)) return {};
  return ExhaustiveSearch(cost, request).run();
}

std::unique_ptr<Planner> makeExhaustivePlanner() { return std::make_unique<ExhaustivePlanner>(); }

}  // namespace stagecraft
