// A profile file (stagecraft-cli --profile FILE): JSON -> v1::ProfileSet, applied to the
// cost model of a fixed model and cluster, then priced.

#include "cluster/cluster_catalog.h"
#include "cost/cost_model.h"
#include "fuzz_support.h"
#include "io/json_io.h"
#include "model/zoo.h"
#include "stagecraft/v1/cluster.pb.h"

using namespace stagecraft;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ModelSpec model = loadModel("mlp");
  static const Cluster cluster = loadCluster("cloud-edge-end");
  fuzz::refusingBadInput([&] {
    v1::ProfileSet profiles;
    io::parseJson(fuzz::textOf(data, size), profiles, "profile");
    CostModel cost(model, cluster, Optimizer::Adam);
    cost.setProfiles(profiles);
    const int layers = model.layerCount();
    for (int d = 0; d < cluster.size(); ++d) {
      for (int samples : {1, 7, 64}) {
        (void)cost.forwardMs(d, 0, layers, samples);
        (void)cost.backwardMs(d, 1, layers, samples);
      }
      (void)cost.updateMs(d, 0, layers);
      (void)cost.allReduceCpuMs(d, 3, 1 << 20);
    }
  });
  return 0;
}
