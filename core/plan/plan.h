#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stagecraft {

enum class Schedule { Invalid = 0, OneFOneB, GPipe };
enum class Optimizer { Invalid = 0, Sgd, Adam };

std::string_view scheduleName(Schedule schedule);   ///< "1f1b" | "gpipe"
Schedule parseSchedule(std::string_view text);       ///< Invalid when unknown
std::string_view optimizerName(Optimizer optimizer); ///< "sgd" | "adam"
Optimizer parseOptimizer(std::string_view text);     ///< Invalid when unknown

/// A member of a stage group and the samples of every micro-batch it computes.
struct DeviceShare {
  int device = -1;  ///< index into the Cluster
  int samples = 0;
  bool operator==(const DeviceShare&) const = default;
};

/// The contiguous layers [layer_begin, layer_end) run by a group of devices that split
/// each micro-batch between them (data parallel inside the stage).
struct Stage {
  int layer_begin = 0;
  int layer_end = 0;
  std::vector<DeviceShare> members;

  std::vector<int> devices() const;
  /// Sum of the members' shares, in 64 bits: the shares of a plan file may each be near INT_MAX.
  std::int64_t samples() const;
  bool operator==(const Stage&) const = default;
};

/// What a planner produces and the runtime executes: stages in pipeline order.
struct Plan {
  std::string model;
  std::string cluster;
  std::string planner;
  int batch_size = 0;    ///< global batch per iteration
  int microbatches = 0;  ///< micro-batches per iteration
  Schedule schedule = Schedule::OneFOneB;
  Optimizer optimizer = Optimizer::Sgd;
  std::vector<Stage> stages;

  int microBatchSize() const { return microbatches > 0 ? batch_size / microbatches : 0; }
  int stageCount() const { return static_cast<int>(stages.size()); }
  /// Micro-batches whose activations stage `s` holds at once: min(S - s, M) under 1F1B,
  /// M under GPipe.
  int inFlight(int s) const;
  /// Stage index of each cluster device (-1 when unused); `devices` is the cluster size.
  std::vector<int> stageOfDevice(int devices) const;
  /// The device stage `s`'s rank-0 member sends its backups to: the next stage's first
  /// member (the last stage's go to the first), or, when that is the sender itself (one
  /// stage), the stage's second member; -1 when there is none.
  int backupTarget(int s) const;
};

}  // namespace stagecraft
