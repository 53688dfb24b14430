// Plan validation on a fixed model and cluster: any plan a file can hold gets a list of
// errors or none, and a plan with none simulates.

#include <cmath>

#include "cluster/cluster_catalog.h"
#include "cost/cost_model.h"
#include "fuzz_support.h"
#include "io/json_io.h"
#include "model/zoo.h"
#include "plan/plan_io.h"
#include "plan/validation.h"
#include "sim/simulator.h"

using namespace stagecraft;

namespace {

/// Beyond this the simulator's work (stages x micro-batches x members) makes one input take
/// seconds, which libFuzzer would report as a timeout rather than a finding.
constexpr int kMaxSimulatedMicrobatches = 64;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ModelSpec model = loadModel("vgg11");
  static const Cluster cluster = loadCluster("cloud-edge-end");
  fuzz::refusingBadInput([&] {
    v1::Plan proto;
    io::parseJson(fuzz::textOf(data, size), proto, "plan");
    const Plan plan = planFromProto(proto, cluster);
    CostModel cost(model, cluster, plan.optimizer);
    cost.setBackups(1, 1);  // as a run with backups prices it: Plan::backupTarget is exercised
    const auto errors = validatePlan(plan, cost);
    for (const auto& e : errors) fuzz::require(!e.empty(), "every error says something");
    if (!errors.empty() || plan.microbatches > kMaxSimulatedMicrobatches) return;
    const SimulationResult result = simulate(plan, cost);
    fuzz::require(std::isfinite(result.iteration_ms) && result.iteration_ms >= 0,
                  "a valid plan's iteration takes a finite time");
  });
  return 0;
}
