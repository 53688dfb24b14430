// TrainingRun's sequencing against in-process FakeWorkers (no LibTorch): segments, a lost
// device replayed from the backups its neighbour holds and counted once, an elastic join,
// stragglers, stop and re-plan requests at a step boundary.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "control/net.h"
#include "control/training_run.h"
#include "control_fixtures.h"
#include "fake_worker.h"
#include "test_fixtures.h"

namespace stagecraft::control {
namespace {

using stagecraft::testing::FakeWorkerScript;
using stagecraft::testing::FakeWorkerServer;

/// Fakes d0..d{n-1} at 2 ms a step; a device listed in `later` is in the cluster (its port
/// reserved) but its worker is not started.
struct Fakes {
  std::vector<std::unique_ptr<FakeWorkerServer>> servers;
  std::vector<int> ports;
  Cluster cluster = stagecraft::testing::makeCluster({1});

  /// `script(i, s)` may change fake i's script before it starts.
  std::function<void(int, FakeWorkerScript&)> script;

  Fakes(int n, std::vector<int> later = {}, std::function<void(int, FakeWorkerScript&)> tweak = {})
      : script(std::move(tweak)) {
    v1::Cluster proto = stagecraft::testing::makeCluster(std::vector<double>(n, 100)).toProto();
    ports = freeLoopbackPorts(n);
    servers.resize(n);
    for (int i = 0; i < n; ++i) {
      proto.mutable_devices(i)->set_address("127.0.0.1:" + std::to_string(ports[i]));
      if (std::find(later.begin(), later.end(), i) == later.end()) start(i);
    }
    cluster = Cluster::fromProto(proto);
  }
  void start(int i) {
    FakeWorkerScript script;
    script.name = "d" + std::to_string(i);
    script.iteration_ms = 2;
    if (this->script) this->script(i, script);
    servers[i] = std::make_unique<FakeWorkerServer>(script, ports[i]);
  }
};

Plan planOver(std::vector<Stage> stages) {
  Plan p;
  p.model = "uniform";
  p.batch_size = 8;
  p.microbatches = 2;
  p.stages = std::move(stages);
  return p;
}

RunSettings quickSettings() {
  RunSettings s;
  s.segment = std::chrono::milliseconds(20);
  s.probe_deadline = std::chrono::milliseconds(500);
  s.planner = "hybrid";
  return s;
}

/// Trains 12 steps on a two-stage plan over d0, d1 (d2 spare) and loses d1 after step 6.
RunResult trainLosingD1(Fakes& fakes, std::int64_t backup_every, std::vector<std::int64_t>& seen,
                        std::unique_ptr<TrainingRun>& run, int width = 64) {
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, width);
  RunSettings settings = quickSettings();
  settings.backup_every = backup_every;
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
/// Returns the recovered deployment's members, and whether any fetched state from another.
std::vector<std::string> membersAfterLosingD1(double gflops, double mbps, bool& fetched) {
  Fakes fakes(3);
  v1::Cluster proto = fakes.cluster.toProto();
  proto.mutable_devices(2)->set_gflops(gflops);
  proto.mutable_devices(2)->set_bandwidth_mbps(mbps);
  fakes.cluster = Cluster::fromProto(proto);
  std::vector<std::int64_t> seen;
  std::unique_ptr<TrainingRun> run;
  const RunResult result = trainLosingD1(fakes, 1, seen, run, 1024);
  EXPECT_EQ(result.steps.size(), 12u);
  EXPECT_EQ(result.recoveries.size(), 1u);
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
  EXPECT_EQ(membersAfterLosingD1(10000, 100, fetched), std::vector<std::string>{"d0"});
  EXPECT_FALSE(fetched);  // d0 restores every layer from what it holds: nothing moved
}

TEST(TrainingRun, ASpareThatHoldsNothingIsBroughtTheStateWhenItGainsMore) {
  // The same spare on a link that moves the state at once: the steps left are worth it.
  bool fetched = false;
  const std::vector<std::string> members = membersAfterLosingD1(10000, 1e9, fetched);
  EXPECT_NE(std::find(members.begin(), members.end(), "d2"), members.end()) << ::testing::PrintToString(members);
  EXPECT_TRUE(fetched);
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

TEST(TrainingRun, EverySegmentStartsWithTheNewestStepEveryStageHoldsTwiceKept) {
  // The fakes ship each step's state before the step ends, so by a segment's start every
  // stage's state of the step reached is on its own worker and on its neighbour.
  Fakes fakes(2);
  RunSettings settings = quickSettings();
  settings.backup_every = 1;
  TrainingRun run(fakes.cluster, stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, TrainingOptions{},
                  stagecraft::testing::quickOptions(), settings);
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  ASSERT_EQ(run.train(12, {}).steps.size(), 12u);
  const std::vector<std::int64_t> kept = fakes.servers[0]->worker().keptBackupSteps();
  EXPECT_EQ(fakes.servers[1]->worker().keptBackupSteps(), kept);  // one step named to all
  ASSERT_GE(kept.size(), 3u);
  EXPECT_EQ(kept[0], 0);  // nothing is held before the first segment
  for (std::size_t i = 1; i < kept.size(); ++i) {
    EXPECT_GT(kept[i], kept[i - 1]) << "segment " << i;  // each segment moved the run on
    EXPECT_LT(kept[i], 12);
  }
}

TEST(TrainingRun, AutomaticBackupsComeAsOftenAsTheirBudgetAllowsAtThePredictedThenTheMeasuredStep) {
  Fakes fakes(2);
  // 8 MiB of weights and momentum per layer: 32 MiB a stage, far more than a 2 ms step hides.
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, 1024);
  const RunSettings settings = quickSettings();
  ASSERT_EQ(settings.backup_every, RunSettings::kAutoBackups);  // the default
  TrainingRun run(fakes.cluster, model, Optimizer::Sgd, TrainingOptions{}, stagecraft::testing::quickOptions(),
                  settings);
  const Plan plan = planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}});
  run.deploy(plan);
  const BackupCost backup = backupCost(plan, CostModel(model, run.deployedCluster()));
  EXPECT_GT(backup.cpu_ms, 0);
  const double predicted_ms = plan.batch_size * 1000.0 / run.predictedSamplesPerSecond();
  EXPECT_EQ(run.backupEvery(), backupStride(backup, predicted_ms, settings.backup_budget));
  EXPECT_EQ(fakes.servers[0]->worker().backupSchedule().every, run.backupEvery());
  EXPECT_GT(run.backupEvery(), 1);

  // Once steps are timed, the stride follows the measured step, and the workers are told.
  ASSERT_EQ(run.train(12, {}).steps.size(), 12u);
  EXPECT_EQ(fakes.servers[0]->worker().backupSchedule().every, run.backupEvery());
  EXPECT_GT(run.backupEvery(), 1);

  // A stride the user sets stays.
  Fakes fixed_fakes(2);
  RunSettings fixed = quickSettings();
  fixed.backup_every = 3;
  TrainingRun fixed_run(fixed_fakes.cluster, model, Optimizer::Sgd, TrainingOptions{},
                        stagecraft::testing::quickOptions(), fixed);
  fixed_run.deploy(plan);
  ASSERT_EQ(fixed_run.train(6, {}).steps.size(), 6u);
  EXPECT_EQ(fixed_run.backupEvery(), 3);
  EXPECT_EQ(fixed_fakes.servers[0]->worker().backupSchedule().every, 3);
}

TEST(TrainingRun, EveryDeviceAnsweringEndsTheRunWithTheJobsError) {
  // A failure that is not a lost device (an error in the job) is not "recovered".
  std::vector<double> gflops{100, 100};
  v1::Cluster proto = stagecraft::testing::makeCluster(gflops).toProto();
  std::vector<std::unique_ptr<FakeWorkerServer>> servers;
  for (int i = 0; i < 2; ++i) {
    FakeWorkerScript script;
    script.name = "d" + std::to_string(i);
    if (i == 1) script.error_at_step = 3;
    servers.push_back(std::make_unique<FakeWorkerServer>(script));
    proto.mutable_devices(i)->set_address(servers.back()->address());
  }
  TrainingRun run(Cluster::fromProto(proto), stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, {},
                  stagecraft::testing::quickOptions(), quickSettings());
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  EXPECT_THROW(run.train(10), WorkerError);
}

TEST(TrainingRun, ElasticRunTakesADeviceThatStartsAnsweringWhenItPredictsAGain) {
  Fakes fakes(3, {2});  // d2 comes later
  // Wide layers: compute dominates, so more devices in a pipeline are predicted faster.
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, 4096);
  RunSettings settings = quickSettings();
  settings.elastic = true;
  settings.join_check = std::chrono::milliseconds(0);
  TrainingRun run(fakes.cluster, model, Optimizer::Sgd, {}, stagecraft::testing::quickOptions(), settings);
  // Two devices; a third can only help.
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  RunEvents events;
  events.on_step = [&](const StepResult& s) {
    if (s.step == 3 && !fakes.servers[2]) fakes.start(2);
  };
  // Long enough for the channel to d2, refused at first, to try again and connect.
  const RunResult result = run.train(2000, events);
  ASSERT_EQ(result.steps.size(), 2000u);
  bool joined = false;
  for (const Recovery& r : result.recoveries) {
    if (r.kind == RecoveryKind::Joined && r.device.find("d2") != std::string::npos) joined = true;
  }
  EXPECT_TRUE(joined);
  EXPECT_TRUE(run.deployedCluster().find("d2"));
  bool uses_d2 = false;
  for (const Stage& s : run.plan().stages) {
    for (const DeviceShare& m : s.members) uses_d2 = uses_d2 || run.deployedCluster().device(m.device).name == "d2";
  }
  EXPECT_TRUE(uses_d2);
}

TEST(TrainingRun, StopAndReplanRequestsLandOnAStepBoundary) {
  Fakes fakes(2);
  TrainingRun run(fakes.cluster, stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, {},
                  stagecraft::testing::quickOptions(), quickSettings());
  run.deploy(planOver({{0, 8, {{0, 4}}}}));
  RunEvents events;
  events.on_step = [&](const StepResult& s) {
    if (s.step == 2) run.requestReplan(ReplanRequest{planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}), std::nullopt});
  };
  events.on_deployed = [&] { run.requestStop(); };  // stop on the new plan's first boundary
  const RunResult result = run.train(1000, events);
  EXPECT_TRUE(result.stopped);
  EXPECT_LT(run.step(), 1000);
  // The re-plan asked for at step 2 lands at the end of that segment (step 2 itself when a
  // loaded machine makes segments one step long); the stop at the next boundary after it.
  EXPECT_GE(run.step(), 2);
  ASSERT_EQ(result.recoveries.size(), 1u);
  EXPECT_EQ(result.recoveries[0].kind, RecoveryKind::Manual);
  EXPECT_EQ(result.recoveries[0].replayed_steps, 0);
  EXPECT_EQ(run.plan().stageCount(), 2);
  // Steps run on without a gap or a repeat across the re-plan.
  for (size_t i = 0; i < result.steps.size(); ++i) EXPECT_EQ(result.steps[i].step, static_cast<std::int64_t>(i + 1));
  // A later train() goes on where it stopped.
  const std::int64_t at = run.step();
  const RunResult more = run.train(at + 3);
  ASSERT_EQ(more.steps.size(), 3u);
  EXPECT_EQ(more.steps.front().step, at + 1);
}

TEST(TrainingRun, AReplanAskedForDuringTheLastSegmentLandsBeforeTrainReturns) {
  Fakes fakes(2);
  RunSettings settings = quickSettings();
  settings.segment = std::chrono::seconds(5);  // the whole run in one segment once its step time is known
  TrainingRun run(fakes.cluster, stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, {},
                  stagecraft::testing::quickOptions(), settings);
  run.deploy(planOver({{0, 8, {{0, 4}}}}));
  int deployed = 0;
  RunEvents events;
  events.on_deployed = [&] { ++deployed; };
  events.on_step = [&](const StepResult& s) {
    if (s.step == 3) run.requestReplan(ReplanRequest{planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}), std::nullopt});
  };
  const RunResult result = run.train(6, events);
  EXPECT_EQ(run.step(), 6);
  EXPECT_EQ(deployed, 1);
  EXPECT_EQ(run.plan().stageCount(), 2);
  ASSERT_EQ(result.recoveries.size(), 1u);
  EXPECT_EQ(result.recoveries[0].kind, RecoveryKind::Manual);
  ASSERT_EQ(result.steps.size(), 6u);
  EXPECT_EQ(result.steps.back().step, 6);
}

}  // namespace
}  // namespace stagecraft::control

namespace stagecraft::control {
namespace {

/// Two fakes; d1's compute takes three times as long from step 40 on.
Fakes slowingFakes() {
  return Fakes(2, {}, [](int i, FakeWorkerScript& script) {
    if (i != 1) return;
    script.events = [](std::int64_t step, const v1::StageAssignment& assignment) {
      v1::TelemetryEvent e = stagecraft::testing::defaultIteration(step, assignment, 2);
      if (step >= 40) e.mutable_iteration()->mutable_timeline(0)->set_end_ms(3.0);  // 1 ms before
      return std::vector<v1::TelemetryEvent>{e};
    };
  });
}

TEST(TrainingRun, AStragglerIsReportedWithTheGainOfARePlan) {
  Fakes fakes = slowingFakes();
  TrainingRun run(fakes.cluster, stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, {},
                  stagecraft::testing::quickOptions(), quickSettings());
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  std::vector<StragglerNotice> notices;
  RunEvents events;
  events.on_straggler = [&](const StragglerNotice& n) { notices.push_back(n); };
  const RunResult result = run.train(200, events);
  ASSERT_EQ(notices.size(), 1u);  // once per episode
  const StragglerNotice& n = notices[0];
  EXPECT_EQ(n.device, "d1");
  EXPECT_GE(n.step, 44);  // slow for the rule's 5 steps: 40..44
  EXPECT_NEAR(n.slower_by, std::sqrt(3.0), 0.05);  // 3x, relative to the geometric mean
  EXPECT_GT(n.gain, 1.1);
  ASSERT_TRUE(n.plan);
  EXPECT_FALSE(n.applying);
  EXPECT_TRUE(result.recoveries.empty());  // only a notice without auto_replan
  // The fresh plan gives d1 less work (layers x samples) than d0.
  int d0 = 0, d1 = 0;
  for (const Stage& st : n.plan->stages) {
    for (const DeviceShare& m : st.members) (m.device == 0 ? d0 : d1) += (st.layer_end - st.layer_begin) * m.samples;
  }
  EXPECT_LT(d1, d0);
}

TEST(TrainingRun, AutoReplanMovesWorkOffAStraggler) {
  Fakes fakes = slowingFakes();
  RunSettings settings = quickSettings();
  settings.auto_replan = true;
  TrainingRun run(fakes.cluster, stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, {},
                  stagecraft::testing::quickOptions(), settings);
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  bool applying = false;
  RunEvents events;
  events.on_straggler = [&](const StragglerNotice& n) { applying = applying || n.applying; };
  const RunResult result = run.train(200, events);
  EXPECT_TRUE(applying);
  ASSERT_EQ(result.steps.size(), 200u);
  ASSERT_FALSE(result.recoveries.empty());
  EXPECT_EQ(result.recoveries[0].kind, RecoveryKind::Straggler);
  EXPECT_EQ(result.recoveries[0].device, "d1");
  EXPECT_EQ(result.recoveries[0].replayed_steps, 0);  // a re-plan at a step boundary
}

}  // namespace
}  // namespace stagecraft::control

namespace stagecraft::control {
namespace {

TEST(TrainingRun, AReplanThatMissesItsPromiseIsReportedAndGoingBackRestoresThePlanBefore) {
  // The fakes report 2 ms a step on one stage and, on two stages, whatever the test sets:
  // half of what the re-plan promised.
  auto two_stage_ms = std::make_shared<std::atomic<double>>(2.0);
  Fakes fakes(2, {}, [two_stage_ms](int, FakeWorkerScript& script) {
    script.events = [two_stage_ms](std::int64_t step, const v1::StageAssignment& assignment) {
      const double ms = assignment.stages() == 2 ? two_stage_ms->load() : 2.0;
      return std::vector<v1::TelemetryEvent>{stagecraft::testing::defaultIteration(step, assignment, ms)};
    };
  });
  RunSettings settings = quickSettings();
  settings.promise = PromiseRule{1, 3, 0.15};
  TrainingRun run(fakes.cluster, stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, {},
                  stagecraft::testing::quickOptions(), settings);
  const Plan one_stage = planOver({{0, 8, {{0, 8}}}});
  run.deploy(one_stage);
  std::vector<PlanPromise> verdicts;
  double promised = 0;
  int deployments = 0;
  RunEvents events;
  events.on_step = [&](const StepResult& s) {
    if (s.step == 6) run.requestReplan(ReplanRequest{planOver({{0, 4, {{0, 8}}}, {4, 8, {{1, 8}}}}), std::nullopt});
  };
  events.on_deployed = [&] {
    if (++deployments == 1) {
      promised = run.predictedSamplesPerSecond();
      two_stage_ms->store(8 * 1000.0 / (promised / 2));  // half the promise
    }
  };
  events.on_promise = [&](const PlanPromise& p) {
    verdicts.push_back(p);
    // The way back is judged too, against what the plan measured before.
    if (p.missed) {
      run.requestReplan(ReplanRequest{p.previous, p.previous_cluster, RecoveryKind::Manual, "", p.before_sps});
    } else {
      run.requestStop();
    }
  };
  // Segments are as long as a loaded machine makes them: the run ends on the second verdict.
  const RunResult result = run.train(100'000, events);

  ASSERT_GT(promised, 0);
  ASSERT_GE(verdicts.size(), 1u);
  const PlanPromise& v = verdicts.front();
  EXPECT_TRUE(v.missed);
  EXPECT_GE(v.from_step, 6);
  EXPECT_EQ(v.judged_step, v.from_step + 4);  // a settling step, then three measured
  EXPECT_DOUBLE_EQ(v.promised_sps, promised);
  EXPECT_NEAR(v.measured_sps, promised / 2, promised * 1e-6);
  EXPECT_NEAR(v.before_sps, 8 * 1000.0 / 2, 1e-6);  // the one-stage plan's 2 ms steps
  EXPECT_EQ(v.previous.stageCount(), 1);
  // Going back: the plan before, from the step the verdict was made at, nothing replayed.
  ASSERT_EQ(result.recoveries.size(), 2u);
  EXPECT_EQ(result.recoveries[1].kind, RecoveryKind::Manual);
  EXPECT_EQ(result.recoveries[1].replayed_steps, 0);
  EXPECT_EQ(run.plan().stageCount(), 1);
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[1].previous.stageCount(), 2);
  EXPECT_DOUBLE_EQ(verdicts[1].promised_sps, v.before_sps);
  EXPECT_NEAR(verdicts[1].measured_sps, 8 * 1000.0 / 2, 1e-6);
  EXPECT_FALSE(verdicts[1].missed);
  EXPECT_EQ(result.promises.size(), verdicts.size());
  EXPECT_TRUE(result.stopped);
  for (size_t i = 0; i < result.steps.size(); ++i) EXPECT_EQ(result.steps[i].step, static_cast<std::int64_t>(i + 1));
}

TEST(TrainingRun, TheDivergenceGuardStopsGoesBackAndALowerRateGoesOn) {
  // The last stage's loss explodes from step 30 on while the learning rate is 0.05 or more.
  Fakes fakes(2, {}, [](int i, FakeWorkerScript& script) {
    if (i != 1) return;
    script.events = [](std::int64_t step, const v1::StageAssignment& assignment) {
      v1::TelemetryEvent e = stagecraft::testing::defaultIteration(step, assignment, 2);
      if (step >= 30 && assignment.optimizer().lr() >= 0.05) e.mutable_iteration()->set_loss(989376024.0);
      return std::vector<v1::TelemetryEvent>{e};
    };
  });
  TrainingOptions options;
  options.lr = 0.05;
  RunSettings settings = quickSettings();
  settings.backup_every = 1;  // a state after every step to go back to
  TrainingRun run(fakes.cluster, stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, options,
                  stagecraft::testing::quickOptions(), settings);
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  const RunResult result = run.train(100);
  ASSERT_TRUE(result.diverged);
  const Divergence& d = *result.diverged;
  EXPECT_EQ(d.step, 30);
  EXPECT_NE(d.reason.find("running level"), std::string::npos) << d.reason;
  // Back to the state before the weights that gave that loss: after step 28 (29 when the
  // stages had already moved past the states they keep).
  EXPECT_GE(d.kept_step, 28);
  EXPECT_LE(d.kept_step, 29);
  EXPECT_EQ(run.step(), d.kept_step);
  ASSERT_FALSE(result.steps.empty());
  EXPECT_EQ(result.steps.back().step, d.kept_step);
  for (const auto& a : run.deployment().assignments()) EXPECT_EQ(a.start_step(), d.kept_step);

  run.setLearningRate(0.01);
  EXPECT_DOUBLE_EQ(run.learningRate(), 0.01);
  for (const auto& a : run.deployment().assignments()) {
    EXPECT_DOUBLE_EQ(a.optimizer().lr(), 0.01);
    EXPECT_EQ(a.start_step(), d.kept_step);
    // The kept weights, the momentum that carried the blow-up left behind.
    EXPECT_GT(a.weights().tensors_size(), 0);
    for (const auto& t : a.weights().tensors()) EXPECT_EQ(t.name().find('#'), std::string::npos) << t.name();
  }
  const RunResult again = run.train(100);
  EXPECT_FALSE(again.diverged);
  EXPECT_EQ(run.step(), 100);
  EXPECT_EQ(again.steps.front().step, d.kept_step + 1);
}

}  // namespace
}  // namespace stagecraft::control

namespace stagecraft::control {
namespace {

TEST(TrainingRun, EvaluationsLandEveryNStepsAndAtTheEndBetweenSegments) {
  Fakes fakes(3);
  RunSettings settings = quickSettings();
  settings.segment = std::chrono::seconds(5);  // segments as long as they may be: the evaluations must cut them
  settings.eval_every = 4;
  settings.eval_samples = 12;  // three micro-batches of 4
  TrainingRun run(fakes.cluster, stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, {},
                  stagecraft::testing::quickOptions(), settings);
  // The last stage is a group of two (3 + 1 samples of each micro-batch): both score.
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 3}, {2, 1}}}}));
  std::vector<std::int64_t> seen;
  RunEvents events;
  events.on_eval = [&](const EvalResult& e) { seen.push_back(e.step); };
  const RunResult result = run.train(10, events);
  EXPECT_EQ(seen, (std::vector<std::int64_t>{4, 8, 10}));
  ASSERT_EQ(result.evals.size(), 3u);
  // The fakes score min(samples, step) right of each member's share: 3 x 3 and 1 x 3.
  EXPECT_EQ(result.evals[0].samples, 12);
  EXPECT_DOUBLE_EQ(result.evals[0].accuracy, (4.0 + 3.0) / 12);  // min(9, 4) + min(3, 4)
  EXPECT_DOUBLE_EQ(result.evals[2].accuracy, (9.0 + 3.0) / 12);
  EXPECT_DOUBLE_EQ(result.evals[2].loss, 1.0 / 11);
  EXPECT_EQ(result.steps.size(), 10u);  // evaluations take no step
}
}  // namespace
}  // namespace stagecraft::control
