// The coordinator against in-process fake workers on loopback: what it deploys, how it
// folds telemetry into steps, and that failures end quickly with a message naming the
// worker. (LocalCluster has its own tests in local_cluster_test.cpp.)
#include <grpcpp/support/status.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "control/assignments.h"
#include "control/coordinator.h"
#include "control/local_cluster.h"
#include "control/net.h"
#include "control/telemetry.h"
#include "control/worker_client.h"
#include "cost/cost_model.h"
#include "fake_worker.h"
#include "control_fixtures.h"
#include "io/error.h"
#include "io/json_io.h"
#include "planner/planner.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

using testing::hybridPlan;
using testing::quickOptions;
using testing::closedPort;
using testing::iteration;

namespace fs = std::filesystem;
using control::Coordinator;
using control::CoordinatorOptions;
using control::StepResult;
using control::TelemetryAggregator;
using control::TrainingOptions;
using control::WorkerError;
using std::chrono::milliseconds;
using testing::FakeWorker;
using testing::FakeWorkerScript;
using testing::FakeWorkerServer;

/// Fake workers d0, d1... on loopback and a cluster whose devices point at them.
struct FakeCluster {
  std::vector<std::unique_ptr<FakeWorkerServer>> servers;
  Cluster cluster = testing::makeCluster({1});

  FakeWorker& worker(int i) { return servers[i]->worker(); }
};

FakeCluster startFakes(const std::vector<double>& gflops, std::vector<FakeWorkerScript> scripts = {}) {
  FakeCluster fakes;
  scripts.resize(gflops.size());
  v1::Cluster proto = testing::makeCluster(gflops).toProto();
  for (size_t i = 0; i < gflops.size(); ++i) {
    scripts[i].name = "d" + std::to_string(i);
    fakes.servers.push_back(std::make_unique<FakeWorkerServer>(scripts[i]));
    proto.mutable_devices(static_cast<int>(i))->set_address(fakes.servers.back()->address());
  }
  fakes.cluster = Cluster::fromProto(proto);
  return fakes;
}

/// A hybrid plan over five devices: a two-member first stage whose member order is not
/// the cluster's, a single-device middle stage, a two-member last stage.

/// Deploys `stages` of the 8-layer test model (batch 16 in 4 micro-batches) on `coordinator`.
void deployStages(Coordinator& coordinator, std::vector<Stage> stages, Optimizer optimizer = Optimizer::Adam) {
  Plan plan = hybridPlan();
  plan.optimizer = optimizer;
  plan.stages = std::move(stages);
  coordinator.deploy(plan, testing::uniformLinearModel(8, 32), TrainingOptions{});
}

/// Trains `iterations` steps, which must end in a WorkerError, and returns it.
WorkerError trainUntilFailure(Coordinator& coordinator, std::int64_t iterations) {
  try {
    coordinator.train(iterations);
  } catch (const WorkerError& e) {
    return e;
  }
  ADD_FAILURE() << "expected the run to end with a WorkerError";
  return WorkerError("", "the run did not fail");
}

// ---------------------------------------------------------------- assignments

TEST(ControlCoordinator, DescribeAndProfileEveryWorker) {
  FakeCluster fakes = startFakes({100, 50, 25});
  Coordinator coordinator(fakes.cluster, quickOptions());
  const auto infos = coordinator.describe();
  ASSERT_EQ(infos.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(infos[i].name(), "d" + std::to_string(i));
    EXPECT_EQ(infos[i].address(), fakes.servers[i]->address());
  }

  const ModelSpec model = testing::uniformLinearModel(6, 64);
  const std::vector<int> sizes = {1, 4};
  const v1::ProfileSet profiles = coordinator.profile(model, sizes);
  ASSERT_EQ(profiles.devices_size(), 3);
  EXPECT_EQ(profiles.devices(1).device(), "d1");
  EXPECT_EQ(profiles.devices(1).model(), "uniform");
  CostModel cost(model, fakes.cluster);
  cost.setProfiles(profiles);
  EXPECT_TRUE(cost.hasProfile(2));
  EXPECT_GT(cost.forwardMs(0, 0, 6, 4), 0);
}

TEST(ControlCoordinator, WorkersAreGroupedByTheMachineTheyRunOn) {
  std::vector<v1::WorkerInfo> infos(6);
  infos[0].set_host_id("board-a");
  infos[1].set_host_id("board-b");
  infos[2].set_host_id("board-a");
  infos[3].set_address("127.0.0.1:5000");  // no host id: loopback is this machine
  infos[4].set_address("localhost:5001");
  infos[5].set_address("10.0.0.7:5000");
  const auto machines = control::workersByMachine(infos);
  const std::vector<std::vector<int>> expected = {{0, 2}, {1}, {3, 4}, {5}};
  EXPECT_EQ(machines, expected);
}

TEST(ControlCoordinator, ProfilesWorkersOfOneMachineOneAtATime) {
  // d0 and d2 share machine "a", d1 is alone on "b": the two machines are timed together,
  // the workers of "a" never at the same time.
  std::mutex mutex;
  int on_a = 0, peak_a = 0, everywhere = 0, peak = 0;
  const auto timed = [&](bool machine_a) {
    return [&, machine_a] {
      {
        std::lock_guard lock(mutex);
        peak = std::max(peak, ++everywhere);
        if (machine_a) peak_a = std::max(peak_a, ++on_a);
      }
      std::this_thread::sleep_for(milliseconds(60));
      std::lock_guard lock(mutex);
      if (machine_a) --on_a;
      --everywhere;
    };
  };
  std::vector<FakeWorkerScript> scripts(3);
  scripts[0].host_id = scripts[2].host_id = "a";
  scripts[1].host_id = "b";
  scripts[0].on_profile = scripts[2].on_profile = timed(true);
  scripts[1].on_profile = timed(false);
  FakeCluster fakes = startFakes({100, 50, 25}, scripts);
  Coordinator coordinator(fakes.cluster, quickOptions());
  const std::vector<int> sizes = {1};
  const v1::ProfileSet profiles = coordinator.profile(testing::uniformLinearModel(4, 16), sizes);
  ASSERT_EQ(profiles.devices_size(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(fakes.worker(i).profiles(), 1);
  EXPECT_EQ(peak_a, 1) << "two workers of one machine were profiled at the same time";
  EXPECT_LE(peak, 2);
}

TEST(ControlCoordinator, StopJobsStopsWhatAVanishedCoordinatorLeftTraining) {
  std::vector<FakeWorkerScript> scripts(3);
  for (auto& s : scripts) s.iteration_ms = 20;
  FakeCluster fakes = startFakes({100, 50, 25}, scripts);
  // A coordinator deploys to d0 and d1 and starts a long run, then is never heard again.
  auto crashed = std::make_unique<Coordinator>(fakes.cluster, quickOptions());
  deployStages(*crashed, {Stage{0, 4, {{0, 16}}}, Stage{4, 8, {{1, 16}}}});
  const std::string job = crashed->job();
  std::thread run([&] {
    try {
      crashed->train(100000);
    } catch (const std::exception&) {
      // Ended by the stop below: the run it belonged to is gone anyway.
    }
  });
  control::WorkerClient probe({"d1", fakes.servers[1]->address()});
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (probe.heartbeat(milliseconds(2000)).state() != "training" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));
  }

  Coordinator rescuer(fakes.cluster, quickOptions());
  EXPECT_TRUE(rescuer.stopJobs("another-job")[0].job == job);  // a filter that matches nothing
  EXPECT_EQ(fakes.worker(0).stops(), 0);
  const std::vector<control::StopOutcome> outcomes = rescuer.stopJobs();
  run.join();
  ASSERT_EQ(outcomes.size(), 3u);
  for (int d : {0, 1}) {
    EXPECT_TRUE(outcomes[d].reachable) << outcomes[d].error;
    EXPECT_TRUE(outcomes[d].stopped) << d;
    EXPECT_EQ(outcomes[d].job, job);
    EXPECT_GE(fakes.worker(d).stops(), 1);
  }
  EXPECT_TRUE(outcomes[2].reachable);
  EXPECT_FALSE(outcomes[2].stopped);  // d2 held no job
  EXPECT_EQ(outcomes[2].job, "");
}

TEST(ControlCoordinator, DeploySendsEveryMemberItsAssignment) {
  FakeCluster fakes = startFakes({100, 90, 50, 20, 20, 10});
  const ModelSpec model = testing::uniformLinearModel(8, 32);
  Coordinator coordinator(fakes.cluster, quickOptions());
  TrainingOptions options;
  options.seed = 5;
  const auto replies = coordinator.deploy(hybridPlan(), model, options);
  ASSERT_EQ(replies.size(), 5u);
  EXPECT_FALSE(coordinator.job().empty());

  // What each fake received is what buildAssignments made for it.
  const std::vector<std::pair<int, int>> stage_rank = {{0, 1}, {0, 0}, {1, 0}, {2, 1}, {2, 0}};  // by device
  std::set<std::string> stores;
  for (int d = 0; d < 5; ++d) {
    const auto a = fakes.worker(d).assignment();
    ASSERT_TRUE(a) << "d" << d;
    EXPECT_EQ(a->job(), coordinator.job());
    EXPECT_EQ(a->stage(), stage_rank[d].first) << d;
    EXPECT_EQ(a->rank(), stage_rank[d].second) << d;
    EXPECT_EQ(a->group(a->rank()).name(), "d" + std::to_string(d));
    EXPECT_EQ(a->group(a->rank()).address(), fakes.servers[d]->address());
    EXPECT_EQ(a->seed(), 5u);
    const auto store = control::splitHostPort(a->store_address());
    ASSERT_TRUE(store) << a->store_address();
    EXPECT_EQ(store->host, "127.0.0.1");
    stores.insert(a->store_address());
  }
  EXPECT_EQ(stores.size(), 3u);                // one store per stage group
  EXPECT_FALSE(fakes.worker(5).assignment());  // not in the plan
}

TEST(ControlCoordinator, HybridPlannerPlanDeploysOneAssignmentPerMember) {
  FakeCluster fakes = startFakes({400, 100, 100, 30, 30});
  const ModelSpec model = testing::uniformLinearModel(10, 512);
  CostModel cost(model, fakes.cluster);
  PlanRequest request;
  request.batch_size = 32;
  request.microbatches = 8;
  const PlanOutcome outcome = makePlan(*makePlanner("hybrid"), cost, request);
  ASSERT_TRUE(outcome.feasible) << outcome.reason;
  Coordinator coordinator(fakes.cluster, quickOptions());
  coordinator.deploy(outcome.plan, model, TrainingOptions{});

  const auto stage_of = outcome.plan.stageOfDevice(fakes.cluster.size());
  for (int d = 0; d < fakes.cluster.size(); ++d) {
    const auto a = fakes.worker(d).assignment();
    if (stage_of[d] < 0) {
      EXPECT_FALSE(a) << d;
      continue;
    }
    ASSERT_TRUE(a) << d;
    const Stage& stage = outcome.plan.stages[stage_of[d]];
    EXPECT_EQ(a->stage(), stage_of[d]);
    EXPECT_EQ(a->layer_begin(), stage.layer_begin);
    EXPECT_EQ(a->layer_end(), stage.layer_end);
    ASSERT_EQ(a->group_size(), static_cast<int>(stage.members.size()));
    for (int r = 0; r < a->group_size(); ++r) {
      EXPECT_EQ(a->group(r).name(), fakes.cluster.device(stage.members[r].device).name);
      EXPECT_EQ(a->group(r).samples(), stage.members[r].samples);
    }
    EXPECT_EQ(a->group(a->rank()).name(), fakes.cluster.device(d).name);
    EXPECT_EQ(a->previous_size(), stage_of[d] > 0 ? outcome.plan.stages[stage_of[d] - 1].members.size() : 0u);
    EXPECT_EQ(a->next_size(),
              stage_of[d] + 1 < outcome.plan.stageCount() ? outcome.plan.stages[stage_of[d] + 1].members.size() : 0u);
  }
}

TEST(ControlCoordinator, TrainingFoldsTelemetryIntoWeightedSteps) {
  // Last-stage members d3 (3 of 4 samples) and d4 (1 of 4): scripted losses 1.0 and 3.0.
  std::vector<FakeWorkerScript> scripts(5);
  const std::vector<double> iteration_ms = {10, 12, 30, 20, 25};
  for (int d = 0; d < 5; ++d) {
    scripts[d].iteration_ms = 1;
    scripts[d].events = [d, ms = iteration_ms[d]](std::int64_t step, const v1::StageAssignment& a) {
      const bool last = a.stage() + 1 == a.stages();
      const int samples = a.group(a.rank()).samples() * a.microbatches();
      const double loss = d == 3 ? 1.0 : 3.0;
      return std::vector<v1::TelemetryEvent>{iteration(a.job(), step, last ? loss / step : 0, last ? samples : 0, ms)};
    };
  }
  FakeCluster fakes = startFakes({100, 90, 50, 20, 20}, scripts);
  Coordinator coordinator(fakes.cluster, quickOptions());
  coordinator.deploy(hybridPlan(), testing::uniformLinearModel(8, 32), TrainingOptions{});

  std::vector<StepResult> seen;
  control::TrainingCallbacks callbacks;
  callbacks.on_step = [&](const StepResult& s) { seen.push_back(s); };
  const auto started = std::chrono::steady_clock::now();
  const control::TrainingResult result = coordinator.train(4, callbacks);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));

  EXPECT_FALSE(result.cancelled);
  ASSERT_EQ(result.steps.size(), 4u);
  ASSERT_EQ(seen.size(), 4u);
  // d4 holds 1 sample of each micro-batch (4 per step), d3 holds 3 (12 per step).
  for (int k = 0; k < 4; ++k) {
    const StepResult& s = result.steps[k];
    EXPECT_EQ(s.step, k + 1);
    EXPECT_NEAR(s.loss, (1.0 * 12 + 3.0 * 4) / 16 / (k + 1), 1e-12);
    EXPECT_EQ(s.loss_samples, 16);
    EXPECT_DOUBLE_EQ(s.iteration_ms, 30);
    EXPECT_DOUBLE_EQ(s.samples_per_second, 16 * 1000.0 / 30);
    EXPECT_EQ(seen[k].step, s.step);
  }
  for (int d = 0; d < 5; ++d) EXPECT_EQ(fakes.worker(d).starts(), 1) << d;
}

TEST(ControlCoordinator, UnreachableWorkerFailsFastWithAClearMessage) {
  FakeCluster fakes = startFakes({100});
  v1::Cluster proto = testing::makeCluster({100, 50}).toProto();
  proto.mutable_devices(0)->set_address(fakes.servers[0]->address());
  const std::string dead = "127.0.0.1:" + std::to_string(closedPort());
  proto.mutable_devices(1)->set_address(dead);
  Coordinator coordinator(Cluster::fromProto(proto), quickOptions());

  const auto started = std::chrono::steady_clock::now();
  try {
    coordinator.describe();
    FAIL() << "expected WorkerError";
  } catch (const WorkerError& e) {
    EXPECT_EQ(e.worker(), "d1");
    EXPECT_EQ(std::string(e.what()), "worker 'd1' (" + dead + ") is not reachable");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(2));

  const auto probes = coordinator.probe();
  EXPECT_TRUE(probes[0].reachable);
  EXPECT_FALSE(probes[1].reachable);
  EXPECT_NE(probes[1].error.find("not reachable"), std::string::npos);
}

TEST(ControlWorkerClient, ADeployWhoseConnectionFailedIsSentAgainOnceTheWorkerListens) {
  // The channel's first connection is refused (the worker is not listening yet), as a
  // worker busy accepting or a Wi-Fi link that blinked would refuse it.
  const int port = closedPort();
  control::WorkerClient client({"d0", "127.0.0.1:" + std::to_string(port)});
  EXPECT_THROW(client.heartbeat(milliseconds(300)), WorkerError);  // a probe does not wait: its failure is the news
  FakeWorkerServer server(FakeWorkerScript{}, port);
  v1::StageAssignment assignment;
  assignment.set_job("job");
  assignment.add_group()->set_name("d0");
  EXPECT_NO_THROW(client.deploy(assignment, milliseconds(5000)));
  ASSERT_TRUE(server.worker().assignment());
  EXPECT_EQ(server.worker().assignment()->job(), "job");
}

TEST(ControlCoordinator, SlowWorkerHitsTheDeadline) {
  std::vector<FakeWorkerScript> scripts(1);
  scripts[0].describe_delay = milliseconds(1500);
  FakeCluster fakes = startFakes({100}, scripts);
  CoordinatorOptions options = quickOptions();
  options.call_timeout = milliseconds(300);
  Coordinator coordinator(fakes.cluster, options);
  const auto started = std::chrono::steady_clock::now();
  try {
    coordinator.describe();
    FAIL();
  } catch (const WorkerError& e) {
    EXPECT_NE(std::string(e.what()).find("did not answer Describe within 0.3 s"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, milliseconds(1200));
}

TEST(ControlCoordinator, WorkerReportingAnErrorAbortsTheRunAndStopsTheOthers) {
  std::vector<FakeWorkerScript> scripts(5);
  for (auto& s : scripts) s.iteration_ms = 5;
  scripts[2].error_at_step = 3;
  FakeCluster fakes = startFakes({100, 90, 50, 20, 20}, scripts);
  Coordinator coordinator(fakes.cluster, quickOptions());
  coordinator.deploy(hybridPlan(), testing::uniformLinearModel(8, 32), TrainingOptions{});
  std::vector<StepResult> seen;
  control::TrainingCallbacks callbacks;
  callbacks.on_step = [&](const StepResult& s) { seen.push_back(s); };
  try {
    coordinator.train(50, callbacks);
    FAIL() << "expected WorkerError";
  } catch (const WorkerError& e) {
    EXPECT_EQ(e.worker(), "d2");
    EXPECT_EQ(std::string(e.what()),
              "worker 'd2' (" + fakes.servers[2]->address() + ") failed: INTERNAL: stage 1 diverged: loss is NaN at step 3");
  }
  EXPECT_LE(seen.size(), 2u);
  for (int d = 0; d < 5; ++d) EXPECT_GE(fakes.worker(d).stops(), 1) << d;
}

TEST(ControlCoordinator, SilentWorkerIsAbortedByTheWatchdog) {
  std::vector<FakeWorkerScript> scripts(2);
  scripts[1].silent_from_step = 2;
  FakeCluster fakes = startFakes({100, 100}, scripts);
  CoordinatorOptions options = quickOptions();
  options.silence_limit = milliseconds(600);
  Coordinator coordinator(fakes.cluster, options);
  deployStages(coordinator, {{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}}, Optimizer::Sgd);
  const auto started = std::chrono::steady_clock::now();
  const WorkerError e = trainUntilFailure(coordinator, 20);
  EXPECT_EQ(e.worker(), "d1");
  EXPECT_NE(std::string(e.what()).find("sent no telemetry for 1 s (last step 1)"), std::string::npos) << e.what();
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(3));
}

TEST(ControlCoordinator, ASlowWorkerThatAnswersHeartbeatIsWaitedForPastTheStallLimit) {
  // d1's third step takes 1.5 s (a loaded or throttled device); its Heartbeat answers.
  std::vector<FakeWorkerScript> scripts(2);
  scripts[1].events = [](std::int64_t step, const v1::StageAssignment& a) {
    if (step == 3) std::this_thread::sleep_for(milliseconds(1500));
    return std::vector<v1::TelemetryEvent>{testing::defaultIteration(step, a, 1)};
  };
  FakeCluster fakes = startFakes({100, 100}, scripts);
  CoordinatorOptions options = quickOptions();
  options.silence_limit = milliseconds(10000);
  Coordinator coordinator(fakes.cluster, options);
  coordinator.setSilenceLimits(milliseconds(100), milliseconds(300));
  deployStages(coordinator, {{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}});
  std::vector<std::pair<std::string, std::string>> logs;
  control::TrainingCallbacks callbacks;
  callbacks.on_log = [&](const std::string& worker, const std::string& text) { logs.emplace_back(worker, text); };
  const control::TrainingResult result = coordinator.train(5, callbacks);
  EXPECT_EQ(result.steps.size(), 5u);
  // Named once as slow, not given up.
  int slow = 0;
  for (const auto& [worker, text] : logs) {
    if (text.find("slow, not lost") == std::string::npos) continue;
    ++slow;
    EXPECT_EQ(worker, "d1");
    EXPECT_NE(text.find("waiting up to 10 s"), std::string::npos) << text;
  }
  EXPECT_EQ(slow, 1);
}

TEST(ControlCoordinator, SilentWorkerThatLostTheJobIsCaughtByHeartbeat) {
  std::vector<FakeWorkerScript> scripts(2);
  scripts[1].silent_from_step = 2;
  FakeCluster fakes = startFakes({100, 100}, scripts);
  CoordinatorOptions options = quickOptions();
  options.probe_after = milliseconds(100);
  options.silence_limit = milliseconds(10000);
  Coordinator coordinator(fakes.cluster, options);
  deployStages(coordinator, {{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}});
  std::thread intruder([&] {
    // Another coordinator takes d1 over while it is quiet.
    std::this_thread::sleep_for(milliseconds(50));
    v1::StageAssignment other = *fakes.worker(1).assignment();
    other.set_job("someone-else");
    grpc::ServerContext* none = nullptr;
    v1::DeployReply reply;
    fakes.worker(1).Deploy(none, &other, &reply);
  });
  const auto started = std::chrono::steady_clock::now();
  const WorkerError e = trainUntilFailure(coordinator, 1000);
  EXPECT_EQ(e.worker(), "d1");
  EXPECT_NE(std::string(e.what()).find("no longer runs job"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("someone-else"), std::string::npos) << e.what();
  // Caught by the heartbeat while d0 is still busy reporting steps, not after d0 is done.
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(1));
  intruder.join();
}

TEST(ControlCoordinator, StepAWorkerNeverReportedEndsTheRunInsteadOfHanging) {
  std::vector<FakeWorkerScript> scripts(2);
  scripts[1].events = [](std::int64_t step, const v1::StageAssignment& a) {
    if (step == 2) return std::vector<v1::TelemetryEvent>{};  // dropped on the way
    return std::vector<v1::TelemetryEvent>{testing::defaultIteration(step, a, 1)};
  };
  FakeCluster fakes = startFakes({100, 100}, scripts);
  Coordinator coordinator(fakes.cluster, quickOptions());
  deployStages(coordinator, {{0, 8, {{0, 2}, {1, 2}}}});
  const WorkerError e = trainUntilFailure(coordinator, 4);
  EXPECT_EQ(e.worker(), "d1");
  EXPECT_NE(std::string(e.what()).find("finished without reporting step 2"), std::string::npos) << e.what();
}

TEST(ControlCoordinator, StreamThatEndsEarlyAbortsTheRun) {
  std::vector<FakeWorkerScript> scripts(2);
  scripts[0].close_at_step = 3;
  FakeCluster fakes = startFakes({100, 100}, scripts);
  Coordinator coordinator(fakes.cluster, quickOptions());
  deployStages(coordinator, {{0, 8, {{0, 2}, {1, 2}}}});
  const WorkerError e = trainUntilFailure(coordinator, 20);
  EXPECT_EQ(e.worker(), "d0");
  EXPECT_NE(std::string(e.what()).find("closed its telemetry stream after step 2"), std::string::npos) << e.what();
}

TEST(ControlCoordinator, WorkerThatGoesAwayMidRunIsNamed) {
  std::vector<FakeWorkerScript> scripts(2);
  for (auto& s : scripts) s.iteration_ms = 20;
  FakeCluster fakes = startFakes({100, 100}, scripts);
  Coordinator coordinator(fakes.cluster, quickOptions());
  deployStages(coordinator, {{0, 4, {{0, 4}}}, {4, 8, {{1, 4}}}});
  std::thread killer([&] {
    std::this_thread::sleep_for(milliseconds(100));
    fakes.servers[1]->shutdown();
  });
  const WorkerError e = trainUntilFailure(coordinator, 1000);
  EXPECT_EQ(e.worker(), "d1") << e.what();
  killer.join();
}

TEST(ControlCoordinator, CancelFlagStopsEveryWorker) {
  std::vector<FakeWorkerScript> scripts(2);
  for (auto& s : scripts) s.iteration_ms = 5;
  FakeCluster fakes = startFakes({100, 100}, scripts);
  Coordinator coordinator(fakes.cluster, quickOptions());
  deployStages(coordinator, {{0, 8, {{0, 2}, {1, 2}}}});
  std::atomic<bool> cancel{false};
  control::TrainingCallbacks callbacks;
  callbacks.on_step = [&](const StepResult& s) {
    if (s.step == 3) cancel = true;
  };
  const auto result = coordinator.train(10000, callbacks, &cancel);
  EXPECT_TRUE(result.cancelled);
  EXPECT_GE(result.steps.size(), 3u);
  EXPECT_EQ(fakes.worker(0).stops(), 1);
  EXPECT_EQ(fakes.worker(1).stops(), 1);
}

}  // namespace
}  // namespace stagecraft
