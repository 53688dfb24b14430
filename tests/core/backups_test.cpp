// Choosing the step a run replays from: the newest one every stage still has somewhere.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "control/backup_schedule.h"
#include "control/backups.h"
#include "plan/validation.h"
#include "sim/simulator.h"
#include "test_fixtures.h"

namespace stagecraft::control {
namespace {

v1::BackupRef ref(int begin, int end, std::int64_t step, const std::string& held_for = "") {
  v1::BackupRef r;
  r.set_job("j");
  r.set_layer_begin(begin);
  r.set_layer_end(end);
  r.set_step(step);
  r.set_held_for(held_for);
  return r;
}

const std::vector<std::pair<int, int>> kStages{{0, 3}, {3, 6}, {6, 8}};

TEST(ChooseBackups, TakesTheNewestStepEveryStageHas) {
  // Device 1 is gone (holds nothing): stage 1's states survive only as device 2's copies.
  std::vector<std::vector<v1::BackupRef>> held(3);
  held[0] = {ref(0, 3, 7), ref(0, 3, 6), ref(0, 3, 5), ref(6, 8, 6, "d2"), ref(6, 8, 5, "d2")};
  held[2] = {ref(6, 8, 7), ref(6, 8, 6), ref(6, 8, 5), ref(3, 6, 6, "d1"), ref(3, 6, 5, "d1")};
  const auto choice = chooseBackups(kStages, held, 100);
  ASSERT_TRUE(choice);
  EXPECT_EQ(choice->step, 6);
  ASSERT_EQ(choice->stages.size(), 3u);
  EXPECT_EQ(choice->stages[0].first, 0);
  EXPECT_EQ(choice->stages[1].first, 2);
  EXPECT_EQ(choice->stages[1].second.held_for(), "d1");
  // Device 2's own state of stage 2 wins over device 0's copy of it.
  EXPECT_EQ(choice->stages[2].first, 2);
  EXPECT_TRUE(choice->stages[2].second.held_for().empty());
}

TEST(ChooseBackups, NeverGoesPastTheLastStepTheRunCounted) {
  std::vector<std::vector<v1::BackupRef>> held(1);
  for (int s = 0; s < 3; ++s) {
    for (std::int64_t step : {4, 5, 6}) held[0].push_back(ref(kStages[s].first, kStages[s].second, step));
  }
  EXPECT_EQ(chooseBackups(kStages, held, 5)->step, 5);
  EXPECT_FALSE(chooseBackups(kStages, held, 3));
}

TEST(ChooseBackups, NoStepCommonToEveryStageIsNoChoice) {
  std::vector<std::vector<v1::BackupRef>> held(2);
  held[0] = {ref(0, 3, 9), ref(3, 6, 9)};
  held[1] = {ref(6, 8, 8)};  // the last stage's only state is of another step
  EXPECT_FALSE(chooseBackups(kStages, held, 100));
  held[1].push_back(ref(6, 8, 9, "d0"));
  EXPECT_EQ(chooseBackups(kStages, held, 100)->step, 9);
  // A state of another cut (an older plan's) does not stand in for a stage.
  held[1] = {ref(5, 8, 9)};
  EXPECT_FALSE(chooseBackups(kStages, held, 100));
}

TEST(BackupSchedule, AStrideThatChangesEverySegmentStillBacksUpEveryStageAtTheSameSteps) {
  // The strides a loaded machine's measured steps gave, segment by segment (the step each
  // segment began after, then its stride). Counted from zero (step % stride) they left no
  // backup in 20 steps; counted from the last backup, each new stride is kept to.
  const std::vector<std::pair<std::int64_t, std::int64_t>> segments{{0, 30}, {1, 9}, {3, 15}, {11, 11}, {14, 14}};
  BackupSchedule schedule{30, 0};  // deployed at step 0
  std::int64_t last = 0;
  std::vector<std::int64_t> backups;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const auto [from, every] = segments[i];
    if (i > 0) {
      if (const std::int64_t done = schedule.lastIn(segments[i - 1].first, from)) last = done;
      schedule = BackupSchedule::next(every, last, from);
    }
    const std::int64_t to = i + 1 < segments.size() ? segments[i + 1].first : 40;
    for (std::int64_t step = from + 1; step <= to; ++step) {
      if (schedule.due(step)) backups.push_back(step);
    }
  }
  // 9 after step 0 was overdue at step 11 (the stride of 15 then): right after it, at 12.
  EXPECT_EQ(backups, (std::vector<std::int64_t>{12, 26, 40}));
}

TEST(BackupSchedule, TheNextBackupComesAStrideAfterTheLastOne) {
  const BackupSchedule every4{4, 10};  // deployed at step 10: backups after 14, 18, ...
  EXPECT_FALSE(every4.due(10));
  EXPECT_TRUE(every4.due(14));
  EXPECT_FALSE(every4.due(16));
  EXPECT_EQ(every4.lastIn(10, 13), 0);
  EXPECT_EQ(every4.lastIn(10, 17), 14);
  EXPECT_EQ(every4.lastIn(14, 17), 0);  // 14 was the segment before's
  // After step 17, every 10th: 10 after the last backup (14), so 24, not 20 or 27.
  const BackupSchedule every10 = BackupSchedule::next(10, 14, 17);
  EXPECT_TRUE(every10.due(24));
  EXPECT_FALSE(every10.due(20));
  EXPECT_FALSE(every10.due(27));
  // A stride whose next step has passed: right after the change, then every 2nd.
  const BackupSchedule every2 = BackupSchedule::next(2, 14, 17);
  EXPECT_TRUE(every2.due(18));
  EXPECT_TRUE(every2.due(20));
  EXPECT_FALSE(every2.due(19));
  EXPECT_FALSE(BackupSchedule{}.due(5));  // none
}

TEST(PlaceNearState, TheStagesGoWhereTheirStateIsHeldAndOnlyTheRestMoves) {
  // Three stages over d0, d1, d2 (d3 spare); each stage's copy on the next stage's device,
  // the last stage's on d0. d0 is lost: d1 holds [0, 2) (a copy) and [2, 5), d2 holds
  // [2, 5) (a copy) and [5, 8), d3 nothing.
  const Cluster all = stagecraft::testing::makeCluster({50, 50, 50, 50}, 1e6, 1000, 0.1);
  const std::vector<std::vector<v1::BackupRef>> held{
      {}, {ref(2, 5, 12), ref(0, 2, 12, "d0")}, {ref(5, 8, 12), ref(2, 5, 12, "d1")}, {}};
  const std::vector<std::pair<int, int>> stages{{0, 2}, {2, 5}, {5, 8}};
  const auto choice = chooseBackups(stages, held, 100);
  ASSERT_TRUE(choice);
  const std::vector<std::string> live{"d1", "d2", "d3"};
  const Cluster over = restrictCluster(all, live);  // d1, d2, d3 as 0, 1, 2
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, 256);
  const CostModel cost(model, over);
  Plan plan;
  plan.model = "uniform";
  plan.batch_size = 32;
  plan.microbatches = 4;
  // The planner's cuts, on the devices in an order that ignores the state: d3 first.
  plan.stages = {Stage{0, 3, {{2, 8}}}, Stage{3, 5, {{0, 8}}}, Stage{5, 8, {{1, 8}}}};
  const double before_ms = restoreMs(plan, over, cost, *choice, all);
  const Plan placed = placeNearState(plan, over, cost, *choice, all, 20);
  // On equal devices only the state moved counts: d1 takes [0, 3) (all its own), d2 [5, 8)
  // (its own), and d3 the smallest stage, [3, 5), from d1.
  ASSERT_EQ(placed.stageCount(), 3);
  EXPECT_EQ(placed.stages[0].members.front().device, 0);
  EXPECT_EQ(placed.stages[1].members.front().device, 2);
  EXPECT_EQ(placed.stages[2].members.front().device, 1);
  const double after_ms = restoreMs(placed, over, cost, *choice, all);
  EXPECT_NEAR(after_ms, cost.wireMs(0, 2, cost.backupBytes(3, 5)), 1e-6);
  EXPECT_LT(after_ms, before_ms);
  // A device much faster than the others keeps the stage it trains fastest on, moving state
  // or not, when enough steps are left to win the time back.
  const Cluster uneven = restrictCluster(stagecraft::testing::makeCluster({50, 50, 50, 5000}, 1e6, 1000, 0.1), live);
  const CostModel uneven_cost(model, uneven);
  const Plan fast = placeNearState(plan, uneven, uneven_cost, *choice, all, 100000);
  EXPECT_LT(simulate(fast, uneven_cost).iteration_ms, simulate(placed, uneven_cost).iteration_ms);
}

}  // namespace
/// The plan on held state over the devices named in `live` of four equal devices, from
/// what each holds; `moved_ms` is what bringing its members their state would take.
std::optional<Plan> heldPlan(const std::vector<std::vector<v1::BackupRef>>& held, const std::vector<std::string>& live,
                             double& moved_ms, std::vector<std::string>& layout) {
  const Cluster all = stagecraft::testing::makeCluster({50, 50, 50, 50}, 1e6, 1000, 0.1);
  const auto choice = chooseBackups(std::vector<std::pair<int, int>>{{0, 2}, {2, 5}, {5, 8}}, held, 100);
  if (!choice) return std::nullopt;
  const Cluster over = restrictCluster(all, live);
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, 256);
  const CostModel cost(model, over);
  Plan shape;
  shape.model = "uniform";
  shape.batch_size = 32;
  shape.microbatches = 4;
  std::optional<Plan> plan = planOnHeldState(shape, over, cost, *choice, all);
  if (!plan) return plan;
  EXPECT_TRUE(validatePlan(*plan, cost).empty());
  moved_ms = restoreMs(*plan, over, cost, *choice, all);
  layout.clear();
  for (const Stage& s : plan->stages) {
    std::string stage = "[" + std::to_string(s.layer_begin) + "," + std::to_string(s.layer_end) + ")";
    for (const DeviceShare& m : s.members) stage += " " + over.device(m.device).name + ":" + std::to_string(m.samples);
    layout.push_back(stage);
  }
  return plan;
}

TEST(PlanOnHeldState, EachStageGoesToADeviceThatHoldsAllItsStateSoNothingMoves) {
  // Three stages over d0, d1, d2 (d3 spare), each copy on the next stage's device and the
  // last stage's on d0. However the cuts of a fresh plan fall, the plan to resume on at
  // once keeps the held boundaries, merging a lost stage into the device holding its copy.
  double moved_ms = -1;
  std::vector<std::string> layout;
  // The first stage's device lost: d1 holds [0, 2) and [2, 5), d2 [2, 5) and [5, 8).
  ASSERT_TRUE(heldPlan({{}, {ref(2, 5, 12), ref(0, 2, 12, "d0")}, {ref(5, 8, 12), ref(2, 5, 12, "d1")}, {}},
                       {"d1", "d2", "d3"}, moved_ms, layout));
  EXPECT_EQ(moved_ms, 0);
  // [0, 5) on d1 and [5, 8) on d2, or [0, 2) on d1 and [2, 8) on d2: the faster on equal
  // devices cuts 2:6 or 5:3 into the better balanced, 5:3.
  EXPECT_EQ(layout, (std::vector<std::string>{"[0,5) d1:8", "[5,8) d2:8"}));
  // The last stage's device lost: its copy is on d0, the first stage's, which d1 also holds
  // a copy of: [0, 5) moves to d1, and d0 runs [5, 8) from its copy.
  ASSERT_TRUE(heldPlan({{ref(0, 2, 12), ref(5, 8, 12, "d2")}, {ref(2, 5, 12), ref(0, 2, 12, "d0")}, {}, {}},
                       {"d0", "d1", "d3"}, moved_ms, layout));
  EXPECT_EQ(moved_ms, 0);
  EXPECT_EQ(layout, (std::vector<std::string>{"[0,5) d1:8", "[5,8) d0:8"}));
  // Two devices that hold every state: both train (a pipeline of the two here, where
  // splitting each micro-batch would all-reduce every weight each step).
  ASSERT_TRUE(heldPlan({{ref(0, 2, 12), ref(2, 5, 12, "d1"), ref(5, 8, 12, "d2")},
                        {ref(0, 2, 12), ref(2, 5, 12, "d1"), ref(5, 8, 12, "d2")},
                        {},
                        {}},
                       {"d0", "d1", "d3"}, moved_ms, layout));
  EXPECT_EQ(moved_ms, 0);
  EXPECT_EQ(layout, (std::vector<std::string>{"[0,5) d0:8", "[5,8) d1:8"}));
}

TEST(PlanOnHeldState, NoPlanWhenAStateIsHeldOnlyByDevicesThatAreGone) {
  double moved_ms = -1;
  std::vector<std::string> layout;
  // [5, 8) is held by d2 only, and d2 is not among the devices to plan over.
  EXPECT_FALSE(heldPlan({{ref(0, 2, 12)}, {ref(2, 5, 12), ref(0, 2, 12, "d0")}, {ref(5, 8, 12)}, {}},
                        {"d0", "d1", "d3"}, moved_ms, layout));
}

TEST(TwiceHeldStep, IsTheNewestStepEveryStageHasOnTwoDevices) {
  // Own copies are at 5..7; the neighbours' copies lag: stage 1's reached 5 only.
  std::vector<std::vector<v1::BackupRef>> held(3);
  held[0] = {ref(0, 3, 7), ref(0, 3, 6), ref(0, 3, 5), ref(6, 8, 7, "d2"), ref(6, 8, 5, "d2")};
  held[1] = {ref(3, 6, 7), ref(3, 6, 6), ref(3, 6, 5), ref(0, 3, 7, "d0"), ref(0, 3, 5, "d0")};
  held[2] = {ref(6, 8, 7), ref(6, 8, 6), ref(6, 8, 5), ref(3, 6, 5, "d1"), ref(3, 6, 4, "d1")};
  EXPECT_EQ(twiceHeldStep(kStages, held), 5);
  // Once stage 1's copy of step 7 arrives, 7 is held twice everywhere.
  held[2].push_back(ref(3, 6, 7, "d1"));
  EXPECT_EQ(twiceHeldStep(kStages, held), 7);
  // What a single device holds, even twice listed, is not a second place.
  std::vector<std::vector<v1::BackupRef>> one(1);
  for (const auto& [begin, end] : kStages) one[0].insert(one[0].end(), {ref(begin, end, 3), ref(begin, end, 3, "x")});
  EXPECT_FALSE(twiceHeldStep(kStages, one));
  EXPECT_FALSE(twiceHeldStep({}, held));
}

}  // namespace stagecraft::control
