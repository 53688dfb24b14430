// A stage group all-reduces its gradients in buckets beside the last micro-batch's backward:
// the cost model, the estimate and the simulator price the part the backward cannot hide.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "cost/cost_model.h"
#include "plan/validation.h"
#include "sim/simulator.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

constexpr double kTolMs = 1e-6;
constexpr double kMiB = 1024.0 * 1024.0;

TEST(GradientBuckets, CloseFromTheLastLayerDownOnceTheyHoldTheBucketSize) {
  const double b = kGradientBucketBytes;
  const std::vector<double> bytes{0.25 * b, 0.75 * b, 1.25 * b, 0.5 * b, 0.5 * b};
  const std::vector<std::pair<int, int>> expected{{3, 5}, {2, 3}, {0, 2}};
  EXPECT_EQ(gradientBuckets(bytes), expected);
  // The first layers keep what is left, however little.
  const std::vector<double> small{0.1 * b, b};
  const std::vector<std::pair<int, int>> two{{1, 2}, {0, 1}};
  EXPECT_EQ(gradientBuckets(small), two);
  const std::vector<double> tiny{0.1 * b, 0.1 * b};
  const std::vector<std::pair<int, int>> one{{0, 2}};
  EXPECT_EQ(gradientBuckets(tiny), one);
}

/// Four layers of 2600 x 2600 floats (no bias), each more than a bucket's 25 MiB: a bucket
/// each. A pair of devices on a 1000 Mbit/s link: a bucket takes its bytes * 8 / 1e6 bit/ms
/// on the ring of two (2(g-1)/g = 1).
struct OverlapFixture {
  static constexpr int kLayers = 4;
  static constexpr double kLayerBytes = 4.0 * 2600 * 2600;
  static constexpr double kBucketWireMs = kLayerBytes * 8 / 1e6;
  ModelSpec model = testing::uniformLinearModel(kLayers, 2600);
  Cluster cluster = testing::makeCluster({1, 1}, 1e6, 1000, 1e-9);
  CostModel cost{model, cluster};

  /// Both devices' profiles: every layer takes `backward_ms` backward per sample.
  void profile(double backward_ms, double ring_ms_per_mb = 0) {
    v1::ProfileSet set;
    for (const char* name : {"d0", "d1"}) {
      v1::DeviceProfile* dev = testing::addTimedDevice(set, name, kLayers, 1, backward_ms);
      if (ring_ms_per_mb > 0) dev->set_allreduce_ms_per_mb(ring_ms_per_mb);
    }
    cost.setProfiles(set);
  }

  /// Data parallel over both devices, one sample each, one micro-batch.
  Plan plan() const {
    Plan p;
    p.batch_size = 2;
    p.microbatches = 1;
    p.stages.push_back({0, kLayers, {{0, 1}, {1, 1}}});
    return p;
  }
};

TEST(AllReduceOverlap, ABackwardSlowerThanTheRingHidesAllButTheFirstLayersBucket) {
  OverlapFixture f;
  const double layer_backward = 300;  // > a bucket's 216 ms on the ring
  f.profile(layer_backward);
  const Plan plan = f.plan();
  ASSERT_TRUE(validatePlan(plan, f.cost).empty());
  const Stage& stage = plan.stages[0];
  // Each bucket is ready one layer's backward after the last; the ring keeps up, so only
  // layer 0's bucket, ready when the backward ends, comes after it.
  EXPECT_NEAR(f.cost.exposedAllReduceMs(stage), OverlapFixture::kBucketWireMs, kTolMs);
  const std::vector<double> starts{0, 0};
  const auto span = f.cost.allReduceSpan(stage, starts);
  EXPECT_NEAR(span.start_ms, layer_backward, kTolMs);
  EXPECT_NEAR(span.end_ms, 4 * layer_backward + OverlapFixture::kBucketWireMs, kTolMs);
  // Without the overlap the whole ring would follow the backward: four buckets' worth.
  EXPECT_NEAR(f.cost.allReduceMs(stage.devices(), 4 * OverlapFixture::kLayerBytes), 4 * OverlapFixture::kBucketWireMs,
              kTolMs);

  const PlanEstimate e = estimatePlan(plan, f.cost);
  EXPECT_NEAR(e.stages[0].allreduce_ms, OverlapFixture::kBucketWireMs, kTolMs);
  const double compute = 4 * 1.0 + 4 * layer_backward;
  EXPECT_NEAR(e.iteration_ms, compute + OverlapFixture::kBucketWireMs, kTolMs);

  const SimulationResult r = simulate(plan, f.cost);
  EXPECT_NEAR(r.iteration_ms, e.iteration_ms, kTolMs);
  int allreduces = 0;
  for (const auto& ev : r.timeline) {
    if (ev.kind != EventKind::AllReduce) continue;
    ++allreduces;
    // From the first bucket, inside the backward, to the last bucket's end.
    EXPECT_NEAR(ev.start_ms, 4 * 1.0 + layer_backward, kTolMs);
    EXPECT_NEAR(ev.end_ms, r.iteration_ms, kTolMs);
  }
  EXPECT_EQ(allreduces, 2);
}

TEST(AllReduceOverlap, ARingSlowerThanTheBackwardRunsBackToBackFromTheFirstBucket) {
  OverlapFixture f;
  const double layer_backward = 100;  // < a bucket's 216 ms
  f.profile(layer_backward);
  const Plan plan = f.plan();
  const double w = OverlapFixture::kBucketWireMs;
  // The ring starts after the last layer's backward and never waits again.
  const double exposed = layer_backward + 4 * w - 4 * layer_backward;
  EXPECT_NEAR(f.cost.exposedAllReduceMs(plan.stages[0]), exposed, kTolMs);
  EXPECT_NEAR(estimatePlan(plan, f.cost).stages[0].allreduce_ms, exposed, kTolMs);
  EXPECT_NEAR(simulate(plan, f.cost).iteration_ms, 4 * 1.0 + 4 * layer_backward + exposed, kTolMs);
}

TEST(AllReduceOverlap, TheRingsWorkOnTheCoresIsNotHidden) {
  OverlapFixture f;
  const double layer_backward = 300;
  // The four layers through a pair's ring at 30 ms/MiB: about 3 s of CPU, which the
  // backward's cores cannot also spend on the ring.
  f.profile(layer_backward, 30);
  const Plan plan = f.plan();
  const double cpu = 4 * OverlapFixture::kLayerBytes / kMiB * 30;
  EXPECT_NEAR(f.cost.exposedAllReduceMs(plan.stages[0]), cpu, kTolMs);
  EXPECT_NEAR(simulate(plan, f.cost).iteration_ms, 4 * 1.0 + 4 * layer_backward + cpu, kTolMs);
}

TEST(AllReduceOverlap, EachBucketWaitsForTheSlowestMembersBackward) {
  OverlapFixture f;
  f.profile(300);
  Plan plan = f.plan();
  plan.batch_size = 3;
  plan.stages[0].members = {{0, 1}, {1, 2}};  // d1's backward takes twice as long
  const std::vector<double> starts{0, 0};
  const auto span = f.cost.allReduceSpan(plan.stages[0], starts);
  EXPECT_NEAR(span.start_ms, 600, kTolMs);  // d1 passes the last layer after 600 ms
  EXPECT_NEAR(span.end_ms, 2400 + OverlapFixture::kBucketWireMs, kTolMs);
  // A member that starts its backward later moves every bucket with it.
  const std::vector<double> later{0, 30};
  EXPECT_NEAR(f.cost.allReduceSpan(plan.stages[0], later).end_ms, 2430 + OverlapFixture::kBucketWireMs, kTolMs);
}

}  // namespace
}  // namespace stagecraft
