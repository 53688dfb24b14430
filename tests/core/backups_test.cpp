// Choosing the step a run replays from: the newest one every stage still has somewhere.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "control/backups.h"

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

}  // namespace
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
