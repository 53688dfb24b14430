// LocalCluster against the fake worker as a process: one worker per device with the
// device's relative speed, a state file, a clear error when a worker dies or is missing.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "control/coordinator.h"
#include "control/local_cluster.h"
#include "control/net.h"
#include "control_fixtures.h"
#include "io/error.h"
#include "io/json_io.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

using testing::quickOptions;
using testing::closedPort;

namespace fs = std::filesystem;
using control::Coordinator;
using control::CoordinatorOptions;
using control::WorkerError;
using std::chrono::milliseconds;

class LocalClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "stagecraft-local-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    // Workers a failed test left behind.
    if (auto left = control::LocalCluster::find("trio", dir_.string())) left->stop(milliseconds(1000));
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  fs::path dir_;
};

TEST_F(LocalClusterTest, StartsOneWorkerPerDeviceKeepingRelativeSpeedsAndStopsThem) {
  v1::Cluster proto = testing::makeCluster({400, 100, 50}, 2048, 100).toProto();
  proto.set_name("trio");
  const int port = closedPort();
  proto.mutable_devices(0)->set_address("127.0.0.1:" + std::to_string(port));  // kept
  // d1 has no address and d2 repeats d0's port: both get free ports.
  proto.mutable_devices(2)->set_address("10.1.1.1:" + std::to_string(port));
  const Cluster cluster = Cluster::fromProto(proto);

  control::LocalClusterOptions options;
  options.worker_binary = STAGECRAFT_FAKE_WORKER;
  options.state_directory = dir_.string();
  options.startup_timeout = milliseconds(20000);
  control::LocalCluster local = control::LocalCluster::start(cluster, "", options);
  EXPECT_EQ(local.statePath(), (dir_ / "trio.json").string());
  ASSERT_TRUE(fs::exists(local.statePath()));
  ASSERT_EQ(local.state().workers_size(), 3);
  EXPECT_EQ(local.state().workers(0).address(), "127.0.0.1:" + std::to_string(port));
  EXPECT_NE(local.state().workers(2).address(), local.state().workers(0).address());

  // Another process finds them through the state file.
  auto found = control::LocalCluster::find("trio", dir_.string());
  ASSERT_TRUE(found);
  EXPECT_TRUE(found->anyAlive());
  EXPECT_TRUE(found->deadWorkers().empty());

  // Its workers ask for the token it made, private to this user.
  const std::string token_file = found->state().token_file();
  ASSERT_FALSE(token_file.empty());
  EXPECT_EQ(fs::status(token_file).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(found->token().size(), 64u);
  EXPECT_THROW(Coordinator(found->apply(cluster), quickOptions()).describe(), WorkerError);
  CoordinatorOptions with_token = quickOptions();
  with_token.token = found->token();
  Coordinator coordinator(found->apply(cluster), with_token);
  const auto infos = coordinator.describe();
  EXPECT_EQ(infos[0].name(), "d0");
  EXPECT_DOUBLE_EQ(infos[0].emulation().slowdown(), 1);
  EXPECT_DOUBLE_EQ(infos[1].emulation().slowdown(), 4);
  EXPECT_DOUBLE_EQ(infos[2].emulation().slowdown(), 8);
  EXPECT_DOUBLE_EQ(infos[2].emulation().bandwidth_mbps(), 100);
  EXPECT_DOUBLE_EQ(infos[2].emulation().memory_mb(), 2048);

  // Starting it twice is refused while it runs.
  EXPECT_THROW(control::LocalCluster::start(cluster, "", options), Error);

  found->stop(milliseconds(3000));
  EXPECT_FALSE(local.anyAlive());
  EXPECT_FALSE(fs::exists(local.statePath()));
  EXPECT_FALSE(fs::exists(token_file));
}

TEST_F(LocalClusterTest, WorkerThatExitsAtOnceIsReportedWithItsLog) {
  const Cluster cluster = testing::makeCluster({100});
  control::LocalClusterOptions options;
  options.worker_binary = "/bin/false";
  options.state_directory = dir_.string();
  try {
    control::LocalCluster::start(cluster, "", options);
    FAIL();
  } catch (const WorkerError& e) {
    EXPECT_NE(std::string(e.what()).find("worker 'd0'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("exited before answering Describe"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir_ / "test.json"));
}

TEST_F(LocalClusterTest, WorkerBinaryIsFoundOrTheErrorSaysWhere) {
  EXPECT_EQ(control::findWorkerBinary(STAGECRAFT_FAKE_WORKER, ""), STAGECRAFT_FAKE_WORKER);
  EXPECT_THROW(control::findWorkerBinary((dir_ / "nope").string(), ""), Error);

  // Next to the CLI, in an installed layout.
  fs::create_directories(dir_ / "bin");
  fs::copy_file("/bin/true", dir_ / "bin" / "stagecraft-worker");
  const std::string cli = (dir_ / "bin" / "stagecraft-cli").string();
  unsetenv("STAGECRAFT_WORKER");
  EXPECT_EQ(control::findWorkerBinary("", cli), (dir_ / "bin" / "stagecraft-worker").string());

  // The environment wins over the neighbourhood.
  setenv("STAGECRAFT_WORKER", STAGECRAFT_FAKE_WORKER, 1);
  EXPECT_EQ(control::findWorkerBinary("", cli), STAGECRAFT_FAKE_WORKER);
  unsetenv("STAGECRAFT_WORKER");

  const std::string saved_path = std::getenv("PATH") ? std::getenv("PATH") : "";
  setenv("PATH", dir_.c_str(), 1);
  try {
    control::findWorkerBinary("", (dir_ / "elsewhere" / "stagecraft-cli").string());
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot find stagecraft-worker"), std::string::npos) << e.what();
  }
  setenv("PATH", saved_path.c_str(), 1);
}

}  // namespace
}  // namespace stagecraft
