// A plan file (stagecraft-cli simulate/run --plan, the console's Open Plan): JSON -> v1::Plan,
// the model it names or embeds, and its stages read against a fixed cluster.

#include "cluster/cluster_catalog.h"
#include "cost/cost_model.h"
#include "fuzz_support.h"
#include "io/json_io.h"
#include "model/model_spec.h"
#include "plan/plan_io.h"
#include "plan/validation.h"

using namespace stagecraft;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const Cluster cluster = loadCluster("jetson-edge");
  fuzz::refusingBadInput([&] {
    v1::Plan proto;
    io::parseJson(fuzz::textOf(data, size), proto, "plan");
    const ModelSpec model = modelOfPlan(proto);
    const Plan plan = planFromProto(proto, cluster);
    const CostModel cost(model, cluster, plan.optimizer);
    const bool valid = validatePlan(plan, cost).empty();
    // The file form of what was read reads back as the same plan.
    const Plan again = planFromProto(planToProto(plan, model, cluster), cluster);
    fuzz::require(again.stages == plan.stages && again.batch_size == plan.batch_size &&
                      again.microbatches == plan.microbatches,
                  "a plan reads back as itself");
    fuzz::require(validatePlan(again, cost).empty() == valid, "a plan read back is as valid as before");
  });
  return 0;
}
