// PLACEHOLDER until the real planner lands in this file.
#include "planner/planners.h"

namespace stagecraft {
namespace {
class ExhaustivePlanner final : public Planner {
 public:
  std::string_view name() const override { return "exhaustive"; }
  std::string_view description() const override { return "not implemented yet"; }
  PlanOutcome plan(const CostModel&, const PlanRequest&) const override {
    PlanOutcome out;
    out.reason = "exhaustive planner not implemented yet";
    return out;
  }
};
}  // namespace
std::unique_ptr<Planner> makeExhaustivePlanner() { return std::make_unique<ExhaustivePlanner>(); }
}  // namespace stagecraft
