#include "sim/sim_report.h"

#include <string>
#include <vector>

namespace stagecraft {
namespace {

constexpr double kBytesPerMb = 1024.0 * 1024.0;
constexpr double kMicrosPerMs = 1000.0;

enum Track { kComputeTrack = 0, kSendTrack = 1, kReceiveTrack = 2, kTrackCount = 3 };
constexpr const char* kTrackNames[kTrackCount] = {"compute", "send", "receive"};

Track trackOf(EventKind kind) {
  if (kind == EventKind::Send) return kSendTrack;
  if (kind == EventKind::Receive) return kReceiveTrack;
  return kComputeTrack;
}

std::string traceName(const TimelineEvent& e, const Cluster& cluster) {
  const std::string mb = std::to_string(e.micro_batch);
  const auto peer = [&] { return e.peer >= 0 ? cluster.device(e.peer).name : std::string("?"); };
  switch (e.kind) {
    case EventKind::Forward: return "F" + mb;
    case EventKind::Backward: return "B" + mb;
    case EventKind::Send: return "send mb" + mb + " -> " + peer();
    case EventKind::Receive: return "recv mb" + mb + " <- " + peer();
    case EventKind::AllReduce: return "allreduce";
    case EventKind::Update: return "update";
    case EventKind::Invalid: break;
  }
  return "invalid";
}

void metadata(v1::ChromeTrace& trace, const char* what, int pid, int tid,
                         const std::string& name) {
  auto* m = trace.add_traceevents();
  m->set_name(what);
  m->set_ph("M");
  m->set_pid(pid);
  m->set_tid(tid);
  (*m->mutable_args())["name"] = name;
}

}  // namespace

v1::SimulationReport toSimulationReport(const SimulationResult& result, const Plan& plan,
                                        const CostModel& cost, bool with_timeline) {
  const Cluster& cluster = cost.cluster();
  v1::SimulationReport r;
  r.set_schedule(std::string(scheduleName(plan.schedule)));
  r.set_samples_per_second(result.samples_per_second);
  r.set_iteration_ms(result.iteration_ms);
  r.set_bubble_fraction(result.bubble_fraction);
  const std::vector<int> stage_of = plan.stageOfDevice(cluster.size());
  std::vector<int> samples(cluster.size(), 0);
  for (const auto& st : plan.stages) {
    for (const auto& m : st.members) {
      if (m.device >= 0 && m.device < cluster.size()) samples[m.device] = m.samples;
    }
  }
  for (int d = 0; d < cluster.size(); ++d) {
    auto* s = r.add_devices();
    s->set_device(cluster.device(d).name);
    s->set_stage(stage_of[d]);
    s->set_samples(samples[d]);
    if (d < static_cast<int>(result.busy_fraction.size())) s->set_busy_fraction(result.busy_fraction[d]);
    if (d < static_cast<int>(result.peak_memory_bytes.size())) {
      s->set_peak_memory_mb(result.peak_memory_bytes[d] / kBytesPerMb);
    }
    s->set_memory_limit_mb(cluster.device(d).memory_mb);
  }
  if (with_timeline) {
    for (const auto& e : result.timeline) {
      auto* t = r.add_timeline();
      t->set_device(cluster.device(e.device).name);
      t->set_micro_batch(e.micro_batch);
      t->set_kind(std::string(eventKindName(e.kind)));
      if (e.peer >= 0) t->set_peer(cluster.device(e.peer).name);
      t->set_start_ms(e.start_ms);
      t->set_end_ms(e.end_ms);
    }
  }
  return r;
}

void appendChromeTrace(v1::ChromeTrace& trace, std::span<const TimelineEvent> events, const Cluster& cluster,
                       int pid_base, std::string_view suffix) {
  trace.set_displaytimeunit("ms");
  // Metadata first so viewers name each process and thread before its first slice.
  std::vector<std::vector<bool>> tracks(cluster.size(), std::vector<bool>(kTrackCount, false));
  for (const auto& e : events) tracks[e.device][trackOf(e.kind)] = true;
  for (int d = 0; d < cluster.size(); ++d) {
    bool used = false;
    for (int t = 0; t < kTrackCount; ++t) used = used || tracks[d][t];
    if (!used) continue;
    metadata(trace, "process_name", pid_base + d, 0, cluster.device(d).name + std::string(suffix));
    for (int t = 0; t < kTrackCount; ++t) {
      if (tracks[d][t]) metadata(trace, "thread_name", pid_base + d, t, kTrackNames[t]);
    }
  }
  for (const auto& e : events) {
    auto* x = trace.add_traceevents();
    x->set_name(traceName(e, cluster));
    x->set_cat(std::string(eventKindName(e.kind)));
    x->set_ph("X");
    x->set_ts(e.start_ms * kMicrosPerMs);
    x->set_dur((e.end_ms - e.start_ms) * kMicrosPerMs);
    x->set_pid(pid_base + e.device);
    x->set_tid(trackOf(e.kind));
    auto& args = *x->mutable_args();
    args["micro_batch"] = std::to_string(e.micro_batch);
    if (e.peer >= 0) args["peer"] = cluster.device(e.peer).name;
  }
}

v1::ChromeTrace toChromeTrace(const SimulationResult& result, const Cluster& cluster) {
  v1::ChromeTrace trace;
  appendChromeTrace(trace, result.timeline, cluster);
  return trace;
}

}  // namespace stagecraft
