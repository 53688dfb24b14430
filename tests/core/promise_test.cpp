// What a re-plan promised against what the steps after it measured.
#include <gtest/gtest.h>

#include "control/promise.h"
#include "test_fixtures.h"

namespace stagecraft::control {
namespace {

// A step of `batch` samples that took `ms`.
StepResult stepOf(std::int64_t step, double ms, int batch = 64) {
  StepResult s;
  s.step = step;
  s.iteration_ms = ms;
  s.samples_per_second = batch * 1000.0 / ms;
  return s;
}

Plan onePlan(int microbatches) {
  Plan p;
  p.batch_size = 64;
  p.microbatches = microbatches;
  return p;
}

TEST(PromiseWatch, AReplanThatDeliversFarLessThanItPromisedIsJudgedMissedOnceAndNamesThePlanBefore) {
  PromiseWatch watch(PromiseRule{1, 4, 0.15});
  // Before: 64 samples in 1.4 s a step, about 45.7 samples/s.
  for (int s = 1; s <= 10; ++s) EXPECT_FALSE(watch.observe(stepOf(s, 1400)));
  const Cluster before = stagecraft::testing::makeCluster({10, 20, 30});
  watch.begin(116.7, watch.recentThroughput(), onePlan(4), before, 10);
  EXPECT_TRUE(watch.watching());
  // The first step after it settles (not judged), then four of ~7 s: about 9 samples/s.
  EXPECT_FALSE(watch.observe(stepOf(11, 20000)));
  for (int s = 12; s <= 14; ++s) EXPECT_FALSE(watch.observe(stepOf(s, 7000)));
  const auto verdict = watch.observe(stepOf(15, 7200));
  ASSERT_TRUE(verdict);
  EXPECT_TRUE(verdict->missed);
  EXPECT_EQ(verdict->from_step, 10);
  EXPECT_EQ(verdict->judged_step, 15);
  EXPECT_DOUBLE_EQ(verdict->promised_sps, 116.7);
  // All samples over all time: 4 x 64 over 28.2 s, the settling step left out.
  EXPECT_NEAR(verdict->measured_sps, 4 * 64 / 28.2, 1e-9);
  // The last four steps before the re-plan.
  EXPECT_NEAR(verdict->before_sps, 64 / 1.4, 1e-9);
  EXPECT_EQ(verdict->previous.microbatches, 4);
  EXPECT_EQ(verdict->previous_cluster.size(), 3);
  EXPECT_FALSE(watch.watching());
  // Judged once: later steps say nothing more.
  for (int s = 16; s <= 30; ++s) EXPECT_FALSE(watch.observe(stepOf(s, 7000)));
}

TEST(PromiseWatch, AReplanWithinTheShortfallIsKept) {
  PromiseWatch watch(PromiseRule{1, 3, 0.15});
  watch.begin(100, watch.recentThroughput(), onePlan(2), Cluster{}, 0);
  EXPECT_FALSE(watch.observe(stepOf(1, 5000)));  // a slow first step is only settling
  EXPECT_FALSE(watch.observe(stepOf(2, 720)));
  EXPECT_FALSE(watch.observe(stepOf(3, 740)));
  const auto verdict = watch.observe(stepOf(4, 730));  // 64 / 0.73 s = 87.7: within 15 % of 100
  ASSERT_TRUE(verdict);
  EXPECT_FALSE(verdict->missed);
  EXPECT_EQ(verdict->before_sps, 0);  // nothing measured before it
  // Just past the line is missed.
  watch.begin(100, watch.recentThroughput(), onePlan(2), Cluster{}, 4);
  EXPECT_FALSE(watch.observe(stepOf(5, 760)));
  EXPECT_FALSE(watch.observe(stepOf(6, 760)));
  EXPECT_FALSE(watch.observe(stepOf(7, 760)));
  const auto missed = watch.observe(stepOf(8, 760));  // 84.2 < 85
  ASSERT_TRUE(missed);
  EXPECT_TRUE(missed->missed);
}

TEST(PromiseWatch, NoPromiseOrADeploymentNobodyChoseIsNotJudged) {
  PromiseWatch watch(PromiseRule{0, 2, 0.15});
  watch.begin(0, watch.recentThroughput(), onePlan(1), Cluster{}, 0);  // the simulator could not price the plan
  EXPECT_FALSE(watch.watching());
  for (int s = 1; s <= 5; ++s) EXPECT_FALSE(watch.observe(stepOf(s, 1000)));
  watch.begin(500, watch.recentThroughput(), onePlan(1), Cluster{}, 5);
  watch.forget();  // a recovery replaced the plan before the verdict
  EXPECT_FALSE(watch.watching());
  for (int s = 6; s <= 10; ++s) EXPECT_FALSE(watch.observe(stepOf(s, 1000)));
  // Steps from before a recovery are not the plan's "before".
  watch.forget();
  EXPECT_FALSE(watch.observe(stepOf(11, 1000)));
  watch.begin(500, watch.recentThroughput(), onePlan(1), Cluster{}, 11);
  EXPECT_FALSE(watch.observe(stepOf(12, 1000)));
  const auto verdict = watch.observe(stepOf(13, 1000));
  ASSERT_TRUE(verdict);
  EXPECT_NEAR(verdict->before_sps, 64, 1e-9);  // only step 11
}

TEST(PromiseWatch, StepsWithoutATimeAreLeftOut) {
  PromiseWatch watch(PromiseRule{0, 2, 0.15});
  watch.begin(64, watch.recentThroughput(), onePlan(1), Cluster{}, 0);
  EXPECT_FALSE(watch.observe(stepOf(1, 0)));
  EXPECT_FALSE(watch.observe(stepOf(2, 1000)));
  const auto verdict = watch.observe(stepOf(3, 1000));
  ASSERT_TRUE(verdict);
  EXPECT_NEAR(verdict->measured_sps, 64, 1e-9);
  EXPECT_FALSE(verdict->missed);
}

}  // namespace
}  // namespace stagecraft::control
