#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "io/json_io.h"
#include "model/model_spec.h"
#include "model/zoo.h"
#include "plan/validation.h"
#include "sim/sim_report.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

// Every closed form below is computed from these numbers, not from the cost model.
constexpr int kWidth = 256;  // features of every linear layer
constexpr double kLayerFlops = 2.0 * kWidth * kWidth + kWidth;  // per sample, with bias
constexpr double kLayerParams = double(kWidth) * kWidth + kWidth;
constexpr double kLayerSavedBytes = 4.0 * kWidth;  // the layer's input, no activation
constexpr double kLayerOutputBytes = 4.0 * kWidth;
constexpr double kGflops = 2.0;
constexpr double kFreeMbps = 1e13;       // link time ~1e-12 ms: negligible
constexpr double kFreeLatencyMs = 1e-12;
constexpr double kTolMs = 1e-6;

/// A chain of `layers` identical linear layers of width kWidth.
ModelSpec linearChain(int layers) {
  v1::Model m;
  m.set_name("chain");
  m.set_task("classification");
  m.set_input_dtype("float32");
  m.add_input_shape(kWidth);
  m.set_num_classes(kWidth);
  for (int l = 0; l < layers; ++l) {
    auto* layer = m.add_layers();
    layer->set_kind("linear");
    layer->set_out_features(kWidth);
  }
  return ModelSpec::fromProto(m);
}

/// `n` devices named edge-0..; every pair linked at `mbps` with `latency_ms`.
Cluster uniformCluster(int n, double mbps, double latency_ms, double gflops = kGflops) {
  v1::Cluster c;
  c.set_name("uniform");
  c.set_default_latency_ms(latency_ms);
  for (int d = 0; d < n; ++d) {
    auto* dev = c.add_devices();
    dev->set_name("edge-" + std::to_string(d));
    dev->set_tier("edge");
    dev->set_gflops(gflops);
    dev->set_memory_mb(8192);
    dev->set_bandwidth_mbps(mbps);
  }
  return Cluster::fromProto(c);
}

/// Forward ms of `samples` samples through `layers` chain layers at kGflops.
double forwardMs(int layers, int samples) { return samples * layers * kLayerFlops / (kGflops * 1e6); }
double backwardMs(int layers, int samples) { return 2 * forwardMs(layers, samples); }  // weights + inputs

/// K stages of `per_stage` layers, stage s on device s with the whole micro-batch.
Plan pipelinePlan(int stages, int per_stage, int microbatches, int micro, Schedule schedule) {
  Plan p;
  p.model = "chain";
  p.cluster = "uniform";
  p.planner = "test";
  p.batch_size = micro * microbatches;
  p.microbatches = microbatches;
  p.schedule = schedule;
  for (int s = 0; s < stages; ++s) p.stages.push_back({s * per_stage, (s + 1) * per_stage, {{s, micro}}});
  return p;
}

struct Fixture {
  ModelSpec model;
  Cluster cluster;
  CostModel cost;
  Fixture(int layers, Cluster c) : model(linearChain(layers)), cluster(std::move(c)), cost(model, cluster) {}
};

void expectComputeNeverOverlaps(const SimulationResult& r, int devices) {
  for (int d = 0; d < devices; ++d) {
    double last_end = 0;
    for (const auto& e : r.timeline) {
      if (e.device != d || (e.kind != EventKind::Forward && e.kind != EventKind::Backward)) continue;
      EXPECT_GE(e.start_ms, last_end - 1e-12) << "device " << d << " mb " << e.micro_batch;
      last_end = e.end_ms;
    }
  }
}

TEST(Simulator, EqualStagesMatchTheGPipeClosedFormUnderBothSchedules) {
  for (const auto schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    for (const auto [k, m] : {std::pair{2, 1}, {2, 4}, {3, 3}, {4, 8}, {4, 2}, {6, 16}}) {
      const int micro = 4, per_stage = 2;
      Fixture f(k * per_stage, uniformCluster(k, kFreeMbps, kFreeLatencyMs));
      const Plan plan = pipelinePlan(k, per_stage, m, micro, schedule);
      ASSERT_TRUE(validatePlan(plan, f.cost).empty());
      const SimulationResult r = simulate(plan, f.cost);
      const double fb = forwardMs(per_stage, micro) + backwardMs(per_stage, micro);
      const std::string what = std::string(scheduleName(schedule)) + " K=" + std::to_string(k) +
                               " M=" + std::to_string(m);
      EXPECT_NEAR(r.iteration_ms, (m + k - 1) * fb, kTolMs) << what;
      EXPECT_NEAR(r.bubble_fraction, double(k - 1) / (m + k - 1), 1e-9) << what;
      EXPECT_NEAR(r.samples_per_second, m * micro * 1000.0 / ((m + k - 1) * fb), 1e-3) << what;
      for (int d = 0; d < k; ++d) EXPECT_NEAR(r.busy_fraction[d], double(m) / (m + k - 1), 1e-9) << what;
    }
  }
}

TEST(Simulator, GPipeAddsTwoLinkTimesPerBoundaryWhenLinksKeepUp) {
  // Link time below F and B never queues, so each boundary adds one activation and one
  // gradient trip to the critical path: (M + K - 1)(F + B) + 2(K - 1) * link.
  const int k = 4, m = 6, micro = 8, per_stage = 2;
  const double mbps = 1000, latency = 0.05;
  Fixture f(k * per_stage, uniformCluster(k, mbps, latency));
  const double link = latency + micro * kLayerOutputBytes * 8 / (mbps * 1e3);
  const double fwd = forwardMs(per_stage, micro), bwd = backwardMs(per_stage, micro);
  ASSERT_LT(link, std::min(fwd, bwd));
  const SimulationResult r = simulate(pipelinePlan(k, per_stage, m, micro, Schedule::GPipe), f.cost);
  EXPECT_NEAR(r.iteration_ms, (m + k - 1) * (fwd + bwd) + 2 * (k - 1) * link, kTolMs);
}

TEST(Simulator, OneFOneBOnTwoStagesPaysTwoLinkTimesPerPairOfMicroBatches) {
  // 1F1B's single warm-up forward leaves no slack for communication: stage 0 computes
  // F(i + 2) only after B(i), which waits on F(i)'s trip L + F + B + L through stage 1.
  // Worked by hand, micro-batches go through in pairs that each take 2(F + B) + 2L, so
  // the iteration is (M + 1)(F + B) + 2 ceil(M / 2) L, where GPipe's form has only 2L.
  const int micro = 8;
  const double mbps = 1000, latency = 0.05;
  const double link = latency + micro * kLayerOutputBytes * 8 / (mbps * 1e3);
  const double fb = forwardMs(1, micro) + backwardMs(1, micro);
  ASSERT_LT(link, forwardMs(1, micro));
  for (const int m : {1, 2, 3, 6, 7}) {
    Fixture f(2, uniformCluster(2, mbps, latency));
    const SimulationResult r = simulate(pipelinePlan(2, 1, m, micro, Schedule::OneFOneB), f.cost);
    EXPECT_NEAR(r.iteration_ms, (m + 1) * fb + 2 * ((m + 1) / 2) * link, kTolMs) << "M=" << m;
  }
}

TEST(Simulator, DataParallelIsComputePlusRingAllReduce) {
  for (const int g : {2, 3, 4}) {
    const int m = 5, micro = 12, layers = 3;
    const double mbps = 800, latency = 0.25;
    Fixture f(layers, uniformCluster(g, mbps, latency));
    Plan plan = pipelinePlan(1, layers, m, micro, Schedule::OneFOneB);
    plan.stages[0].members.clear();
    for (int d = 0; d < g; ++d) plan.stages[0].members.push_back({d, micro / g});
    ASSERT_TRUE(validatePlan(plan, f.cost).empty());
    const SimulationResult r = simulate(plan, f.cost);
    const double compute = m * (forwardMs(layers, micro / g) + backwardMs(layers, micro / g));
    const double weights = layers * kLayerParams * 4;
    const double ring = 2.0 * (g - 1) / g * weights * 8 / (mbps * 1e3) + 2.0 * (g - 1) * latency;
    EXPECT_NEAR(r.iteration_ms, compute + ring, kTolMs) << "g=" << g;
    int allreduces = 0;
    for (const auto& e : r.timeline) {
      if (e.kind != EventKind::AllReduce) continue;
      ++allreduces;
      EXPECT_EQ(e.micro_batch, -1);
      EXPECT_NEAR(e.start_ms, compute, kTolMs);
      EXPECT_NEAR(e.end_ms - e.start_ms, ring, kTolMs);
    }
    EXPECT_EQ(allreduces, g);
  }
}

TEST(Simulator, AGroupOfOneHasNoAllReduce) {
  Fixture f(2, uniformCluster(1, 1000, 0.5));
  const SimulationResult r = simulate(pipelinePlan(1, 2, 3, 4, Schedule::OneFOneB), f.cost);
  for (const auto& e : r.timeline) EXPECT_NE(e.kind, EventKind::AllReduce);
  EXPECT_NEAR(r.iteration_ms, 3 * (forwardMs(2, 4) + backwardMs(2, 4)), kTolMs);
  EXPECT_NEAR(r.bubble_fraction, 0, 1e-12);
}

/// Two stages on two devices joined by a link of `mbps`.
SimulationResult twoStagesOverLink(double mbps, Schedule schedule, int m, int micro) {
  const ModelSpec model = linearChain(2);
  const Cluster cluster = uniformCluster(2, mbps, 0.1);
  const CostModel cost(model, cluster);
  return simulate(pipelinePlan(2, 1, m, micro, schedule), cost);
}

TEST(Simulator, ADirectedLinkCarriesOneTransferAtATime) {
  for (const auto schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    const SimulationResult r = twoStagesOverLink(5, schedule, 8, 16);
    std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> sends;
    for (const auto& e : r.timeline) {
      if (e.kind == EventKind::Send) sends[{e.device, e.peer}].push_back({e.start_ms, e.end_ms});
    }
    ASSERT_EQ(sends.size(), 2u);  // activations 0 -> 1, gradients 1 -> 0
    for (auto& [link, spans] : sends) {
      EXPECT_EQ(spans.size(), 8u);
      std::sort(spans.begin(), spans.end());
      for (size_t i = 1; i < spans.size(); ++i) {
        EXPECT_GE(spans[i].first, spans[i - 1].second - 1e-12) << link.first << "->" << link.second;
      }
    }
  }
}

TEST(Simulator, IterationGrowsAsTheLinkThins) {
  for (const auto schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    double previous = 0;
    for (const double mbps : {1e6, 1000.0, 100.0, 10.0, 1.0}) {
      const double ms = twoStagesOverLink(mbps, schedule, 4, 16).iteration_ms;
      EXPECT_GT(ms, previous) << scheduleName(schedule) << " at " << mbps << " Mbps";
      previous = ms;
    }
  }
}

TEST(Simulator, LinkBoundGPipeSerialisesEveryTransfer) {
  // With wire time W >= F, B the activations leave one after another (the last lands
  // at F + M W + latency), and so do the gradients: 2(F + B) + 2 M W + 2 latency. The
  // latency delays each transfer but does not hold the link.
  const int m = 6, micro = 16;
  const double mbps = 2, latency = 0.1;
  const double wire = micro * kLayerOutputBytes * 8 / (mbps * 1e3);
  const double fwd = forwardMs(1, micro), bwd = backwardMs(1, micro);
  ASSERT_GT(wire, std::max(fwd, bwd));
  const SimulationResult r = twoStagesOverLink(mbps, Schedule::GPipe, m, micro);
  EXPECT_NEAR(r.iteration_ms, 2 * (fwd + bwd) + 2 * m * wire + 2 * latency, kTolMs);
}

TEST(Simulator, PeakMemoryCountsTheMicroBatchesEachStageHolds) {
  const int k = 4, per_stage = 2, micro = 4;
  for (const auto schedule : {Schedule::OneFOneB, Schedule::GPipe}) {
    for (const int m : {2, 4, 7}) {
      Fixture f(k * per_stage, uniformCluster(k, kFreeMbps, kFreeLatencyMs));
      const SimulationResult r = simulate(pipelinePlan(k, per_stage, m, micro, schedule), f.cost);
      for (int s = 0; s < k; ++s) {
        const int held = schedule == Schedule::GPipe ? m : std::min(k - s, m);
        const double state = per_stage * kLayerParams * 4 * 3;  // weights, gradients, momentum
        const double expected = state + per_stage * kLayerSavedBytes * micro * held;
        EXPECT_DOUBLE_EQ(r.peak_memory_bytes[s], expected)
            << scheduleName(schedule) << " M=" << m << " stage " << s;
      }
    }
  }
}

/// A heterogeneous hybrid plan: uneven speeds, groups of two and three, a member with no
/// samples, overlapping sample ranges across the boundaries.
struct HybridCase {
  ModelSpec model = linearChain(6);
  Cluster cluster = [] {
    v1::Cluster c;
    c.set_name("mixed");
    const double speeds[] = {4, 1, 2, 3, 1.5, 2.5};
    for (int d = 0; d < 6; ++d) {
      auto* dev = c.add_devices();
      dev->set_name("edge-" + std::to_string(d));
      dev->set_tier(d == 0 ? "cloud" : "edge");
      dev->set_gflops(speeds[d]);
      dev->set_memory_mb(4096);
      dev->set_bandwidth_mbps(100 + 50 * d);
    }
    auto* thin = c.add_links();
    thin->set_a("edge-0");
    thin->set_b("edge-2");
    thin->set_bandwidth_mbps(5);
    thin->set_latency_ms(1);
    return Cluster::fromProto(c);
  }();
  CostModel cost{model, cluster};
  Plan plan(Schedule schedule) const {
    Plan p;
    p.batch_size = 40;
    p.microbatches = 5;
    p.schedule = schedule;
    p.stages = {{0, 2, {{0, 5}, {1, 3}}}, {2, 3, {{2, 0}, {3, 6}, {4, 2}}}, {3, 6, {{5, 8}}}};
    return p;
  }
};

TEST(Simulator, TimelineHasOneForwardAndBackwardPerMemberAndPairedTransfers) {
  HybridCase h;
  for (const auto schedule : {Schedule::OneFOneB, Schedule::GPipe}) {
    const Plan plan = h.plan(schedule);
    ASSERT_TRUE(validatePlan(plan, h.cost).empty());
    const SimulationResult r = simulate(plan, h.cost);
    ASSERT_FALSE(r.timeline.empty());
    for (size_t i = 1; i < r.timeline.size(); ++i) {
      EXPECT_LE(r.timeline[i - 1].start_ms, r.timeline[i].start_ms);
    }
    double last_end = 0;
    for (const auto& e : r.timeline) last_end = std::max(last_end, e.end_ms);
    EXPECT_DOUBLE_EQ(r.iteration_ms, last_end);
    expectComputeNeverOverlaps(r, h.cluster.size());

    std::map<std::tuple<int, int, EventKind>, int> compute;
    std::multiset<std::tuple<int, int, int, double, double>> sends, receives;
    auto toNs = [](double ms) { return std::round(ms * 1e6); };
    for (const auto& e : r.timeline) {
      EXPECT_LE(e.start_ms, e.end_ms);
      if (e.kind == EventKind::Forward || e.kind == EventKind::Backward) {
        ++compute[{e.device, e.micro_batch, e.kind}];
      } else if (e.kind == EventKind::Send) {
        sends.insert({e.device, e.peer, e.micro_batch, toNs(e.start_ms), toNs(e.end_ms)});
      } else if (e.kind == EventKind::Receive) {
        // A receive is its send shifted by the link's latency.
        const double latency = h.cluster.latencyMs(e.peer, e.device);
        receives.insert({e.peer, e.device, e.micro_batch, toNs(e.start_ms - latency), toNs(e.end_ms - latency)});
      }
    }
    for (const auto& st : plan.stages) {
      for (const auto& mem : st.members) {
        for (int m = 0; m < plan.microbatches; ++m) {
          for (const auto kind : {EventKind::Forward, EventKind::Backward}) {
            const auto it = compute.find({mem.device, m, kind});
            EXPECT_EQ(it == compute.end() ? 0 : it->second, mem.samples > 0 ? 1 : 0)
                << "device " << mem.device << " mb " << m << " " << eventKindName(kind);
          }
        }
      }
    }
    EXPECT_EQ(sends, receives);
    size_t pairs = 0;
    for (int s = 0; s + 1 < plan.stageCount(); ++s) {
      pairs += boundaryTransfers(plan.stages[s], plan.stages[s + 1]).size();
    }
    EXPECT_EQ(sends.size(), 2 * pairs * plan.microbatches);  // activations and gradients

    // The member with no samples computes nothing but joins its group's all-reduce.
    EXPECT_EQ(r.busy_fraction[2], 0);
    int allreduce_of_2 = 0;
    for (const auto& e : r.timeline) {
      if (e.device == 2) {
        EXPECT_EQ(e.kind, EventKind::AllReduce);
        ++allreduce_of_2;
      }
    }
    EXPECT_EQ(allreduce_of_2, 1);
  }
}

TEST(Simulator, ComputeWaitsForItsInputsAndAllReduceForTheGroup) {
  HybridCase h;
  const Plan plan = h.plan(Schedule::OneFOneB);
  const SimulationResult r = simulate(plan, h.cost);
  const auto stage_of = plan.stageOfDevice(h.cluster.size());
  std::map<std::pair<int, int>, double> activations_in, gradients_in;  // (device, mb) -> last arrival
  std::map<std::pair<int, int>, double> forward_end;
  std::vector<double> last_backward(h.cluster.size(), 0);
  for (const auto& e : r.timeline) {
    if (e.kind == EventKind::Receive) {
      auto& in = stage_of[e.peer] < stage_of[e.device] ? activations_in : gradients_in;
      in[{e.device, e.micro_batch}] = std::max(in[{e.device, e.micro_batch}], e.end_ms);
    } else if (e.kind == EventKind::Forward) {
      forward_end[{e.device, e.micro_batch}] = e.end_ms;
    } else if (e.kind == EventKind::Backward) {
      last_backward[e.device] = std::max(last_backward[e.device], e.end_ms);
    }
  }
  for (const auto& e : r.timeline) {
    const std::pair key{e.device, e.micro_batch};
    if (e.kind == EventKind::Forward && stage_of[e.device] > 0) {
      ASSERT_TRUE(activations_in.count(key));
      EXPECT_GE(e.start_ms, activations_in[key]);
    } else if (e.kind == EventKind::Backward) {
      EXPECT_GE(e.start_ms, forward_end[key]);
      if (stage_of[e.device] + 1 < plan.stageCount()) {
        ASSERT_TRUE(gradients_in.count(key));
        EXPECT_GE(e.start_ms, gradients_in[key]);
      }
    } else if (e.kind == EventKind::Send) {
      const bool gradient = stage_of[e.peer] < stage_of[e.device];
      if (!gradient) EXPECT_GE(e.start_ms, forward_end[key]);
    } else if (e.kind == EventKind::AllReduce) {
      for (const auto& mem : plan.stages[stage_of[e.device]].members) {
        EXPECT_GE(e.start_ms, last_backward[mem.device]);
      }
    }
  }
}

TEST(Simulator, IsDeterministic) {
  HybridCase h;
  const Plan plan = h.plan(Schedule::OneFOneB);
  const SimulationResult a = simulate(plan, h.cost), b = simulate(plan, h.cost);
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    const auto &x = a.timeline[i], &y = b.timeline[i];
    EXPECT_EQ(std::tie(x.device, x.micro_batch, x.kind, x.peer, x.start_ms, x.end_ms),
              std::tie(y.device, y.micro_batch, y.kind, y.peer, y.start_ms, y.end_ms));
  }
}

TEST(Simulator, AgreesWithTheEstimateOnEqualStages) {
  for (const auto schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    for (const auto [k, m] : {std::pair{2, 3}, {4, 4}, {5, 12}}) {
      Fixture f(2 * k, uniformCluster(k, kFreeMbps, kFreeLatencyMs));
      const Plan plan = pipelinePlan(k, 2, m, 8, schedule);
      const SimulationResult r = simulate(plan, f.cost);
      const PlanEstimate e = estimatePlan(plan, f.cost);
      EXPECT_NEAR(r.iteration_ms, e.iteration_ms, kTolMs) << scheduleName(schedule) << " K=" << k << " M=" << m;
      for (int d = 0; d < k; ++d) EXPECT_DOUBLE_EQ(r.peak_memory_bytes[d], e.memory_bytes[d]);
    }
  }
}

TEST(Simulator, AgreesWithTheEstimateOnGroupsWithEqualWorkPerMember) {
  // Stages of 2, 1 and 3 members that each compute 12 layer-samples per micro-batch;
  // free links between stages, real ones inside the groups, so the all-reduces cost time:
  // the later stages' hide behind the drain, stage 0's does not.
  v1::Cluster proto = uniformCluster(6, kFreeMbps, kFreeLatencyMs).toProto();
  for (const auto [a, b] : {std::pair{0, 1}, {3, 4}, {4, 5}, {3, 5}}) {
    auto* link = proto.add_links();
    link->set_a("edge-" + std::to_string(a));
    link->set_b("edge-" + std::to_string(b));
    link->set_bandwidth_mbps(1000);
    link->set_latency_ms(0.5);
  }
  for (const auto schedule : {Schedule::GPipe, Schedule::OneFOneB}) {
    Fixture f(6, Cluster::fromProto(proto));
    Plan plan = pipelinePlan(3, 1, 4, 12, schedule);
    plan.stages = {{0, 2, {{0, 6}, {1, 6}}}, {2, 3, {{2, 12}}}, {3, 6, {{3, 4}, {4, 4}, {5, 4}}}};
    ASSERT_TRUE(validatePlan(plan, f.cost).empty());
    const SimulationResult r = simulate(plan, f.cost);
    const PlanEstimate e = estimatePlan(plan, f.cost);
    ASSERT_GT(e.stages[0].allreduce_ms, 1);
    EXPECT_NEAR(r.iteration_ms, e.iteration_ms, kTolMs) << scheduleName(schedule);
    for (int d = 0; d < 6; ++d) EXPECT_DOUBLE_EQ(r.peak_memory_bytes[d], e.memory_bytes[d]) << d;
  }
}

TEST(Simulator, SimulatesALargePlanQuickly) {
  // 64 devices, 8 stages of 8 members, 32 micro-batches.
  const int k = 8, g = 8, m = 32, micro = 64;
  Fixture f(2 * k, uniformCluster(k * g, 1000, 0.5));
  Plan plan = pipelinePlan(k, 2, m, micro, Schedule::OneFOneB);
  for (int s = 0; s < k; ++s) {
    plan.stages[s].members.clear();
    for (int i = 0; i < g; ++i) plan.stages[s].members.push_back({s * g + i, micro / g});
  }
  ASSERT_TRUE(validatePlan(plan, f.cost).empty());
  double best_ms = 1e9;
  SimulationResult r;
  for (int run = 0; run < 3; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    r = simulate(plan, f.cost);
    best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  EXPECT_LT(best_ms, 50);
  EXPECT_GT(r.iteration_ms, 0);
  expectComputeNeverOverlaps(r, k * g);
}

TEST(Simulator, AZooModelRunsOnAHybridPlan) {
  const ModelSpec model = ModelSpec::fromProto(zooModel("mlp"));
  const Cluster cluster = uniformCluster(3, 1000, 0.5, 50);
  const CostModel cost(model, cluster);
  Plan plan;
  plan.batch_size = 32;
  plan.microbatches = 4;
  plan.stages = {{0, 3, {{0, 8}}}, {3, 8, {{1, 5}, {2, 3}}}};
  ASSERT_TRUE(validatePlan(plan, cost).empty());
  const SimulationResult r = simulate(plan, cost);
  EXPECT_GT(r.samples_per_second, 0);
  EXPECT_GT(r.bubble_fraction, 0);
  EXPECT_LT(r.bubble_fraction, 1);
}

TEST(SimReport, DescribesEveryClusterDevice) {
  HybridCase h;
  const Plan plan = h.plan(Schedule::OneFOneB);
  const SimulationResult r = simulate(plan, h.cost);
  const v1::SimulationReport rep = toSimulationReport(r, plan, h.cost, true);
  EXPECT_EQ(rep.schedule(), "1f1b");
  EXPECT_DOUBLE_EQ(rep.iteration_ms(), r.iteration_ms);
  ASSERT_EQ(rep.devices_size(), h.cluster.size());
  EXPECT_EQ(rep.devices(3).device(), "edge-3");
  EXPECT_EQ(rep.devices(3).stage(), 1);
  EXPECT_EQ(rep.devices(3).samples(), 6);
  EXPECT_DOUBLE_EQ(rep.devices(3).peak_memory_mb(), r.peak_memory_bytes[3] / 1048576.0);
  EXPECT_DOUBLE_EQ(rep.devices(3).memory_limit_mb(), 4096);
  EXPECT_EQ(rep.timeline_size(), static_cast<int>(r.timeline.size()));
  EXPECT_EQ(toSimulationReport(r, plan, h.cost, false).timeline_size(), 0);

  const ModelSpec model = linearChain(2);
  const Cluster three = uniformCluster(3, 1000, 0.5);
  const CostModel cost(model, three);
  const Plan two = pipelinePlan(2, 1, 2, 4, Schedule::GPipe);
  const v1::SimulationReport idle = toSimulationReport(simulate(two, cost), two, cost, false);
  EXPECT_EQ(idle.schedule(), "gpipe");
  EXPECT_EQ(idle.devices(2).stage(), -1);
  EXPECT_EQ(idle.devices(2).samples(), 0);
  EXPECT_EQ(idle.devices(2).busy_fraction(), 0);
  EXPECT_EQ(idle.devices(2).peak_memory_mb(), 0);
}

TEST(SimReport, ChromeTraceHasCompleteEventsAndNames) {
  HybridCase h;
  const SimulationResult r = simulate(h.plan(Schedule::OneFOneB), h.cost);
  const v1::ChromeTrace trace = toChromeTrace(r, h.cluster);
  EXPECT_EQ(trace.displaytimeunit(), "ms");
  int complete = 0;
  std::set<int> named_processes;
  std::set<std::pair<int, int>> named_threads, used_threads;
  for (const auto& e : trace.traceevents()) {
    if (e.ph() == "X") {
      ++complete;
      EXPECT_GE(e.ts(), 0);
      EXPECT_GE(e.dur(), 0);
      EXPECT_TRUE(e.args().contains("micro_batch"));
      used_threads.insert({e.pid(), e.tid()});
      if (e.cat() == "send") {
        EXPECT_EQ(e.tid(), 1);
        EXPECT_EQ(e.name().rfind("send mb", 0), 0u) << e.name();
        EXPECT_TRUE(e.args().contains("peer"));
      } else if (e.cat() == "receive") {
        EXPECT_EQ(e.tid(), 2);
      } else {
        EXPECT_EQ(e.tid(), 0);
      }
    } else {
      ASSERT_EQ(e.ph(), "M");
      ASSERT_TRUE(e.args().contains("name"));
      if (e.name() == "process_name") {
        named_processes.insert(e.pid());
        EXPECT_EQ(e.args().at("name"), h.cluster.device(e.pid()).name);
      } else if (e.name() == "thread_name") {
        named_threads.insert({e.pid(), e.tid()});
      }
    }
  }
  EXPECT_EQ(complete, static_cast<int>(r.timeline.size()));
  EXPECT_EQ(named_processes, (std::set<int>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(named_threads, used_threads);

  // F3 on the first stage's first member, in microseconds.
  bool found = false;
  for (const auto& e : r.timeline) {
    if (e.device != 0 || e.kind != EventKind::Forward || e.micro_batch != 3) continue;
    for (const auto& t : trace.traceevents()) {
      if (t.ph() == "X" && t.pid() == 0 && t.name() == "F3") {
        EXPECT_DOUBLE_EQ(t.ts(), e.start_ms * 1000);
        EXPECT_DOUBLE_EQ(t.dur(), (e.end_ms - e.start_ms) * 1000);
        EXPECT_EQ(t.cat(), "forward");
        found = true;
      }
    }
  }
  EXPECT_TRUE(found);

  const std::string json = io::toJson(trace);
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("\"displayTimeUnit\""), std::string::npos);
}

TEST(Simulator, EventKindNamesAreTheWireNames) {
  EXPECT_EQ(eventKindName(EventKind::Forward), "forward");
  EXPECT_EQ(eventKindName(EventKind::Backward), "backward");
  EXPECT_EQ(eventKindName(EventKind::Send), "send");
  EXPECT_EQ(eventKindName(EventKind::Receive), "receive");
  EXPECT_EQ(eventKindName(EventKind::AllReduce), "allreduce");
  EXPECT_EQ(eventKindName(EventKind::Update), "update");
}

}  // namespace
}  // namespace stagecraft
