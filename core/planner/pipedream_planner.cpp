// PLACEHOLDER until the real planner lands in this file.
#include "planner/planners.h"

namespace stagecraft {
namespace {
class PipeDreamPlanner final : public Planner {
 public:
  std::string_view name() const override { return "pipedream"; }
  std::string_view description() const override { return "not implemented yet"; }
  PlanOutcome plan(const CostModel&, const PlanRequest&) const override {
    PlanOutcome out;
    out.reason = "pipedream planner not implemented yet";
    return out;
  }
};
}  // namespace
std::unique_ptr<Planner> makePipeDreamPlanner() { return std::make_unique<PipeDreamPlanner>(); }
}  // namespace stagecraft
