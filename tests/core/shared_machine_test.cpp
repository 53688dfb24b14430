// Devices whose workers share a machine share its CPUs: the simulator slows the passes that
// run there at once when the threads computing at once ask for more CPUs than the machine
// has, and the calibration from telemetry does not count that slowing twice.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "control/replan.h"
#include "cost/cost_model.h"
#include "model/model_spec.h"
#include "sim/simulator.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

constexpr double kTolMs = 1e-9;

/// One linear layer of width 64.
ModelSpec oneLayer() {
  v1::Model m;
  m.set_name("one");
  m.set_task("classification");
  m.set_input_dtype("float32");
  m.add_input_shape(64);
  m.set_num_classes(64);
  m.add_layers()->set_kind("linear");
  m.mutable_layers(0)->set_out_features(64);
  return ModelSpec::fromProto(m);
}

/// Devices d0, d1 at these addresses, links too fast to matter.
Cluster twoDevices(const std::string& a0, const std::string& a1) {
  v1::Cluster c;
  c.set_name("two");
  c.set_default_latency_ms(1e-12);
  for (const auto& [name, address] : {std::pair{"d0", a0}, std::pair{"d1", a1}}) {
    auto* d = c.add_devices();
    d->set_name(name);
    d->set_tier("edge");
    d->set_gflops(10);
    d->set_memory_mb(8192);
    d->set_bandwidth_mbps(1e13);
    d->set_address(address);
  }
  return Cluster::fromProto(c);
}

/// d0's layer takes `ms0` forward and backward at micro-batch 8, d1's `ms1`; each keeps
/// `demand` CPUs busy on a machine of `cpus`.
v1::ProfileSet profiles(double ms0, double ms1, double demand, int cpus) {
  v1::ProfileSet set;
  for (const auto& [name, ms] : {std::pair{"d0", ms0}, std::pair{"d1", ms1}}) {
    auto* p = set.add_devices();
    p->set_device(name);
    p->set_model("one");
    auto* b = p->add_batches();
    b->set_micro_batch(8);
    auto* l = b->add_layers();
    l->set_layer(0);
    l->set_forward_ms(ms);
    l->set_backward_ms(ms);
    p->set_cpu_demand(demand);
    p->set_machine_cpus(cpus);
  }
  return set;
}

/// Both devices in one data-parallel stage, 8 samples each of one micro-batch: their passes
/// start together.
Plan sideBySide() {
  Plan p;
  p.batch_size = 16;
  p.microbatches = 1;
  p.stages = {Stage{0, 1, {{0, 8}, {1, 8}}}};
  return p;
}

struct Pass {
  double start_ms = 0, end_ms = 0;
};

Pass pass(const SimulationResult& r, int device, EventKind kind) {
  for (const auto& e : r.timeline) {
    if (e.device == device && e.kind == kind) return {e.start_ms, e.end_ms};
  }
  ADD_FAILURE() << "no " << eventKindName(kind) << " on device " << device;
  return {};
}

/// sideBySide() on two devices of one machine with `cpus` CPUs, d0's passes 1 ms of work,
/// d1's 3 ms, each device demanding `demand` CPUs.
SimulationResult sideBySideOnOneMachine(double demand, int cpus) {
  const ModelSpec model = oneLayer();
  const Cluster cluster = twoDevices("127.0.0.1:5001", "127.0.0.1:5002");
  CostModel cost(model, cluster);
  cost.setProfiles(profiles(1, 3, demand, cpus));
  return simulate(sideBySide(), cost);
}

TEST(SharedMachine, PassesThatRunAtOnceShareTheCpuAndEachRunsAloneAtFullSpeed) {
  const SimulationResult r = sideBySideOnOneMachine(1.0, 1);
  // Both at half speed until d0's forward (1 ms of work) ends at 2; d0's backward runs
  // beside d1's forward at half speed too, to 4, when d1 has 1 ms of its 3 left: alone,
  // it ends at 5, and its backward takes its own 3 ms.
  EXPECT_NEAR(pass(r, 0, EventKind::Forward).end_ms, 2, kTolMs);
  EXPECT_NEAR(pass(r, 0, EventKind::Backward).start_ms, 2, kTolMs);
  EXPECT_NEAR(pass(r, 0, EventKind::Backward).end_ms, 4, kTolMs);
  EXPECT_NEAR(pass(r, 1, EventKind::Forward).end_ms, 5, kTolMs);
  EXPECT_NEAR(pass(r, 1, EventKind::Backward).end_ms, 8, kTolMs);
  EXPECT_NEAR(r.busy_fraction[1] * r.iteration_ms, 8, kTolMs);  // the stretched passes are its compute
}

TEST(SharedMachine, NothingIsSlowedWhenTheCpusSufficeOrTheMachinesDifferOrNothingWasMeasured) {
  const ModelSpec model = oneLayer();
  const auto d1_backward_end = [&](const Cluster& cluster, double demand, int cpus) {
    CostModel cost(model, cluster);
    cost.setProfiles(profiles(1, 3, demand, cpus));
    return pass(simulate(sideBySide(), cost), 1, EventKind::Backward).end_ms;
  };
  const Cluster one_machine = twoDevices("localhost:5001", "127.0.0.1:5002");  // both loopback
  EXPECT_NEAR(d1_backward_end(one_machine, 1.0, 1), 8, kTolMs);
  EXPECT_NEAR(d1_backward_end(one_machine, 1.0, 2), 6, kTolMs);   // a CPU each
  EXPECT_NEAR(d1_backward_end(one_machine, 0.5, 2), 6, kTolMs);   // two devices emulated 2x slower
  EXPECT_NEAR(d1_backward_end(one_machine, 0.0, 0), 6, kTolMs);   // profiles that did not measure it
  EXPECT_NEAR(d1_backward_end(twoDevices("10.0.0.1:5001", "10.0.0.2:5001"), 1.0, 1), 6, kTolMs);
  EXPECT_NEAR(d1_backward_end(twoDevices("", ""), 1.0, 1), 6, kTolMs);  // no address: a machine each
  // 3 CPUs asked of 2: each at two thirds of its speed while both run.
  CostModel cost(model, one_machine);
  cost.setProfiles(profiles(2, 2, 1.5, 2));
  EXPECT_NEAR(pass(simulate(sideBySide(), cost), 0, EventKind::Forward).end_ms, 3, kTolMs);
}

TEST(SharedMachine, BurstsOfDevicesThatComputePartOfTheTimeMeetOnTooFewCpus) {
  const std::vector<double> demo = {1.0, 0.45, 0.45};  // agx-xavier beside two boards at 1/2.2
  // agx-xavier's pass is slowed while both boards compute (0.45 x 0.45 of the time), to 2/3.
  EXPECT_NEAR(sharedCpuStretch(demo, 0, 2), 1 + 0.45 * 0.45 * 0.5, 1e-12);
  // A board's bursts are slowed while the other board's meet them; its sleeps are not.
  EXPECT_NEAR(sharedCpuStretch(demo, 1, 2), 0.55 + 0.45 * (0.55 + 0.45 * 1.5), 1e-12);
  EXPECT_NEAR(sharedCpuStretch(std::vector{1.0, 0.45}, 0, 2), 1, 1e-12);  // however they meet, they fit
  // Two devices emulated 2x slower on one CPU: half of each one's bursts meet the other's.
  EXPECT_NEAR(sharedCpuStretch(std::vector{0.5, 0.5}, 0, 1), 1.25, 1e-12);
  // Demands of a CPU or more compute throughout: the CPUs shared in proportion.
  EXPECT_NEAR(sharedCpuStretch(std::vector{1.5, 1.5}, 0, 2), 1.5, 1e-12);
  EXPECT_NEAR(sharedCpuStretch(std::vector{2.0, 0.5}, 1, 2), 0.5 + 0.5 * 1.5, 1e-12);
  // More devices beside it never make a pass faster, also past the number summed exactly
  // (24 beside it, a normal curve beyond).
  for (const double own : {0.3, 1.0}) {
    for (const double step : {0.0, 0.03}) {
      std::vector<double> demands = {own};
      double last = sharedCpuStretch(demands, 0, 2);
      for (int i = 0; i < 40; ++i) {
        demands.push_back(0.05 + step * i);
        const double now = sharedCpuStretch(demands, 0, 2);
        EXPECT_GE(now, last - 1e-3) << demands.size() << " devices, own demand " << own;
        last = now;
      }
    }
  }
}

TEST(SharedMachine, TwoDevicesEmulatedTwiceSlowerOnOneCpuMeetHalfTheirBursts) {
  const SimulationResult r = sideBySideOnOneMachine(0.5, 1);
  // Each at 1 / 1.25 of its speed while both run: d0's forward and backward end at 1.25 and
  // 2.5, when d1 has 1 ms of its forward left; alone, it ends at 3.5, its backward at 6.5.
  EXPECT_NEAR(pass(r, 0, EventKind::Forward).end_ms, 1.25, kTolMs);
  EXPECT_NEAR(pass(r, 0, EventKind::Backward).end_ms, 2.5, kTolMs);
  EXPECT_NEAR(pass(r, 1, EventKind::Forward).end_ms, 3.5, kTolMs);
  EXPECT_NEAR(pass(r, 1, EventKind::Backward).end_ms, 6.5, kTolMs);
}

TEST(SharedMachine, APipelineWhoseStagesTakeTurnsIsNotSlowed) {
  const ModelSpec model = testing::uniformLinearModel(2, 64);
  const Cluster cluster = twoDevices("127.0.0.1:5001", "127.0.0.1:5002");
  CostModel alone(model, cluster);
  CostModel shared(model, cluster);
  v1::ProfileSet set;
  for (const char* name : {"d0", "d1"}) {
    auto* p = set.add_devices();
    p->set_device(name);
    auto* b = p->add_batches();
    b->set_micro_batch(4);
    for (int l = 0; l < 2; ++l) {
      auto* t = b->add_layers();
      t->set_layer(l);
      t->set_forward_ms(1);
      t->set_backward_ms(2);
    }
  }
  alone.setProfiles(set);
  for (auto& p : *set.mutable_devices()) {
    p.set_cpu_demand(1);
    p.set_machine_cpus(1);
  }
  shared.setProfiles(set);
  Plan plan;
  plan.batch_size = 4;
  plan.stages = {Stage{0, 1, {{0, 4}}}, Stage{1, 2, {{1, 4}}}};
  plan.microbatches = 1;  // one micro-batch: the stages never compute at once
  EXPECT_NEAR(simulate(plan, shared).iteration_ms, simulate(plan, alone).iteration_ms, kTolMs);
  plan.batch_size = 16;
  plan.microbatches = 4;  // four: they overlap, and share the one CPU
  EXPECT_GT(simulate(plan, shared).iteration_ms, simulate(plan, alone).iteration_ms + 1);
}

/// A member's report of step 3: one forward and one backward of the given lengths.
v1::IterationReport report(double forward_ms, double backward_ms) {
  return testing::passesReport(3, forward_ms, backward_ms);
}

TEST(SharedMachine, CalibrationDoesNotCountTheSharingTwice) {
  const ModelSpec model = oneLayer();
  const Cluster cluster = twoDevices("127.0.0.1:5001", "127.0.0.1:5002");
  CostModel cost(model, cluster);
  cost.setProfiles(profiles(1, 3, 1.0, 1));
  const Plan plan = sideBySide();
  // The members measured what the simulator predicts beside each other: d0 2 + 2 ms, d1
  // 5 + 3 ms. Their speeds are as profiled.
  const std::vector<v1::IterationReport> as_simulated = {report(2, 2), report(5, 3)};
  std::vector<double> factors = control::computeFactors(plan, cost, as_simulated);
  ASSERT_EQ(factors.size(), 2u);
  EXPECT_NEAR(factors[0], 1, 1e-9);
  EXPECT_NEAR(factors[1], 1, 1e-9);
  // Both 20 % slower than that: the calibrated model, sharing the CPU again, predicts it.
  factors = control::computeFactors(plan, cost, std::vector{report(2.4, 2.4), report(6, 3.6)});
  EXPECT_NEAR(factors[0], 1.2, 1e-9);
  EXPECT_NEAR(factors[1], 1.2, 1e-9);
  CostModel calibrated = cost;
  calibrated.setComputeFactors(factors);
  EXPECT_NEAR(simulate(plan, calibrated).iteration_ms, 1.2 * simulate(plan, cost).iteration_ms, 1e-9);
}

}  // namespace
}  // namespace stagecraft
