// The optimizer step in the simulator: after the group's all-reduce, or after a lone
// member's last backward, for the time the member's profile gives it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "cost/cost_model.h"
#include "plan/validation.h"
#include "sim/simulator.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

constexpr double kTolMs = 1e-9;

TEST(SimulatorUpdate, EveryMemberStepsItsOptimizerAfterTheAllReduce) {
  // Stage 0 (layers 0-1) is a group of d0 and d1, stage 1 (layers 2-3) is d2 alone; d0 and
  // d2 have timed optimizer steps, d1 has no profile.
  const int layers = 4, m = 3, micro = 4;
  const ModelSpec model = testing::uniformLinearModel(layers, 64);
  const Cluster cluster = testing::makeCluster({1, 1, 1});
  CostModel cost(model, cluster);
  v1::ProfileSet set;
  for (const auto& [name, step_ms] : {std::pair{"d0", 5.0}, std::pair{"d2", 7.0}}) {
    v1::DeviceProfile* dev = testing::addTimedDevice(set, name, layers, 1, 2);
    for (int l = 0; l < layers; ++l) dev->add_sgd_update_ms(step_ms / 2);
  }
  cost.setProfiles(set);
  Plan plan;
  plan.batch_size = m * micro;
  plan.microbatches = m;
  plan.stages.push_back({0, 2, {{0, 2}, {1, 2}}});
  plan.stages.push_back({2, 4, {{2, micro}}});
  ASSERT_TRUE(validatePlan(plan, cost).empty());

  const SimulationResult r = simulate(plan, cost);
  std::map<int, TimelineEvent> allreduce, update;
  std::map<int, double> last_backward;
  for (const auto& e : r.timeline) {
    if (e.kind == EventKind::AllReduce) allreduce[e.device] = e;
    if (e.kind == EventKind::Update) update[e.device] = e;
    if (e.kind == EventKind::Backward) last_backward[e.device] = std::max(last_backward[e.device], e.end_ms);
  }
  ASSERT_EQ(update.size(), 2u);  // d1's step is not timed: no event
  EXPECT_EQ(update[0].micro_batch, -1);
  EXPECT_NEAR(update[0].start_ms, allreduce[0].end_ms, kTolMs);
  EXPECT_NEAR(update[0].end_ms - update[0].start_ms, 5.0, kTolMs);
  EXPECT_NEAR(update[2].start_ms, last_backward[2], kTolMs);
  EXPECT_NEAR(update[2].end_ms - update[2].start_ms, 7.0, kTolMs);
  EXPECT_NEAR(r.iteration_ms, std::max(update[0].end_ms, update[2].end_ms), kTolMs);
}

}  // namespace
}  // namespace stagecraft
