// PLACEHOLDER until the real planner lands in this file.
#include "planner/planners.h"

namespace stagecraft {
namespace {
class HybridPlanner final : public Planner {
 public:
  std::string_view name() const override { return "hybrid"; }
  std::string_view description() const override { return "not implemented yet"; }
  PlanOutcome plan(const CostModel&, const PlanRequest&) const override {
    PlanOutcome out;
    out.reason = "hybrid planner not implemented yet";
    return out;
  }
};
}  // namespace
std::unique_ptr<Planner> makeHybridPlanner() { return std::make_unique<HybridPlanner>(); }
}  // namespace stagecraft
