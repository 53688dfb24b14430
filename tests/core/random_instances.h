#pragma once

// Random planning instances for the planner tests: a model of linear/conv layers, a
// heterogeneous cluster with or without memory to spare, and a request. Drawn from mt19937's
// raw output only, so every standard library gives the same instances.

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "model/model_spec.h"
#include "planner/planner.h"

namespace stagecraft::testing {

constexpr double kMb = 1024.0 * 1024.0;
/// estimatePlan summed in another order may differ by rounding, never by more.
constexpr double kSameMs = 1e-9;

struct Instance {
  ModelSpec model;
  v1::Cluster cluster_proto;
  Cluster cluster;
  Optimizer optimizer = Optimizer::Sgd;
  PlanRequest request;
  bool memory_tight = false;  ///< some device cannot hold the whole model at its micro-batch
  std::optional<v1::ProfileSet> profiles;  ///< measured-like times; none: FLOPs / GFLOP/s
};

// mt19937's raw output is the same everywhere; the standard distributions are not, so the
// instances are drawn from it directly to be the same with every standard library.
inline int pick(std::mt19937& rng, int lo, int hi) { return lo + static_cast<int>(rng() % (hi - lo + 1)); }
inline double uniform(std::mt19937& rng, double lo, double hi) { return lo + (hi - lo) * (rng() / 4294967296.0); }
template <typename T>
T pickOf(std::mt19937& rng, const std::vector<T>& values) {
  return values[pick(rng, 0, static_cast<int>(values.size()) - 1)];
}

inline v1::Model randomModel(std::mt19937& rng, int layers, int id) {
  v1::Model m;
  m.set_name("random-" + std::to_string(id));
  m.set_task("classification");
  m.set_input_dtype("float32");
  m.set_num_classes(10);
  const int convs = pick(rng, 0, layers);
  int size = pickOf<int>(rng, {8, 16, 32});
  if (convs > 0) {
    m.add_input_shape(3);
    m.add_input_shape(size);
    m.add_input_shape(size);
  } else {
    m.add_input_shape(pick(rng, 32, 2048));
  }
  for (int i = 0; i < layers; ++i) {
    v1::Layer* l = m.add_layers();  // input_shape left empty: ModelSpec chains it
    l->set_name((i < convs ? "conv" : "fc") + std::to_string(i + 1));
    if (i < convs) {
      l->set_kind("conv2d");
      l->set_out_channels(pickOf<int>(rng, {8, 16, 32, 64, 128}));
      l->set_kernel_size(3);
      l->set_padding(1);
      const int stride = size >= 8 && pick(rng, 0, 1) ? 2 : 1;
      l->set_stride(stride);
      size = (size - 1) / stride + 1;
      l->set_batch_norm(pick(rng, 0, 1) == 1);
      l->set_activation("relu");
    } else {
      l->set_kind("linear");
      l->set_out_features(static_cast<int>(std::pow(2.0, uniform(rng, 4, 11))));
      l->set_flatten(i == convs && convs > 0);
      if (i + 1 < layers) l->set_activation("relu");
    }
  }
  return m;
}

inline v1::Cluster randomCluster(std::mt19937& rng, int devices, double whole_model_mb, bool tight) {
  v1::Cluster c;
  c.set_name("random");
  c.set_default_latency_ms(uniform(rng, 0.1, 2));
  const double base_gflops = std::pow(10.0, uniform(rng, 1, 2.5));
  for (int d = 0; d < devices; ++d) {
    v1::Device* dev = c.add_devices();
    dev->set_name("dev" + std::to_string(d));
    dev->set_tier(pickOf<std::string>(rng, {"cloud", "edge", "end"}));
    dev->set_gflops(base_gflops * std::pow(10.0, uniform(rng, 0, 1)));
    // Tight clusters give some devices less than the whole model needs, so memory decides.
    dev->set_memory_mb(tight ? whole_model_mb * uniform(rng, 0.3, 1.6) : 1e6);
    dev->set_bandwidth_mbps(pickOf<double>(rng, {20, 100, 300, 1000, 10000}));
  }
  for (int a = 0; a < devices; ++a) {
    for (int b = a + 1; b < devices; ++b) {
      if (uniform(rng, 0, 1) < 0.35) {
        v1::Link* link = c.add_links();
        link->set_a("dev" + std::to_string(a));
        link->set_b("dev" + std::to_string(b));
        link->set_bandwidth_mbps(uniform(rng, 10, 2000));
        link->set_latency_ms(uniform(rng, 0.05, 5));
      }
    }
  }
  return c;
}

inline Instance randomInstance(std::mt19937& rng, int id, int min_layers, int max_layers, int min_devices, int max_devices) {
  const int layers = pick(rng, min_layers, max_layers);
  ModelSpec model = ModelSpec::fromProto(randomModel(rng, layers, id));
  PlanRequest request;
  request.batch_size = pickOf<int>(rng, {8, 16, 32});
  request.microbatches = pickOf<int>(rng, {1, 2, 4, 8});
  request.schedule = pick(rng, 0, 3) == 0 ? Schedule::GPipe : Schedule::OneFOneB;
  const Optimizer optimizer = pick(rng, 0, 1) ? Optimizer::Adam : Optimizer::Sgd;
  const double copies = optimizer == Optimizer::Adam ? 4 : 3;
  const int micro = request.batch_size / request.microbatches;
  const double whole_model_mb =
      (model.parameters(0, layers) * 4 * copies + model.savedBytes(0, layers) * micro) / kMb;
  const bool tight = pick(rng, 0, 2) == 0;
  v1::Cluster proto = randomCluster(rng, pick(rng, min_devices, max_devices), whole_model_mb, tight);
  Cluster cluster = Cluster::fromProto(proto);
  bool memory_tight = false;
  for (const auto& d : cluster.devices()) memory_tight |= d.memory_mb < whole_model_mb;
  return {std::move(model), std::move(proto), std::move(cluster), optimizer, request, memory_tight};
}

/// The same cluster with memory to spare everywhere.
inline Cluster withoutMemoryLimits(v1::Cluster proto) {
  for (auto& d : *proto.mutable_devices()) d.set_memory_mb(1e9);
  return Cluster::fromProto(proto);
}

inline std::string describe(const Instance& in) {
  std::string s = std::to_string(in.model.layerCount()) + " layers, " + std::to_string(in.cluster.size()) +
                  " devices, batch " + std::to_string(in.request.batch_size) + " in " +
                  std::to_string(in.request.microbatches) + " (" + std::string(scheduleName(in.request.schedule)) +
                  ", " + std::string(optimizerName(in.optimizer)) + ")";
  return s;
}


}  // namespace stagecraft::testing
