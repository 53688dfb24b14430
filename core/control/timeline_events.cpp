#include "control/timeline_events.h"

#include <array>

namespace stagecraft::control {

EventKind parseEventKind(std::string_view text) {
  constexpr std::array kKinds = {EventKind::Forward, EventKind::Backward, EventKind::Send, EventKind::Receive,
                                 EventKind::AllReduce, EventKind::Update};
  for (EventKind kind : kKinds) {
    if (eventKindName(kind) == text) return kind;
  }
  return EventKind::Invalid;
}

std::vector<TimelineEvent> timelineEvents(const v1::IterationReport& report, int device, const Cluster& cluster) {
  std::vector<TimelineEvent> events;
  events.reserve(static_cast<size_t>(report.timeline_size()));
  for (const v1::MicroBatchEvent& e : report.timeline()) {
    const EventKind kind = parseEventKind(e.kind());
    if (kind == EventKind::Invalid) continue;
    TimelineEvent out;
    out.device = device;
    out.micro_batch = e.micro_batch();
    out.kind = kind;
    if (!e.peer().empty()) out.peer = cluster.find(e.peer()).value_or(-1);
    out.start_ms = e.start_ms();
    out.end_ms = e.end_ms();
    events.push_back(out);
  }
  return events;
}

}  // namespace stagecraft::control
