// What backups cost the steps, measured from step times (control/backup_meter.h): the
// automatic stride follows this, not only the copy-speed model.
#include <gtest/gtest.h>

#include <algorithm>

#include "control/backup_meter.h"
#include "control/backup_schedule.h"

namespace stagecraft::control {
namespace {

/// Steps first+1 .. last of `clear_ms`, backups every `every` steps from `after`, the two
/// steps after each backup taking `first_ms` and `second_ms` instead.
void feed(BackupMeter& meter, std::int64_t first, std::int64_t last, BackupSchedule schedule, double clear_ms,
          double first_ms, double second_ms) {
  std::int64_t backup = -1;
  for (std::int64_t step = first + 1; step <= last; ++step) {
    double ms = clear_ms;
    if (backup >= 0 && step - backup == 1) ms = first_ms;
    if (backup >= 0 && step - backup == 2) ms = second_ms;
    const bool due = schedule.due(step);
    meter.observe(step, ms, due);
    if (due) backup = step;
  }
}

TEST(BackupMeter, TheTwoStepsAfterABackupAgainstTheClearOnesGiveItsCost) {
  BackupMeter meter;
  meter.reset(0);
  // Every 3 steps: 100 ms clear, 400 ms and 160 ms for the two that carry a backup.
  feed(meter, 0, 30, {3, 0}, 100, 400, 160);
  ASSERT_TRUE(meter.costMs().has_value());
  EXPECT_NEAR(*meter.costMs(), (400 - 100) + (160 - 100), 1e-9);
  EXPECT_NEAR(meter.clearStepMs(), 100, 1e-9);
}

TEST(BackupMeter, NothingIsClaimedBeforeTwoBackupsAndThreeClearSteps) {
  BackupMeter meter;
  meter.reset(0);
  feed(meter, 0, 4, {3, 0}, 100, 400, 160);  // one backup (after step 3), three clear steps
  EXPECT_FALSE(meter.costMs().has_value());
  BackupMeter every_step;
  every_step.reset(0);
  feed(every_step, 0, 20, {1, 0}, 100, 400, 160);  // no step is clear of a backup
  EXPECT_FALSE(every_step.costMs().has_value());
}

TEST(BackupMeter, WarmUpStepsAndStepsAfterAReplayAreNotABackupsDoing) {
  BackupMeter meter;
  meter.reset(2);
  meter.observe(1, 5000, false);  // faulting buffers in: skipped
  meter.observe(2, 5000, false);
  feed(meter, 2, 30, {3, 0}, 100, 400, 160);
  ASSERT_TRUE(meter.costMs().has_value());
  EXPECT_NEAR(*meter.costMs(), 360, 1e-9);
  // A replay from step 28 (its backup at 27 is gone): step 28 again is a clear step.
  meter.observe(28, 100, false);
  meter.observe(29, 100, false);
  EXPECT_NEAR(meter.clearStepMs(), 100, 1e-9);
  EXPECT_LT(*meter.costMs(), 360 + 1e-9);
}

TEST(BackupMeter, CopiesThatTakeTheLinkLongerAreMeasuredOverAsManySteps) {
  // 100 ms steps, copies 250 ms on the link: the two steps of the copy and three more.
  EXPECT_EQ(BackupMeter::windowFor(250, 100), BackupMeter::kWindow + 3);
  EXPECT_EQ(BackupMeter::windowFor(0, 100), BackupMeter::kWindow);
  EXPECT_EQ(BackupMeter::windowFor(100, 0), 64) << "no step time yet: the longest window";
  EXPECT_EQ(BackupMeter::windowFor(1e9, 1), 64);

  // Backups every 8 steps whose copies slow the five steps after each by 40 ms.
  const auto slowed = [](BackupMeter& meter) {
    std::int64_t backup = -1;
    const BackupSchedule schedule{8, 0};
    for (std::int64_t step = 1; step <= 40; ++step) {
      const bool carried = backup >= 0 && step - backup <= 5;
      meter.observe(step, carried ? 140 : 100, schedule.due(step));
      if (schedule.due(step)) backup = step;
    }
  };
  BackupMeter wide;
  wide.reset(0, BackupMeter::windowFor(250, 100));
  EXPECT_EQ(wide.probeEvery(), 7) << "clear steps remain between the windows";
  slowed(wide);
  ASSERT_TRUE(wide.costMs().has_value());
  EXPECT_NEAR(*wide.costMs(), 5 * 40, 1e-9);
  EXPECT_NEAR(wide.clearStepMs(), 100, 1e-9);
  // The two-step window sees two of the five slowed steps and counts the others as clear.
  BackupMeter narrow;
  narrow.reset(0);
  slowed(narrow);
  ASSERT_TRUE(narrow.costMs().has_value());
  EXPECT_LT(*narrow.costMs(), 2 * 40);
}

TEST(BackupMeter, CheapBackupsCostNothingRatherThanLessThanNothing) {
  BackupMeter meter;
  meter.reset(0);
  feed(meter, 0, 30, {3, 0}, 100, 95, 90);  // noise: the backup steps came out faster
  ASSERT_TRUE(meter.costMs().has_value());
  EXPECT_EQ(*meter.costMs(), 0);
}

TEST(BackupMeter, TheStrideFollowsTheMeasuredCostButNeverGoesBelowTheModelsPrice) {
  const BackupCost priced{60, 0};  // the model's price of a round of copies
  const double budget = 0.05;
  BackupMeter meter;
  meter.reset(0);
  // Not measured yet: the model's price at the step time given (150 ms), with clear steps
  // left between the backups to measure them by.
  EXPECT_EQ(meter.stride(priced, 150, budget),
            std::max(backupStride(priced, 150, budget), meter.probeEvery()));
  EXPECT_EQ(meter.stride(BackupCost{}, 150, budget), meter.probeEvery());
  // Measured dearer than priced (300 + 60 ms a backup at 100 ms clear steps): the measurement.
  feed(meter, 0, 30, {3, 0}, 100, 400, 160);
  ASSERT_TRUE(meter.costMs().has_value());
  ASSERT_GT(*meter.costMs(), priced.cpu_ms);
  EXPECT_EQ(meter.stride(priced, 150, budget), backupStride({*meter.costMs(), 0}, 100, budget));
  EXPECT_EQ(meter.stride(priced, 150, budget), 72);  // 360 ms against 5 ms a step
  // Measured cheaper than the model prices it (a noisy few steps): the price holds, at the
  // measured step.
  BackupMeter noisy;
  noisy.reset(0);
  feed(noisy, 0, 30, {3, 0}, 100, 110, 100);
  ASSERT_TRUE(noisy.costMs().has_value());
  ASSERT_LT(*noisy.costMs(), priced.cpu_ms);
  EXPECT_EQ(noisy.stride(priced, 150, budget), backupStride(priced, 100, budget));
  EXPECT_EQ(noisy.stride(priced, 150, budget), 12);  // 60 ms against 5 ms a step
  // The link's share is the model's either way.
  EXPECT_EQ(noisy.stride({0, 500}, 150, budget), backupStride({0, 500}, 100, budget));
}

TEST(BackupSchedule, AStepIsClearOfBackupsOutsideTheWindowAfterEach) {
  const BackupSchedule every_third{3, 0};  // after steps 3, 6, 9...
  for (const std::int64_t step : {1, 2, 3, 6, 9}) EXPECT_TRUE(every_third.clearOf(step, 2)) << step;
  for (const std::int64_t step : {4, 5, 7, 8}) EXPECT_FALSE(every_third.clearOf(step, 2)) << step;
  EXPECT_FALSE(every_third.clearOf(4, 1));
  EXPECT_TRUE(every_third.clearOf(5, 1));
  // A backup every step or every other: no step is clear, each counts as clear as any.
  for (const std::int64_t every : {1, 2}) EXPECT_TRUE((BackupSchedule{every, 0}.clearOf(5, 2))) << every;
  EXPECT_TRUE((BackupSchedule{0, 0}.clearOf(5, 2)));  // no backups at all
}

}  // namespace
}  // namespace stagecraft::control
