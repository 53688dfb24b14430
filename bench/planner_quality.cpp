// Planner quality: every planner on every shipped cluster x zoo model, simulated
// samples/s and the ratio to the ideal (every device training the whole model alone,
// with free links and unlimited memory). Each cluster also runs in a "free links"
// variant (bandwidth x10^6, no latency), where links cannot be the bottleneck.
//
//   build/bench/bench_planner_quality [--batch 64] [--microbatches 0] [--clusters DIR]
//
// --microbatches 0 (the default) lets every planner choose its micro-batch count.
//
// Prints a Markdown table and a line per goal; exits 1 when a goal is missed.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "model/zoo.h"
#include "planner/planner.h"
#include "sim/simulator.h"

using namespace stagecraft;

namespace {

Cluster withFreeLinks(const Cluster& cluster) {
  v1::Cluster p = cluster.toProto();
  p.set_name(cluster.name() + " (free links)");
  p.set_default_latency_ms(1e-6);
  for (auto& d : *p.mutable_devices()) d.set_bandwidth_mbps(d.bandwidth_mbps() * 1e6);
  for (auto& l : *p.mutable_links()) {
    l.set_bandwidth_mbps(l.bandwidth_mbps() * 1e6);
    l.set_latency_ms(0);
  }
  return Cluster::fromProto(p);
}

struct Row {
  std::string cluster, model;
  double ideal = 0;
  std::map<std::string, double> sps;  // planner -> simulated samples/s (0 = infeasible)
  double hybrid_estimate = 0;         // the closed-form samples/s the planners optimise
};

}  // namespace

int main(int argc, char** argv) {
  int batch = 64, micro = 0;
  std::string dir = STAGECRAFT_BENCH_CLUSTERS;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--batch")) batch = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--microbatches")) micro = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--clusters")) dir = argv[i + 1];
  }
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> planners;
  for (const auto& p : plannerNames()) {
    if (p != "exhaustive") planners.push_back(p);  // exhaustive is for small instances
  }

  std::vector<Row> rows;
  for (const auto& file : files) {
    const Cluster real = Cluster::load(file);
    for (const Cluster& cluster : {real, withFreeLinks(real)}) {
      for (const auto& name : zooModelNames()) {
        const ModelSpec model = ModelSpec::fromProto(zooModel(name));
        const CostModel cost(model, cluster);
        Row row{cluster.name(), name};
        for (int d = 0; d < cluster.size(); ++d) row.ideal += cost.soloSamplesPerSecond(d, batch);
        PlanRequest request;
        request.batch_size = batch;
        request.microbatches = micro;
        for (const auto& p : planners) {
          const PlanOutcome out = makePlan(*makePlanner(p), cost, request);
          row.sps[p] = out.feasible ? simulate(out.plan, cost).samples_per_second : 0;
          if (p == "hybrid") row.hybrid_estimate = out.estimate.samples_per_second;
        }
        rows.push_back(std::move(row));
      }
    }
  }

  std::printf("batch %d, %s; simulated samples/s (ratio to ideal)\n\n", batch,
              micro > 0 ? (std::to_string(micro) + " micro-batches").c_str() : "micro-batches chosen by each planner");
  std::printf("| cluster | model | ideal |");
  for (const auto& p : planners) std::printf(" %s |", p.c_str());
  std::printf(" hybrid simulated / estimated |\n|---|---|---:|");
  for (size_t i = 0; i <= planners.size(); ++i) std::printf("---:|");
  std::printf("\n");
  for (const auto& r : rows) {
    std::printf("| %s | %s | %.0f |", r.cluster.c_str(), r.model.c_str(), r.ideal);
    for (const auto& p : planners) {
      const double v = r.sps.at(p);
      if (v > 0) std::printf(" %.1f (%.2f) |", v, v / r.ideal);
      else std::printf(" infeasible |");
    }
    std::printf(" %.2f |\n", r.hybrid_estimate > 0 ? r.sps.at("hybrid") / r.hybrid_estimate : 0);
  }

  // Goals.
  bool all_met = true;
  auto goal = [&](bool met, const std::string& text) {
    std::printf("%s %s\n", met ? "GOAL met:   " : "GOAL MISSED:", text.c_str());
    all_met = all_met && met;
  };
  std::printf("\n");
  int beaten = 0;
  std::string where;
  for (const auto& r : rows) {
    for (const auto& p : planners) {
      if (p != "hybrid" && r.sps.at(p) > r.sps.at("hybrid") * 1.0001) {
        ++beaten;
        where += " " + r.cluster + "/" + r.model + " by " + p + ";";
      }
    }
  }
  goal(beaten == 0, "hybrid >= every baseline on every row" + (beaten ? " (beaten:" + where + ")" : std::string()));
  for (const auto& r : rows) {
    if (r.cluster != "cloud-edge-end" || (r.model != "vgg11" && r.model != "resnet18")) continue;
    char text[200];
    const double h = r.sps.at("hybrid");
    std::snprintf(text, sizeof text, "cloud-edge-end/%s: hybrid / dp = %.1fx (>= 1.5x), hybrid / pipedream = %.2fx (>= 1.2x)",
                  r.model.c_str(), h / r.sps.at("dp"), r.sps.at("pipedream") > 0 ? h / r.sps.at("pipedream") : INFINITY);
    goal(h >= 1.5 * r.sps.at("dp") && h >= 1.2 * r.sps.at("pipedream"), text);
  }
  double worst = INFINITY;
  std::string worst_row;
  for (const auto& r : rows) {
    if (r.cluster.find("(free links)") == std::string::npos) continue;
    const double ratio = r.sps.at("hybrid") / r.ideal;
    if (ratio < worst) {
      worst = ratio;
      worst_row = r.cluster + "/" + r.model;
    }
  }
  char text[200];
  std::snprintf(text, sizeof text, "with free links hybrid reaches >= 0.8 of ideal everywhere (worst %.2f, %s)", worst, worst_row.c_str());
  goal(worst >= 0.8, text);
  return all_met ? 0 : 1;
}
