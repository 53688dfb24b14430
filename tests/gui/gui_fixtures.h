#pragma once

// Models and clusters the console's tests share.

#include <string>

#include "cluster/cluster.h"
#include "model/zoo.h"
#include "stagecraft/v1/cluster.pb.h"

namespace stagecraft::gui::testing {

/// A shipped example cluster (resources/clusters/<name>.json).
inline Cluster shippedCluster(const char* name) {
  return Cluster::load(std::string(STAGECRAFT_TEST_CLUSTERS) + "/" + name + ".json");
}

inline ModelSpec zoo(const char* name) { return ModelSpec::fromProto(zooModel(name)); }

/// A big server and a board with far too little memory for vgg11.
inline Cluster bigAndTiny() {
  v1::Cluster proto;
  proto.set_name("big-and-tiny");
  auto* big = proto.add_devices();
  big->set_name("big");
  big->set_tier("cloud");
  big->set_gflops(2000);
  big->set_memory_mb(64000);
  big->set_bandwidth_mbps(1000);
  auto* tiny = proto.add_devices();
  tiny->set_name("tiny");
  tiny->set_tier("end");
  tiny->set_gflops(50);
  tiny->set_memory_mb(64);
  tiny->set_bandwidth_mbps(100);
  return Cluster::fromProto(proto);
}

}  // namespace stagecraft::gui::testing
