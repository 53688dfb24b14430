// A cluster file (stagecraft-cli --cluster, the console's Open Cluster): JSON -> v1::Cluster
// -> Cluster. An accepted cluster must survive its own file form.

#include <cmath>

#include "cluster/cluster.h"
#include "fuzz_support.h"
#include "io/json_io.h"
#include "stagecraft/v1/cluster.pb.h"

using namespace stagecraft;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::refusingBadInput([&] {
    v1::Cluster proto;
    io::parseJson(fuzz::textOf(data, size), proto, "cluster");
    const Cluster cluster = Cluster::fromProto(proto);
    for (int a = 0; a < cluster.size(); ++a) {
      for (int b = 0; b < cluster.size(); ++b) {
        if (a == b) continue;
        fuzz::require(cluster.bandwidthMbps(a, b) > 0, "every pair of devices has a positive bandwidth");
        fuzz::require(cluster.latencyMs(a, b) >= 0 && std::isfinite(cluster.latencyMs(a, b)),
                      "every latency is finite and not negative");
      }
    }
    v1::Cluster again;
    io::parseJson(io::toJson(cluster.toProto()), again, "cluster (written back)");
    fuzz::require(Cluster::fromProto(again).size() == cluster.size(), "a cluster reads back as itself");
  });
  return 0;
}
