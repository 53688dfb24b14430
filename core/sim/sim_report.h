#pragma once

#include <span>
#include <string_view>

#include "cost/cost_model.h"
#include "plan/plan.h"
#include "sim/simulator.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft {

/// The wire form of a simulation: totals, one DeviceStats per cluster device (stage -1
/// and zeros for the idle ones; memory in MiB) and, when `with_timeline`, every event
/// with device names in place of indices.
v1::SimulationReport toSimulationReport(const SimulationResult& result, const Plan& plan,
                                        const CostModel& cost, bool with_timeline);

/// The timeline in Chrome's trace event format, for Perfetto or chrome://tracing: one
/// process per device that appears in the timeline (pid = device index), threads
/// 0 = compute (forward, backward, all-reduce, update), 1 = send, 2 = receive; complete ("X")
/// events with ts / dur in microseconds, plus "M" events naming processes and threads.
/// Names read "F3", "B3", "send mb3 -> edge-2", "recv mb3 <- edge-1", "allreduce"; cat
/// is eventKindName; args hold micro_batch (-1 for the all-reduce) and, for transfers,
/// the peer's name.
v1::ChromeTrace toChromeTrace(const SimulationResult& result, const Cluster& cluster);

/// Adds `events` to `trace` in the same form, as processes pid_base + device named
/// "<device><suffix>": so a run's measured timeline and its prediction can sit side by
/// side in one file.
void appendChromeTrace(v1::ChromeTrace& trace, std::span<const TimelineEvent> events, const Cluster& cluster,
                       int pid_base = 0, std::string_view suffix = "");

}  // namespace stagecraft
