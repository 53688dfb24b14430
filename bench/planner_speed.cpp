// Planner speed: hybrid planning time on synthetic heterogeneous clusters and deep
// models, next to the baselines measured in the same run.
//
//   build/bench/bench_planner_speed [--repeat 3] [--quality]
//
// Goals: 16 devices x 100 layers under 1 s, 64 devices x 200 layers under 10 s, 256 devices x
// 200 layers under 10 s and 1000 devices x 100 layers under 60 s, planned from FLOPs and
// again with every device profiled (as `stagecraft-cli run` plans). --quality also plans the
// larger clusters with the DP over whole device orderings (what clusters of up to 64 devices
// get; minutes, 256 devices at most) and prints how the two plans compare by simulation.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "planner/planner.h"
#include "planner/planners.h"

using namespace stagecraft;

namespace {

/// A deep MLP of `layers` Linear layers with widths drawn from [256, 2048].
ModelSpec deepModel(int layers, std::mt19937& rng) {
  std::uniform_int_distribution<int> width(1, 8);
  v1::Model m;
  m.set_name("deep" + std::to_string(layers));
  m.set_task("classification");
  m.set_input_dtype("float32");
  m.add_input_shape(1024);
  m.set_num_classes(10);
  for (int l = 0; l < layers; ++l) {
    auto* layer = m.add_layers();
    layer->set_name("fc" + std::to_string(l));
    layer->set_kind("linear");
    layer->set_out_features(l + 1 == layers ? 10 : 256 * width(rng));
    layer->set_activation("relu");
  }
  return ModelSpec::fromProto(m);
}

/// Devices across three tiers with 30x spread in speed, 8x in memory, and a thin WAN
/// between tiers.
Cluster syntheticCluster(int devices, std::mt19937& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  v1::Cluster c;
  c.set_name("synthetic" + std::to_string(devices));
  const char* tiers[] = {"cloud", "edge", "end"};
  for (int i = 0; i < devices; ++i) {
    auto* d = c.add_devices();
    const int tier = i < devices / 8 ? 0 : (i < devices / 2 ? 1 : 2);
    d->set_name("dev" + std::to_string(i));
    d->set_tier(tiers[tier]);
    d->set_gflops((tier == 0 ? 2000 : tier == 1 ? 400 : 60) * (0.5 + unit(rng)));
    d->set_memory_mb((tier == 0 ? 16000 : tier == 1 ? 8000 : 2000) * (0.5 + unit(rng)));
    d->set_bandwidth_mbps(tier == 2 ? 100 : 1000);
  }
  for (int i = 0; i < devices; ++i) {
    for (int j = i + 1; j < devices; ++j) {
      if (c.devices(i).tier() == c.devices(j).tier()) continue;
      auto* l = c.add_links();
      l->set_a(c.devices(i).name());
      l->set_b(c.devices(j).name());
      l->set_bandwidth_mbps(100);
      l->set_latency_ms(10);
    }
  }
  return Cluster::fromProto(c);
}

/// What `stagecraft-cli profile` would measure on `cluster`: per-layer times at micro-batches
/// 1 to 256 from each device's speed, plus a fixed 0.05 ms per layer and pass (what a small
/// micro-batch costs whatever its size), so that time is not linear in samples. With these the
/// cost model reads measured times, and the planner splits a stage's micro-batch sample by
/// sample (CostModel::splitMicroBatch) instead of in proportion to speed.
v1::ProfileSet syntheticProfiles(const ModelSpec& model, const Cluster& cluster) {
  v1::ProfileSet set;
  for (int d = 0; d < cluster.size(); ++d) {
    auto* p = set.add_devices();
    p->set_device(cluster.device(d).name);
    p->set_model(model.proto().name());
    const double ms_per_flop = 1.0 / (cluster.device(d).gflops * 1e6);
    for (int b : {1, 4, 16, 64, 256}) {
      auto* batch = p->add_batches();
      batch->set_micro_batch(b);
      for (int l = 0; l < model.layerCount(); ++l) {
        auto* t = batch->add_layers();
        t->set_layer(l);
        t->set_forward_ms(0.05 + b * model.forwardFlops(l, l + 1) * ms_per_flop);
        t->set_backward_ms(0.05 + b * model.backwardFlops(l, l + 1) * ms_per_flop);
      }
    }
  }
  return set;
}

/// --quality runs the whole-ordering DP up to this many devices; on a thousand its groups
/// alone would take gigabytes.
constexpr int kWholeQualityUpTo = 256;

}  // namespace

int main(int argc, char** argv) {
  int repeat = 3;
  bool quality = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--quality")) {
      quality = true;
    } else {
      std::fprintf(stderr, "usage: bench_planner_speed [--repeat N] [--quality]\n");
      return 2;
    }
  }
  struct Case {
    int devices, layers;
    double goal_s;
  };
  bool all_met = true;
  std::printf("| devices x layers | planner | median plan time (s) | samples/s (estimate) | iteration (ms, simulated) |\n"
              "|---|---|---:|---:|---:|\n");
  std::vector<std::string> goals, comparisons;
  for (const Case& c : {Case{16, 100, 1.0}, Case{64, 200, 10.0}, Case{256, 200, 10.0}, Case{1000, 100, 60.0}}) {
    std::mt19937 rng(42);
    const ModelSpec model = deepModel(c.layers, rng);
    const Cluster cluster = syntheticCluster(c.devices, rng);
    const CostModel cost(model, cluster);
    PlanRequest request;
    request.batch_size = 256;
    request.microbatches = 16;
    PlanOutcome hybrid;
    // Plans `repeat` times, prints the row with the median time; for hybrid, the goal too.
    const auto measure = [&](const char* name, const CostModel& on, const char* label, const char* devices) {
      std::vector<double> times;
      PlanOutcome out;
      for (int r = 0; r < repeat; ++r) {
        out = makePlan(*makePlanner(name), on, request);
        times.push_back(out.plan_ms / 1000);
      }
      std::sort(times.begin(), times.end());
      const double median = times[times.size() / 2];
      std::printf("| %d x %d | %s | %.3f | %s | %.3f |\n", c.devices, c.layers, label, median,
                  out.feasible ? std::to_string(out.estimate.samples_per_second).c_str() : "infeasible",
                  out.simulated_ms);
      if (std::string(name) == "hybrid") {
        char text[160];
        const bool met = median < c.goal_s;
        std::snprintf(text, sizeof text, "%s hybrid plans %d %s x %d layers in %.3f s (goal < %.0f s)",
                      met ? "GOAL met:   " : "GOAL MISSED:", c.devices, devices, c.layers, median, c.goal_s);
        goals.push_back(text);
        all_met = all_met && met;
      }
      return out;
    };
    for (const char* name : {"hybrid", "pipedream", "dp-weighted"}) {
      const PlanOutcome out = measure(name, cost, name, "devices");
      if (std::string(name) == "hybrid") hybrid = out;
    }
    // The same cluster as `stagecraft-cli run` plans it: every device profiled.
    CostModel profiled(model, cluster);
    profiled.setProfiles(syntheticProfiles(model, cluster));
    measure("hybrid", profiled, "hybrid, profiled", "profiled devices");
    if (quality && c.devices > HybridOptions{}.whole_orderings_up_to && c.devices <= kWholeQualityUpTo) {
      HybridOptions whole;
      whole.whole_orderings_up_to = c.devices;
      const PlanOutcome full = makePlan(*makeHybridPlanner(whole), cost, request);
      char text[240];
      std::snprintf(text, sizeof text,
                    "%d x %d: simulated iteration %.3f ms (%.1f s to plan) against %.3f ms (%.1f s) with the DP over "
                    "whole orderings: %.2f%% %s",
                    c.devices, c.layers, hybrid.simulated_ms, hybrid.plan_ms / 1000, full.simulated_ms,
                    full.plan_ms / 1000, std::abs(hybrid.simulated_ms / full.simulated_ms - 1) * 100,
                    hybrid.simulated_ms <= full.simulated_ms ? "faster or equal" : "slower");
      comparisons.push_back(text);
    }
  }
  std::printf("\n");
  for (const auto& g : goals) std::printf("%s\n", g.c_str());
  for (const auto& q : comparisons) std::printf("%s\n", q.c_str());
  return all_met ? 0 : 1;
}
