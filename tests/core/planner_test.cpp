#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "io/error.h"
#include "model/zoo.h"
#include "plan/validation.h"
#include "planner/planner.h"
#include "planner/planners.h"
#include "random_instances.h"
#include "test_fixtures.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

using namespace testing;


const std::vector<std::string> kBaselines = {"dp", "dp-weighted", "gpipe", "pipedream"};

std::vector<std::string> exampleClusterFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(STAGECRAFT_TEST_CLUSTERS)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ---------------------------------------------------------------------------------------
// An independent brute force for tiny instances: every cut as a bit mask, every device
// assignment as a number in base S + 1, judged by validatePlan and estimatePlan alone.

std::optional<double> bruteForceOptimumMs(const CostModel& cost, const PlanRequest& request) {
  const int layers = cost.layerCount();
  const int devices = cost.deviceCount();
  std::optional<double> best;
  for (int cuts = 0; cuts < (1 << (layers - 1)); ++cuts) {
    std::vector<int> bounds = {0};
    for (int l = 1; l < layers; ++l) {
      if (cuts & (1 << (l - 1))) bounds.push_back(l);
    }
    bounds.push_back(layers);
    const int stages = static_cast<int>(bounds.size()) - 1;
    int codes = 1;
    for (int d = 0; d < devices; ++d) codes *= stages + 1;
    for (int code = 0; code < codes; ++code) {
      Plan plan = emptyPlan(cost, request, "brute-force");
      plan.stages.resize(stages);
      std::vector<std::vector<int>> groups(stages);
      for (int d = 0, rest = code; d < devices; ++d, rest /= stages + 1) {
        const int s = rest % (stages + 1) - 1;  // -1: unused
        if (s >= 0) groups[s].push_back(d);
      }
      bool ok = true;
      for (int s = 0; s < stages && ok; ++s) {
        plan.stages[s].layer_begin = bounds[s];
        plan.stages[s].layer_end = bounds[s + 1];
        if (groups[s].empty()) ok = false;
      }
      for (int s = 0; s < stages && ok; ++s) {
        const auto shares = cost.splitMicroBatch(groups[s], bounds[s], bounds[s + 1], plan.microBatchSize(),
                                                 plan.inFlight(s));
        if (!shares) {
          ok = false;
          break;
        }
        for (size_t i = 0; i < groups[s].size(); ++i) plan.stages[s].members.push_back({groups[s][i], (*shares)[i]});
      }
      if (!ok || !validatePlan(plan, cost).empty()) continue;
      const double ms = estimatePlan(plan, cost).iteration_ms;
      if (!best || ms < *best) best = ms;
    }
  }
  return best;
}

void expectHonestOutcome(const PlanOutcome& out, const CostModel& cost, const std::string& where) {
  if (out.feasible) {
    EXPECT_TRUE(validatePlan(out.plan, cost).empty()) << where << ": " << validatePlan(out.plan, cost).front();
    EXPECT_TRUE(out.reason.empty()) << where;
    EXPECT_TRUE(std::isfinite(out.estimate.iteration_ms) && out.estimate.iteration_ms > 0) << where;
    EXPECT_DOUBLE_EQ(out.estimate.iteration_ms, estimatePlan(out.plan, cost).iteration_ms) << where;
    EXPECT_DOUBLE_EQ(out.simulated_ms, simulate(out.plan, cost).iteration_ms) << where;
    return;
  }
  EXPECT_FALSE(out.reason.empty()) << where;
  if (!out.plan.stages.empty()) {
    // An infeasible answer that carries a plan must be one validation rejects for the reason given.
    const auto errors = validatePlan(out.plan, cost);
    EXPECT_NE(std::find(errors.begin(), errors.end(), out.reason), errors.end()) << where << ": " << out.reason;
  }
}

/// The exhaustive search is exact under the estimate (its best finalist is the brute
/// force's `optimum_ms`), and its answer is the finalist the simulator finds fastest: never
/// slower, simulated, than the estimate's optimum.
void expectSimulatedChoiceAmongTheBestByEstimate(const PlanOutcome& out, const CostModel& cost,
                                                 const PlanRequest& request, double optimum_ms,
                                                 const std::string& where) {
  const std::vector<Plan> finalists = exhaustiveFinalists(cost, request);
  ASSERT_FALSE(finalists.empty()) << where;
  EXPECT_LE(finalists.size(), kExhaustiveFinalists) << where;
  EXPECT_NEAR(estimatePlan(finalists.front(), cost).iteration_ms, optimum_ms, optimum_ms * kSameMs) << where;
  double previous = 0;
  for (const Plan& f : finalists) {
    const double ms = estimatePlan(f, cost).iteration_ms;
    EXPECT_GE(ms, previous) << where << ": finalists out of order";
    previous = ms;
    EXPECT_LE(out.simulated_ms, simulate(f, cost).iteration_ms * (1 + kSameMs)) << where;
  }
  EXPECT_GE(out.estimate.iteration_ms, optimum_ms * (1 - kSameMs)) << where;
}

// ---------------------------------------------------------------------------------------

TEST(PlannerRegistry, UnknownNameThrowsListingTheKnownOnes) {
  try {
    makePlanner("alpa");
    FAIL() << "no exception";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_TRUE(contains(what, "alpa")) << what;
    for (const auto& name : plannerNames()) EXPECT_TRUE(contains(what, name)) << what;
  }
}

TEST(PlannerRegistry, ABatchTooLargeToSearchIsRefusedAtOnce) {
  const ModelSpec model = testing::uniformLinearModel(4, 100);
  const Cluster cluster = testing::makeCluster({10, 10});
  const CostModel cost(model, cluster, Optimizer::Sgd);
  PlanRequest request;
  request.batch_size = 1000000;
  try {
    makePlan(*makePlanner("hybrid"), cost, request);
    FAIL() << "no exception";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "batch 1000000 is larger than 65536, the most a plan is searched for");
  }
}

TEST(PlannerRegistry, EveryListedNameMakesAPlannerOfThatName) {
  for (const auto& name : plannerNames()) EXPECT_EQ(makePlanner(name)->name(), name);
}

TEST(BaselinePlanners, GiveValidPlansOrAnHonestReasonOnTheExampleClusters) {
  const auto files = exampleClusterFiles();
  ASSERT_GE(files.size(), 2u);
  const std::vector<PlanRequest> requests = {{64, 8, Schedule::OneFOneB}, {32, 4, Schedule::GPipe}};
  int feasible = 0;
  for (const auto& file : files) {
    const Cluster cluster = Cluster::load(file);
    for (const auto& model_name : zooModelNames()) {
      const ModelSpec model = ModelSpec::fromProto(zooModel(model_name));
      const CostModel cost(model, cluster);
      for (const auto& request : requests) {
        for (const auto& planner_name : kBaselines) {
          const auto planner = makePlanner(planner_name);
          const PlanOutcome out = makePlan(*planner, cost, request);
          const std::string where = planner_name + " / " + model_name + " / " + cluster.name() + " / " +
                                    std::string(scheduleName(request.schedule));
          expectHonestOutcome(out, cost, where);
          EXPECT_EQ(out.plan.planner, planner_name) << where;
          feasible += out.feasible;
        }
      }
    }
  }
  // Both clusters hold the small zoo models; most baseline plans must exist.
  EXPECT_GE(feasible, static_cast<int>(files.size() * zooModelNames().size() * 2 * kBaselines.size() / 2));
}

TEST(PipeDreamPlanner, MapsStagesOntoDevicesInClusterOrderWithEvenShares) {
  const Cluster cluster = Cluster::load(std::string(STAGECRAFT_TEST_CLUSTERS) + "/jetson-edge.json");
  const ModelSpec model = ModelSpec::fromProto(zooModel("resnet18"));
  const CostModel cost(model, cluster);
  const PlanOutcome out = makePlan(*makePlanner("pipedream"), cost, {64, 8, Schedule::OneFOneB});
  ASSERT_FALSE(out.plan.stages.empty()) << out.reason;
  int next = 0;
  for (const auto& stage : out.plan.stages) {
    int lo = stage.members.front().samples, hi = lo;
    for (const auto& m : stage.members) {
      EXPECT_EQ(m.device, next++);
      lo = std::min(lo, m.samples);
      hi = std::max(hi, m.samples);
    }
    EXPECT_LE(hi - lo, 1);
    EXPECT_GE(stage.members.front().samples, stage.members.back().samples);  // remainder to the first
  }
}

TEST(ExhaustivePlanner, EqualsAnIndependentBruteForceOnTinyInstances) {
  std::mt19937 rng(20240611);
  int compared = 0, feasible = 0;
  for (int i = 0; i < 80; ++i) {
    const Instance in = randomInstance(rng, i, 1, 5, 1, 4);
    const CostModel cost(in.model, in.cluster, in.optimizer);
    const auto expected = bruteForceOptimumMs(cost, in.request);
    const PlanOutcome out = makePlan(*makePlanner("exhaustive"), cost, in.request);
    const std::string where = "instance " + std::to_string(i) + ": " + describe(in);
    ++compared;
    ASSERT_EQ(out.feasible, expected.has_value()) << where << ": " << out.reason;
    if (!expected) continue;
    ++feasible;
    expectHonestOutcome(out, cost, where);
    expectSimulatedChoiceAmongTheBestByEstimate(out, cost, in.request, *expected, where);
  }
  EXPECT_GE(feasible, compared / 2);
}

TEST(ExhaustivePlanner, FindsTheOnlyGoodPlanOnAHandMadeInstance) {
  // Three layers; a fast device too small for the big middle layer and a slow roomy one.
  v1::Model m;
  m.set_name("three");
  m.set_task("classification");
  m.set_input_dtype("float32");
  m.set_num_classes(10);
  m.add_input_shape(256);
  for (int out : {256, 4096, 10}) {
    v1::Layer* l = m.add_layers();
    l->set_kind("linear");
    l->set_out_features(out);
  }
  const ModelSpec model = ModelSpec::fromProto(m);
  v1::Cluster c;
  c.set_name("two");
  for (auto [name, gflops, memory] : {std::tuple{"fast", 1000.0, 6.0}, std::tuple{"slow", 10.0, 100.0}}) {
    v1::Device* d = c.add_devices();
    d->set_name(name);
    d->set_tier("edge");
    d->set_gflops(gflops);
    d->set_memory_mb(memory);
    d->set_bandwidth_mbps(1000);
  }
  const Cluster cluster = Cluster::fromProto(c);
  const CostModel cost(model, cluster);
  const PlanRequest request{16, 4, Schedule::OneFOneB};
  const PlanOutcome out = makePlan(*makePlanner("exhaustive"), cost, request);
  const auto expected = bruteForceOptimumMs(cost, request);
  ASSERT_TRUE(expected.has_value());
  ASSERT_TRUE(out.feasible) << out.reason;
  expectSimulatedChoiceAmongTheBestByEstimate(out, cost, request, *expected, "three layers");
  // fc2 (256 x 4096 weights, ~12 MB with gradients and momentum) cannot live on 'fast'.
  for (const auto& stage : out.plan.stages) {
    if (stage.layer_begin <= 1 && stage.layer_end > 1) {
      for (const auto& member : stage.members) EXPECT_EQ(member.device, 1);
    }
  }
}

/// `plan` with every group's shares replaced by splitMicroBatch's, as the exhaustive
/// search would give them; nullopt when a group cannot hold its micro-batch that way.
std::optional<Plan> resplit(Plan plan, const CostModel& cost) {
  for (int s = 0; s < plan.stageCount(); ++s) {
    Stage& stage = plan.stages[s];
    const auto shares = cost.splitMicroBatch(stage.devices(), stage.layer_begin, stage.layer_end,
                                             plan.microBatchSize(), plan.inFlight(s));
    if (!shares) return std::nullopt;
    for (size_t i = 0; i < shares->size(); ++i) stage.members[i].samples = (*shares)[i];
  }
  return plan;
}

TEST(ExhaustivePlanner, IsNeverWorseThanAnyBaseline) {
  std::mt19937 rng(7);
  int compared = 0, outside = 0;
  for (int i = 0; i < 80; ++i) {
    const Instance in = randomInstance(rng, i, 2, 5, 2, 4);
    const CostModel cost(in.model, in.cluster, in.optimizer);
    const PlanOutcome best = makePlan(*makePlanner("exhaustive"), cost, in.request);
    for (const auto& name : kBaselines) {
      const PlanOutcome base = makePlan(*makePlanner(name), cost, in.request);
      if (!base.feasible) continue;
      ++compared;
      const std::string where = name + " on instance " + std::to_string(i) + ": " + describe(in);
      ASSERT_TRUE(best.feasible) << where << ": " << best.reason;
      const double optimum_ms = estimatePlan(exhaustiveFinalists(cost, in.request).front(), cost).iteration_ms;
      double base_ms = base.estimate.iteration_ms;
      if (name == "pipedream") {
        // PipeDream splits a stage's micro-batch evenly over its replicas, a share vector
        // the search (splitMicroBatch only) never tries. When a boundary transfer is the
        // bottleneck that even split can win, so the search is held to the same stages
        // and groups with its own shares. dp's even split is a single stage, where
        // splitMicroBatch's shares provably finish no later, so it is compared as is.
        const auto same_groups = resplit(base.plan, cost);
        ASSERT_TRUE(same_groups.has_value()) << where;
        const double resplit_ms = estimatePlan(*same_groups, cost).iteration_ms;
        outside += resplit_ms != base_ms;
        base_ms = resplit_ms;
      }
      EXPECT_LE(optimum_ms, base_ms * (1 + kSameMs)) << where;
    }
  }
  std::cout << "[exhaustive vs baselines] " << compared << " feasible baseline plans, " << outside
            << " PipeDream plans with shares outside the search space\n";
  EXPECT_GE(compared, 150);
}

TEST(ExhaustivePlanner, RefusesAnInstanceTooLargeToEnumerate) {
  const Cluster cluster = Cluster::load(std::string(STAGECRAFT_TEST_CLUSTERS) + "/jetson-edge.json");
  const ModelSpec model = ModelSpec::fromProto(zooModel("mobilenetv2"));
  const CostModel cost(model, cluster);
  const auto start = std::chrono::steady_clock::now();
  const PlanOutcome out = makePlan(*makePlanner("exhaustive"), cost, {64, 8, Schedule::OneFOneB});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
  EXPECT_FALSE(out.feasible);
  EXPECT_TRUE(contains(out.reason, "limit")) << out.reason;
  EXPECT_TRUE(contains(out.reason, "21 layers on 7 devices")) << out.reason;
}

TEST(Planners, ExplainAModelBiggerThanEveryDeviceNamingTheDeviceAndShortfall) {
  const ModelSpec model = ModelSpec::fromProto(zooModel("mlp"));  // fc2..fc7: 16 MB of weights each
  v1::Cluster c;
  c.set_name("tiny");
  for (auto [name, memory] : {std::pair{"pi-a", 20.0}, std::pair{"pi-big", 40.0}, std::pair{"pi-c", 30.0}}) {
    v1::Device* d = c.add_devices();
    d->set_name(name);
    d->set_tier("end");
    d->set_gflops(20);
    d->set_memory_mb(memory);
    d->set_bandwidth_mbps(100);
  }
  const Cluster cluster = Cluster::fromProto(c);
  const CostModel cost(model, cluster);
  for (const auto& name : {"exhaustive", "dp-weighted"}) {
    // Planners that search know no plan exists and say which device comes closest.
    const PlanOutcome out = makePlan(*makePlanner(name), cost, {16, 4, Schedule::OneFOneB});
    EXPECT_FALSE(out.feasible) << name;
    EXPECT_TRUE(contains(out.reason, "'pi-big'")) << name << ": " << out.reason;
    EXPECT_TRUE(contains(out.reason, "short by")) << name << ": " << out.reason;
  }
  for (const auto& name : {"dp", "gpipe", "pipedream"}) {
    // Fixed-rule planners report the first device their plan overloads, and by how much.
    const PlanOutcome out = makePlan(*makePlanner(name), cost, {16, 4, Schedule::OneFOneB});
    EXPECT_FALSE(out.feasible) << name;
    EXPECT_TRUE(contains(out.reason, "'pi-")) << name << ": " << out.reason;
    EXPECT_TRUE(contains(out.reason, "over by")) << name << ": " << out.reason;
  }
}

}  // namespace
}  // namespace stagecraft
