// Discovery with real workers: a stagecraft-worker's UDP beacon reaches a BeaconListener
// and `stagecraft-cli discover`, carries its current state, and never holds up shutdown.
#include <google/protobuf/util/json_util.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "control/discovery.h"
#include "model/zoo.h"
#include "runtime_test_driver.h"
#include "stagecraft/v1/discovery.pb.h"

namespace stagecraft::worker::testing {
namespace {

std::vector<std::string> beaconFlags(const std::string& to, int port, int interval_ms = 100) {
  return {"--beacon-to", to, "--beacon-port", std::to_string(port), "--beacon-interval-ms", std::to_string(interval_ms)};
}

/// The first beacon from `name` matching `match`, within `timeout`.
std::optional<control::HeardBeacon> hear(control::BeaconListener& listener, const std::string& name,
                                         std::chrono::milliseconds timeout,
                                         const std::function<bool(const v1::Beacon&)>& match = {}) {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    for (auto& h : listener.poll(left)) {
      if (h.beacon.name() == name && (!match || match(h.beacon))) return h;
    }
  }
  return std::nullopt;
}

TEST(RuntimeBeacon, ListenerHearsAWorkerWithItsAddressAndState) {
  control::BeaconListener listener(0);
  WorkerProcess w("beaconed", beaconFlags("127.0.0.1", listener.port()));
  const auto first = hear(listener, "beaconed", 20s);
  ASSERT_TRUE(first) << "no beacon within 20 s";
  EXPECT_EQ(first->beacon.address(), w.address());
  EXPECT_EQ(first->beacon.tier(), "edge");
  EXPECT_EQ(first->beacon.state(), "idle");
  EXPECT_EQ(first->beacon.cores(), 1);
  EXPECT_GT(first->beacon.measured_gflops(), 0);
  EXPECT_GT(first->beacon.memory_mb(), 0);
  EXPECT_FALSE(first->beacon.version().empty());
  EXPECT_EQ(first->beacon.interval_ms(), 100);
  EXPECT_TRUE(first->beacon.insecure());  // the test driver starts workers with --insecure
  const auto next = hear(listener, "beaconed", 5s);
  ASSERT_TRUE(next);
  EXPECT_GT(next->beacon.sequence(), first->beacon.sequence());

  // Deployed: the next beacons say so, with the job.
  v1::StageAssignment a;
  a.set_job("beacon-job");
  *a.mutable_model() = zooModel("mlp");
  a.set_stages(1);
  a.set_layer_end(8);
  *a.add_group() = member(w.name(), w.address(), 4);
  a.set_batch_size(8);
  a.set_microbatches(2);
  a.mutable_optimizer()->set_lr(0.01);
  v1::DeployReply reply;
  ASSERT_TRUE(w.call(&v1::Worker::Stub::Deploy, a, &reply).ok());
  const auto deployed = hear(listener, "beaconed", 5s, [](const v1::Beacon& b) { return b.state() == "deployed"; });
  ASSERT_TRUE(deployed);
  EXPECT_EQ(deployed->beacon.job(), "beacon-job");
}

TEST(RuntimeBeacon, WorkerOnAllInterfacesIsResolvedToTheSender) {
  control::BeaconListener listener(0);
  std::vector<std::string> flags = beaconFlags("127.0.0.1", listener.port());
  flags.insert(flags.end(), {"--listen", "0.0.0.0:0"});
  WorkerProcess w("anywhere", flags);
  ASSERT_EQ(w.address().rfind("0.0.0.0:", 0), 0u) << w.address();
  const auto heard = hear(listener, "anywhere", 20s);
  ASSERT_TRUE(heard);
  EXPECT_EQ(heard->beacon.address(), "127.0.0.1:" + w.address().substr(w.address().rfind(':') + 1));
}

TEST(RuntimeBeacon, ALongIntervalDoesNotDelayShutdown) {
  control::BeaconListener listener(0);
  WorkerProcess w("prompt", beaconFlags("127.0.0.1", listener.port(), 600'000));
  ASSERT_TRUE(hear(listener, "prompt", 20s));  // the thread is in its long wait now
  const auto start = Clock::now();
  w.process().signal(SIGTERM);
  EXPECT_EQ(w.process().wait(10s), 0);
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(RuntimeBeacon, DiscoverJsonListsTheWorker) {
#ifndef STAGECRAFT_CLI
  GTEST_SKIP() << "stagecraft-cli is not built";
#else
  // Loopback broadcast: the test's listener and the CLI's share the port and both hear it.
  control::BeaconListener listener(0);
  const int port = listener.port();
  WorkerProcess w("discovered", beaconFlags("127.255.255.255", port));
  ASSERT_TRUE(hear(listener, "discovered", 20s));
  // Beside it, a forged beacon: a name and an address where no worker answers.
  std::atomic<bool> forging{true};
  std::thread forger([&] {
    control::BeaconSender sender("127.255.255.255", port);
    v1::Beacon forged;
    forged.set_name("forged");
    forged.set_tier("cloud");
    forged.set_address("127.0.0.1:" + std::to_string(unusedPort()));
    forged.set_state("idle");
    forged.set_measured_gflops(5000);
    forged.set_memory_mb(65536);
    forged.set_version("0.1.0");
    while (forging) {
      sender.send(forged);
      std::this_thread::sleep_for(100ms);
    }
  });
  const std::string command =
      std::string(STAGECRAFT_CLI) + " discover --port " + std::to_string(port) + " --seconds 1 --json";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0;) out.append(chunk, n);
  forging = false;
  forger.join();
  ASSERT_EQ(::pclose(pipe), 0) << out;
  v1::BeaconList list;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(out, &list).ok()) << out;
  int found = 0, forged = 0;
  ASSERT_EQ(list.checks_size(), list.beacons_size()) << out;
  for (int i = 0; i < list.beacons_size(); ++i) {
    const auto& b = list.beacons(i);
    // A beacon is a hint: the worker behind it must answer Describe under that name.
    if (b.name() == "forged") {
      ++forged;
      EXPECT_FALSE(list.checks(i).verified()) << out;
      EXPECT_NE(list.checks(i).reason().find("is not reachable"), std::string::npos) << out;
    }
    if (b.name() != "discovered") continue;
    ++found;
    EXPECT_EQ(b.address(), w.address());
    EXPECT_EQ(b.state(), "idle");
    EXPECT_TRUE(b.insecure());
    EXPECT_TRUE(list.checks(i).verified()) << list.checks(i).reason();
  }
  EXPECT_EQ(found, 1) << out;  // once, though it beaconed ten times
  EXPECT_EQ(forged, 1) << out;
  // The table says who may call it, and warns about a worker that answers anyone.
  FILE* table = ::popen((std::string(STAGECRAFT_CLI) + " discover --port " + std::to_string(port) +
                         " --seconds 1 2>&1").c_str(), "r");
  ASSERT_NE(table, nullptr);
  std::string text;
  for (size_t n; (n = std::fread(chunk, 1, sizeof chunk, table)) > 0;) text.append(chunk, n);
  ASSERT_EQ(::pclose(table), 0) << text;
  EXPECT_NE(text.find("anyone (--insecure)"), std::string::npos) << text;
  EXPECT_NE(text.find("warning: 1 worker answers every caller"), std::string::npos) << text;
  // The test's listener kept hearing it while the CLI listened.
  EXPECT_TRUE(hear(listener, "discovered", 5s));
#endif
}

}  // namespace
}  // namespace stagecraft::worker::testing
