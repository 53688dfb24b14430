// stagecraft-cli's worker commands (cluster up/down/status, profile, run): their argument
// errors, fast one-line failures when workers are missing, and the whole path against
// stagecraft-fake-worker processes standing in for stagecraft-worker.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "control/cluster_token.h"
#include "control/net.h"
#include "cli_fixture.h"
#include "io/json_io.h"
#include "stagecraft/v1/cluster.pb.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft {
namespace {

namespace fs = std::filesystem;
using test_support::CapturedRun;
using test_support::contains;
using test_support::linesOf;
using test_support::slurp;

class CliRunTest : public test_support::CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    // Each test keeps its local workers' state to itself, and finds no real worker.
    fs::create_directories(dir_ / "runtime");
    setenv("XDG_RUNTIME_DIR", (dir_ / "runtime").c_str(), 1);
    unsetenv("STAGECRAFT_WORKER");
    unsetenv("STAGECRAFT_FAKE_FAIL");
    unsetenv("STAGECRAFT_FAKE_DIE");
    unsetenv("STAGECRAFT_TOKEN_FILE");
  }
  void TearDown() override {
    // Whatever a failed test left running.
    run({"cluster", "down", "--cluster", (dir_ / "duo.json").string(), "--grace", "1"});
    CliFixture::TearDown();
  }

  /// Two devices, a (fast) and b (half as fast), at loopback ports nothing listens on.
  /// Devices a (100 GFLOP/s) and b (`b_gflops`, 50 by default), local addresses.
  std::string writeDuo(bool with_addresses = true, double b_gflops = 50) {
    v1::Cluster c;
    c.set_name("duo");
    const auto ports = control::freeLoopbackPorts(2);
    const char* names[] = {"a", "b"};
    const double gflops[] = {100, b_gflops};
    for (int i = 0; i < 2; ++i) {
      auto* d = c.add_devices();
      d->set_name(names[i]);
      d->set_tier("edge");
      d->set_gflops(gflops[i]);
      d->set_memory_mb(4000);
      d->set_bandwidth_mbps(1000);
      if (with_addresses) d->set_address("127.0.0.1:" + std::to_string(ports[i]));
    }
    const fs::path path = dir_ / "duo.json";
    std::ofstream(path) << io::toJson(c);
    addresses_ = {c.devices(0).address(), c.devices(1).address()};
    return path.string();
  }

  fs::path statePath() const { return dir_ / "runtime" / "stagecraft" / "duo.json"; }

  std::vector<std::string> addresses_;
};


TEST_F(CliRunTest, HelpOnEveryWorkerCommandExitsZero) {
  const std::vector<std::vector<std::string>> commands = {{"cluster", "--help"},
                                                          {"cluster", "up", "--help"},
                                                          {"cluster", "down", "--help"},
                                                          {"cluster", "status", "--help"},
                                                          {"profile", "--help"},
                                                          {"run", "--help"},
                                                          {"discover", "--help"},
                                                          {"help", "run"}};
  for (const auto& command : commands) {
    const CapturedRun r = run(command);
    EXPECT_EQ(r.exit_code, 0) << command[0] << ": " << r.err;
    EXPECT_TRUE(r.out.starts_with("Usage: stagecraft-cli ")) << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
  }
  const CapturedRun top = run({"--help"});
  for (const char* command : {"cluster", "profile", "run", "discover"}) {
    EXPECT_TRUE(contains(top.out, command)) << command;
  }
  EXPECT_TRUE(contains(run({"run", "--help"}).out, "--local"));
}

TEST_F(CliRunTest, DiscoverWithNobodyAnnouncingListsNoWorkers) {
  // A port no worker announces on: the window passes and the list is empty.
  const std::string port = std::to_string(control::freeLoopbackPorts(1).front());
  const CapturedRun json = run({"discover", "--port", port, "--seconds", "0.3", "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_TRUE(contains(json.out, "\"beacons\"")) << json.out;
  EXPECT_FALSE(contains(json.out, "\"name\"")) << json.out;
  EXPECT_GE(json.seconds, 0.25);
  const CapturedRun text = run({"discover", "--port", port, "--seconds", "0.3"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "no workers heard on UDP port " + port)) << text.out;
}

TEST_F(CliRunTest, RunAgainstClosedPortsFailsFastNamingTheWorker) {
  const std::string cluster = writeDuo();
  const CapturedRun r = run({"run", "--cluster", cluster, "--model", "mlp", "--steps", "5"});
  EXPECT_ONE_LINE_FAILURE(r, 4);
  EXPECT_TRUE(contains(r.err, "worker 'a' (" + addresses_[0] + ") is not reachable")) << r.err;
  EXPECT_TRUE(contains(r.err, "run `stagecraft-cli cluster up --cluster " + cluster + "` first")) << r.err;
  EXPECT_LT(r.seconds, 5.0);
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(CliRunTest, ProfileAgainstClosedPortsFailsFast) {
  const CapturedRun r = run({"profile", "--cluster", writeDuo(), "--model", "mlp", "--json"});
  EXPECT_ONE_LINE_FAILURE(r, 4);
  EXPECT_TRUE(contains(r.err, "is not reachable")) << r.err;
  EXPECT_LT(r.seconds, 5.0);
}

TEST_F(CliRunTest, StatusOfAClusterWithoutWorkersSaysSo) {
  const CapturedRun r = run({"cluster", "status", "--cluster", writeDuo()});
  EXPECT_ONE_LINE_FAILURE(r, 4);
  EXPECT_TRUE(contains(r.err, "(+1 more)")) << r.err;
  EXPECT_TRUE(contains(r.out, "unreachable")) << r.out;
}

TEST_F(CliRunTest, DeviceWithoutAddressAsksForClusterUp) {
  const CapturedRun r = run({"run", "--cluster", writeDuo(false), "--model", "mlp", "--steps", "1"});
  EXPECT_ONE_LINE_FAILURE(r, 2);
  EXPECT_TRUE(contains(r.err, "device 'a' has no worker address")) << r.err;
  EXPECT_TRUE(contains(r.err, "cluster up")) << r.err;
}

TEST_F(CliRunTest, BadArgumentsAreOneLineFailures) {
  const std::string c = writeDuo();
  const std::vector<std::vector<std::string>> bad = {
      {"run", "--cluster", c, "--model", "mlp"},  // no --steps
      {"run", "--cluster", c, "--model", "mlp", "--steps", "0"},
      {"run", "--cluster", c, "--steps", "3"},  // no model, no plan
      {"run", "--cluster", c, "--plan", "p.json", "--planner", "dp", "--steps", "3"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--no-profile", "--profile", "x.json"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--worker-binary", "/bin/true"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--data", "mnist"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--data", "imagenet"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--data", "imagefolder"},  // no folder
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--data", "imagefolder", "--data-path", dir_.string(),
       "--labels-path", c},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--data", "imagefolder", "--data-path", c, "--local"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--lr", "-1"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--lr", "fast"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--optimizer", "lbfgs"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--micro-batches", "1,x"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--seed", "-4"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--step-timeout", "0"},
      {"run", "--cluster", c, "--model", "alexnet", "--steps", "3"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--calibrate-after", "-1"},
      {"run", "--cluster", c, "--model", "mlp", "--steps", "3", "--calibrate-after", "soon"},
      {"profile", "--cluster", c},
      {"profile", "--cluster", c, "--model", "mlp", "--micro-batches", "0"},
      {"cluster"},
      {"cluster", "sideways", "--cluster", c},
      {"cluster", "up"},
      {"cluster", "stop"},
      {"cluster", "up", "--cluster", c, "--worker-binary", (dir_ / "no-such-worker").string()},
      {"cluster", "up", "--cluster", c, "--worker-binary", "/bin/true", "--timeout", "soon"},
      {"cluster", "down", "--cluster", "moon-base"},
      {"discover", "--seconds", "0"},
      {"discover", "--seconds", "soon"},
      {"discover", "--port", "70000"},
      {"discover", "--port", "0"},
  };
  for (const auto& args : bad) {
    std::string line;
    for (const auto& a : args) line += a + " ";
    SCOPED_TRACE(line);
    const CapturedRun r = run(args);
    EXPECT_ONE_LINE_FAILURE(r, 2);
    EXPECT_LT(r.seconds, 5.0);
  }
}

TEST_F(CliRunTest, UpStatusProfileRunDownWithFakeWorkers) {
  const std::string cluster = writeDuo();
  const CapturedRun up =
      run({"cluster", "up", "--cluster", cluster, "--worker-binary", STAGECRAFT_FAKE_WORKER, "--json"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  v1::ClusterStatusReport report;
  io::parseJson(up.out, report, "cluster up --json");
  ASSERT_EQ(report.workers_size(), 2);
  EXPECT_EQ(report.workers(0).address(), addresses_[0]);  // the ports of the cluster file
  EXPECT_TRUE(report.workers(1).reachable());
  EXPECT_GT(report.workers(1).pid(), 0);
  EXPECT_DOUBLE_EQ(report.workers(1).info().emulation().slowdown(), 2);
  EXPECT_TRUE(fs::exists(statePath()));

  // Up twice is refused while the workers run: the machine's state, not the input (4).
  EXPECT_ONE_LINE_FAILURE(run({"cluster", "up", "--cluster", cluster, "--worker-binary", STAGECRAFT_FAKE_WORKER}), 4);

  const CapturedRun status = run({"cluster", "status", "--cluster", cluster});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_TRUE(contains(status.out, "idle")) << status.out;

  // The workers ask for the token `up` made, private, next to the state file: the CLI finds
  // it by itself; another token is refused, by name, and a token file others can read is
  // not used at all.
  const fs::path token = dir_ / "runtime" / "stagecraft" / "duo.token";
  ASSERT_TRUE(fs::exists(token));
  EXPECT_EQ(fs::status(token).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  const fs::path other = dir_ / "other.token";
  control::makeTokenFile(other.string());
  const CapturedRun refused = run({"cluster", "status", "--cluster", cluster, "--token-file", other.string()});
  EXPECT_EQ(refused.exit_code, 4) << refused.err;
  EXPECT_TRUE(contains(refused.err, "worker 'a' (" + addresses_[0] + ") refused Describe: wrong cluster token"))
      << refused.err;
  EXPECT_TRUE(contains(refused.err, "--token-file PATH or STAGECRAFT_TOKEN_FILE")) << refused.err;
  setenv("STAGECRAFT_TOKEN_FILE", other.c_str(), 1);
  EXPECT_EQ(run({"cluster", "status", "--cluster", cluster}).exit_code, 4);
  setenv("STAGECRAFT_TOKEN_FILE", token.c_str(), 1);
  EXPECT_EQ(run({"cluster", "status", "--cluster", cluster}).exit_code, 0);
  unsetenv("STAGECRAFT_TOKEN_FILE");
  fs::permissions(other, fs::perms::others_read, fs::perm_options::add);
  const CapturedRun shared = run({"cluster", "status", "--cluster", cluster, "--token-file", other.string()});
  EXPECT_ONE_LINE_FAILURE(shared, 2);
  EXPECT_TRUE(contains(shared.err, "chmod 600")) << shared.err;

  const fs::path profiles = dir_ / "profiles.json";
  const CapturedRun profile =
      run({"profile", "--cluster", cluster, "--model", "mlp", "--micro-batches", "2,8", "--out", profiles.string()});
  ASSERT_EQ(profile.exit_code, 0) << profile.err;
  v1::ProfileSet set;
  io::readJsonFile(profiles.string(), set);
  ASSERT_EQ(set.devices_size(), 2);
  EXPECT_EQ(set.devices(1).device(), "b");
  EXPECT_EQ(set.devices(1).batches_size(), 2);
  // The existing --profile flag of plan reads it.
  EXPECT_EQ(run({"plan", "--cluster", cluster, "--model", "mlp", "--profile", profiles.string()}).exit_code, 0);
  // One sample a micro-batch is fewer than the profiles timed: the plan says its prediction
  // is a bound and how to measure it.
  const CapturedRun small = run({"plan", "--cluster", cluster, "--model", "mlp", "--profile", profiles.string(),
                                 "--batch", "16", "--microbatches", "16"});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_TRUE(contains(small.out, "timed micro-batches of 2 samples and more")) << small.out;
  EXPECT_TRUE(contains(small.out, "are extrapolated from the two smallest sizes")) << small.out;
  EXPECT_TRUE(contains(small.out, "Profile with --micro-batches 1,2 to predict it.")) << small.out;

  const fs::path timeline = dir_ / "timeline.json";
  const CapturedRun train = run({"run", "--cluster", cluster, "--model", "mlp", "--steps", "8", "--batch", "16",
                               "--microbatches", "4", "--timeline", timeline.string(), "--json"});
  ASSERT_EQ(train.exit_code, 0) << train.err;
  v1::RunReport result;
  io::parseJson(train.out, result, "run --json");
  EXPECT_EQ(result.steps(), 8);
  ASSERT_EQ(result.losses_size(), 8);
  EXPECT_LT(result.losses(7), result.losses(0));
  EXPECT_DOUBLE_EQ(result.final_loss(), result.losses(7));
  EXPECT_GT(result.samples_per_second(), 0);
  EXPECT_GT(result.predicted_samples_per_second(), 0);
  EXPECT_TRUE(result.profiled());
  EXPECT_EQ(result.plan().batch_size(), 16);
  for (const char* key :
       {"\"samples_per_second\"", "\"predicted_samples_per_second\"", "\"final_loss\"", "\"steps\"", "\"losses\""}) {
    EXPECT_TRUE(contains(train.out, key)) << key;
  }
  // Progress went to stderr, a line per step when it is not a terminal.
  EXPECT_TRUE(contains(train.err, "step 8/8")) << train.err;
  // From step 3 on (the default), once three complete steps after the first were clear of
  // backups, every device was re-timed from telemetry (the median over them) and the plan
  // re-predicted.
  EXPECT_GE(result.calibration_step(), 4);
  EXPECT_LT(result.calibration_step(), 8);
  ASSERT_EQ(result.compute_factors_size(), 2);
  for (const char* device : {"a", "b"}) {
    ASSERT_TRUE(result.compute_factors().contains(device)) << device;
    EXPECT_GT(result.compute_factors().at(device), 0) << device;
  }
  EXPECT_GT(result.calibrated_samples_per_second(), 0);
  EXPECT_TRUE(contains(train.err, "calibrated at step " + std::to_string(result.calibration_step()))) << train.err;
  // The trace: the predicted iteration, then each worker's forward block of every step,
  // the steps one after another.
  v1::ChromeTrace trace;
  io::readJsonFile(timeline.string(), trace);
  std::set<std::string> processes;
  std::map<std::string, std::vector<double>> measured_starts;  // per worker
  for (const auto& e : trace.traceevents()) {
    if (e.ph() == "M" && e.name() == "process_name") processes.insert(e.args().at("name"));
    if (e.ph() == "X" && e.pid() >= 1000) measured_starts[std::to_string(e.pid())].push_back(e.ts());
  }
  for (const char* name : {"a (predicted)", "b (predicted)", "a (measured)", "b (measured)"}) {
    EXPECT_TRUE(processes.count(name)) << name;
  }
  ASSERT_EQ(measured_starts.size(), 2u);
  for (const auto& [pid, starts] : measured_starts) {
    ASSERT_EQ(starts.size(), 8u) << pid;
    for (size_t i = 1; i < starts.size(); ++i) EXPECT_GT(starts[i], starts[i - 1]) << pid;
  }

  // Nothing trains after the run: `cluster stop` says so and leaves the workers up.
  const CapturedRun stop = run({"cluster", "stop", "--cluster", cluster});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_TRUE(contains(stop.out, "No worker of cluster duo was training")) << stop.out;

  const CapturedRun down = run({"cluster", "down", "--cluster", cluster});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_TRUE(contains(down.out, "Stopped 2 workers")) << down.out;
  EXPECT_FALSE(fs::exists(statePath()));
  EXPECT_EQ(run({"cluster", "status", "--cluster", cluster}).exit_code, 4);
}

TEST_F(CliRunTest, RunLocalStartsWorkersForTheRunAndStopsThem) {
  const std::string cluster = writeDuo();
  const CapturedRun r = run({"run", "--cluster", cluster, "--model", "mlp", "--steps", "3", "--local", "--worker-binary",
                           STAGECRAFT_FAKE_WORKER, "--no-profile"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Trained mlp on duo for 3 steps")) << r.out;
  EXPECT_TRUE(contains(r.out, "predicted")) << r.out;
  EXPECT_FALSE(fs::exists(statePath()));
  EXPECT_EQ(run({"cluster", "status", "--cluster", cluster}).exit_code, 4);  // nothing left running
}

TEST_F(CliRunTest, WorkerErrorDuringRunNamesTheWorkerAndStopsTheLocalWorkers) {
  const std::string cluster = writeDuo();
  setenv("STAGECRAFT_FAKE_FAIL", "b@2", 1);
  // Data parallel puts both devices to work, so b's error is in the run.
  const CapturedRun r = run({"run", "--cluster", cluster, "--model", "mlp", "--steps", "50", "--planner", "dp", "--local",
                           "--worker-binary", STAGECRAFT_FAKE_WORKER});
  unsetenv("STAGECRAFT_FAKE_FAIL");
  EXPECT_EQ(r.exit_code, 5) << r.err;
  const auto lines = linesOf(r.err);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(lines.back().starts_with("stagecraft-cli: worker 'b' (")) << lines.back();
  EXPECT_TRUE(contains(lines.back(), "failed: INTERNAL: stage 0 diverged")) << lines.back();
  EXPECT_FALSE(fs::exists(statePath()));
}

TEST_F(CliRunTest, WorkerLostDuringRunIsRecoveredFromAndReported) {
  const std::string cluster = writeDuo();
  setenv("STAGECRAFT_FAKE_DIE", "b@4", 1);
  const CapturedRun r = run({"run", "--cluster", cluster, "--model", "mlp", "--steps", "8", "--planner", "dp",
                             "--local", "--worker-binary", STAGECRAFT_FAKE_WORKER, "--backup-every", "2", "--json"});
  unsetenv("STAGECRAFT_FAKE_DIE");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::RunReport report;
  io::parseJson(r.out, report, "run --json");
  ASSERT_EQ(report.recoveries_size(), 1);
  // b reported step 3 before it vanished; a's report of step 3 may still be on its way when
  // b's loss is seen (fake workers do not wait for each other), so the run counted 2 or 3.
  const std::int64_t after = report.recoveries(0).failed_after();
  EXPECT_TRUE(after == 3 || after == 2) << after;
  // On stderr: what was lost, what the run does, and that it went on.
  EXPECT_TRUE(contains(r.err, "after step " + std::to_string(after) + ": b lost")) << r.err;
  EXPECT_TRUE(contains(r.err, "recovered from b lost in")) << r.err;
  // a kept its state after step 2 (a backup every 2 steps). Fake workers do not wait for
  // each other, so a loaded machine may let a run past step 6 (its last 3 states) before
  // the loss is seen: then the run replays from its deployment.
  const std::int64_t from = report.recoveries(0).step();
  EXPECT_TRUE(from == 2 || from == 0) << from;
  EXPECT_TRUE(contains(r.err, "replaying from step " + std::to_string(from))) << r.err;
  if (from == 2) EXPECT_TRUE(contains(r.err, "state of step 2: layers [0, 8) from a")) << r.err;
  EXPECT_EQ(report.steps(), 8);
  ASSERT_EQ(report.losses_size(), 8);
  ASSERT_EQ(report.recoveries_size(), 1);
  const v1::RunRecovery& rec = report.recoveries(0);
  EXPECT_EQ(rec.device(), "b");
  EXPECT_EQ(rec.kind(), "lost");
  EXPECT_EQ(rec.replayed_steps(), after - from);
  EXPECT_GT(rec.recovered_ms(), 0);
  EXPECT_EQ(rec.devices(), 1);
  // The run ends on a plan without b.
  for (const auto& stage : report.final_plan().stages()) {
    for (const auto& member : stage.devices()) EXPECT_EQ(member.device(), "a");
  }
  EXPECT_FALSE(fs::exists(statePath()));
}

TEST_F(CliRunTest, AStragglerIsReportedAndAutoReplanMovesWorkOffIt) {
  // Equal devices: fake workers compute equally fast whatever their specs say.
  const std::string cluster = writeDuo(true, 100);
  setenv("STAGECRAFT_FAKE_SLOW", "b@10", 1);  // b computes 3x as long from step 10 on
  // 20 ms a step: a segment (~0.5 s) then holds ~25 steps or fewer, so the re-plan asked for
  // at step 14 lands at a boundary before the run's end (one asked for in the last segment
  // is dropped; with 5 ms steps the rest of the run could be one segment).
  setenv("STAGECRAFT_FAKE_STEP_MS", "20", 1);
  const CapturedRun r = run({"run", "--cluster", cluster, "--model", "mlp", "--steps", "60", "--planner", "hybrid",
                             "--local", "--worker-binary", STAGECRAFT_FAKE_WORKER, "--auto-replan", "--json"});
  unsetenv("STAGECRAFT_FAKE_SLOW");
  unsetenv("STAGECRAFT_FAKE_STEP_MS");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, ": b takes ")) << r.err;
  EXPECT_TRUE(contains(r.err, "x as long as the plan expects, next to the other devices; re-planning, predicted "))
      << r.err;
  EXPECT_TRUE(contains(r.err, "re-planned around b at step ")) << r.err;
  v1::RunReport report;
  io::parseJson(r.out, report, "run --json");
  EXPECT_EQ(report.steps(), 60);
  ASSERT_GE(report.recoveries_size(), 1);
  EXPECT_EQ(report.recoveries(0).kind(), "straggler");
  EXPECT_EQ(report.recoveries(0).device(), "b");
  EXPECT_GE(report.recoveries(0).step(), 14);  // slow for 5 steps from step 10
  EXPECT_EQ(report.recoveries(0).replayed_steps(), 0);
}

TEST_F(CliRunTest, ADivergedRunStopsKeepsItsLastGoodWeightsAndResumesAtALowerRate) {
  const std::string cluster = writeDuo();
  const std::string checkpoints = (dir_ / "ckpt").string();
  // Step 21: just after the checkpoint of step 20, whose weights gave the exploding loss.
  setenv("STAGECRAFT_FAKE_DIVERGE", "21", 1);
  const CapturedRun r = run({"run", "--cluster", cluster, "--model", "mlp", "--steps", "40", "--planner", "dp",
                             "--local", "--worker-binary", STAGECRAFT_FAKE_WORKER, "--lr", "0.05",
                             "--checkpoint-dir", checkpoints, "--backup-every", "1", "--json"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "stagecraft-cli: training diverged at step 21: the loss")) << r.err;
  EXPECT_TRUE(contains(r.err, "run --resume " + checkpoints + " --steps 40 --lr 0.01")) << r.err;
  v1::RunReport report;
  io::parseJson(r.out, report, "run --json");
  ASSERT_TRUE(report.has_diverged());
  EXPECT_EQ(report.diverged().step(), 21);
  // Two steps back, from the workers' backups of every step, not the checkpoint of step 20.
  EXPECT_EQ(report.diverged().kept_step(), 19);
  EXPECT_EQ(report.steps(), report.diverged().kept_step());

  // Resumed at a fifth of the rate, the run goes on from the weights kept and ends.
  const CapturedRun again = run({"run", "--cluster", cluster, "--resume", checkpoints, "--steps", "40", "--local",
                                 "--worker-binary", STAGECRAFT_FAKE_WORKER, "--lr", "0.01", "--json"});
  unsetenv("STAGECRAFT_FAKE_DIVERGE");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  v1::RunReport resumed;
  io::parseJson(again.out, resumed, "run --json");
  EXPECT_FALSE(resumed.has_diverged());
  ASSERT_GT(resumed.losses_size(), 0);
  EXPECT_LT(resumed.final_loss(), 10);
}

TEST_F(CliRunTest, NoRecoverEndsTheRunWhenAWorkerIsLost) {
  const std::string cluster = writeDuo();
  setenv("STAGECRAFT_FAKE_DIE", "b@3", 1);
  const CapturedRun r = run({"run", "--cluster", cluster, "--model", "mlp", "--steps", "8", "--planner", "dp",
                             "--local", "--worker-binary", STAGECRAFT_FAKE_WORKER, "--no-recover"});
  unsetenv("STAGECRAFT_FAKE_DIE");
  EXPECT_EQ(r.exit_code, 4) << r.err;
  const auto lines = linesOf(r.err);
  ASSERT_FALSE(lines.empty());
  EXPECT_TRUE(lines.back().starts_with("stagecraft-cli: worker 'b' (")) << lines.back();
  // A worker that vanishes mid-run is said to have gone, not to disagree on TLS.
  EXPECT_TRUE(contains(lines.back(), ") went away while training (after step ")) << lines.back();
  EXPECT_FALSE(contains(r.err, "TLS")) << r.err;
}

/// `stagecraft-cli run` of `cluster` with local fake workers and 100000 steps of 50 ms in
/// the background, its stderr into `err`; its pid (-1 when it could not start).
pid_t startLongLocalRun(const std::string& cluster, const std::string& err) {
  std::vector<std::string> args = {STAGECRAFT_CLI, "run", "--cluster", cluster, "--model", "mlp", "--steps", "100000",
                                   "--local", "--worker-binary", STAGECRAFT_FAKE_WORKER, "--no-profile"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  setenv("STAGECRAFT_FAKE_STEP_MS", "50", 1);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, STAGECRAFT_CLI, &files, nullptr, argv.data(), environ);
  unsetenv("STAGECRAFT_FAKE_STEP_MS");
  posix_spawn_file_actions_destroy(&files);
  return spawned == 0 ? pid : -1;
}

/// Whether file `path` comes to hold `text` within `timeout`.
bool waitForText(const std::string& path, const std::string& text, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!contains(slurp(path), text)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

/// The exit status of child `pid` (128 + the signal when a signal ended it).
int exitStatus(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/// Starts startLongLocalRun(), sends it `signal` once it trained two steps, and returns
/// its exit status; -1 (and a failure) when it did not get there.
int signalMidRun(const std::string& cluster, const std::string& err, int signal) {
  const pid_t cli = startLongLocalRun(cluster, err);
  if (cli <= 0) {
    ADD_FAILURE() << "cannot start " << STAGECRAFT_CLI;
    return -1;
  }
  const bool trained = waitForText(err, "step 2/", std::chrono::seconds(60));
  ::kill(cli, signal);
  const int status = exitStatus(cli);
  if (!trained) ADD_FAILURE() << "no step 2 within 60 s: " << slurp(err);
  return trained ? status : -1;
}

TEST_F(CliRunTest, TheWorkersOfARunLocalEndWhenTheCliIsKilled) {
  using namespace std::chrono_literals;
  const std::string cluster = writeDuo();
  // A long run in the background, killed the way `| head` (SIGPIPE) or the OOM killer
  // (SIGKILL) ends it: no chance to stop its workers.
  const std::string err = (dir_ / "run.err").string();
  ASSERT_EQ(signalMidRun(cluster, err, SIGKILL), 128 + SIGKILL);
  v1::LocalClusterState state;  // left behind: nobody removed it
  io::readJsonFile(statePath().string(), state);
  ASSERT_EQ(state.workers_size(), 2);

  // Each worker sees the process that started it gone and shuts down.
  for (const auto& worker : state.workers()) {
    EXPECT_TRUE(test_support::waitUntilEnded(worker.pid(), 10s))
        << "worker '" << worker.device() << "' (pid " << worker.pid() << ") still runs: " << slurp(worker.log_path());
    EXPECT_TRUE(contains(slurp(worker.log_path()), "the process that started it has ended")) << slurp(worker.log_path());
  }
}

TEST_F(CliRunTest, SigtermStopsTheRunAndItsLocalWorkers) {
  const std::string cluster = writeDuo();
  const std::string err = (dir_ / "run.err").string();
  // As `timeout` or a service manager sends it.
  EXPECT_EQ(signalMidRun(cluster, err, SIGTERM), 1) << slurp(err);
  const std::string text = slurp(err);
  EXPECT_TRUE(contains(text, "stagecraft-cli: SIGTERM: stopping the workers (SIGTERM again to quit at once)")) << text;
  EXPECT_TRUE(contains(text, "the workers were stopped")) << text;
  EXPECT_FALSE(fs::exists(statePath()));  // stopped by the CLI itself, state and token removed
  EXPECT_EQ(run({"cluster", "status", "--cluster", cluster}).exit_code, 4);
}

}  // namespace
}  // namespace stagecraft
