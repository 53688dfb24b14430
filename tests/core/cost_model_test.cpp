#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <string>

#include "cost/cost_model.h"
#include "io/error.h"
#include "plan/validation.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

using testing::addTimedDevice;
using testing::makeCluster;
using testing::uniformLinearModel;

TEST(CostModel, ComputeTimeIsFlopsOverSpeed) {
  const ModelSpec model = uniformLinearModel(4, 100);  // 20 kFLOP forward per layer and sample
  const Cluster cluster = makeCluster({10, 40});
  const CostModel cost(model, cluster);
  EXPECT_DOUBLE_EQ(cost.forwardMs(0, 0, 4, 5), 5 * 4 * 20000 / 10e9 * 1e3);
  EXPECT_DOUBLE_EQ(cost.backwardMs(1, 1, 3, 2), 2 * 2 * 40000 / 40e9 * 1e3);
  EXPECT_EQ(cost.forwardMs(0, 2, 2, 5), 0);
}

TEST(CostModel, TransferIsLatencyPlusBytesOverBandwidth) {
  const ModelSpec model = uniformLinearModel(2, 10);
  const Cluster cluster = makeCluster({1, 1}, 1e6, 80, 3);
  const CostModel cost(model, cluster);
  EXPECT_DOUBLE_EQ(cost.transferMs(0, 1, 1e6), 3 + 1e6 * 8 / 80e6 * 1e3);
  EXPECT_DOUBLE_EQ(cost.wireMs(0, 1, 1e6), 100);
  EXPECT_EQ(cost.transferMs(1, 1, 1e6), 0);
}

TEST(CostModel, RingAllReduceFollowsTheClosedForm) {
  const ModelSpec model = uniformLinearModel(2, 10);
  const Cluster cluster = makeCluster({1, 1, 1, 1}, 1e6, 1000, 0.25);
  const CostModel cost(model, cluster);
  const std::vector<int> group{0, 1, 2, 3};
  const double bytes = 4e6;
  EXPECT_DOUBLE_EQ(cost.allReduceMs(group, bytes), 2.0 * 3 / 4 * bytes * 8 / 1e9 * 1e3 + 2 * 3 * 0.25);
  EXPECT_EQ(cost.allReduceMs(std::vector<int>{2}, bytes), 0);
}

TEST(CostModel, OptimizerStateCountsInMemory) {
  const ModelSpec model = uniformLinearModel(1, 1000);  // 1e6 parameters
  const Cluster cluster = makeCluster({1});
  EXPECT_DOUBLE_EQ(CostModel(model, cluster, Optimizer::Sgd).stateBytes(0, 1), 4e6 * 3);
  EXPECT_DOUBLE_EQ(CostModel(model, cluster, Optimizer::Adam).stateBytes(0, 1), 4e6 * 4);
  const CostModel cost(model, cluster);
  EXPECT_DOUBLE_EQ(cost.activationBytes(0, 1, 3, 2), model.savedBytes(0, 1) * 6);
}

TEST(CostModel, BackupsCountInMemoryWhereTheyAreKept) {
  const ModelSpec model = uniformLinearModel(2, 1000);  // 1e6 parameters per layer
  // 40 MB each: stage 0 alone (12 MB of state) fits; with 3 own copies of its weights and
  // momentum (+24 MB) it still does; holding stage 1's 3 copies (+24 MB) as well it does not.
  const Cluster cluster = makeCluster({1, 1}, 40 / 1.048576);
  Plan plan;
  plan.model = model.name();
  plan.batch_size = 2;
  plan.microbatches = 1;
  plan.stages = {{0, 1, {{0, 2}}}, {1, 2, {{1, 2}}}};
  CostModel cost(model, cluster, Optimizer::Sgd);
  EXPECT_DOUBLE_EQ(cost.backupBytes(0, 1), 4e6 * 2);
  EXPECT_DOUBLE_EQ(cost.heldBackupBytes(plan, 0), 0);
  EXPECT_TRUE(validatePlan(plan, cost).empty());

  cost.setBackups(kOwnBackups, kHeldBackups);
  EXPECT_DOUBLE_EQ(cost.stateBytes(0, 1), 4e6 * 3 + 3 * 4e6 * 2);
  // Stage 1 backs up to device 0 (the last stage's go to the first), stage 0 to device 1.
  EXPECT_EQ(plan.backupTarget(0), 1);
  EXPECT_EQ(plan.backupTarget(1), 0);
  EXPECT_DOUBLE_EQ(cost.heldBackupBytes(plan, 0), kHeldBackups * 4e6 * 2);
  const auto errors = validatePlan(plan, cost);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("previous stage's backups"), std::string::npos) << errors[0];
  EXPECT_DOUBLE_EQ(estimatePlan(plan, cost).memory_bytes[0], cost.memoryBytes(0, 1, 2, 1) + kHeldBackups * 4e6 * 2);

  // One stage of two members: the second holds the first's copies; one device holds none.
  Plan one = plan;
  one.stages = {{0, 2, {{0, 1}, {1, 1}}}};
  EXPECT_EQ(one.backupTarget(0), 1);
  one.stages = {{0, 2, {{0, 2}}}};
  EXPECT_EQ(one.backupTarget(0), -1);
  EXPECT_THROW(cost.setBackups(-1, 0), std::logic_error) << "a programming error, not input";
}

TEST(CostModel, ABackupRoundCostsTheBusiestDeviceItsCopiesAndItsLink) {
  const ModelSpec model = uniformLinearModel(2, 1024);  // 1 Mi parameters per layer: 8 MiB of state with SGD
  // Three devices on a 1000 Mbit/s network: 8 MiB take 67 ms on the wire.
  const Cluster cluster = makeCluster({1, 1, 1}, 1e6, 1000);
  CostModel cost(model, cluster, Optimizer::Sgd);
  EXPECT_DOUBLE_EQ(cost.backupBytes(0, 1) / (1024.0 * 1024.0), 8.0);
  EXPECT_DOUBLE_EQ(cost.copyMsPerMb(0), kAssumedCopyMsPerMb);  // not profiled
  Plan plan;
  plan.model = model.name();
  plan.batch_size = 2;
  plan.microbatches = 1;
  plan.stages = {{0, 1, {{0, 2}}}, {1, 2, {{1, 2}}}};
  // Each device sends its stage's 8 MiB (2 passes) and takes the other's (2 passes).
  BackupCost c = backupCost(plan, cost);
  EXPECT_NEAR(c.cpu_ms, (2 + 2) * 8 * kAssumedCopyMsPerMb, 1e-9);
  EXPECT_DOUBLE_EQ(c.link_ms, cost.wireMs(0, 1, cost.backupBytes(0, 1)));

  // Device 1 profiled at 4 ms/MiB: its copies are the busiest; device 2 does nothing.
  const Cluster fast = makeCluster({1, 1, 1}, 1e6, 1e9);
  CostModel slow_copies(model, fast, Optimizer::Sgd);
  v1::ProfileSet set;
  addTimedDevice(set, "d1", 2, 1, 2)->set_copy_ms_per_mb(4);
  slow_copies.setProfiles(set);
  EXPECT_DOUBLE_EQ(slow_copies.copyMsPerMb(1), 4);
  c = backupCost(plan, slow_copies);
  EXPECT_NEAR(c.cpu_ms, (2 + 2) * 8 * 4.0, 1e-6);
  EXPECT_LT(c.link_ms, 1e-3);
  // Adam's two moments make the state half again as large.
  EXPECT_NEAR(backupCost(plan, CostModel(model, fast, Optimizer::Adam)).cpu_ms, (2 + 2) * 12 * kAssumedCopyMsPerMb,
              1e-6);

  // One device alone sends nothing.
  plan.stages = {{0, 2, {{0, 2}}}};
  c = backupCost(plan, cost);
  EXPECT_EQ(c.cpu_ms, 0);
  EXPECT_EQ(c.link_ms, 0);
}

TEST(CostModel, TheCopiesOfDevicesSharingAMachineAddUpOnIt) {
  const ModelSpec model = uniformLinearModel(2, 1024);  // 8 MiB of state a layer with SGD
  Plan plan;
  plan.model = model.name();
  plan.batch_size = 2;
  plan.microbatches = 1;
  plan.stages = {{0, 1, {{0, 2}}}, {1, 2, {{1, 2}}}};
  const double one_device = (2 + 2) * 8 * kAssumedCopyMsPerMb;  // sends 8 MiB, takes 8 MiB
  const auto at = [&](const std::string& a, const std::string& b) {
    v1::Cluster proto = makeCluster({1, 1, 1}, 1e6, 1000).toProto();
    proto.mutable_devices(0)->set_address(a);
    proto.mutable_devices(1)->set_address(b);
    const Cluster cluster = Cluster::fromProto(proto);
    return backupCost(plan, CostModel(model, cluster, Optimizer::Sgd)).cpu_ms;
  };
  EXPECT_NEAR(at("10.0.0.5:7001", "10.0.0.6:7001"), one_device, 1e-9);  // two machines
  EXPECT_NEAR(at("10.0.0.5:7001", "10.0.0.5:7002"), 2 * one_device, 1e-9);
  EXPECT_NEAR(at("Board.lan:7001", "board.lan:7002"), 2 * one_device, 1e-9);  // host names ignore case
  EXPECT_NEAR(at("localhost:7001", "127.0.0.1:7002"), 2 * one_device, 1e-9);  // loopback, however named
  EXPECT_NEAR(at("[::1]:7001", "127.0.0.1:7002"), 2 * one_device, 1e-9);
  EXPECT_NEAR(at("", ""), one_device, 1e-9);  // no address: a machine of its own each
  EXPECT_EQ(machineOf(Device{.address = "[fe80::1]:7001"}), "fe80::1");
  EXPECT_EQ(machineOf(Device{.address = "edge-3:7001"}), "edge-3");
}

TEST(CostModel, TheBackupStrideHoldsTheCopiesWithinTheBudgetAndTheLinkWithinHalfItsTime) {
  EXPECT_EQ(backupStride({0, 0}, 100, 0.05), 1);    // free: every step
  EXPECT_EQ(backupStride({5, 0}, 100, 0.05), 1);    // exactly the budget
  EXPECT_EQ(backupStride({5.1, 0}, 100, 0.05), 2);
  EXPECT_EQ(backupStride({40, 0}, 175, 0.05), 5);   // 40 ms a round, 8.75 ms a step allowed
  EXPECT_EQ(backupStride({40, 0}, 350, 0.05), 3);   // slower steps hide more
  // 560 ms on the wire (70 MB at 1 Gbit/s) against 200 ms steps: every 6th step keeps the
  // link half free, though the copies' CPU would allow every 2nd.
  EXPECT_EQ(backupStride({15, 560}, 200, 0.05), 6);
  EXPECT_EQ(backupStride({1e12, 0}, 1, 0.05), 10'000);
  EXPECT_EQ(backupStride({10, 0}, 0, 0.05), 10'000);  // no step time: as rarely as allowed
}

TEST(CostModel, SplitIsProportionalToSpeed) {
  const ModelSpec model = uniformLinearModel(2, 64);
  const Cluster cluster = makeCluster({30, 10, 20});
  const CostModel cost(model, cluster);
  const std::vector<int> group{0, 1, 2};
  const auto shares = cost.splitMicroBatch(group, 0, 2, 12, 1);
  ASSERT_TRUE(shares);
  EXPECT_EQ(*shares, (std::vector<int>{6, 2, 4}));
}

TEST(CostModel, SplitRespectsMemoryCaps) {
  const ModelSpec model = uniformLinearModel(2, 64);
  v1::Cluster p = makeCluster({100, 10}).toProto();
  const Cluster probe_cluster = Cluster::fromProto(p);
  const CostModel probe(model, probe_cluster);
  // Room for the weights and exactly two samples of activations on the fast device.
  const double need = probe.stateBytes(0, 2) + 2 * model.savedBytes(0, 2);
  p.mutable_devices(0)->set_memory_mb(need / (1024.0 * 1024.0));
  const Cluster cluster = Cluster::fromProto(p);
  const CostModel cost(model, cluster);
  const auto shares = cost.splitMicroBatch(std::vector<int>{0, 1}, 0, 2, 10, 1);
  ASSERT_TRUE(shares);
  EXPECT_EQ((*shares)[0], 2);
  EXPECT_EQ((*shares)[1], 8);
  // Four micro-batches in flight leave no room for even one sample on the fast device.
  const auto tight = cost.splitMicroBatch(std::vector<int>{0}, 0, 2, 1, 4);
  EXPECT_FALSE(tight);
}

TEST(CostModel, BoundaryTransfersMatchSampleRanges) {
  Stage a{0, 1, {{0, 3}, {1, 5}}};
  Stage b{1, 2, {{2, 4}, {3, 4}}};
  const auto t = boundaryTransfers(a, b);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].from_device, 0);
  EXPECT_EQ(t[0].to_device, 2);
  EXPECT_EQ(t[0].samples, 3);
  EXPECT_EQ(t[1].from_device, 1);
  EXPECT_EQ(t[1].to_device, 2);
  EXPECT_EQ(t[1].samples, 1);
  EXPECT_EQ(t[2].to_device, 3);
  EXPECT_EQ(t[2].samples, 4);
}

TEST(CostModel, EstimateMatchesGPipeClosedFormOnEqualStages) {
  const int K = 4, M = 6;
  const ModelSpec model = uniformLinearModel(K, 256);
  const Cluster cluster = makeCluster({50, 50, 50, 50});
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = 4 * M;
  plan.microbatches = M;
  for (int s = 0; s < K; ++s) plan.stages.push_back({s, s + 1, {{s, 4}}});
  const double f = cost.forwardMs(0, 0, 1, 4), b = cost.backwardMs(0, 0, 1, 4);
  for (Schedule sched : {Schedule::GPipe, Schedule::OneFOneB}) {
    plan.schedule = sched;
    const PlanEstimate e = estimatePlan(plan, cost);
    EXPECT_NEAR(e.iteration_ms, (M + K - 1) * (f + b), 1e-5 * e.iteration_ms);  // links ~free
    EXPECT_TRUE(e.fits);
  }
}

TEST(CostModel, EstimateOfDataParallelIsComputePlusAllReduce) {
  const int M = 4;
  const ModelSpec model = uniformLinearModel(3, 128);
  const Cluster cluster = makeCluster({20, 20, 20}, 1e6, 100, 1);
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = 6 * M;
  plan.microbatches = M;
  plan.stages.push_back({0, 3, {{0, 2}, {1, 2}, {2, 2}}});
  const double f = cost.forwardMs(0, 0, 3, 2), b = cost.backwardMs(0, 0, 3, 2);
  const double ar = 2.0 * 2 / 3 * model.parameters(0, 3) * 4 * 8 / 100e6 * 1e3 + 4 * 1;
  EXPECT_NEAR(estimatePlan(plan, cost).iteration_ms, M * (f + b) + ar, 1e-9);
}

TEST(CostModel, UpdateIsTheProfiledOptimizerStep) {
  const ModelSpec model = uniformLinearModel(2, 100);
  const Cluster cluster = makeCluster({10, 10});
  v1::ProfileSet set;
  v1::DeviceProfile* dev = addTimedDevice(set, "d1", 2, 1, 1);
  for (int l = 0; l < 2; ++l) {
    dev->add_sgd_update_ms(3.0 + l);
    dev->add_adam_update_ms(10.0 + l);
  }
  CostModel sgd(model, cluster, Optimizer::Sgd), adam(model, cluster, Optimizer::Adam);
  sgd.setProfiles(set);
  adam.setProfiles(set);
  EXPECT_DOUBLE_EQ(sgd.updateMs(1, 0, 2), 7);
  EXPECT_DOUBLE_EQ(adam.updateMs(1, 1, 2), 11);
  EXPECT_EQ(sgd.updateMs(1, 1, 1), 0);
  EXPECT_EQ(sgd.updateMs(0, 0, 2), 0);  // d0 has no profile

  // A pipeline's estimate ends with stage 0's step (its last backward is the last one).
  Plan plan;
  plan.batch_size = 4;
  plan.microbatches = 1;
  plan.stages.push_back({0, 1, {{1, 4}}});
  plan.stages.push_back({1, 2, {{0, 4}}});
  const PlanEstimate e = estimatePlan(plan, sgd);
  EXPECT_DOUBLE_EQ(e.stages[0].update_ms, 3);
  EXPECT_EQ(e.stages[1].update_ms, 0);
  v1::ProfileSet untimed = set;
  untimed.mutable_devices(0)->clear_sgd_update_ms();
  CostModel without(model, cluster, Optimizer::Sgd);
  without.setProfiles(untimed);
  EXPECT_NEAR(e.iteration_ms - estimatePlan(plan, without).iteration_ms, 3, 1e-9);

  dev->add_sgd_update_ms(1);  // three layers' steps for a two-layer model
  EXPECT_THROW(sgd.setProfiles(set), Error);
}

TEST(CostModel, AllReduceTakesTheSlowestMembersRingWorkWhenItOutlastsTheWire) {
  const ModelSpec model = uniformLinearModel(1, 16);
  const Cluster cluster = makeCluster({1, 1, 1, 1}, 1e6, 1e6);  // a 1 Tbps network
  CostModel cost(model, cluster);
  const std::vector<int> group{0, 1, 2, 3};
  const double bytes = 8 * 1024.0 * 1024.0;
  const double wire = cost.allReduceMs(group, bytes);
  EXPECT_DOUBLE_EQ(wire, cost.allReduceWireMs(group, bytes));  // no profile: the ring alone
  v1::ProfileSet set;
  for (const auto& [name, ring_ms] : {std::pair{"d1", 1.5}, std::pair{"d2", 6.0}}) {
    v1::DeviceProfile* dev = addTimedDevice(set, name, 1, 1, 2);
    dev->set_copy_ms_per_mb(ring_ms / 3);  // copies no longer count: gradients live in the buckets
    dev->set_allreduce_ms_per_mb(ring_ms);
  }
  cost.setProfiles(set);
  // 8 MiB through the ring at 2(g-1)/g = 1.5 times a pair's 6 ms/MiB.
  const double cpu = 8 * 1.5 * 6.0;
  EXPECT_DOUBLE_EQ(cost.allReduceCpuMs(2, 4, bytes), cpu);
  EXPECT_DOUBLE_EQ(cost.allReduceCpuMs(2, 2, bytes), 8 * 1.0 * 6.0);
  EXPECT_DOUBLE_EQ(cost.allReduceCpuMs(0, 4, bytes), 0);  // not profiled
  EXPECT_EQ(cost.allReduceCpuMs(2, 1, bytes), 0);         // no group, no all-reduce
  EXPECT_DOUBLE_EQ(cost.allReduceMs(group, bytes), cpu);
  EXPECT_LT(wire, cpu);
}

TEST(CostModel, ProfilesReplaceTheAnalyticTime) {
  const ModelSpec model = uniformLinearModel(2, 16);
  const Cluster cluster = makeCluster({1, 1});
  CostModel cost(model, cluster);
  v1::ProfileSet set;
  auto* dev = set.add_devices();
  dev->set_device("d1");
  for (int batch : {2, 6}) {
    auto* b = dev->add_batches();
    b->set_micro_batch(batch);
    for (int l = 0; l < 2; ++l) {
      auto* t = b->add_layers();
      t->set_layer(l);
      t->set_forward_ms(batch);        // 1 ms per sample per layer
      t->set_backward_ms(2.0 * batch);
    }
  }
  cost.setProfiles(set);
  EXPECT_TRUE(cost.hasProfile(1));
  EXPECT_FALSE(cost.hasProfile(0));
  EXPECT_DOUBLE_EQ(cost.forwardMs(1, 0, 2, 4), 8);   // interpolated between 2 and 6
  EXPECT_DOUBLE_EQ(cost.backwardMs(1, 1, 2, 6), 12);
  EXPECT_DOUBLE_EQ(cost.forwardMs(1, 0, 1, 1), 1);   // below the smallest batch
  dev->set_device("nope");
  EXPECT_THROW(cost.setProfiles(set), Error);
}

TEST(CostModel, SoloThroughputIsBatchOverWholeModelTime) {
  const ModelSpec model = uniformLinearModel(3, 100);
  const Cluster cluster = makeCluster({10});
  const CostModel cost(model, cluster);
  const double per_sample_ms = 3 * (20000.0 + 40000.0) / 10e9 * 1e3;
  EXPECT_NEAR(cost.soloSamplesPerSecond(0, 32), 1000.0 / per_sample_ms, 1e-6);
}

TEST(CostModel, AProfileOfImpossibleTimesIsRefused) {
  const ModelSpec model = uniformLinearModel(2, 100);
  const Cluster cluster = makeCluster({10, 10});
  const auto refusal = [&](double forward_ms, double backward_ms) {
    v1::ProfileSet set;
    auto* dev = set.add_devices();
    dev->set_device("d0");
    auto* b = dev->add_batches();
    b->set_micro_batch(2);
    for (int l = 0; l < 2; ++l) {
      auto* t = b->add_layers();
      t->set_layer(l);
      t->set_forward_ms(forward_ms);
      t->set_backward_ms(backward_ms);
    }
    CostModel cost(model, cluster, Optimizer::Sgd);
    try {
      cost.setProfiles(set);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refusal(1, 2), "accepted");
  EXPECT_EQ(refusal(0, 0), "profile of 'd0': every layer takes 0 ms at micro-batch 2: not a measured profile");
  EXPECT_NE(refusal(-1, 2).find("negative or not a number"), std::string::npos);
  EXPECT_NE(refusal(1, std::nan("")).find("negative or not a number"), std::string::npos);
  EXPECT_NE(refusal(INFINITY, 1).find("negative or not a number"), std::string::npos);
}

}  // namespace
}  // namespace stagecraft

namespace stagecraft {
namespace {

/// A device timed at the given micro-batch sizes, every layer taking `ms[k]` at size
/// `sizes[k]` forward and twice that backward.
v1::DeviceProfile* addSizedDevice(v1::ProfileSet& set, const std::string& name, int layers,
                                  const std::vector<int>& sizes, const std::vector<double>& ms) {
  auto* dev = set.add_devices();
  dev->set_device(name);
  for (size_t k = 0; k < sizes.size(); ++k) {
    auto* b = dev->add_batches();
    b->set_micro_batch(sizes[k]);
    for (int l = 0; l < layers; ++l) {
      auto* t = b->add_layers();
      t->set_layer(l);
      t->set_forward_ms(ms[k]);
      t->set_backward_ms(2 * ms[k]);
    }
  }
  return dev;
}

TEST(CostModel, AStallInOneProfiledSizeIsCutToWhatItsNeighboursAllow) {
  // Seen on a 0.2-core worker: one layer's backward at micro-batch 16 timed 256 ms between
  // 20 ms at 8 and 37 ms at 32; the slope from 16 to 32 then made it 0 ms at 64, and the
  // planner gave that worker the heaviest stage.
  const ModelSpec model = testing::uniformLinearModel(2, 128);
  const Cluster cluster = testing::makeCluster({10, 10});
  v1::ProfileSet set;
  testing::addTimedDevice(set, "d0", 2, 1, 1);
  addSizedDevice(set, "d1", 2, {8, 16, 32}, {10, 300, 40});
  CostModel cost(model, cluster);
  cost.setProfiles(set);
  // 300 at 16 is cut to 16/8 * 10 * 1.1 (no slower per sample than at 8, within 10%).
  EXPECT_NEAR(cost.forwardMs(1, 0, 1, 16), 22, 1e-9);
  EXPECT_NEAR(cost.backwardMs(1, 0, 1, 16), 44, 1e-9);
  EXPECT_NEAR(cost.forwardMs(1, 0, 1, 32), 40, 1e-9);  // within both rules: kept
  EXPECT_NEAR(cost.forwardMs(1, 0, 1, 8), 10, 1e-9);
  // Past the largest size, in proportion to it (the slope from 16 to 32 would say 76).
  EXPECT_NEAR(cost.forwardMs(1, 0, 2, 64), 2 * 80, 1e-9);
  EXPECT_NEAR(cost.backwardMs(1, 0, 1, 64), 160, 1e-9);
}

TEST(CostModel, AStallInTheLargestProfiledSizeIsCutToo) {
  const ModelSpec model = testing::uniformLinearModel(1, 128);
  const Cluster cluster = testing::makeCluster({10, 10});
  v1::ProfileSet set;
  // A larger size more than 1.5x faster than a smaller one: the smaller time is the stall.
  addSizedDevice(set, "d0", 1, {1, 4, 8}, {2, 19, 7});
  addSizedDevice(set, "d1", 1, {4, 8}, {10, 100});
  CostModel cost(model, cluster);
  cost.setProfiles(set);
  EXPECT_NEAR(cost.forwardMs(0, 0, 1, 4), 7, 1e-9);
  EXPECT_NEAR(cost.forwardMs(0, 0, 1, 8), 7, 1e-9);
  EXPECT_NEAR(cost.forwardMs(1, 0, 1, 8), 22, 1e-9);
  EXPECT_NEAR(cost.forwardMs(1, 0, 1, 6), 16, 1e-9);  // between 10 at 4 and 22 at 8
}

TEST(CostModel, ASizeSomewhatSlowerThanALargerOneKeepsItsTime) {
  // OpenBLAS ran a 2048-wide layer's forward of 4 samples faster than of 1 or 2 (a worker's
  // profile: 2.6 ms against 3.4 and 3.2), and training at 1 sample took what 1 was timed at.
  const ModelSpec model = testing::uniformLinearModel(1, 128);
  const Cluster cluster = testing::makeCluster({10});
  v1::ProfileSet set;
  addSizedDevice(set, "d0", 1, {1, 2, 4, 8}, {3.4, 3.2, 2.6, 3.3});
  CostModel cost(model, cluster);
  cost.setProfiles(set);
  EXPECT_NEAR(cost.forwardMs(0, 0, 1, 1), 3.4, 1e-9);
  EXPECT_NEAR(cost.forwardMs(0, 0, 1, 2), 3.2, 1e-9);
  EXPECT_NEAR(cost.forwardMs(0, 0, 1, 3), 2.9, 1e-9);  // between 3.2 at 2 and 2.6 at 4
  EXPECT_NEAR(cost.forwardMs(0, 0, 1, 4), 2.6, 1e-9);
  EXPECT_NEAR(cost.backwardMs(0, 0, 1, 1), 6.8, 1e-9);
}

TEST(CostModel, BelowTheSmallestProfiledSizeAMicroBatchIsNoFasterThanItNorCheaperPerSample) {
  // A profile timed at 64 alone once priced micro-batches of 4 at a sixteenth of its time,
  // and the plan of many small micro-batches it chose measured 16x slower than predicted.
  const ModelSpec model = testing::uniformLinearModel(1, 128);
  const Cluster cluster = testing::makeCluster({10, 10, 10});
  v1::ProfileSet set;
  addSizedDevice(set, "d0", 1, {64}, {40});
  addSizedDevice(set, "d1", 1, {8, 16}, {10, 12});  // 8 ms a micro-batch, 0.25 a sample
  addSizedDevice(set, "d2", 1, {8, 16}, {10, 22});  // steeper than in proportion
  CostModel cost(model, cluster);
  cost.setProfiles(set);
  // One size: its time, whatever fewer samples.
  EXPECT_NEAR(cost.forwardMs(0, 0, 1, 4), 40, 1e-9);
  EXPECT_NEAR(cost.backwardMs(0, 0, 1, 16), 80, 1e-9);
  EXPECT_NEAR(cost.forwardMs(0, 0, 1, 128), 80, 1e-9);  // above it, in proportion as before
  // The line through the two smallest sizes, down to its fixed cost.
  EXPECT_NEAR(cost.forwardMs(1, 0, 1, 4), 9, 1e-9);
  EXPECT_NEAR(cost.forwardMs(1, 0, 1, 1), 8.25, 1e-9);
  EXPECT_NEAR(cost.backwardMs(1, 0, 1, 4), 18, 1e-9);
  // A line steeper than in proportion would price 4 samples at 4 ms: no cheaper per sample
  // than the smallest size, 10 ms for 8.
  EXPECT_NEAR(cost.forwardMs(2, 0, 1, 4), 5, 1e-9);
}

TEST(CostModel, APlanSaysWhichSharesAreSmallerThanTheirDevicesProfiles) {
  const ModelSpec model = testing::uniformLinearModel(2, 128);
  const Cluster cluster = testing::makeCluster({10, 10, 10});
  v1::ProfileSet set;
  addSizedDevice(set, "d0", 2, {64}, {40});
  addSizedDevice(set, "d1", 2, {2, 8}, {3, 10});  // d2: FLOPs, no profile
  CostModel cost(model, cluster);
  cost.setProfiles(set);
  EXPECT_EQ(cost.smallestProfiledBatch(0), 64);
  EXPECT_EQ(cost.smallestProfiledBatch(1), 2);
  EXPECT_EQ(cost.smallestProfiledBatch(2), 0);
  EXPECT_EQ(cost.profiledBatchCount(1), 2);
  Plan plan;
  plan.batch_size = 64;
  plan.microbatches = 4;  // 16 samples a micro-batch
  plan.stages.push_back({0, 1, {{0, 12}, {2, 4}}});
  plan.stages.push_back({1, 2, {{1, 16}}});
  const auto below = sharesBelowProfiles(plan, cost);
  ASSERT_EQ(below.size(), 1u);
  EXPECT_EQ(below[0].device, 0);
  EXPECT_EQ(below[0].samples, 12);
  EXPECT_EQ(below[0].smallest, 64);
  EXPECT_TRUE(below[0].only);
  // d1 timed 2 and 8: one sample of it is extrapolated from them.
  plan.stages[1].members = {{1, 1}, {2, 15}};
  const auto both = sharesBelowProfiles(plan, cost);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].device, 1);
  EXPECT_EQ(both[1].smallest, 2);
  EXPECT_FALSE(both[1].only);
  plan.microbatches = 1;
  plan.stages[0].members = {{0, 64}};
  plan.stages[1].members = {{1, 64}};
  EXPECT_TRUE(sharesBelowProfiles(plan, cost).empty());
}

TEST(CostModel, ASizeTimedTwiceIsRefused) {
  const ModelSpec model = testing::uniformLinearModel(1, 128);
  const Cluster cluster = testing::makeCluster({10, 10});
  v1::ProfileSet set;
  addSizedDevice(set, "d0", 1, {4, 4}, {1, 2});
  CostModel cost(model, cluster);
  EXPECT_THROW(cost.setProfiles(set), Error);
}

}  // namespace
}  // namespace stagecraft
