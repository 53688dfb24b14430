// Baselines the hybrid planner is measured against: plain data parallelism (even or
// speed-weighted batch split) and GPipe's even layer split, one device per stage.
#include <algorithm>
#include <numeric>

#include "planner/planners.h"

namespace stagecraft {
namespace {

class DataParallelPlanner final : public Planner {
 public:
  explicit DataParallelPlanner(bool weighted) : weighted_(weighted) {}
  std::string_view name() const override { return weighted_ ? "dp-weighted" : "dp"; }
  std::string_view description() const override {
    return weighted_ ? "data parallel, batch split by device speed (capped by memory)"
                     : "data parallel, batch split evenly";
  }
  bool pipelined() const override { return false; }

  PlanOutcome plan(const CostModel& cost, const PlanRequest& request) const override {
    Plan plan = emptyPlan(cost, request, name());
    const int devices = cost.deviceCount();
    const int layers = cost.layerCount();
    const int micro = plan.microBatchSize();
    std::vector<int> group(devices);
    std::iota(group.begin(), group.end(), 0);
    std::vector<int> shares(devices, micro / devices);
    for (int d = 0; d < micro % devices; ++d) ++shares[d];
    if (weighted_) {
      auto split = cost.splitMicroBatch(group, 0, layers, micro, plan.inFlight(0));
      if (!split) {
        PlanOutcome none;
        none.reason = explainNoFit(cost, request);
        return none;
      }
      shares = *split;
    }
    Stage stage{0, layers, {}};
    for (int d = 0; d < devices; ++d) {
      // A device with no samples would only slow the all-reduce down.
      if (shares[d] > 0 || !weighted_) stage.members.push_back({d, shares[d]});
    }
    plan.stages.push_back(std::move(stage));
    return finishOutcome(std::move(plan), cost);
  }

 private:
  bool weighted_;
};

class GPipePlanner final : public Planner {
 public:
  std::string_view name() const override { return "gpipe"; }
  std::string_view description() const override {
    return "GPipe: even layer split, one device per stage, in cluster order";
  }

  PlanOutcome plan(const CostModel& cost, const PlanRequest& request) const override {
    Plan plan = emptyPlan(cost, request, name());
    const int layers = cost.layerCount();
    const int stages = std::min(layers, cost.deviceCount());
    for (int s = 0; s < stages; ++s) {
      plan.stages.push_back({s * layers / stages, (s + 1) * layers / stages, {{s, plan.microBatchSize()}}});
    }
    return finishOutcome(std::move(plan), cost);
  }
};

}  // namespace

std::unique_ptr<Planner> makeDataParallelPlanner(bool weighted) {
  return std::make_unique<DataParallelPlanner>(weighted);
}

std::unique_ptr<Planner> makeGPipePlanner() { return std::make_unique<GPipePlanner>(); }

}  // namespace stagecraft
