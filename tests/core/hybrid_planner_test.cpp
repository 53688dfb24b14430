// The hybrid planner against the exhaustive search on random instances of several families,
// judged by simulation as the planners make their final choice.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>

#include "plan/validation.h"
#include "planner/planner.h"
#include "random_instances.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

using namespace testing;

// The hybrid planner must reach the optimum the exhaustive search finds, judged as the
// planners judge their final choice, by simulation, on many random instances of several
// families, memory-bound ones included.

/// "L0-3{0:8 4:8} L3-5{2:7}": each stage's layers and its members' samples, for failure messages.
std::string planText(const Plan& plan) {
  std::string text;
  for (const auto& stage : plan.stages) {
    text += "L" + std::to_string(stage.layer_begin) + "-" + std::to_string(stage.layer_end) + "{";
    for (size_t i = 0; i < stage.members.size(); ++i) {
      text += (i ? " " : "") + std::to_string(stage.members[i].device) + ":" + std::to_string(stage.members[i].samples);
    }
    text += "} ";
  }
  return text;
}

/// Each device's speed, memory and NIC, then every pair's bandwidth and latency.
std::string clusterText(const Cluster& cluster) {
  std::ostringstream text;
  for (int d = 0; d < cluster.size(); ++d) {
    const Device& dev = cluster.device(d);
    text << d << " (" << dev.gflops << " GFLOP/s, " << dev.memory_mb << " MB, " << dev.bandwidth_mbps << " Mbps) ";
  }
  text << "\n  links";
  for (int a = 0; a < cluster.size(); ++a) {
    for (int b = a + 1; b < cluster.size(); ++b) {
      text << " " << a << "-" << b << ":" << cluster.bandwidthMbps(a, b) << "/" << cluster.latencyMs(a, b);
    }
  }
  return text.str();
}

using InstanceMaker = std::function<Instance(std::mt19937&, int)>;

/// Runs hybrid and exhaustive on `count` instances from `make` and checks hybrid finds a
/// plan whenever one exists, and that its simulated iteration is within `max_gap` of the
/// exhaustive search's on each and within `max_mean_gap` on average. The exhaustive answer
/// is the best of its finalists by simulation, so hybrid may beat it; that counts as 0.
void expectHybridNearOptimum(const std::string& family, int count, unsigned seed, const InstanceMaker& make,
                             double max_gap_allowed = 0.02, double max_mean_gap = 0.005) {
  std::mt19937 rng(seed);
  int both = 0, tight = 0, binds = 0, infeasible = 0, reported = 0, failures = 0, ahead = 0;
  double max_gap = 0, gap_sum = 0, hybrid_ms = 0, exhaustive_ms = 0;
  std::string worst;
  auto report = [&](const std::string& what) {
    ++failures;
    if (reported++ < 8) ADD_FAILURE() << what;
  };
  for (int i = 0; i < count; ++i) {
    const Instance in = make(rng, i);
    tight += in.memory_tight;
    CostModel cost(in.model, in.cluster, in.optimizer);
    if (in.profiles) cost.setProfiles(*in.profiles);
    const PlanOutcome best = makePlan(*makePlanner("exhaustive"), cost, in.request);
    const PlanOutcome hybrid = makePlan(*makePlanner("hybrid"), cost, in.request);
    exhaustive_ms += best.plan_ms;
    hybrid_ms += hybrid.plan_ms;
    const Cluster roomy = withoutMemoryLimits(in.cluster_proto);
    CostModel unlimited(in.model, roomy, in.optimizer);
    if (in.profiles) unlimited.setProfiles(*in.profiles);
    const PlanOutcome free = makePlan(*makePlanner("exhaustive"), unlimited, in.request);
    binds += !best.feasible || best.simulated_ms > free.simulated_ms * (1 + kSameMs);
    const std::string where = family + " instance " + std::to_string(i) + " (" + describe(in) + ")";
    if (!best.feasible) {
      ++infeasible;
      if (hybrid.feasible) report(where + ": hybrid found a plan the exhaustive search says cannot exist");
      continue;
    }
    if (!hybrid.feasible) {
      report(where + ": hybrid infeasible but the optimum is " + std::to_string(best.simulated_ms) +
             " ms; hybrid says: " + hybrid.reason);
      continue;
    }
    if (const auto errors = validatePlan(hybrid.plan, cost); !errors.empty()) {
      report(where + ": hybrid plan invalid: " + errors.front());
      continue;
    }
    EXPECT_DOUBLE_EQ(hybrid.simulated_ms, simulate(hybrid.plan, cost).iteration_ms) << where;
    const double gap = hybrid.simulated_ms / best.simulated_ms - 1;
    ahead += gap < -1e-9;
    if (gap > max_gap_allowed) {
      report(where + ": hybrid " + std::to_string(hybrid.simulated_ms) + " ms vs optimum " +
             std::to_string(best.simulated_ms) + " ms simulated (gap " + std::to_string(gap * 100) +
             "%); estimated " + std::to_string(hybrid.estimate.iteration_ms) + " vs " +
             std::to_string(best.estimate.iteration_ms) + " ms\n  hybrid " + planText(hybrid.plan) +
             "\n  best   " + planText(best.plan) + "\n  cluster " + clusterText(in.cluster));
    }
    ++both;
    gap_sum += std::max(0.0, gap);
    if (gap > max_gap) {
      max_gap = gap;
      worst = where;
    }
  }
  const double mean_gap = both > 0 ? gap_sum / both : 0;
  std::cout << "[hybrid vs exhaustive, " << family << "] " << count << " instances (" << tight << " memory-tight, "
            << binds << " where memory changes the optimum, " << infeasible << " with no plan), " << both
            << " compared: max gap " << max_gap * 100 << "%, mean gap " << mean_gap * 100 << "%, hybrid ahead on "
            << ahead << "; planning " << hybrid_ms << " ms hybrid, " << exhaustive_ms << " ms exhaustive"
            << (worst.empty() ? "" : "; worst: " + worst) << "\n";
  ::testing::Test::RecordProperty("instances", count);
  ::testing::Test::RecordProperty("compared", both);
  ::testing::Test::RecordProperty("max_gap_percent", std::to_string(max_gap * 100));
  ::testing::Test::RecordProperty("mean_gap_percent", std::to_string(mean_gap * 100));
  EXPECT_EQ(failures, 0) << "failures on " << failures << " of " << count << " instances (first 8 shown above)";
  EXPECT_LE(max_gap, max_gap_allowed);
  EXPECT_LT(mean_gap, max_mean_gap);
  // The suite means something only if memory binds on many instances and most have a plan.
  EXPECT_GE(tight, count / 5);
  EXPECT_GE(binds, count / 10);
  EXPECT_GE(count - infeasible, count * 3 / 4);
}

/// A GPT-like model: an embedding, `blocks` equal transformer blocks and an LM head, with
/// activations far larger than a block's weights at long sequences.
v1::Model randomTransformer(std::mt19937& rng, int blocks, int id) {
  v1::Model m;
  m.set_name("transformer-" + std::to_string(id));
  m.set_task("language_model");
  m.set_input_dtype("int64");
  const int vocab = pickOf<int>(rng, {1024, 4096, 8192});
  const int dim = pickOf<int>(rng, {64, 128, 256, 512});
  m.add_input_shape(pickOf<int>(rng, {32, 128, 512}));
  m.set_num_classes(vocab);
  v1::Layer* embed = m.add_layers();
  embed->set_name("embed");
  embed->set_kind("embedding");
  embed->set_vocab_size(vocab);
  embed->set_embed_dim(dim);
  for (int b = 0; b < blocks; ++b) {
    v1::Layer* l = m.add_layers();
    l->set_name("block" + std::to_string(b));
    l->set_kind("transformer_block");
    l->set_num_heads(pickOf<int>(rng, {2, 4, 8}));
    l->set_ff_dim(4 * dim);
  }
  v1::Layer* head = m.add_layers();
  head->set_name("head");
  head->set_kind("lm_head");
  head->set_vocab_size(vocab);
  return m;
}

/// 5-8 devices; half the models transformer-like, half linear/conv; clusters with a link
/// table (latencies up to 5 ms) or with none (NIC speeds and one default latency); a
/// third memory-tight. Layer counts stay small enough for the exhaustive search.
Instance wideInstance(std::mt19937& rng, int id) {
  const int devices = pick(rng, 5, 8);
  const int max_layers = devices >= 7 ? 5 : 7;
  const bool transformer = pick(rng, 0, 1) == 1;
  ModelSpec model = ModelSpec::fromProto(transformer ? randomTransformer(rng, pick(rng, 1, max_layers - 2), id)
                                                     : randomModel(rng, pick(rng, 2, max_layers), id));
  PlanRequest request;
  request.batch_size = pickOf<int>(rng, {8, 16, 32, 64});
  request.microbatches = pickOf<int>(rng, {1, 2, 4, 8});
  request.schedule = pick(rng, 0, 3) == 0 ? Schedule::GPipe : Schedule::OneFOneB;
  const Optimizer optimizer = pick(rng, 0, 1) ? Optimizer::Adam : Optimizer::Sgd;
  const double copies = optimizer == Optimizer::Adam ? 4 : 3;
  const int micro = request.batch_size / request.microbatches;
  const int layers = model.layerCount();
  const double whole_model_mb = (model.parameters(0, layers) * 4 * copies + model.savedBytes(0, layers) * micro) / kMb;
  const bool tight = pick(rng, 0, 2) == 0;
  v1::Cluster proto = randomCluster(rng, devices, whole_model_mb, tight);
  if (pick(rng, 0, 1) == 0) proto.clear_links();  // NIC speeds and the default latency only
  Cluster cluster = Cluster::fromProto(proto);
  bool memory_tight = false;
  for (const auto& d : cluster.devices()) memory_tight |= d.memory_mb < whole_model_mb;
  return {std::move(model), std::move(proto), std::move(cluster), optimizer, request, memory_tight};
}

/// wideInstance with every device profiled as `stagecraft-cli profile` measures: per layer
/// a fixed cost plus a cost per sample, each timed size off the line by up to 25 % either way
/// (a small batch may run faster than a smaller one, as OpenBLAS does), so time is not
/// linear in samples and the planners split a micro-batch sample by sample.
Instance profiledInstance(std::mt19937& rng, int id) {
  Instance in = wideInstance(rng, id);
  v1::ProfileSet set;
  for (int d = 0; d < in.cluster.size(); ++d) {
    auto* p = set.add_devices();
    p->set_device(in.cluster.device(d).name);
    p->set_model(in.model.proto().name());
    const double ms_per_flop = 1.0 / (in.cluster.device(d).gflops * 1e6);
    for (int b = 1; b <= in.request.batch_size; b *= 2) {
      auto* batch = p->add_batches();
      batch->set_micro_batch(b);
      for (int l = 0; l < in.model.layerCount(); ++l) {
        auto* t = batch->add_layers();
        t->set_layer(l);
        const double fixed = uniform(rng, 0.0, 2.0) * in.model.forwardFlops(l, l + 1) * ms_per_flop;
        t->set_forward_ms((fixed + b * in.model.forwardFlops(l, l + 1) * ms_per_flop) * uniform(rng, 0.75, 1.25));
        t->set_backward_ms((fixed + b * in.model.backwardFlops(l, l + 1) * ms_per_flop) * uniform(rng, 0.75, 1.25));
      }
    }
  }
  in.profiles = std::move(set);
  return in;
}

TEST(HybridPlanner, IsNearTheOptimumOnRandomSmallInstances) {
  // Up to five devices the hybrid planner's DP runs over every device ordering.
  expectHybridNearOptimum("2-5 devices", 240, 1234567,
                          [](std::mt19937& rng, int i) { return randomInstance(rng, i, 2, 7, 2, 5); });
}

TEST(HybridPlanner, HeuristicOrderingsStayNearTheOptimumOnSixAndSevenDevices) {
  // From six devices on it only tries speed, memory, tier and network-domain orderings.
  expectHybridNearOptimum("6-7 devices", 60, 7654321,
                          [](std::mt19937& rng, int i) { return randomInstance(rng, i, 2, 5, 6, 7); });
}

TEST(HybridPlanner, IsNearTheOptimumOnWideFamilies) {
  expectHybridNearOptimum("5-8 devices, transformers, links or none", 300, 424242, wideInstance);
}

TEST(HybridPlanner, IsNearTheOptimumOnProfiledDevices) {
  // Measured times go through CostModel::splitMicroBatch in every stage the DP prices, the
  // path a run's planning takes; memory binds on some of them too. Instance 107 (5 devices,
  // 7 layers) was 2.92 % off until the local search moved a device to the neighbouring
  // stage together with the cut between them: its optimum, L0-3 on devices 3 and 4 and L3-7
  // on 1 and 2, is two such moves from the DP's L0-2 on 3 / L2-7 on 1, 2 and 4.
  expectHybridNearOptimum("5-8 profiled devices", 120, 97531, profiledInstance);
}

}  // namespace
}  // namespace stagecraft
