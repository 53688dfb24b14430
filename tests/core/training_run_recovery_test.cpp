// TrainingRun against in-process FakeWorkers when a device is lost: replayed from the
// backups its neighbour holds, each step counted once; restored where the state is held or
// fetched by the coordinator; a spare left out or brought the state by what it gains (after
// the run resumed without it, or before).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "training_run_fixtures.h"

namespace stagecraft::control {
namespace {

using namespace testing_run;

/// Trains 12 steps on a two-stage plan over d0, d1 (d2 spare) and loses d1 after step 6.
RunResult trainLosingD1(Fakes& fakes, std::int64_t backup_every, std::vector<std::int64_t>& seen,
                        std::unique_ptr<TrainingRun>& run, int width = 64, bool resume_first = true) {
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, width);
  RunSettings settings = quickSettings();
  settings.backup_every = backup_every;
  settings.resume_first = resume_first;
  run = std::make_unique<TrainingRun>(fakes.cluster, model, Optimizer::Sgd, TrainingOptions{},
                                      stagecraft::testing::quickOptions(), settings);
  run->deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  RunEvents events;
  events.on_step = [&](const StepResult& s) {
    seen.push_back(s.step);
    if (s.step == 6 && fakes.servers[1]) fakes.servers[1]->shutdown();
  };
  return run->train(12, events);
}

TEST(TrainingRun, ALostDeviceIsReplayedFromTheBackupItsNeighbourHoldsAndEachStepCountsOnce) {
  Fakes fakes(3);
  std::vector<std::int64_t> seen;
  std::unique_ptr<TrainingRun> run;
  const RunResult result = trainLosingD1(fakes, 1, seen, run);

  ASSERT_EQ(result.steps.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(result.steps[i].step, i + 1);
  ASSERT_EQ(result.recoveries.size(), 1u);
  const Recovery& r = result.recoveries[0];
  EXPECT_EQ(r.device, "d1");
  EXPECT_EQ(r.kind, RecoveryKind::Lost);
  // Every stage backs up after every step, d1 to d0: d0 holds both stages' states, at most
  // two steps behind the last step the run saw completed.
  EXPECT_GE(r.failed_after, 6);
  EXPECT_LE(r.step, r.failed_after);
  EXPECT_GE(r.step, r.failed_after - 2);
  EXPECT_NE(r.backup.find("from d0 (a copy from"), std::string::npos) << r.backup;
  EXPECT_GT(fakes.servers[0]->worker().backupsHeld(), 0);
  EXPECT_EQ(r.replayed_steps, r.failed_after - r.step);
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), 12 + r.replayed_steps);
  EXPECT_FALSE(run->deployedCluster().find("d1"));
  EXPECT_EQ(run->step(), 12);
  // The survivors start from that step's states where they are held, not through the
  // coordinator: d0 holds them all, from its own store; any other member fetches from d0.
  for (const auto& a : run->deployment().assignments()) {
    EXPECT_EQ(a.start_step(), r.step);
    EXPECT_FALSE(a.has_weights());
    ASSERT_GT(a.restore_size(), 0);
    EXPECT_LE(a.restore(0).ref().layer_begin(), a.layer_begin());
    EXPECT_GE(a.restore(a.restore_size() - 1).ref().layer_end(), a.layer_end());
    for (const auto& source : a.restore()) {
      EXPECT_EQ(source.ref().step(), r.step);
      EXPECT_EQ(source.name(), "d0");
      EXPECT_EQ(source.address().empty(), a.group(a.rank()).name() == "d0") << source.address();
    }
  }
}

TEST(TrainingRun, WhenTheWorkersCannotRestoreWhereTheStateIsTheCoordinatorFetchesAndDeploysIt) {
  Fakes fakes(3, {}, [](int, FakeWorkerScript& script) { script.refuse_restore = true; });
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, 64);
  RunSettings settings = quickSettings();
  settings.backup_every = 1;
  TrainingRun run(fakes.cluster, model, Optimizer::Sgd, TrainingOptions{}, stagecraft::testing::quickOptions(),
                  settings);
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  RunEvents events;
  events.on_step = [&](const StepResult& s) {
    if (s.step == 6 && fakes.servers[1]) fakes.servers[1]->shutdown();
  };
  std::vector<std::string> logs;
  events.on_log = [&](const std::string&, const std::string& text) { logs.push_back(text); };
  const RunResult result = run.train(12, events);
  ASSERT_EQ(result.steps.size(), 12u);
  ASSERT_EQ(result.recoveries.size(), 1u);
  const Recovery& r = result.recoveries[0];
  EXPECT_GT(r.step, 0);  // still from the backups, not from the deployment
  EXPECT_NE(r.backup.find("from d0 (a copy from"), std::string::npos) << r.backup;
  EXPECT_TRUE(std::ranges::any_of(logs, [](const std::string& l) {
    return l.find("restoring the backups where they are held failed") != std::string::npos;
  })) << ::testing::PrintToString(logs);
  for (const auto& a : run.deployment().assignments()) {
    EXPECT_EQ(a.restore_size(), 0);
    EXPECT_EQ(a.weights().step(), r.step);
  }
}

/// Loses d1 as trainLosingD1 does (1024-wide layers: 4 MiB each), with the spare d2 at
/// `gflops` behind a `mbps` link; d0 holds its own state and d1's copies, d2 nothing.
/// Returns the last deployment's members, and whether any fetched state from another.
std::vector<std::string> membersAfterLosingD1(double gflops, double mbps, bool& fetched, RunResult& result,
                                              bool resume_first = true) {
  Fakes fakes(3);
  v1::Cluster proto = fakes.cluster.toProto();
  proto.mutable_devices(2)->set_gflops(gflops);
  proto.mutable_devices(2)->set_bandwidth_mbps(mbps);
  fakes.cluster = Cluster::fromProto(proto);
  std::vector<std::int64_t> seen;
  std::unique_ptr<TrainingRun> run;
  result = trainLosingD1(fakes, 1, seen, run, 1024, resume_first);
  EXPECT_EQ(result.steps.size(), 12u);
  for (size_t i = 0; i < result.steps.size(); ++i) EXPECT_EQ(result.steps[i].step, static_cast<std::int64_t>(i + 1));
  std::vector<std::string> members;
  fetched = false;
  for (const auto& a : run->deployment().assignments()) {
    members.push_back(a.group(a.rank()).name());
    for (const auto& source : a.restore()) fetched = fetched || !source.address().empty();
  }
  std::sort(members.begin(), members.end());
  return members;
}

TEST(TrainingRun, ASpareThatHoldsNothingIsLeftOutWhenBringingItTheStateCostsMoreThanItGains) {
  // A spare a hundred times faster that a plan over the survivors would use, but its 100
  // Mbit/s link needs seconds for the 32-64 MiB of state; six steps gain milliseconds.
  bool fetched = true;
  RunResult result;
  EXPECT_EQ(membersAfterLosingD1(10000, 100, fetched, result), std::vector<std::string>{"d0"});
  EXPECT_FALSE(fetched);  // d0 restores every layer from what it holds: nothing moved
  ASSERT_EQ(result.recoveries.size(), 1u);
  EXPECT_EQ(result.recoveries[0].joining, "");
}

TEST(TrainingRun, ASpareThatHoldsNothingIsBroughtTheStateWhenItGainsMoreOnceTheRunResumedWithoutIt) {
  // The same spare on a 100 Gbit/s link: the steps left are worth bringing it the state, but
  // that takes longer than a step on d0 alone. The run first resumes on d0, which holds
  // every stage's state, and takes d2 in at the next step boundary, d2 fetching its layers
  // from d0's copy of that boundary.
  bool fetched = false;
  RunResult result;
  const std::vector<std::string> members = membersAfterLosingD1(10000, 1e5, fetched, result);
  EXPECT_NE(std::find(members.begin(), members.end(), "d2"), members.end()) << ::testing::PrintToString(members);
  EXPECT_TRUE(fetched);
  ASSERT_EQ(result.recoveries.size(), 2u);
  const Recovery& lost = result.recoveries[0];
  EXPECT_EQ(lost.kind, RecoveryKind::Lost);
  EXPECT_EQ(lost.device, "d1");
  EXPECT_EQ(lost.joining, "d2");
  EXPECT_EQ(lost.devices, 1);  // d0 alone
  const Recovery& joined = result.recoveries[1];
  EXPECT_EQ(joined.kind, RecoveryKind::Joined);
  EXPECT_EQ(joined.device, "d2");
  EXPECT_EQ(joined.replayed_steps, 0);
  EXPECT_GT(joined.step, lost.step);  // after a step trained on d0 alone
  EXPECT_NE(joined.backup.find("from d0"), std::string::npos) << joined.backup;
}

TEST(TrainingRun, ASpareIsBroughtTheStateAtOnceWhenThatTakesLessThanAStep) {
  // On a link that moves the state at once there is nothing to resume first for.
  bool fetched = false;
  RunResult result;
  const std::vector<std::string> members = membersAfterLosingD1(10000, 1e9, fetched, result);
  EXPECT_NE(std::find(members.begin(), members.end(), "d2"), members.end()) << ::testing::PrintToString(members);
  EXPECT_TRUE(fetched);
  ASSERT_EQ(result.recoveries.size(), 1u);
  EXPECT_EQ(result.recoveries[0].joining, "");
}

TEST(TrainingRun, TheRunResumesWhereTheStateIsWhenItsFirstStepEndsBeforeTheMoveAndTheBestPlansStep) {
  // A spare three times d0's speed behind a link that brings it most of the model in less
  // than a step on d0 alone (predicted ~1.7 ms against 2 ms), but whose first step would end
  // only after the move and its own step (~0.6 ms): resuming on d0 trains sooner, and the
  // spare is taken in at the next step boundary.
  bool fetched = false;
  RunResult result;
  const std::vector<std::string> members = membersAfterLosingD1(300, 2.75e5, fetched, result);
  EXPECT_NE(std::find(members.begin(), members.end(), "d2"), members.end()) << ::testing::PrintToString(members);
  ASSERT_EQ(result.recoveries.size(), 2u);
  EXPECT_EQ(result.recoveries[0].joining, "d2");
  EXPECT_EQ(result.recoveries[0].devices, 1);  // d0 alone
  EXPECT_EQ(result.recoveries[1].kind, RecoveryKind::Joined);
}

TEST(TrainingRun, WithoutResumeFirstTheSpareIsBroughtTheStateBeforeTheFirstStep) {
  bool fetched = false;
  RunResult result;
  const std::vector<std::string> members = membersAfterLosingD1(10000, 1e5, fetched, result, false);
  EXPECT_NE(std::find(members.begin(), members.end(), "d2"), members.end()) << ::testing::PrintToString(members);
  EXPECT_TRUE(fetched);
  ASSERT_EQ(result.recoveries.size(), 1u);
  EXPECT_EQ(result.recoveries[0].joining, "");
}

TEST(TrainingRun, AStageLostWithItsOnlyDeviceIsResumedOnTheDeviceHoldingItsCopyThenTheSpareIsTakenIn) {
  // Three stages over d0, d1, d2 and a much faster spare d3 that holds nothing, on 1 Gbit/s
  // links, where moving a stage's state (4 MiB a layer) takes longer than a step. d0 is
  // lost: its copy is on d1, which resumes at once with [0, 5) (its own stage and the copy)
  // while d2 keeps [5, 8), nothing moving; the plan with d3, worth its state over the
  // steps left, follows at the next step boundary.
  Fakes fakes(4);
  v1::Cluster proto = fakes.cluster.toProto();
  for (int d = 0; d < 4; ++d) proto.mutable_devices(d)->set_bandwidth_mbps(1000);
  proto.mutable_devices(3)->set_gflops(10000);
  fakes.cluster = Cluster::fromProto(proto);
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, 1024);
  RunSettings settings = quickSettings();
  settings.backup_every = 1;
  TrainingRun run(fakes.cluster, model, Optimizer::Sgd, TrainingOptions{}, stagecraft::testing::quickOptions(),
                  settings);
  run.deploy(planOver({{0, 2, {{0, 4}}}, {2, 5, {{1, 4}}}, {5, 8, {{2, 4}}}}));
  RunEvents events;
  events.on_step = [&](const StepResult& s) {
    if (s.step == 6 && fakes.servers[0]) fakes.servers[0]->shutdown();
  };
  std::vector<std::string> resumed_on;  // "name [begin, end)" of the deployment the loss left
  bool fetched = false;
  events.on_recovery = [&](const Recovery& r) {
    if (r.kind != RecoveryKind::Lost) return;
    for (const auto& a : run.deployment().assignments()) {
      resumed_on.push_back(a.group(a.rank()).name() + " [" + std::to_string(a.layer_begin()) + ", " +
                           std::to_string(a.layer_end()) + ")");
      for (const auto& source : a.restore()) fetched = fetched || !source.address().empty();
    }
  };
  const RunResult result = run.train(200, events);
  ASSERT_EQ(result.steps.size(), 200u);
  EXPECT_EQ(resumed_on, (std::vector<std::string>{"d1 [0, 5)", "d2 [5, 8)"}));
  EXPECT_FALSE(fetched);
  ASSERT_EQ(result.recoveries.size(), 2u);
  EXPECT_EQ(result.recoveries[0].device, "d0");
  EXPECT_EQ(result.recoveries[0].joining, "d3");
  EXPECT_EQ(result.recoveries[1].kind, RecoveryKind::Joined);
  EXPECT_EQ(result.recoveries[1].replayed_steps, 0);
  EXPECT_TRUE(run.deployedCluster().find("d3"));
}

TEST(TrainingRun, WithoutBackupsALostDeviceReplaysFromTheDeployment) {
  Fakes fakes(3);
  std::vector<std::int64_t> seen;
  std::unique_ptr<TrainingRun> run;
  const RunResult result = trainLosingD1(fakes, 0, seen, run);
  ASSERT_EQ(result.steps.size(), 12u);
  ASSERT_EQ(result.recoveries.size(), 1u);
  const Recovery& r = result.recoveries[0];
  EXPECT_EQ(r.step, 0);
  EXPECT_EQ(r.replayed_steps, r.failed_after);
  EXPECT_EQ(r.backup, "checkpoint or deployment");
  EXPECT_EQ(fakes.servers[0]->worker().backupsHeld(), 0);
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), 12 + r.replayed_steps);
  for (std::int64_t kept : fakes.servers[0]->worker().keptBackupSteps()) EXPECT_EQ(kept, 0);
}

// A worker that comes back at once (restarted by its service manager, or another process
// that took the freed port) answers the probe, but without the job and its stage's state:
// the run counts it lost and recovers, instead of ending with the error that revealed it.
TEST(TrainingRun, ADeviceThatAnswersWithoutTheJobCountsAsLost) {
  Fakes fakes(3);
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, 64);
  TrainingRun run(fakes.cluster, model, Optimizer::Sgd, TrainingOptions{}, stagecraft::testing::quickOptions(),
                  quickSettings());
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  RunEvents events;
  bool restarted = false;
  events.on_step = [&](const StepResult& s) {
    if (s.step == 6 && !restarted) {
      restarted = true;
      fakes.servers[1]->shutdown();
      fakes.servers[1].reset();
      fakes.start(1);  // idle, at the same address
    }
  };
  const RunResult result = run.train(12, events);
  ASSERT_EQ(result.steps.size(), 12u);
  ASSERT_EQ(result.recoveries.size(), 1u);
  const Recovery& r = result.recoveries[0];
  EXPECT_EQ(r.device, "d1");
  EXPECT_EQ(r.kind, RecoveryKind::Lost);
  EXPECT_EQ(run.step(), 12);
  EXPECT_FALSE(run.deployedCluster().find("d1"));
}

}  // namespace
}  // namespace stagecraft::control
