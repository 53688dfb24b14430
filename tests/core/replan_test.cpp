// Re-planning without a network: weights gathered by layer and cut again for another
// split, speeds calibrated from iteration reports, a cluster narrowed to live devices.
#include <gtest/gtest.h>

#include <cmath>

#include "control/replan.h"
#include "io/error.h"
#include "test_fixtures.h"

namespace stagecraft::control {
namespace {

v1::Tensor tensor(const std::string& name, float value) {
  v1::Tensor t;
  t.set_name(name);
  t.set_dtype("float32");
  t.add_shape(1);
  t.set_data(std::string(reinterpret_cast<const char*>(&value), sizeof value));
  return t;
}

v1::StageWeights stage(int begin, int end, std::int64_t step, std::vector<std::string> names) {
  v1::StageWeights w;
  w.set_layer_begin(begin);
  w.set_layer_end(end);
  w.set_step(step);
  float v = static_cast<float>(begin);
  for (const auto& n : names) *w.add_tensors() = tensor(n, v++);
  return w;
}

std::vector<std::string> names(const v1::StageWeights& w) {
  std::vector<std::string> out;
  for (const auto& t : w.tensors()) out.push_back(t.name());
  return out;
}

TEST(Replan, TensorLayerIsTheLeadingIndex) {
  EXPECT_EQ(tensorLayer("12.weight"), 12);
  EXPECT_EQ(tensorLayer("0.bias#momentum_buffer"), 0);
  EXPECT_EQ(tensorLayer("3.block.1.weight"), 3);
  EXPECT_FALSE(tensorLayer("weight"));
  EXPECT_FALSE(tensorLayer(".weight"));
  EXPECT_FALSE(tensorLayer("x1.weight"));
  EXPECT_FALSE(tensorLayer("12"));
}

TEST(Replan, StagesMergeByLayerAndSliceForAnotherSplit) {
  // Plan A: [0, 3) and [3, 5); layer 1 has no tensors (an activation).
  const std::vector<v1::StageWeights> a = {
      stage(0, 3, 3, {"0.weight", "0.bias", "2.weight", "0.weight#momentum_buffer"}),
      stage(3, 5, 3, {"3.weight", "4.weight", "4.running_mean"})};
  const std::vector<std::string> workers = {"w0", "w1"};
  const ModelWeights merged = mergeStageWeights(a, workers);
  EXPECT_EQ(merged.step, 3);
  EXPECT_TRUE(merged.hasOptimizerState());
  EXPECT_EQ(merged.layers.size(), 4u);
  EXPECT_EQ(merged.layers.at(0).size(), 3u);

  // Plan B: [0, 1), [1, 4), [4, 5).
  const auto b0 = sliceWeights(merged, 0, 1);
  const auto b1 = sliceWeights(merged, 1, 4);
  const auto b2 = sliceWeights(merged, 4, 5);
  EXPECT_EQ(names(b0), (std::vector<std::string>{"0.weight", "0.bias", "0.weight#momentum_buffer"}));
  EXPECT_EQ(names(b1), (std::vector<std::string>{"2.weight", "3.weight"}));
  EXPECT_EQ(names(b2), (std::vector<std::string>{"4.weight", "4.running_mean"}));
  EXPECT_EQ(b1.layer_begin(), 1);
  EXPECT_EQ(b1.layer_end(), 4);
  EXPECT_EQ(b1.step(), 3);
  EXPECT_EQ(b1.tensors(1).data(), a[1].tensors(0).data());  // the values travel unchanged
}

TEST(Replan, AttachWeightsGivesEachAssignmentItsRangeAndTheStep) {
  const std::vector<v1::StageWeights> a = {stage(0, 2, 5, {"0.weight", "1.weight"}), stage(2, 3, 5, {"2.weight"})};
  const std::vector<std::string> workers = {"w0", "w1"};
  const ModelWeights merged = mergeStageWeights(a, workers);
  std::vector<v1::StageAssignment> assignments(3);
  assignments[0].set_layer_begin(0);
  assignments[0].set_layer_end(1);
  assignments[1].set_layer_begin(1);  // a two-member group: both get the same slice
  assignments[1].set_layer_end(3);
  assignments[2] = assignments[1];
  assignments[2].set_rank(1);
  attachWeights(assignments, merged);
  for (const auto& x : assignments) {
    EXPECT_EQ(x.start_step(), 5);
    EXPECT_EQ(x.weights().step(), 5);
    EXPECT_EQ(x.weights().layer_begin(), x.layer_begin());
    EXPECT_EQ(x.weights().layer_end(), x.layer_end());
  }
  EXPECT_EQ(names(assignments[0].weights()), (std::vector<std::string>{"0.weight"}));
  EXPECT_EQ(names(assignments[2].weights()), (std::vector<std::string>{"1.weight", "2.weight"}));
}

TEST(Replan, JoinLayersTakesARangeFromWiderPiecesOfOneStep) {
  // A survivor restored to [1, 4) from its own [3, 5) and a neighbour's copy of [0, 3).
  const v1::StageWeights own = stage(3, 5, 7, {"3.weight", "3.weight#momentum_buffer", "4.weight"});
  const v1::StageWeights copy = stage(0, 3, 7, {"0.weight", "1.weight", "1.bias", "2.weight"});
  const std::vector<const v1::StageWeights*> pieces{&own, &copy};
  const v1::StageWeights joined = joinLayers(pieces, 1, 4);
  EXPECT_EQ(joined.layer_begin(), 1);
  EXPECT_EQ(joined.layer_end(), 4);
  EXPECT_EQ(joined.step(), 7);
  EXPECT_EQ(names(joined), (std::vector<std::string>{"1.weight", "1.bias", "2.weight", "3.weight",
                                                      "3.weight#momentum_buffer"}));
  // A layer no piece holds, or pieces of different steps, are refused.
  EXPECT_THROW(joinLayers(pieces, 1, 6), Error);
  const v1::StageWeights older = stage(3, 5, 6, {"3.weight", "4.weight"});
  const std::vector<const v1::StageWeights*> mixed{&copy, &older};
  EXPECT_THROW(joinLayers(mixed, 2, 4), Error);
}

TEST(Replan, MergeRefusesInconsistentStagesNamingTheWorker) {
  const std::vector<std::string> workers = {"alpha", "beta"};
  const auto message = [&](std::vector<v1::StageWeights> stages) {
    try {
      mergeStageWeights(stages, workers);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({stage(0, 2, 3, {"0.w"}), stage(2, 4, 4, {"2.w"})}).find("worker 'beta'"), std::string::npos);
  EXPECT_NE(message({stage(0, 2, 3, {"0.w"}), stage(2, 4, 4, {"2.w"})}).find("different steps"), std::string::npos);
  EXPECT_NE(message({stage(0, 2, 3, {"0.w"}), stage(1, 4, 3, {"2.w"})}).find("another stage"), std::string::npos);
  EXPECT_NE(message({stage(0, 2, 3, {"w"}), stage(2, 4, 3, {"2.w"})}).find("worker 'alpha'"), std::string::npos);
  EXPECT_NE(message({stage(0, 2, 3, {"0.w"}), stage(2, 4, 3, {"7.w"})}).find("outside"), std::string::npos);
  EXPECT_NE(message({stage(0, 2, 3, {"0.w"}), stage(3, 4, 3, {"3.w"})}).find("[2, 3)"), std::string::npos);
  EXPECT_EQ(message({stage(2, 4, 3, {"2.w"}), stage(0, 2, 3, {"0.w"})}), "no error");  // any order
}

// ---- calibration ---------------------------------------------------------------------

v1::IterationReport report(double forward_ms, double backward_ms, int micro_batches) {
  v1::IterationReport r;
  double t = 0;
  for (int m = 0; m < micro_batches; ++m) {
    auto* f = r.add_timeline();
    f->set_kind("forward");
    f->set_start_ms(t);
    f->set_end_ms(t += forward_ms);
    auto* wait = r.add_timeline();  // waiting is not compute
    wait->set_kind("receive");
    wait->set_start_ms(t);
    wait->set_end_ms(t += 100);
    auto* b = r.add_timeline();
    b->set_kind("backward");
    b->set_start_ms(t);
    b->set_end_ms(t += backward_ms);
  }
  return r;
}

TEST(Replan, MeasuredComputeCountsForwardAndBackwardOnly) {
  EXPECT_DOUBLE_EQ(measuredComputeMs(report(3, 5, 2)), 16.0);
  EXPECT_DOUBLE_EQ(measuredComputeMs(v1::IterationReport()), 0.0);
}

TEST(Replan, CalibrationScalesSpeedsByPredictedOverMeasured) {
  const ModelSpec model = testing::uniformLinearModel(4, 64);
  const Cluster cluster = testing::makeCluster({10, 10, 10, 10});
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = 8;
  plan.microbatches = 2;
  plan.stages = {Stage{0, 2, {{0, 4}}}, Stage{2, 4, {{1, 3}, {2, 1}}}};
  // Predictions per micro-batch from the cost model; d0 measured twice as slow, d1 twice as
  // fast, d2 without compute events (no report yet), d3 outside the plan.
  const auto predicted = [&](int d, int b, int e, int n) { return cost.forwardMs(d, b, e, n) + cost.backwardMs(d, b, e, n); };
  const double p0 = predicted(0, 0, 2, 4), p1 = predicted(1, 2, 4, 3);
  ASSERT_GT(p0, 0);
  std::vector<v1::IterationReport> latest = {report(p0, p0, 2), report(p1 / 4, p1 / 4, 2), v1::IterationReport()};
  const Cluster calibrated = calibrateCluster(plan, cost, latest);
  EXPECT_NEAR(calibrated.device(0).gflops, 5.0, 1e-9);
  EXPECT_NEAR(calibrated.device(1).gflops, 20.0, 1e-9);
  // The others move by the geometric mean of 1/2 and 2: not at all.
  EXPECT_NEAR(calibrated.device(2).gflops, 10.0, 1e-9);
  EXPECT_NEAR(calibrated.device(3).gflops, 10.0, 1e-9);
  EXPECT_EQ(calibrated.device(1).name, "d1");

  latest.pop_back();
  EXPECT_THROW(calibrateCluster(plan, cost, latest), Error);
}

TEST(Replan, DevicesWithoutTelemetryMoveByTheMeasuredDevicesTypicalFactor) {
  const ModelSpec model = testing::uniformLinearModel(4, 64);
  const Cluster cluster = testing::makeCluster({10, 40, 20});
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = 8;
  plan.microbatches = 2;
  plan.stages = {Stage{0, 2, {{0, 4}}}, Stage{2, 4, {{1, 4}}}};
  // d0 measured 4x and d1 16x slower than their nominal speeds (geometric mean 8x); d2 unused.
  const auto predicted = [&](int d, int b, int e, int n) { return cost.forwardMs(d, b, e, n) + cost.backwardMs(d, b, e, n); };
  const double p0 = predicted(0, 0, 2, 4), p1 = predicted(1, 2, 4, 4);
  const std::vector<v1::IterationReport> latest = {report(2 * p0, 2 * p0, 2), report(8 * p1, 8 * p1, 2)};
  const Cluster calibrated = calibrateCluster(plan, cost, latest);
  EXPECT_NEAR(calibrated.device(0).gflops, 10.0 / 4, 1e-9);
  EXPECT_NEAR(calibrated.device(1).gflops, 40.0 / 16, 1e-9);
  EXPECT_NEAR(calibrated.device(2).gflops, 20.0 / 8, 1e-9);
}

TEST(Replan, ComputeFactorsMakeAProfiledCostModelPredictWhatTheMembersMeasured) {
  const ModelSpec model = testing::uniformLinearModel(4, 64);
  const Cluster cluster = testing::makeCluster({10, 40, 20});
  CostModel cost(model, cluster);
  // d0 and d1 profiled (2 and 3 ms per layer and pass at one sample, linear above), d2 not.
  v1::ProfileSet set;
  for (const auto& [name, ms] : {std::pair{"d0", 2.0}, std::pair{"d1", 3.0}}) {
    auto* dev = set.add_devices();
    dev->set_device(name);
    auto* b = dev->add_batches();
    b->set_micro_batch(1);
    for (int l = 0; l < 4; ++l) {
      auto* t = b->add_layers();
      t->set_layer(l);
      t->set_forward_ms(ms);
      t->set_backward_ms(2 * ms);
      dev->add_sgd_update_ms(1);
    }
  }
  cost.setProfiles(set);
  Plan plan;
  plan.batch_size = 8;
  plan.microbatches = 2;
  plan.stages = {Stage{0, 2, {{0, 4}}}, Stage{2, 4, {{1, 4}}}};
  // d0 trains 1.5x slower than profiled, d1 twice as fast.
  const double f0 = cost.forwardMs(0, 0, 2, 4), b0 = cost.backwardMs(0, 0, 2, 4);
  const double f1 = cost.forwardMs(1, 2, 4, 4), b1 = cost.backwardMs(1, 2, 4, 4);
  const std::vector<v1::IterationReport> latest = {report(1.5 * f0, 1.5 * b0, 2), report(0.5 * f1, 0.5 * b1, 2)};
  const std::vector<double> factors = computeFactors(plan, cost, latest);
  ASSERT_EQ(factors.size(), 3u);
  EXPECT_NEAR(factors[0], 1.5, 1e-9);
  EXPECT_NEAR(factors[1], 0.5, 1e-9);
  EXPECT_NEAR(factors[2], std::sqrt(0.75), 1e-9);  // unmeasured: the geometric mean

  CostModel calibrated = cost;
  calibrated.setComputeFactors(factors);
  EXPECT_NEAR(calibrated.forwardMs(0, 0, 2, 4) + calibrated.backwardMs(0, 0, 2, 4), 1.5 * (f0 + b0), 1e-9);
  EXPECT_NEAR(calibrated.forwardMs(1, 2, 4, 4) + calibrated.backwardMs(1, 2, 4, 4), 0.5 * (f1 + b1), 1e-9);
  EXPECT_NEAR(calibrated.updateMs(0, 0, 2), 1.5 * cost.updateMs(0, 0, 2), 1e-9);
  EXPECT_NEAR(calibrated.forwardMs(2, 0, 1, 4), std::sqrt(0.75) * cost.forwardMs(2, 0, 1, 4), 1e-9);
  EXPECT_DOUBLE_EQ(cost.computeFactor(0), 1);  // the copy changed, not the original
  // The first stage, now the slower one, sets the calibrated pipeline's period.
  EXPECT_LT(estimatePlan(plan, cost).stages[0].forward_ms, estimatePlan(plan, cost).stages[1].forward_ms);
  const PlanEstimate e = estimatePlan(plan, calibrated);
  EXPECT_NEAR(e.stages[0].forward_ms, 1.5 * f0, 1e-9);
  EXPECT_NEAR(e.bottleneck_ms, 1.5 * (f0 + b0), 1e-9);

  EXPECT_THROW(calibrated.setComputeFactors({1, 1}), std::logic_error);
  EXPECT_THROW(calibrated.setComputeFactors({1, 0, 1}), Error);
  EXPECT_THROW(calibrated.setComputeFactors({1, std::nan(""), 1}), Error);
}

TEST(Replan, CalibrationLeavesOutThePassesBesideTheAllReduce) {
  const ModelSpec model = testing::uniformLinearModel(4, 64);
  const Cluster cluster = testing::makeCluster({10, 10});
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = 8;
  plan.microbatches = 2;
  plan.stages = {Stage{0, 4, {{0, 2}, {1, 2}}}};  // one group of two: it all-reduces
  const double f = cost.forwardMs(0, 0, 4, 2), b = cost.backwardMs(0, 0, 4, 2);
  ASSERT_GT(f, 0);
  // Both members compute as predicted, but the ring's CPU work stretches the last backward
  // to 1.7x; on d0 the ring starts inside that backward, on d1 only after it.
  const auto member = [&](bool ring_beside_backward) {
    v1::IterationReport r = report(f, b, 2);
    auto* last = r.mutable_timeline(r.timeline_size() - 1);
    EXPECT_EQ(last->kind(), "backward");
    last->set_end_ms(last->start_ms() + 1.7 * b);
    auto* ring = r.add_timeline();
    ring->set_kind("allreduce");
    ring->set_start_ms(ring_beside_backward ? last->start_ms() + 0.5 * b : last->end_ms());
    ring->set_end_ms(last->end_ms() + 50);
    return r;
  };
  const std::vector<v1::IterationReport> latest = {member(true), member(false)};
  const std::vector<double> factors = computeFactors(plan, cost, latest);
  ASSERT_EQ(factors.size(), 2u);
  // d0: the stretched backward is left out, the rest was as predicted.
  EXPECT_NEAR(factors[0], 1.0, 1e-9);
  // d1: nothing ran beside it, so the slow backward is its own: (2f + 2b + 0.7b) / (2f + 2b).
  EXPECT_NEAR(factors[1], (2 * f + 2.7 * b) / (2 * f + 2 * b), 1e-9);
  EXPECT_GT(factors[1], 1.05);
}

TEST(Replan, AMemberWhosePassesAllRanBesideTheRingCountsAsUnmeasured) {
  const ModelSpec model = testing::uniformLinearModel(4, 64);
  const Cluster cluster = testing::makeCluster({10, 10});
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = 8;
  plan.microbatches = 2;
  plan.stages = {Stage{0, 4, {{0, 2}, {1, 2}}}};
  const double f = cost.forwardMs(0, 0, 4, 2), b = cost.backwardMs(0, 0, 4, 2);
  // d0: a ring over its whole step leaves nothing to measure; d1 computes twice as slow.
  v1::IterationReport all_beside = report(0.3 * f, 0.7 * b, 2);
  auto* ring = all_beside.add_timeline();
  ring->set_kind("allreduce");
  ring->set_start_ms(0);
  ring->set_end_ms(1e6);
  const std::vector<v1::IterationReport> latest = {all_beside, report(2 * f, 2 * b, 2)};
  const std::vector<double> factors = computeFactors(plan, cost, latest);
  ASSERT_EQ(factors.size(), 2u);
  EXPECT_NEAR(factors[1], 2.0, 1e-9);
  EXPECT_NEAR(factors[0], 2.0, 1e-9);  // unmeasured: the measured devices' geometric mean
}

TEST(Replan, RestrictClusterKeepsLiveDevicesAndTheirLinks) {
  v1::Cluster proto = testing::makeCluster({10, 20, 30}).toProto();
  auto* link = proto.add_links();
  link->set_a("d0");
  link->set_b("d2");
  link->set_bandwidth_mbps(5);
  link->set_latency_ms(3);
  auto* other = proto.add_links();
  other->set_a("d0");
  other->set_b("d1");
  other->set_bandwidth_mbps(7);
  other->set_latency_ms(1);
  const Cluster cluster = Cluster::fromProto(proto);
  const std::vector<std::string> live = {"d2", "d0"};
  const Cluster narrowed = restrictCluster(cluster, live);
  ASSERT_EQ(narrowed.size(), 2);
  EXPECT_EQ(narrowed.device(0).name, "d0");
  EXPECT_EQ(narrowed.device(1).name, "d2");
  EXPECT_DOUBLE_EQ(narrowed.device(1).gflops, 30);
  EXPECT_DOUBLE_EQ(narrowed.bandwidthMbps(0, 1), 5);
  EXPECT_DOUBLE_EQ(narrowed.latencyMs(0, 1), 3);
  EXPECT_EQ(narrowed.toProto().links_size(), 1);

  const std::vector<std::string> unknown = {"d0", "d9"};
  EXPECT_THROW(restrictCluster(cluster, unknown), Error);
  EXPECT_THROW(restrictCluster(cluster, std::vector<std::string>{}), Error);
}

}  // namespace
}  // namespace stagecraft::control
