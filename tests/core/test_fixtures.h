#pragma once

// Small models and clusters built in code, for tests that need exact numbers.

#include <cstdint>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "model/model_spec.h"
#include "stagecraft/v1/cluster.pb.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::testing {

/// `layers` identical linear layers of `width` features (no bias, no activation): each
/// costs 2*width^2 forward FLOPs per sample.
inline ModelSpec uniformLinearModel(int layers, int width) {
  v1::Model m;
  m.set_name("uniform");
  m.set_task("classification");
  m.set_input_dtype("float32");
  m.add_input_shape(width);
  m.set_num_classes(width);
  for (int l = 0; l < layers; ++l) {
    auto* layer = m.add_layers();
    layer->set_name("fc" + std::to_string(l));
    layer->set_kind("linear");
    layer->set_out_features(width);
    layer->set_no_bias(true);
  }
  return ModelSpec::fromProto(m);
}

/// Devices named d0, d1... with the given speeds; plenty of memory; every pair linked at
/// `bandwidth_mbps` with `latency_ms`.
inline Cluster makeCluster(const std::vector<double>& gflops, double memory_mb = 1e6,
                           double bandwidth_mbps = 1e9, double latency_ms = 1e-9) {
  v1::Cluster c;
  c.set_name("test");
  c.set_default_latency_ms(latency_ms);
  for (size_t i = 0; i < gflops.size(); ++i) {
    auto* d = c.add_devices();
    d->set_name("d" + std::to_string(i));
    d->set_tier("edge");
    d->set_gflops(gflops[i]);
    d->set_memory_mb(memory_mb);
    d->set_bandwidth_mbps(bandwidth_mbps);
  }
  return Cluster::fromProto(c);
}

/// A device of `set` with one micro-batch size (1) whose `layers` layers each take
/// `forward_ms` and `backward_ms` (a profile times its layers: one of all zeros is refused).
inline v1::DeviceProfile* addTimedDevice(v1::ProfileSet& set, const std::string& name, int layers, double forward_ms,
                                  double backward_ms) {
  auto* dev = set.add_devices();
  dev->set_device(name);
  auto* b = dev->add_batches();
  b->set_micro_batch(1);
  for (int l = 0; l < layers; ++l) {
    auto* t = b->add_layers();
    t->set_layer(l);
    t->set_forward_ms(forward_ms);
    t->set_backward_ms(backward_ms);
  }
  return dev;
}

/// A member's IterationReport of `step`: one forward of `forward_ms` from 0, then one
/// backward of `backward_ms`.
inline v1::IterationReport passesReport(std::int64_t step, double forward_ms, double backward_ms) {
  v1::IterationReport r;
  r.set_step(step);
  auto* f = r.add_timeline();
  f->set_kind("forward");
  f->set_end_ms(forward_ms);
  auto* b = r.add_timeline();
  b->set_kind("backward");
  b->set_start_ms(forward_ms);
  b->set_end_ms(forward_ms + backward_ms);
  return r;
}

}  // namespace stagecraft::testing
