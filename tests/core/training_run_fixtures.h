// In-process FakeWorkers and quick settings for the TrainingRun tests
// (training_run_test.cpp, training_run_recovery_test.cpp).
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "control/net.h"
#include "control/training_run.h"
#include "control_fixtures.h"
#include "fake_worker.h"
#include "test_fixtures.h"

namespace stagecraft::control::testing_run {

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

inline Plan planOver(std::vector<Stage> stages) {
  Plan p;
  p.model = "uniform";
  p.batch_size = 8;
  p.microbatches = 2;
  p.stages = std::move(stages);
  return p;
}

inline RunSettings quickSettings() {
  RunSettings s;
  s.segment = std::chrono::milliseconds(20);
  s.probe_deadline = std::chrono::milliseconds(500);
  s.planner = "hybrid";
  return s;
}

}  // namespace stagecraft::control::testing_run
