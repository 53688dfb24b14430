// The hybrid planner on clusters too large for its DP over whole device orderings, and its
// device orderings planned side by side on several threads.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "plan/validation.h"
#include "planner/planners.h"
#include "random_instances.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

using testing::describe;
using testing::randomInstance;

/// Convolutions on 32x32 images (much compute, few parameters) on `devices` devices of
/// similar speed joined by fast links: a cluster where wide groups and long pipelines pay, so
/// the plan uses many devices.
testing::Instance wideInstance(std::mt19937& rng, int devices, int layers, int id) {
  v1::Model m;
  m.set_name("conv-" + std::to_string(id));
  m.set_task("classification");
  m.set_input_dtype("float32");
  m.set_num_classes(10);
  for (int d : {3, 32, 32}) m.add_input_shape(d);
  for (int i = 0; i < layers; ++i) {
    v1::Layer* l = m.add_layers();
    l->set_name("conv" + std::to_string(i + 1));
    l->set_kind("conv2d");
    l->set_out_channels(testing::pickOf<int>(rng, {16, 32, 48}));
    l->set_kernel_size(3);
    l->set_padding(1);
    l->set_stride(1);
    l->set_activation("relu");
  }
  v1::Layer* fc = m.add_layers();
  fc->set_name("fc");
  fc->set_kind("linear");
  fc->set_out_features(10);
  fc->set_flatten(true);
  v1::Cluster c;
  c.set_name("wide");
  c.set_default_latency_ms(0.2);
  for (int d = 0; d < devices; ++d) {
    v1::Device* dev = c.add_devices();
    dev->set_name("dev" + std::to_string(d));
    dev->set_tier(d % 3 == 0 ? "cloud" : "edge");
    dev->set_gflops(testing::uniform(rng, 20, 60));
    dev->set_memory_mb(testing::uniform(rng, 500, 4000));
    dev->set_bandwidth_mbps(testing::pickOf<double>(rng, {1000, 10000}));
  }
  PlanRequest request;
  request.batch_size = 64;
  request.microbatches = 4;
  Cluster cluster = Cluster::fromProto(c);
  return {ModelSpec::fromProto(m), c, std::move(cluster), Optimizer::Sgd, request, false};
}

// Past HybridOptions::whole_orderings_up_to devices the DP sees each ordering's first devices
// with groups no wider than a micro-batch's samples. On clusters past that bound where the
// whole DP still runs in seconds, the plans must be as fast by simulation.
TEST(HybridPlannerScale, ALargeClusterPlansAsFastAsTheDpOverWholeOrderings) {
  std::mt19937 rng(2026);
  HybridOptions whole;
  whole.whole_orderings_up_to = 1000;
  double max_gap = 0;
  for (int i = 0; i < 3; ++i) {
    const auto in = wideInstance(rng, 130 + 10 * i, 6 + i, i);
    const CostModel cost(in.model, in.cluster, in.optimizer);
    const PlanOutcome large = makePlan(*makeHybridPlanner(), cost, in.request);
    const PlanOutcome full = makePlan(*makeHybridPlanner(whole), cost, in.request);
    ASSERT_TRUE(full.feasible) << describe(in) << ": " << full.reason;
    ASSERT_TRUE(large.feasible) << describe(in) << ": " << large.reason;
    EXPECT_TRUE(validatePlan(large.plan, cost).empty()) << describe(in);
    int members = 0;
    for (const Stage& stage : large.plan.stages) {
      members += static_cast<int>(stage.members.size());
      EXPECT_LE(static_cast<int>(stage.members.size()), large.plan.microBatchSize()) << describe(in);
    }
    // Many devices pay here: a plan of a few would not test the window.
    EXPECT_GE(members, 8) << describe(in);
    const double gap = large.simulated_ms / full.simulated_ms - 1;
    max_gap = std::max(max_gap, gap);
    EXPECT_LT(gap, 0.02) << describe(in) << ": " << large.simulated_ms << " ms against " << full.simulated_ms
                         << " ms over whole orderings";
    std::printf("%s: %d stages, %d devices, %.3f ms (%.2f s to plan) against %.3f ms (%.2f s)\n",
                describe(in).c_str(), large.plan.stageCount(), members, large.simulated_ms, large.plan_ms / 1000,
                full.simulated_ms, full.plan_ms / 1000);
  }
  std::printf("largest gap to the DP over whole orderings: %.3f%%\n", max_gap * 100);
}

TEST(HybridPlannerScale, TheThreadCountDoesNotChangeThePlan) {
  std::mt19937 rng(77);
  HybridOptions one, several;
  one.threads = 1;
  several.threads = 3;
  for (int i = 0; i < 12; ++i) {
    const auto in = randomInstance(rng, i, 3, 10, 2, 12);
    const CostModel cost(in.model, in.cluster, in.optimizer);
    const PlanOutcome a = makePlan(*makeHybridPlanner(one), cost, in.request);
    const PlanOutcome b = makePlan(*makeHybridPlanner(several), cost, in.request);
    ASSERT_EQ(a.feasible, b.feasible) << describe(in);
    if (a.feasible) EXPECT_EQ(a.plan.stages, b.plan.stages) << describe(in);
  }
}

// A thousand devices, most of which the plan cannot use: planned, valid, and no slower than
// the data-parallel baselines.
TEST(HybridPlannerScale, AThousandDeviceClusterGetsAValidPlan) {
  std::mt19937 rng(1000);
  auto in = randomInstance(rng, 0, 20, 20, 1000, 1000);
  in.request.batch_size = 256;
  in.request.microbatches = 16;
  const CostModel cost(in.model, in.cluster, in.optimizer);
  const PlanOutcome hybrid = makePlan(*makePlanner("hybrid"), cost, in.request);
  ASSERT_TRUE(hybrid.feasible) << describe(in) << ": " << hybrid.reason;
  EXPECT_TRUE(validatePlan(hybrid.plan, cost).empty());
  const PlanOutcome dp = makePlan(*makePlanner("dp-weighted"), cost, in.request);
  if (dp.feasible) EXPECT_LE(hybrid.simulated_ms, dp.simulated_ms * 1.0001);
}

}  // namespace
}  // namespace stagecraft
