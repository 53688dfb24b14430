// The straggler rule: slower than planned relative to the others, for several steps in a row.
#include <gtest/gtest.h>

#include "control/stragglers.h"

namespace stagecraft::control {
namespace {

TEST(Stragglers, RelativeFactorsIgnoreAUniformMisprediction) {
  const auto r = relativeFactors({{"a", 2.0}, {"b", 2.0}, {"c", 2.0}});
  for (const auto& [name, f] : r) EXPECT_DOUBLE_EQ(f, 1.0) << name;
  const auto slow = relativeFactors({{"a", 1.0}, {"b", 4.0}, {"bad", -1.0}});
  EXPECT_DOUBLE_EQ(slow.at("a"), 0.5);
  EXPECT_DOUBLE_EQ(slow.at("b"), 2.0);
  EXPECT_FALSE(slow.contains("bad"));
}

TEST(Stragglers, ADeviceSlowForEnoughStepsIsReportedOncePerEpisode) {
  StragglerWatch watch(StragglerRule{1.25, 3});
  const std::map<std::string, double> slow{{"a", 0.8}, {"b", 1.6}};
  const std::map<std::string, double> even{{"a", 1.0}, {"b", 1.0}};
  EXPECT_TRUE(watch.observe(10, slow).empty());  // slow for 1 step
  EXPECT_TRUE(watch.observe(11, slow).empty());  // 2
  EXPECT_EQ(watch.observe(12, slow), std::vector<std::string>{"b"});  // 3
  EXPECT_TRUE(watch.observe(13, slow).empty());  // already reported
  EXPECT_TRUE(watch.observe(14, even).empty());  // fast again: the episode ends
  EXPECT_TRUE(watch.observe(15, slow).empty());
  // Segments of several steps count every step they cover.
  EXPECT_EQ(watch.observe(18, slow), std::vector<std::string>{"b"});
  watch.reset();
  EXPECT_TRUE(watch.observe(19, slow).empty());
}

TEST(Stragglers, OneSlowStepIsNoise) {
  StragglerWatch watch(StragglerRule{1.25, 5});
  for (std::int64_t step = 1; step <= 20; ++step) {
    const std::map<std::string, double> r{{"a", step % 2 ? 1.5 : 1.0}, {"b", 1.0}};
    EXPECT_TRUE(watch.observe(step, r).empty()) << step;
  }
}

}  // namespace
}  // namespace stagecraft::control
