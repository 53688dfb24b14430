#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "cluster/cluster.h"
#include "model/model_spec.h"
#include "plan/plan.h"

namespace stagecraft {

/// Samples of one micro-batch that move from a member of one stage to a member of the
/// next (activations forward, the same amount of gradient back).
struct Transfer {
  int from_device = -1;
  int to_device = -1;
  int samples = 0;
};

/// Members of a stage hold contiguous sample ranges of every micro-batch, in member
/// order; this lists which overlaps move between the groups of stages `from` and `to`.
std::vector<Transfer> boundaryTransfers(const Stage& from, const Stage& to);

/// The backups a worker keeps (stagecraft-worker's BackupStore): kOwnBackups states of its
/// own stage and kHeldBackups of the stage that sends it its backups: the newest, and the
/// two steps the coordinator pins (one every stage is known to hold twice, one on its way).
constexpr int kOwnBackups = 3;
constexpr int kHeldBackups = 3;

/// A stage group all-reduces its gradients in buckets of consecutive layers, from the last
/// layer down, each closed once it holds at least this many bytes (the stage's first layers
/// may make a smaller one). A bucket goes as soon as the last micro-batch's backward has
/// passed its layers, beside the rest of that backward, as PyTorch DDP does; 25 MiB is
/// DDP's default bucket (4 MiB buckets pay more latencies and made the hybrid planner miss
/// the optimum by 6 % on one of its random test clusters).
constexpr double kGradientBucketBytes = 25.0 * 1024 * 1024;

/// The buckets of a stage whose layers hold `layer_bytes` of gradient each (in layer
/// order): [begin, end) indices into `layer_bytes`, the last layers' bucket first.
std::vector<std::pair<int, int>> gradientBuckets(std::span<const double> layer_bytes);
/// The same for the model's layers [begin, end): the first layer of the bucket that ends
/// at layer `end` (exclusive), by binary search over the parameter counts' prefix sums.
int gradientBucketBegin(const ModelSpec& model, int begin, int end);

/// How long things take and how much memory they need, for one model on one cluster.
/// Compute time is FLOPs / effective speed, or a measured per-layer profile when one is
/// set for the device. Every planner, the estimate and the simulator use this one model.
class CostModel {
 public:
  /// Keeps references to `model` and `cluster`: both must outlive the cost model.
  CostModel(const ModelSpec& model, const Cluster& cluster, Optimizer optimizer = Optimizer::Sgd);
  CostModel(ModelSpec&&, const Cluster&, Optimizer = Optimizer::Sgd) = delete;
  CostModel(const ModelSpec&, Cluster&&, Optimizer = Optimizer::Sgd) = delete;
  CostModel(ModelSpec&&, Cluster&&, Optimizer = Optimizer::Sgd) = delete;

  /// Replaces FLOPs / gflops by measured per-layer times for the devices in `profiles`.
  /// Throws Error when a profile names an unknown device or has the wrong layer count.
  void setProfiles(const v1::ProfileSet& profiles);
  bool hasProfile(int device) const;

  /// Scales device d's compute (forward, backward, optimizer step) by factors[d]: measured
  /// over predicted time from training telemetry (control::computeFactors), so the same
  /// profiles or FLOP counts predict what the devices really do. Throws Error for a size
  /// other than the device count or a factor that is not finite and positive.
  void setComputeFactors(std::vector<double> factors);
  /// 1 for every device until setComputeFactors.
  double computeFactor(int device) const { return factors_.empty() ? 1.0 : factors_[device]; }

  const ModelSpec& model() const { return *model_; }
  const Cluster& cluster() const { return *cluster_; }
  Optimizer optimizer() const { return optimizer_; }
  int layerCount() const { return model_->layerCount(); }
  int deviceCount() const { return cluster_->size(); }

  /// Milliseconds for device `d` to run layers [begin, end) on `samples` samples.
  double forwardMs(int d, int begin, int end, int samples) const;
  double backwardMs(int d, int begin, int end, int samples) const;
  /// Milliseconds for device `d` to apply one optimizer step (the cost model's optimizer)
  /// to the parameters of layers [begin, end), as its profile timed it; 0 without one (the
  /// step is bound by memory traffic, which FLOPs / gflops cannot tell).
  double updateMs(int d, int begin, int end) const;
  /// Milliseconds of CPU device `d` spends on its part of an all-reduce of `bytes` in a
  /// group of `group_size`: the ring sends, receives and adds 2(g-1)/g of them where a
  /// member of a pair handles 1 (the profile's allreduce_ms_per_mb times 2(g-1)/g). The
  /// gradients are accumulated in the buckets themselves, so nothing is copied in or out.
  /// 0 without a profile.
  double allReduceCpuMs(int d, int group_size, double bytes) const;
  /// Milliseconds device `d` takes to copy one MiB in memory: its profile's copy speed, or
  /// kAssumedCopyMsPerMb without one.
  double copyMsPerMb(int d) const;

  /// The CPUs device `d`'s compute keeps busy while it runs, and the CPUs of the machine
  /// its worker runs on, as its profile measured them; 0 when not measured. Devices on one
  /// machine (machineOf) share its CPUs: the simulator slows the ops that run at once there
  /// when their demands add up to more than it has.
  double cpuDemand(int d) const;
  int machineCpus(int d) const;

  /// latency + bytes / bandwidth of the link a -> b; 0 when a == b or bytes == 0.
  double transferMs(int a, int b, double bytes) const;
  /// bytes / bandwidth: how long the transfer occupies the link a -> b. Latency delays
  /// the arrival but does not keep the link from carrying the next transfer.
  double wireMs(int a, int b, double bytes) const;

  /// Ring all-reduce of `bytes` over `group`: 2(g-1)/g * bytes over the slowest ring
  /// link, plus 2(g-1) latencies, or the slowest member's CPU work (allReduceCpuMs) when
  /// that takes longer; 0 for a group of one.
  double allReduceMs(std::span<const int> group, double bytes) const;
  /// The ring's share of allReduceMs: bytes over the slowest ring link and the latencies.
  double allReduceWireMs(std::span<const int> group, double bytes) const;

  /// When the all-reduce of stage `st` runs, if member i starts its last backward at
  /// `backward_start[i]` (a member with no samples: when it is free to join). Buckets
  /// (gradientBuckets) go one after another on the ring, each once every member's backward
  /// has passed its layers; the ring's CPU work competes with the backward for the cores,
  /// so it is not hidden: the all-reduce ends no earlier than the slowest backward plus that
  /// work. start = end = the slowest backward's end for a group of one.
  struct AllReduceSpan {
    double start_ms = 0;
    double end_ms = 0;
  };
  AllReduceSpan allReduceSpan(const Stage& st, std::span<const double> backward_start) const;
  /// What the all-reduce of `st` adds after its slowest member's last backward when every
  /// member starts that backward at once (allReduceSpan).
  double exposedAllReduceMs(const Stage& st) const;

  /// Weights + gradients + optimizer state (1x momentum for SGD, 2x for Adam) of
  /// layers [begin, end), plus the copies of its own stage a member keeps as backups
  /// (setBackups), in bytes.
  double stateBytes(int begin, int end) const;
  /// Backups a run keeps: `own` copies of each stage's weights and optimizer state on its
  /// members, `held` copies on the device it sends them to (Plan::backupTarget). 0, 0 (no
  /// backups) until set. Throws Error for a negative count.
  void setBackups(int own, int held);
  /// One copy of the weights and optimizer state of layers [begin, end), in bytes.
  double backupBytes(int begin, int end) const;
  /// What device `d` holds of the other stages' backups under `plan`, in bytes.
  double heldBackupBytes(const Plan& plan, int d) const;
  /// Activations kept for backward by a member holding `samples` of each of `in_flight`
  /// micro-batches, in bytes.
  double activationBytes(int begin, int end, int samples, int in_flight) const;
  double memoryBytes(int begin, int end, int samples, int in_flight) const {
    return stateBytes(begin, end) + activationBytes(begin, end, samples, in_flight);
  }
  double memoryLimitBytes(int d) const;
  /// Most samples per micro-batch device `d` can hold for layers [begin, end) (0 when even
  /// the weights do not fit).
  int maxSamples(int d, int begin, int end, int in_flight) const;

  /// Splits `micro_batch` samples of a stage across `group`: proportional to speed,
  /// capped by memory, then refined sample by sample so the slowest member finishes as
  /// early as possible. Members may get 0 samples. nullopt when the group cannot hold it.
  std::optional<std::vector<int>> splitMicroBatch(std::span<const int> group, int begin, int end,
                                                  int micro_batch, int in_flight) const;

  /// Samples/s device `d` reaches training the whole model alone at `batch`, with free
  /// links and unlimited memory.
  double soloSamplesPerSecond(int d, int batch) const;

  /// The smallest micro-batch device `d`'s profile timed; 0 without a profile.
  int smallestProfiledBatch(int d) const;
  /// How many micro-batch sizes device `d`'s profile timed; 0 without a profile.
  int profiledBatchCount(int d) const;

 private:
  double profiledMs(int d, int begin, int end, int samples, bool backward) const;

  struct Profile {
    std::vector<int> batches;                    // ascending micro-batch sizes
    std::vector<std::vector<double>> fwd, bwd;   // per batch: prefix sums over layers, ms
    std::vector<double> update;                  // prefix sums over layers, ms; empty: not timed
    double copy_ms_per_mb = 0;                   // 0: not timed
    double allreduce_ms_per_mb = 0;              // one member of a pair; 0: not timed
    double cpu_demand = 0;                       // CPUs its compute keeps busy; 0: not measured
    int machine_cpus = 0;                        // its machine's; 0: not measured
  };
  const ModelSpec* model_;
  const Cluster* cluster_;
  Optimizer optimizer_;
  std::vector<std::optional<Profile>> profiles_;  // per device
  std::vector<double> factors_;                   // per device; empty: all 1
  int own_backups_ = 0, held_backups_ = 0;
};

/// Per-stage times of one micro-batch under a plan (the slowest member for compute,
/// the slowest link for transfers).
struct StageTiming {
  double forward_ms = 0;
  double backward_ms = 0;
  double send_activation_ms = 0;  ///< to the next stage, latency included
  double send_gradient_ms = 0;    ///< to the previous stage, latency included
  double activation_wire_ms = 0;  ///< how long the activation occupies its link
  double gradient_wire_ms = 0;    ///< how long the gradient occupies its link
  double allreduce_ms = 0;        ///< once per iteration: what it adds after the last backward
  double update_ms = 0;           ///< the optimizer step, once per iteration (slowest member)
};

/// The closed-form estimate of one training iteration of a plan: fill + drain of the
/// pipeline plus (M - 1) periods of its bottleneck (under 1F1B, periods bounded by the links
/// and neighbouring pairs, and no less than any stage's own M micro-batches with the trips
/// to it and back), plus the all-reduce and optimizer step that do not overlap the drain.
/// Planners optimise this; the simulator checks it event by event.
struct PlanEstimate {
  bool fits = true;                    ///< every member within its memory limit
  double iteration_ms = 0;
  double samples_per_second = 0;
  double bottleneck_ms = 0;            ///< the pipeline period in steady state
  std::vector<StageTiming> stages;
  std::vector<double> memory_bytes;    ///< per cluster device, 0 when unused
};

/// Assumes a structurally valid plan (see validatePlan); memory is reported, not enforced.
PlanEstimate estimatePlan(const Plan& plan, const CostModel& cost);

/// A member of a plan whose share of each micro-batch is smaller than any size its device's
/// profile timed: its time is extrapolated (CostModel::forwardMs: no faster than the
/// smallest size, nor cheaper per sample), not measured.
struct ShareBelowProfile {
  int device = -1;
  int samples = 0;      ///< its share of a micro-batch
  int smallest = 0;     ///< the smallest micro-batch its profile timed
  bool only = false;    ///< the profile timed that size alone: the share is priced as it
};
std::vector<ShareBelowProfile> sharesBelowProfiles(const Plan& plan, const CostModel& cost);

/// A memory copy's speed where no profile timed it: 4 GiB/s, a small board's.
constexpr double kAssumedCopyMsPerMb = 0.25;

/// What one round of backups under `plan` costs, in ms: each stage's rank-0 member copies
/// its weights and optimizer state and sends the copy as it is (two passes over the bytes at
/// its copy speed), its backup target receives and parses them (two); `cpu_ms` is the
/// busiest machine's share (the devices whose addresses share a host add up: machineOf).
/// `link_ms` is the longest any device's link is busy sending them. Both 0 when nothing is
/// sent.
struct BackupCost {
  double cpu_ms = 0;
  double link_ms = 0;
};
BackupCost backupCost(const Plan& plan, const CostModel& cost);

/// Steps between backups: as few as hold the copies' CPU within `budget` (a share, e.g.
/// 0.05) of the steps between them, and their bytes within half of those steps' link time
/// (the rest is the activations'; a link that carries copies longer than that falls behind
/// and they skip steps). At least 1 and at most 10000.
std::int64_t backupStride(const BackupCost& cost, double step_ms, double budget);

}  // namespace stagecraft
