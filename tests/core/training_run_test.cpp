// TrainingRun's sequencing against in-process FakeWorkers (no LibTorch): segments, backups,
// an elastic join, stragglers, stop and re-plan requests at a step boundary, divergence,
// evaluations. A lost device: training_run_recovery_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "control/backups.h"
#include "training_run_fixtures.h"

namespace stagecraft::control {
namespace {

using namespace testing_run;

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
  // The steps a backup's copies are under way: the copy, its crossing, its time on the link.
  const int window = BackupMeter::windowFor(backup.link_ms, predicted_ms);
  EXPECT_GE(window, BackupMeter::kWindow);
  // Until their cost is measured, backups leave clear steps between them to measure it by.
  EXPECT_EQ(run.backupEvery(), std::max<std::int64_t>({backupStride(backup, predicted_ms, settings.backup_budget),
                                                       BackupMeter::kProbeEvery, window + 2}));
  EXPECT_EQ(fakes.servers[0]->worker().backupSchedule().every, run.backupEvery());
  EXPECT_GT(run.backupEvery(), 3);

  // Whatever the stride, the first backup comes right after the two warm-up steps: a device
  // lost before a long stride's first backup would replay from the deployment.
  ASSERT_EQ(run.train(5, {}).steps.size(), 5u);
  std::vector<std::int64_t> held;
  for (const auto& refs : listBackups(run.deployment(), nullptr, std::chrono::seconds(2))) {
    for (const v1::BackupRef& ref : refs) held.push_back(ref.step());
  }
  EXPECT_NE(std::find(held.begin(), held.end(), 3), held.end()) << ::testing::PrintToString(held);

  // Once steps are timed, the stride follows the measured step, and the workers are told.
  ASSERT_EQ(run.train(12, {}).steps.size(), 7u);
  EXPECT_EQ(fakes.servers[0]->worker().backupSchedule().every, run.backupEvery());
  EXPECT_GT(run.backupEvery(), 1);

  // A stride the user sets stays.
  Fakes fixed_fakes(2);
  RunSettings fixed = quickSettings();
  const std::int64_t every = window + 1;
  fixed.backup_every = every;
  TrainingRun fixed_run(fixed_fakes.cluster, model, Optimizer::Sgd, TrainingOptions{},
                        stagecraft::testing::quickOptions(), fixed);
  fixed_run.deploy(plan);
  ASSERT_EQ(fixed_run.train(6, {}).steps.size(), 6u);
  EXPECT_EQ(fixed_run.backupEvery(), every);
  EXPECT_EQ(fixed_fakes.servers[0]->worker().backupSchedule().every, every);
  // Backups after steps `every`, 2 `every`...: the window's steps after each carry its copies.
  for (std::int64_t step = 1; step <= every; ++step) EXPECT_TRUE(fixed_run.clearOfBackups(step)) << step;
  for (std::int64_t step = every + 1; step <= every + window; ++step) {
    EXPECT_FALSE(fixed_run.clearOfBackups(step)) << step;
  }
  EXPECT_TRUE(fixed_run.clearOfBackups(2 * every));
}

TEST(TrainingRun, APlanOfOneDeviceTakesNoAutomaticBackupsButOnesTheUserAsksFor) {
  // No other device could hold them: they would serve a retry on that device only.
  const ModelSpec model = stagecraft::testing::uniformLinearModel(8, 1024);
  const Plan alone = planOver({{0, 8, {{0, 4}}}});
  Fakes fakes(2);
  TrainingRun run(fakes.cluster, model, Optimizer::Sgd, TrainingOptions{}, stagecraft::testing::quickOptions(),
                  quickSettings());
  run.deploy(alone);
  ASSERT_EQ(run.train(6, {}).steps.size(), 6u);
  EXPECT_EQ(run.backupEvery(), 0);
  EXPECT_EQ(fakes.servers[0]->worker().backupSchedule().every, 0);
  // Two devices: automatic backups again.
  run.replanNow(ReplanRequest{planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}), std::nullopt});
  ASSERT_EQ(run.train(12, {}).steps.size(), 6u);
  EXPECT_GT(run.backupEvery(), 0);
  EXPECT_EQ(fakes.servers[0]->worker().backupSchedule().every, run.backupEvery());

  Fakes asked_fakes(2);
  RunSettings asked = quickSettings();
  asked.backup_every = 2;
  TrainingRun asked_run(asked_fakes.cluster, model, Optimizer::Sgd, TrainingOptions{},
                        stagecraft::testing::quickOptions(), asked);
  asked_run.deploy(alone);
  ASSERT_EQ(asked_run.train(4, {}).steps.size(), 4u);
  EXPECT_EQ(asked_run.backupEvery(), 2);
  EXPECT_EQ(asked_fakes.servers[0]->worker().backupSchedule().every, 2);
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

TEST(TrainingRun, AReplanRestoresTheStateWhereItIsHeldInsteadOfCollectingTheModel) {
  Fakes fakes(3);
  RunSettings settings = quickSettings();
  // No regular backup within the run's 8 steps (one at the boundary would be restored
  // instead): the state at the boundary is the one each member keeps.
  settings.backup_every = 9;
  TrainingRun run(fakes.cluster, stagecraft::testing::uniformLinearModel(8, 64), Optimizer::Sgd, {},
                  stagecraft::testing::quickOptions(), settings);
  run.deploy(planOver({{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}));
  RunEvents events;
  events.on_step = [&](const StepResult& s) {
    // d0 keeps its layers, d1's half moves to d2 and d1 takes d0's second half.
    if (s.step == 3) run.requestReplan(ReplanRequest{planOver({{0, 2, {{0, 4}}}, {2, 4, {{1, 4}}}, {4, 8, {{2, 4}}}}), std::nullopt});
  };
  const RunResult result = run.train(8, events);
  ASSERT_EQ(result.recoveries.size(), 1u);
  const Recovery& r = result.recoveries[0];
  EXPECT_EQ(r.replayed_steps, 0);
  EXPECT_NE(r.backup, "the coordinator's copy");
  // Each member of the old plan kept its state at the boundary; nobody sent the coordinator
  // a weight.
  for (int d : {0, 1}) {
    EXPECT_EQ(fakes.servers[d]->worker().statesKept(), 1) << "d" << d;
    EXPECT_EQ(fakes.servers[d]->worker().weightRequests(), 0) << "d" << d;
  }
  // Every new member starts at the boundary from restore sources: its own worker's copy
  // where it holds the layers (an empty address), the holder's otherwise.
  const std::int64_t at = r.step;
  const auto sources = [&](int d) {
    const auto a = fakes.servers[d]->worker().assignment();
    EXPECT_TRUE(a.has_value());
    EXPECT_EQ(a->start_step(), at);
    EXPECT_FALSE(a->has_weights());
    std::vector<std::string> from;
    for (const auto& src : a->restore()) from.push_back(src.address().empty() ? "own" : src.name());
    return from;
  };
  EXPECT_EQ(sources(0), (std::vector<std::string>{"own"}));
  EXPECT_EQ(sources(1), (std::vector<std::string>{"d0"}));
  EXPECT_EQ(sources(2), (std::vector<std::string>{"d1"}));
  // Those copies go at the new deployment's first Start: its first backup follows its first
  // step, then every 9.
  const BackupSchedule schedule = fakes.servers[2]->worker().backupSchedule();
  EXPECT_EQ(schedule.every, 9);
  EXPECT_TRUE(schedule.due(at + 1));
  EXPECT_FALSE(schedule.due(at + 2));
  EXPECT_TRUE(schedule.due(at + 10));
  ASSERT_EQ(result.steps.size(), 8u);
  for (size_t i = 0; i < result.steps.size(); ++i) EXPECT_EQ(result.steps[i].step, static_cast<std::int64_t>(i + 1));
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
