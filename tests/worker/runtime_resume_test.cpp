// The coordinator dies, the run does not: `stagecraft-cli run --checkpoint-dir D` is
// SIGKILLed mid-run against real workers, `run --resume D` goes on from the last checkpoint
// on the same workers (no restart) with the losses of a run never interrupted. And a running
// `run` re-plans on SIGHUP, as a script would ask it to.
#include <signal.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "captured_run.h"
#include "io/json_io.h"
#include "model/zoo.h"
#include "runtime_test_driver.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft::worker::testing {
namespace {

namespace fs = std::filesystem;


class RuntimeResume : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stagecraft-resume-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  v1::RunReport runJson(std::vector<std::string> args) {
    args.insert(args.begin(), "run");
    args.push_back("--json");
    const test_support::CapturedRun r = test_support::runCaptured(STAGECRAFT_CLI, args, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    v1::RunReport report;
    if (r.exit_code == 0) io::parseJson(r.out, report, "run --json");
    last_err_ = r.err;
    return report;
  }

  fs::path dir_;
  std::string last_err_;
};

TEST_F(RuntimeResume, KilledCoordinatorResumesFromItsCheckpointWithTheSameLosses) {
  auto workers = startWorkers({"r0", "r1"});
  const v1::Cluster c = clusterProtoOf(workers, "resume");
  const std::string cluster = (dir_ / "resume.json").string();
  const std::string model = (dir_ / "mlp-128.json").string();
  std::ofstream(cluster) << io::toJson(c);
  std::ofstream(model) << io::toJson(smallMlp());
  const std::vector<std::string> common = {"--cluster", cluster, "--no-profile", "--calibrate-after", "0"};
  const std::vector<std::string> plan = {"--model", model, "--batch", "8", "--microbatches", "2",
                                         "--planner", "gpipe", "--seed", "11"};
  constexpr int kSteps = 8;

  // Uninterrupted.
  std::vector<std::string> args = common;
  args.insert(args.end(), plan.begin(), plan.end());
  args.insert(args.end(), {"--steps", std::to_string(kSteps)});
  const v1::RunReport whole = runJson(args);
  ASSERT_EQ(whole.losses_size(), kSteps);

  // Killed once it reports step 5, with checkpoints every 2 steps; it would train on far
  // past kSteps, so the last checkpoint is that of step 4 or, if step 6 slipped in before
  // the kill landed, of step 6.
  const std::string checkpoints = (dir_ / "checkpoints").string();
  std::string command = std::string("exec ") + STAGECRAFT_CLI + " run";
  for (const auto& a : common) command += " '" + a + "'";
  for (const auto& a : plan) command += " '" + a + "'";
  command += " --steps 1000 --checkpoint-dir '" + checkpoints +
             "' --checkpoint-every 2 2>&1";
  {
    ChildProcess cli({"/bin/sh", "-c", command});
    std::string line;
    for (int i = 0; i < 200 && line.rfind("step 5/", 0) != 0; ++i) line = cli.readLine(std::chrono::seconds(60));
    ASSERT_EQ(line.rfind("step 5/", 0), 0u) << "the run never reached step 5; last line: " << line;
    cli.signal(SIGKILL);
    cli.wait(std::chrono::seconds(10));
  }
  ASSERT_TRUE(fs::exists(fs::path(checkpoints) / "checkpoint.pb"));
  EXPECT_FALSE(fs::exists(fs::path(checkpoints) / "checkpoint.pb.tmp"));

  // Resumed on the same workers, without restarting them.
  args = common;
  args.insert(args.end(), {"--resume", checkpoints, "--steps", std::to_string(kSteps)});
  const v1::RunReport resumed = runJson(args);
  const int n = resumed.losses_size();  // the steps after the checkpoint
  ASSERT_TRUE(n == kSteps - 4 || n == kSteps - 6) << n << " steps resumed; " << last_err_;
  for (int i = 0; i < n; ++i) {
    const double expected = whole.losses(kSteps - n + i);
    EXPECT_NEAR(resumed.losses(i), expected, 1e-4 * std::abs(expected)) << "step " << kSteps - n + i + 1;
  }
  EXPECT_GT(std::abs(whole.losses(kSteps - 1) - whole.losses(0)), 1e-3);  // the losses move
}

TEST_F(RuntimeResume, SighupReplansARunningRunAtAStepBoundary) {
  // Fake workers (no LibTorch needed for the lifecycle), 20 ms a step, started by --local.
  v1::Cluster c;
  c.set_name("hangup-" + std::to_string(::getpid()));
  for (const char* name : {"a", "b"}) {
    auto* d = c.add_devices();
    d->set_name(name);
    d->set_tier("edge");
    d->set_gflops(100);
    d->set_memory_mb(4000);
    d->set_bandwidth_mbps(1000);
  }
  const std::string cluster = (dir_ / "hangup.json").string();
  std::ofstream(cluster) << io::toJson(c);
  const std::string command = std::string("XDG_RUNTIME_DIR='") + dir_.string() +
                              "' STAGECRAFT_FAKE_STEP_MS=20 exec " + STAGECRAFT_CLI + " run --cluster '" + cluster +
                              "' --model mlp --steps 60 --planner dp --no-profile --calibrate-after 0 --local" +
                              " --worker-binary " + STAGECRAFT_FAKE_WORKER + " 2>&1";
  ChildProcess cli({"/bin/sh", "-c", command});
  std::string line;
  for (int i = 0; i < 500 && line.rfind("step 3/", 0) != 0; ++i) line = cli.readLine(std::chrono::seconds(30));
  ASSERT_EQ(line.rfind("step 3/", 0), 0u) << "the run never reached step 3; last line: " << line;
  cli.signal(SIGHUP);
  bool replanned = false;
  bool trained_on = false;
  for (int i = 0; i < 1000; ++i) {
    line = cli.readLine(std::chrono::seconds(30));
    if (line.empty() && i > 0) break;
    if (line.rfind("re-planned at step ", 0) == 0) replanned = true;
    if (replanned && line.rfind("step 60/60", 0) == 0) trained_on = true;
    if (line.rfind("  re-planned after step ", 0) == 0) break;  // the summary's line
  }
  EXPECT_TRUE(replanned) << "no re-plan after SIGHUP; last line: " << line;
  EXPECT_TRUE(trained_on) << "the run did not reach its last step after the re-plan";
  EXPECT_EQ(cli.wait(std::chrono::seconds(30)), 0);
}

}  // namespace
}  // namespace stagecraft::worker::testing
