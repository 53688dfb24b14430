#pragma once

#include <span>
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
/// measured both (CostModel::cpuDemand, machineCpus): each forward and backward pass running
/// there progresses at 1 / sharedCpuStretch of its speed alone, given the demands of the
/// passes running beside it. The all-reduce and the optimizer steps are not slowed so.
/// Deterministic: equal inputs give identical timelines.
SimulationResult simulate(const Plan& plan, const CostModel& cost);

/// How many times longer a pass of the device demanding `demands[self]` CPUs takes while
/// passes demanding the others run beside it on `cpus` CPUs. A demand of 1 or more keeps
/// that many CPUs busy throughout; a demand d below 1 is one thread computing a share d of
/// the time (a device emulated 1/d times slower: bursts of work, then sleeps), each
/// independently of the others. While the threads computing at once ask for more than
/// `cpus`, each computes at cpus over what they ask, and only the bursts are slowed. So
/// three threads of demands 1, 0.45 and 0.45 on two CPUs stretch the first by 1.10 (the
/// other two both compute a fifth of the time), where the mean demand, 1.9 CPUs, fits.
/// With every demand 1 or more: the CPUs shared in proportion, max(1, sum / cpus).
double sharedCpuStretch(std::span<const double> demands, size_t self, double cpus);

}  // namespace stagecraft
