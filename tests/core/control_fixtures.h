#pragma once

// Helpers shared by the coordinator's tests.

#include <chrono>
#include <cstdint>
#include <string>

#include "control/coordinator.h"
#include "control/net.h"
#include "plan/plan.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::testing {

/// Short deadlines so failure tests end in a few seconds.
inline control::CoordinatorOptions quickOptions() {
  control::CoordinatorOptions options;
  options.call_timeout = std::chrono::milliseconds(2000);
  options.probe_after = std::chrono::milliseconds(200);
  options.silence_limit = std::chrono::milliseconds(3000);
  return options;
}

/// A port nothing listens on.
inline int closedPort() { return control::freeLoopbackPorts(1).front(); }

/// A worker's report of one finished step.
inline v1::TelemetryEvent iteration(const std::string& job, std::int64_t step, double loss, int samples, double ms) {
  v1::TelemetryEvent e;
  e.set_job(job);
  e.mutable_iteration()->set_step(step);
  e.mutable_iteration()->set_loss(loss);
  e.mutable_iteration()->set_loss_samples(samples);
  e.mutable_iteration()->set_iteration_ms(ms);
  return e;
}

/// A hand-made three-stage plan of the 8-layer test model over five devices: groups of
/// two, one and two members, batch 16 in 4 micro-batches.
inline Plan hybridPlan() {
  Plan plan;
  plan.model = "uniform";
  plan.cluster = "test";
  plan.planner = "hand";
  plan.batch_size = 16;
  plan.microbatches = 4;  // micro-batches of 4 samples
  plan.schedule = Schedule::OneFOneB;
  plan.optimizer = Optimizer::Adam;
  plan.stages = {{0, 2, {{1, 3}, {0, 1}}}, {2, 5, {{2, 4}}}, {5, 8, {{4, 1}, {3, 3}}}};
  return plan;
}

}  // namespace stagecraft::testing
