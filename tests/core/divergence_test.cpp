// The divergence rule: a loss that is not finite, or far above its running level.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "control/divergence.h"

namespace stagecraft::control {
namespace {

TEST(Divergence, ANonFiniteLossHasDivergedAtOnce) {
  DivergenceWatch watch;
  const auto d = watch.observe(1, std::numeric_limits<double>::quiet_NaN());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->step, 1);
  EXPECT_EQ(d->reason, "the loss is not finite");
  EXPECT_TRUE(watch.observe(2, std::numeric_limits<double>::infinity()));
}

TEST(Divergence, ALossFarAboveItsRunningLevelHasDiverged) {
  DivergenceWatch watch(DivergenceRule{true, 10, 5, 20});
  for (int s = 1; s <= 30; ++s) ASSERT_FALSE(watch.observe(s, 2.0 / (1 + 0.1 * s))) << s;  // a falling loss
  const double level = watch.level();
  EXPECT_FALSE(watch.observe(31, 9 * level));  // a bump, not a divergence
  const auto d = watch.observe(32, 989376024.0);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->step, 32);
  EXPECT_NE(d->reason.find("its running level"), std::string::npos) << d->reason;
  EXPECT_GT(d->level, 0);
}

TEST(Divergence, ASpikeOfANearlyLearnedTaskBelowWhereItStartedIsNoDivergence) {
  DivergenceWatch watch(DivergenceRule{true, 10, 5, 20});
  for (int s = 1; s <= 5; ++s) ASSERT_FALSE(watch.observe(s, 2.3));      // an untrained classifier
  for (int s = 6; s <= 40; ++s) ASSERT_FALSE(watch.observe(s, 0.15));    // nearly learned
  // One small batch the model gets confidently wrong: 25x the level, below 10x the start.
  EXPECT_FALSE(watch.observe(41, 3.8));
  // Far above where it started: diverged.
  EXPECT_TRUE(watch.observe(42, 2.3 * 10 * 1.5));
}

TEST(Divergence, TheFirstStepsAndReplaysDoNotTrip) {
  DivergenceWatch watch(DivergenceRule{true, 10, 5, 20});
  // A start whose loss swings by more than 10x is not judged before the warm-up.
  EXPECT_FALSE(watch.observe(1, 0.1));
  EXPECT_FALSE(watch.observe(2, 5.0));
  for (int s = 3; s <= 10; ++s) EXPECT_FALSE(watch.observe(s, 1.0));
  // Steps 8..10 come again after a recovery: counted once.
  for (int s = 8; s <= 10; ++s) EXPECT_FALSE(watch.observe(s, 1.0));
  EXPECT_DOUBLE_EQ(watch.level(), 1.0);
  DivergenceWatch off(DivergenceRule{false});
  EXPECT_FALSE(off.observe(1, std::nan("")));
}

}  // namespace
}  // namespace stagecraft::control
