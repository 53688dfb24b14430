// PipeDream's partitioner (Narayanan et al., SOSP'19, section 3.1), kept as faithful as
// this cost model allows so it measures what a homogeneous-cluster planner loses on a
// heterogeneous one: it sees every device as the cluster's mean speed and every link as
// its median, and knows nothing of memory limits.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "planner/planners.h"

namespace stagecraft {
namespace {

constexpr double kFloatBytes = 4.0;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// The one device and one link PipeDream believes the cluster is made of.
struct UniformCluster {
  double gflops = 0;
  double bandwidth_mbps = 0;
  double latency_ms = 0;
};

double median(std::vector<double> values) {
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return (*std::max_element(values.begin(), values.begin() + mid) + upper) / 2;
}

UniformCluster uniformView(const Cluster& cluster) {
  UniformCluster u;
  for (const auto& d : cluster.devices()) u.gflops += d.gflops / cluster.size();
  std::vector<double> bandwidths, latencies;
  for (int a = 0; a < cluster.size(); ++a) {
    for (int b = a + 1; b < cluster.size(); ++b) {
      bandwidths.push_back(cluster.bandwidthMbps(a, b));
      latencies.push_back(cluster.latencyMs(a, b));
    }
  }
  if (bandwidths.empty()) {
    // A single device never talks to anyone; any positive link keeps the formulas finite.
    u.bandwidth_mbps = cluster.device(0).bandwidth_mbps;
    return u;
  }
  u.bandwidth_mbps = median(std::move(bandwidths));
  u.latency_ms = median(std::move(latencies));
  return u;
}

/// PipeDream's DP. All times are per sample of the global batch, in milliseconds, so that
/// per-iteration costs (the all-reduce, per-micro-batch latencies) and per-sample ones
/// (compute, activation bytes) share a unit.
class PipeDreamPartitioner {
 public:
  PipeDreamPartitioner(const ModelSpec& model, const UniformCluster& uniform, const PlanRequest& request)
      : model_(model), uniform_(uniform), batch_(request.batch_size), microbatches_(request.microbatches) {}

  struct StageChoice {
    int layer_begin = 0;
    int layer_end = 0;
    int replicas = 0;
  };

  /// The best pipeline on `devices` workers, stages in order; like the paper, it uses
  /// them all (a single layer on many workers becomes plain data parallelism).
  std::vector<StageChoice> partition(int devices) {
    const int layers = model_.layerCount();
    // best_[j][m]: the slowest stage of the best pipeline of layers [0, j) on exactly m
    // workers; from_[j][m]: where its last stage begins and how many replicas it has.
    best_.assign(layers + 1, std::vector<double>(devices + 1, kInfinity));
    from_.assign(layers + 1, std::vector<StageChoice>(devices + 1));
    for (int j = 1; j <= layers; ++j) {
      for (int m = 1; m <= devices; ++m) {
        double& best = best_[j][m];
        best = stageMs(0, j, m);
        from_[j][m] = {0, j, m};
        for (int i = 1; i < j; ++i) {
          const double cut = boundaryMs(i - 1);
          for (int r = 1; r < m; ++r) {
            const double t = std::max({best_[i][m - r], cut, stageMs(i, j, r)});
            if (t < best) {
              best = t;
              from_[j][m] = {i, j, r};
            }
          }
        }
      }
    }
    std::vector<StageChoice> stages;
    for (int j = layers, m = devices; j > 0;) {
      const StageChoice c = from_[j][m];
      stages.push_back(c);
      j = c.layer_begin;
      m -= c.replicas;
    }
    std::reverse(stages.begin(), stages.end());
    return stages;
  }

 private:
  /// Layers [begin, end) replicated on `replicas` workers: each computes its share of
  /// the samples, then the replicas all-reduce the stage's weights once per iteration.
  double stageMs(int begin, int end, int replicas) const {
    const double flops = model_.forwardFlops(begin, end) + model_.backwardFlops(begin, end);
    const double compute = flops / (uniform_.gflops * 1e6) / replicas;
    return compute + allReduceMs(model_.parameters(begin, end) * kFloatBytes, replicas) / batch_;
  }

  /// Ring all-reduce over identical links, the same formula CostModel uses.
  double allReduceMs(double bytes, int replicas) const {
    if (replicas <= 1 || bytes <= 0) return 0;
    const double steps = 2.0 * (replicas - 1);
    return steps / replicas * bytes * 8.0 / (uniform_.bandwidth_mbps * 1e3) + steps * uniform_.latency_ms;
  }

  /// The paper's 2 * C_i: activations after layer `last` go forward and their gradients
  /// come back, one message each way per micro-batch.
  double boundaryMs(int last) const {
    const double bytes = model_.outputBytes(last) * batch_;
    const double one_way = microbatches_ * uniform_.latency_ms + bytes * 8.0 / (uniform_.bandwidth_mbps * 1e3);
    return 2.0 * one_way / batch_;
  }

  const ModelSpec& model_;
  UniformCluster uniform_;
  double batch_;
  int microbatches_;
  std::vector<std::vector<double>> best_;
  std::vector<std::vector<StageChoice>> from_;
};

class PipeDreamPlanner final : public Planner {
 public:
  std::string_view name() const override { return "pipedream"; }
  std::string_view description() const override {
    return "PipeDream: replicated-stage DP assuming identical devices and links, mapped in cluster order";
  }

  PlanOutcome plan(const CostModel& cost, const PlanRequest& request) const override {
    Plan plan = emptyPlan(cost, request, name());
    const UniformCluster uniform = uniformView(cost.cluster());
    PipeDreamPartitioner partitioner(cost.model(), uniform, request);
    const int micro = plan.microBatchSize();
    int next_device = 0;
    for (const auto& choice : partitioner.partition(cost.deviceCount())) {
      Stage stage{choice.layer_begin, choice.layer_end, {}};
      // PipeDream treats replicas as equals, so they share the micro-batch evenly.
      for (int r = 0; r < choice.replicas; ++r) {
        const int samples = micro / choice.replicas + (r < micro % choice.replicas ? 1 : 0);
        stage.members.push_back({next_device++, samples});
      }
      plan.stages.push_back(std::move(stage));
    }
    // Memory limits are not PipeDream's concern; finishOutcome reports a plan over them.
    return finishOutcome(std::move(plan), cost);
  }
};

}  // namespace

std::unique_ptr<Planner> makePipeDreamPlanner() { return std::make_unique<PipeDreamPlanner>(); }

}  // namespace stagecraft
