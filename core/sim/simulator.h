#pragma once

#include <string_view>
#include <vector>

#include "cost/cost_model.h"
#include "plan/plan.h"

namespace stagecraft {

enum class EventKind { Invalid = 0, Forward, Backward, Send, Receive, AllReduce, Update };

std::string_view eventKindName(EventKind kind);  ///< forward, backward, send, receive, allreduce, update

/// One interval of a device's timeline. Sends and receives come in pairs with the same
/// times: the sender's Send and the receiver's Receive of one transfer.
struct TimelineEvent {
  int device = -1;
  int micro_batch = -1;  ///< -1 for the all-reduce and the update
  EventKind kind = EventKind::Invalid;
  int peer = -1;         ///< the other device of a send or receive
  double start_ms = 0;
  double end_ms = 0;
};

struct SimulationResult {
  double iteration_ms = 0;
  double samples_per_second = 0;
  /// Mean idle fraction of the compute of the devices the plan uses.
  double bubble_fraction = 0;
  std::vector<double> busy_fraction;      ///< per cluster device: compute time / iteration
  std::vector<double> peak_memory_bytes;  ///< per cluster device: state + peak activations
  std::vector<TimelineEvent> timeline;    ///< sorted by start time
};

/// One compute op of a stage member: the forward or the backward of a micro-batch.
struct ScheduledOp {
  EventKind kind = EventKind::Invalid;  ///< Forward or Backward
  int micro_batch = 0;
};

/// The compute order of every member of stage `stage` out of `stages` (see simulate for
/// the two schedules). The simulator and the worker's runtime both run exactly this order.
std::vector<ScheduledOp> scheduleOps(Schedule schedule, int stage, int stages, int microbatches);

/// Executes one training iteration of a valid plan event by event: every device
/// computes its share of each micro-batch in the schedule's order (1F1B or GPipe), every
/// directed link carries one transfer at a time, each stage group all-reduces its
/// gradients in buckets beside its members' last backward (CostModel::allReduceSpan), and
/// then every member applies its optimizer step (CostModel::updateMs).
///
/// 1F1B: stage s warms up with min(S - s - 1, M) forwards, alternates, then drains.
/// GPipe: all forwards, then the backwards in reverse micro-batch order (as GPipe and
/// torchgpipe do). A member with 0 samples computes nothing but joins the all-reduce,
/// and counts as a used device (busy 0) in bubble_fraction. The all-reduce is priced by
/// the cost model alone: it does not queue behind pipeline transfers on links.
/// Devices whose workers run on one machine (machineOf) share its CPUs when their profiles
/// measured both (CostModel::cpuDemand, machineCpus): while the forward and backward passes
/// running there ask for more CPUs than it has, each progresses at the machine's CPUs over
/// the sum of their demands. The all-reduce and the optimizer steps are not slowed so.
/// Deterministic: equal inputs give identical timelines.
SimulationResult simulate(const Plan& plan, const CostModel& cost);

}  // namespace stagecraft
