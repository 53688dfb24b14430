// The steps a calibration is the median of: complete steps only, the warm-up and the steps a
// backup ran in left out, and one slow step moving no device's speed.
#include <gtest/gtest.h>

#include <vector>

#include "control/step_window.h"
#include "cost/cost_model.h"
#include "io/error.h"
#include "test_fixtures.h"

namespace stagecraft::control {
namespace {

/// A member's report of `step`: one forward and one backward of these lengths, and a backup.
v1::IterationReport report(std::int64_t step, double forward_ms, double backward_ms, bool backup = false) {
  v1::IterationReport r = testing::passesReport(step, forward_ms, backward_ms);
  if (backup) {
    auto* copy = r.add_timeline();
    copy->set_kind("backup");
    copy->set_start_ms(forward_ms + backward_ms);
    copy->set_end_ms(forward_ms + backward_ms + 1);
  }
  return r;
}

std::vector<std::int64_t> stepsOf(const StepWindow& w) {
  std::vector<std::int64_t> out;
  for (const auto& s : w.steps()) out.push_back(s.front().step());
  return out;
}

TEST(StepWindow, KeepsTheLastCompleteStepsClearOfBackupsAfterTheWarmUp) {
  StepWindow w(2, 3, 1);  // two members, three steps, step 1 warms up
  w.add(0, report(1, 1, 1));
  w.add(1, report(1, 1, 1));
  EXPECT_TRUE(w.steps().empty());
  w.add(0, report(2, 1, 1));
  EXPECT_TRUE(w.steps().empty());  // member 1 has not reported step 2
  w.add(0, report(3, 1, 1));       // members run out of step with each other
  w.add(1, report(2, 1, 1));
  EXPECT_EQ(stepsOf(w), (std::vector<std::int64_t>{2}));
  w.add(1, report(3, 1, 1, true));  // a backup in step 3: left out
  w.add(0, report(4, 1, 1));
  w.add(1, report(4, 1, 1));
  EXPECT_EQ(stepsOf(w), (std::vector<std::int64_t>{2, 4}));
  for (std::int64_t s = 5; s <= 7; ++s) {
    w.add(1, report(s, 1, 1));
    w.add(0, report(s, 1, 1));
  }
  EXPECT_EQ(stepsOf(w), (std::vector<std::int64_t>{5, 6, 7}));
  EXPECT_EQ(w.newestStep(), 7);
  ASSERT_EQ(w.steps().back().size(), 2u);
  w.add(0, report(6, 1, 1));  // a step already taken
  w.add(2, report(8, 1, 1));  // no such member
  EXPECT_EQ(stepsOf(w), (std::vector<std::int64_t>{5, 6, 7}));
}

TEST(StepWindow, AMemberThatStopsReportingDoesNotMakeItGrow) {
  StepWindow w(2, 3, 0);
  for (std::int64_t s = 1; s <= 1000; ++s) w.add(0, report(s, 1, 1));
  EXPECT_TRUE(w.steps().empty());
  w.add(1, report(1000, 1, 1));
  EXPECT_EQ(stepsOf(w), (std::vector<std::int64_t>{1000}));
  w.add(1, report(999, 1, 1));  // older than a complete step: nothing to complete
  EXPECT_EQ(stepsOf(w), (std::vector<std::int64_t>{1000}));
}

TEST(StepWindow, TheMedianOverStepsIgnoresOneSlowStep) {
  const ModelSpec model = testing::uniformLinearModel(4, 64);
  const Cluster cluster = testing::makeCluster({10, 20});
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = 4;
  plan.microbatches = 1;
  plan.stages = {Stage{0, 2, {{0, 4}}}, Stage{2, 4, {{1, 4}}}};
  const double f0 = cost.forwardMs(0, 0, 2, 4), b0 = cost.backwardMs(0, 0, 2, 4);
  const double f1 = cost.forwardMs(1, 2, 4, 4), b1 = cost.backwardMs(1, 2, 4, 4);
  // d0 at 1.2x its prediction in two steps and 1.6x in the third; d1 at 0.9x, 1.0x, 0.8x.
  const std::vector<std::vector<v1::IterationReport>> steps = {
      {report(2, 1.2 * f0, 1.2 * b0), report(2, 0.9 * f1, 0.9 * b1)},
      {report(3, 1.6 * f0, 1.6 * b0), report(3, 1.0 * f1, 1.0 * b1)},
      {report(4, 1.2 * f0, 1.2 * b0), report(4, 0.8 * f1, 0.8 * b1)},
  };
  const std::vector<double> factors = medianFactors(plan, cost, steps);
  ASSERT_EQ(factors.size(), 2u);
  EXPECT_NEAR(factors[0], 1.2, 1e-9);
  EXPECT_NEAR(factors[1], 0.9, 1e-9);
  // Two steps: their mean.
  const std::vector<double> two = medianFactors(plan, cost, std::span(steps).first(2));
  EXPECT_NEAR(two[0], 1.4, 1e-9);
  const auto named = measuredFactors(plan, cost, steps);
  ASSERT_EQ(named.size(), 2u);
  EXPECT_NEAR(named.at("d0"), 1.2, 1e-9);
  EXPECT_THROW(medianFactors(plan, cost, std::span<const std::vector<v1::IterationReport>>{}), Error);
  EXPECT_TRUE(measuredFactors(plan, cost, std::span<const std::vector<v1::IterationReport>>{}).empty());
}

}  // namespace
}  // namespace stagecraft::control
