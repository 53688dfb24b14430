#pragma once
// A worker's per-iteration timeline (IterationReport.timeline: kinds and peers as text)
// in the simulator's terms, so measured and predicted timelines draw alike.

#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "sim/simulator.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::control {

/// "forward" -> EventKind::Forward ... (the names eventKindName() gives); Invalid otherwise.
EventKind parseEventKind(std::string_view text);

/// The events of `report`, measured on cluster device `device`, as TimelineEvents: the
/// peer named by a send or receive becomes its index in `cluster` (-1 when the cluster
/// has no device of that name). Events of an unknown kind are left out.
std::vector<TimelineEvent> timelineEvents(const v1::IterationReport& report, int device, const Cluster& cluster);

}  // namespace stagecraft::control
