// The closed-form estimate of a 1F1B iteration where one stage is the bottleneck: that stage
// never idles, so the iteration is its own M micro-batches plus the trips to it and back.
#include <gtest/gtest.h>

#include "cost/cost_model.h"
#include "plan/validation.h"
#include "sim/simulator.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

TEST(EstimatePlan, AFirstStageThatIsTheBottleneckIsNotChargedTheRoundTripAgain) {
  // Stage 0: three layers on d0; stage 1: one layer on d1, a third of stage 0's work, so
  // the gradient of each micro-batch is back before stage 0's next forward ends.
  const int layers = 4, m = 4, micro = 8;
  const ModelSpec model = testing::uniformLinearModel(layers, 256);
  const Cluster cluster = testing::makeCluster({1, 1});
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = m * micro;
  plan.microbatches = m;
  plan.stages.push_back({0, 3, {{0, micro}}});
  plan.stages.push_back({3, 4, {{1, micro}}});
  ASSERT_TRUE(validatePlan(plan, cost).empty());
  const double first = cost.forwardMs(0, 0, 3, micro) + cost.backwardMs(0, 0, 3, micro);
  const double last = cost.forwardMs(1, 3, 4, micro) + cost.backwardMs(1, 3, 4, micro);
  const double sim = simulate(plan, cost).iteration_ms;
  EXPECT_NEAR(sim, m * first, 1e-6 * sim);
  const PlanEstimate e = estimatePlan(plan, cost);
  EXPECT_NEAR(e.iteration_ms, sim, 1e-6 * sim);
  // fill + (M - 1) periods would have charged stage 1's work once more.
  EXPECT_GT(first + last + (m - 1) * first - e.iteration_ms, 0.99 * last);
}

TEST(EstimatePlan, EqualStagesStillTakeTheFillAndMMinusOnePeriods) {
  const int layers = 4, m = 5, micro = 4;
  const ModelSpec model = testing::uniformLinearModel(layers, 128);
  const Cluster cluster = testing::makeCluster({1, 1, 1, 1});
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = m * micro;
  plan.microbatches = m;
  for (int s = 0; s < layers; ++s) plan.stages.push_back({s, s + 1, {{s, micro}}});
  const double c = cost.forwardMs(0, 0, 1, micro) + cost.backwardMs(0, 0, 1, micro);
  const PlanEstimate e = estimatePlan(plan, cost);
  EXPECT_NEAR(e.iteration_ms, layers * c + (m - 1) * c, 1e-6 * e.iteration_ms);
  EXPECT_NEAR(simulate(plan, cost).iteration_ms, e.iteration_ms, 1e-6 * e.iteration_ms);
}

}  // namespace
}  // namespace stagecraft
