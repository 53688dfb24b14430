// Discrete-event simulation of one training iteration.
//
// Resources: each device's compute (one op at a time, in the schedule's fixed order)
// and each directed link (one transfer at a time, queued by readiness). Events are
// processed a timestamp at a time: first every completion at that time updates the
// state, then idle resources pick their next work. Dispatching only after all
// completions of an instant is what makes "ties by micro-batch" hold for transfers that
// become ready at the same moment, and keeps the result independent of heap order.
//
// Devices whose workers share a machine share its CPUs: each op running there progresses
// at the rate sharedCpuStretch gives it beside the others running (their bursts of work
// meeting on too few CPUs), and every start or end of one of them re-times the others'
// completions.
#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <utility>

namespace stagecraft {

std::vector<ScheduledOp> scheduleOps(Schedule schedule, int stage, int stages, int microbatches) {
  std::vector<ScheduledOp> ops;
  ops.reserve(2 * static_cast<size_t>(microbatches));
  if (schedule == Schedule::GPipe) {
    for (int m = 0; m < microbatches; ++m) ops.push_back({EventKind::Forward, m});
    // Backwards in reverse micro-batch order, as in the GPipe paper and torchgpipe: the
    // last stage turns its newest forward straight into a backward. On equal stages both
    // orders give the same (M + K - 1)(F + B).
    for (int m = microbatches - 1; m >= 0; --m) ops.push_back({EventKind::Backward, m});
    return ops;
  }
  // 1F1B (PipeDream-flush): warm up with as many forwards as there are later stages,
  // then alternate, then drain.
  const int warmup = std::min(stages - stage - 1, microbatches);
  for (int m = 0; m < warmup; ++m) ops.push_back({EventKind::Forward, m});
  for (int i = 0; i + warmup < microbatches; ++i) {
    ops.push_back({EventKind::Forward, warmup + i});
    ops.push_back({EventKind::Backward, i});
  }
  for (int m = microbatches - warmup; m < microbatches; ++m) ops.push_back({EventKind::Backward, m});
  return ops;
}

namespace {

using Op = ScheduledOp;

/// A transfer repeated for every micro-batch: activations of a boundary overlap going
/// forward, or the matching gradients going back.
struct Route {
  int from = -1;
  int to = -1;
  int link = -1;
  bool gradient = false;
  double wire_ms = 0;     // how long the link is occupied
  double latency_ms = 0;  // added to the arrival, without occupying the link
};

struct DeviceState {
  int stage = -1;
  int samples = 0;
  double forward_ms = 0;   // per micro-batch
  double backward_ms = 0;
  std::vector<Op> ops;
  size_t next = 0;
  bool busy = false;
  double op_start_ms = 0;
  double last_backward_start_ms = 0;  // when its all-reduce buckets start to fill
  std::vector<int> activations_missing;  // per micro-batch: routes not yet arrived
  std::vector<int> gradients_missing;
  std::vector<int> routes_after_forward;
  std::vector<int> routes_after_backward;
  double compute_ms = 0;
  int held = 0;       // micro-batches whose activations are kept for backward
  int peak_held = 0;
  // On a machine shared with other devices (machine >= 0): the running op's work left at
  // full speed, as of since_ms, the rate it progresses at since then, and the version its
  // completion event must carry (an older one was re-timed).
  int machine = -1;
  double demand = 0;  // CPUs its compute keeps busy
  double remaining_ms = 0;
  double since_ms = 0;
  double rate = 1;
  std::int64_t version = 0;
};

struct MachineState {
  double cpus = 0;
  std::vector<int> devices;
  bool dirty = false;  // an op started or ended there at this instant
};

struct PendingTransfer {
  double ready_ms = 0;
  int micro_batch = 0;
  std::int64_t seq = 0;
  int route = -1;
  /// Priority-queue order: the earliest ready first, then the lower micro-batch.
  bool operator>(const PendingTransfer& o) const {
    return std::tie(ready_ms, micro_batch, seq) > std::tie(o.ready_ms, o.micro_batch, o.seq);
  }
};

struct LinkState {
  std::priority_queue<PendingTransfer, std::vector<PendingTransfer>, std::greater<>> queue;
  bool busy = false;
  PendingTransfer current;
  double start_ms = 0;
};

enum class Completion { Compute, Transfer, Arrival };

struct Event {
  double time_ms = 0;
  std::int64_t seq = 0;
  Completion what = Completion::Compute;
  int index = -1;  // device, link, or route of an arrival
  int micro_batch = -1;  // of an arrival
  std::int64_t version = 0;  // of a compute completion: DeviceState::version when scheduled
  bool operator>(const Event& o) const {
    return std::tie(time_ms, seq) > std::tie(o.time_ms, o.seq);
  }
};

class PipelineSimulation {
 public:
  PipelineSimulation(const Plan& plan, const CostModel& cost) : plan_(plan), cost_(cost) {
    setUp();
  }

  SimulationResult run() {
    for (int d = 0; d < static_cast<int>(devices_.size()); ++d) markDevice(d);
    for (int s = 0; s < plan_.stageCount(); ++s) {
      if (members_pending_[s] == 0) allReduce(s, 0);
    }
    dispatch(0);
    while (!events_.empty()) {
      const double now = events_.top().time_ms;
      while (!events_.empty() && events_.top().time_ms == now) {
        const Event e = events_.top();
        events_.pop();
        switch (e.what) {
          case Completion::Compute:
            if (e.version == devices_[e.index].version) finishCompute(e.index, now);
            break;
          case Completion::Transfer: finishTransfer(e.index, now); break;
          case Completion::Arrival: arrive(e.index, e.micro_batch); break;
        }
      }
      dispatch(now);
    }
    return finish();
  }

 private:
  void setUp() {
    const int n = cost_.deviceCount();
    const int stages = plan_.stageCount();
    const int m_count = std::max(0, plan_.microbatches);
    devices_.resize(n);
    dirty_device_.assign(n, false);
    members_pending_.assign(stages, 0);
    for (int s = 0; s < stages; ++s) {
      const Stage& st = plan_.stages[s];
      for (const auto& m : st.members) {
        DeviceState& d = devices_[m.device];
        d.stage = s;
        d.samples = m.samples;
        d.activations_missing.assign(m_count, 0);
        d.gradients_missing.assign(m_count, 0);
        if (m.samples <= 0) continue;  // no compute, but still in the all-reduce
        d.forward_ms = cost_.forwardMs(m.device, st.layer_begin, st.layer_end, m.samples);
        d.backward_ms = cost_.backwardMs(m.device, st.layer_begin, st.layer_end, m.samples);
        d.ops = scheduleOps(plan_.schedule, s, stages, m_count);
        ++members_pending_[s];
      }
    }
    std::map<std::pair<int, int>, int> link_ids;
    auto linkId = [&](int a, int b) {
      auto [it, added] = link_ids.try_emplace({a, b}, static_cast<int>(links_.size()));
      if (added) links_.emplace_back();
      return it->second;
    };
    for (int s = 0; s + 1 < stages; ++s) {
      const Stage& st = plan_.stages[s];
      const double per_sample = cost_.model().outputBytes(st.layer_end - 1);
      for (const Transfer& x : boundaryTransfers(st, plan_.stages[s + 1])) {
        const double bytes = x.samples * per_sample;
        const int forward = static_cast<int>(routes_.size());
        routes_.push_back({x.from_device, x.to_device, linkId(x.from_device, x.to_device), false,
                           cost_.wireMs(x.from_device, x.to_device, bytes),
                           cost_.transferMs(x.from_device, x.to_device, bytes) -
                               cost_.wireMs(x.from_device, x.to_device, bytes)});
        const int backward = static_cast<int>(routes_.size());
        routes_.push_back({x.to_device, x.from_device, linkId(x.to_device, x.from_device), true,
                           cost_.wireMs(x.to_device, x.from_device, bytes),
                           cost_.transferMs(x.to_device, x.from_device, bytes) -
                               cost_.wireMs(x.to_device, x.from_device, bytes)});
        devices_[x.from_device].routes_after_forward.push_back(forward);
        devices_[x.to_device].routes_after_backward.push_back(backward);
        for (int& missing : devices_[x.to_device].activations_missing) ++missing;
        for (int& missing : devices_[x.from_device].gradients_missing) ++missing;
      }
    }
    dirty_link_.assign(links_.size(), false);
    shareMachines();
  }

  // Groups the computing devices by the machine their workers run on (machineOf), for
  // machines that hold more than one and whose CPUs and demands the profiles measured.
  void shareMachines() {
    std::map<std::string, std::vector<int>> by_machine;
    for (int d = 0; d < static_cast<int>(devices_.size()); ++d) {
      if (devices_[d].ops.empty() || cost_.cpuDemand(d) <= 0 || cost_.machineCpus(d) <= 0) continue;
      const std::string machine = machineOf(cost_.cluster().device(d));
      if (!machine.empty()) by_machine[machine].push_back(d);
    }
    for (auto& [name, members] : by_machine) {
      if (members.size() < 2) continue;
      MachineState m;
      for (int d : members) {
        m.cpus = std::max(m.cpus, static_cast<double>(cost_.machineCpus(d)));
        devices_[d].machine = static_cast<int>(machines_.size());
        devices_[d].demand = cost_.cpuDemand(d);
      }
      m.devices = std::move(members);
      machines_.push_back(std::move(m));
    }
  }

  // Brings the running ops of machine `m` up to `now` and re-times their completions at the
  // rates its CPUs give them beside each other from now on.
  void shareCpus(int m, double now) {
    MachineState& machine = machines_[m];
    machine.dirty = false;
    std::vector<double> demands;
    for (int idx : machine.devices) {
      DeviceState& d = devices_[idx];
      if (!d.busy) continue;
      d.remaining_ms = std::max(0.0, d.remaining_ms - (now - d.since_ms) * d.rate);
      d.since_ms = now;
      demands.push_back(d.demand);
    }
    size_t k = 0;
    for (int idx : machine.devices) {
      DeviceState& d = devices_[idx];
      if (!d.busy) continue;
      d.rate = 1.0 / sharedCpuStretch(demands, k++, machine.cpus);
      schedule(now + d.remaining_ms / d.rate, Completion::Compute, idx, -1, ++d.version);
    }
  }

  void markDevice(int d) {
    if (!dirty_device_[d]) {
      dirty_device_[d] = true;
      device_queue_.push_back(d);
    }
  }

  void markLink(int l) {
    if (!dirty_link_[l]) {
      dirty_link_[l] = true;
      link_queue_.push_back(l);
    }
  }

  void schedule(double time_ms, Completion what, int index, int micro_batch = -1, std::int64_t version = 0) {
    events_.push({time_ms, event_seq_++, what, index, micro_batch, version});
  }

  bool ready(const DeviceState& d, const Op& op) const {
    if (op.kind == EventKind::Forward) return d.activations_missing[op.micro_batch] == 0;
    // The own forward of the micro-batch precedes its backward in every schedule.
    return d.gradients_missing[op.micro_batch] == 0;
  }

  // Starts whatever idle resources can start at `now`, in index order for determinism.
  void dispatch(double now) {
    std::sort(device_queue_.begin(), device_queue_.end());
    for (int idx : device_queue_) {
      dirty_device_[idx] = false;
      DeviceState& d = devices_[idx];
      if (d.busy || d.next >= d.ops.size() || !ready(d, d.ops[d.next])) continue;
      const Op& op = d.ops[d.next];
      d.busy = true;
      d.op_start_ms = now;
      const double ms = op.kind == EventKind::Forward ? d.forward_ms : d.backward_ms;
      if (d.machine >= 0) {
        d.remaining_ms = ms;
        d.since_ms = now;
        machines_[d.machine].dirty = true;
      } else {
        schedule(now + ms, Completion::Compute, idx);
      }
    }
    device_queue_.clear();
    for (int m = 0; m < static_cast<int>(machines_.size()); ++m) {
      if (machines_[m].dirty) shareCpus(m, now);
    }
    std::sort(link_queue_.begin(), link_queue_.end());
    for (int idx : link_queue_) {
      dirty_link_[idx] = false;
      LinkState& l = links_[idx];
      if (l.busy || l.queue.empty()) continue;
      l.current = l.queue.top();
      l.queue.pop();
      l.busy = true;
      l.start_ms = now;
      schedule(now + routes_[l.current.route].wire_ms, Completion::Transfer, idx);
    }
    link_queue_.clear();
  }

  void send(const std::vector<int>& routes, int micro_batch, double now) {
    for (int r : routes) {
      links_[routes_[r].link].queue.push({now, micro_batch, transfer_seq_++, r});
      markLink(routes_[r].link);
    }
  }

  void finishCompute(int idx, double now) {
    DeviceState& d = devices_[idx];
    const Op op = d.ops[d.next++];
    d.busy = false;
    if (d.machine >= 0) machines_[d.machine].dirty = true;
    d.compute_ms += now - d.op_start_ms;
    timeline_.push_back({idx, op.micro_batch, op.kind, -1, d.op_start_ms, now});
    if (op.kind == EventKind::Forward) {
      d.peak_held = std::max(d.peak_held, ++d.held);
      send(d.routes_after_forward, op.micro_batch, now);
    } else {
      --d.held;
      d.last_backward_start_ms = d.op_start_ms;
      send(d.routes_after_backward, op.micro_batch, now);
    }
    if (d.next == d.ops.size() && --members_pending_[d.stage] == 0) allReduce(d.stage, now);
    markDevice(idx);
  }

  void finishTransfer(int idx, double now) {
    LinkState& l = links_[idx];
    const Route& r = routes_[l.current.route];
    const int m = l.current.micro_batch;
    l.busy = false;
    // The sender's link is busy while the bytes go out; the receiver gets them one
    // latency later.
    timeline_.push_back({r.from, m, EventKind::Send, r.to, l.start_ms, now});
    timeline_.push_back({r.to, m, EventKind::Receive, r.from, l.start_ms + r.latency_ms, now + r.latency_ms});
    if (r.latency_ms > 0) {
      schedule(now + r.latency_ms, Completion::Arrival, l.current.route, m);
    } else {
      arrive(l.current.route, m);
    }
    markLink(idx);
  }

  void arrive(int route, int micro_batch) {
    const Route& r = routes_[route];
    DeviceState& to = devices_[r.to];
    --(r.gradient ? to.gradients_missing : to.activations_missing)[micro_batch];
    markDevice(r.to);
  }

  // Nothing in this iteration waits on the all-reduce or the optimizer step, so they need
  // no completion events; the all-reduce does not contend with pipeline transfers for
  // links (the cost model prices it on its own). Its buckets went beside the members' last
  // backward (CostModel::allReduceSpan).
  void allReduce(int s, double now) {
    const Stage& st = plan_.stages[s];
    const auto group = st.devices();
    double end = now;
    if (st.members.size() > 1) {
      std::vector<double> starts;
      for (int d : group) starts.push_back(devices_[d].last_backward_start_ms);
      const auto span = cost_.allReduceSpan(st, starts);
      end = std::max(now, span.end_ms);
      if (end > span.start_ms) {
        for (int d : group) timeline_.push_back({d, -1, EventKind::AllReduce, -1, std::min(span.start_ms, end), end});
      }
    }
    for (int d : group) {
      const double update = cost_.updateMs(d, st.layer_begin, st.layer_end);
      if (update > 0) timeline_.push_back({d, -1, EventKind::Update, -1, end, end + update});
    }
  }

  SimulationResult finish() {
    SimulationResult r;
    for (const auto& e : timeline_) r.iteration_ms = std::max(r.iteration_ms, e.end_ms);
    const int n = static_cast<int>(devices_.size());
    r.busy_fraction.assign(n, 0);
    r.peak_memory_bytes.assign(n, 0);
    if (r.iteration_ms > 0) r.samples_per_second = plan_.batch_size * 1000.0 / r.iteration_ms;
    double busy_sum = 0;
    int used = 0;
    for (int i = 0; i < n; ++i) {
      const DeviceState& d = devices_[i];
      if (d.stage < 0) continue;
      const Stage& st = plan_.stages[d.stage];
      if (r.iteration_ms > 0) r.busy_fraction[i] = d.compute_ms / r.iteration_ms;
      r.peak_memory_bytes[i] = cost_.stateBytes(st.layer_begin, st.layer_end) +
                               cost_.model().savedBytes(st.layer_begin, st.layer_end) *
                                   d.samples * d.peak_held;
      busy_sum += r.busy_fraction[i];
      ++used;
    }
    r.bubble_fraction = used > 0 ? 1.0 - busy_sum / used : 0;
    std::stable_sort(timeline_.begin(), timeline_.end(),
                     [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_ms < b.start_ms; });
    r.timeline = std::move(timeline_);
    return r;
  }

  const Plan& plan_;
  const CostModel& cost_;
  std::vector<DeviceState> devices_;  // per cluster device
  std::vector<Route> routes_;
  std::vector<LinkState> links_;      // only the directed pairs some route uses
  std::vector<MachineState> machines_;  // only those shared by two or more computing devices
  std::vector<int> members_pending_;  // per stage: members with backwards still to run
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::int64_t event_seq_ = 0;
  std::int64_t transfer_seq_ = 0;
  std::vector<bool> dirty_device_, dirty_link_;
  std::vector<int> device_queue_, link_queue_;
  std::vector<TimelineEvent> timeline_;
};

}  // namespace

std::string_view eventKindName(EventKind kind) {
  switch (kind) {
    case EventKind::Forward: return "forward";
    case EventKind::Backward: return "backward";
    case EventKind::Send: return "send";
    case EventKind::Receive: return "receive";
    case EventKind::AllReduce: return "allreduce";
    case EventKind::Update: return "update";
    case EventKind::Invalid: break;
  }
  return "invalid";
}

namespace {

/// chance[k]: the chance that k of the threads computing the given shares of the time
/// compute at a given moment, each independently of the others. Exact up to kMostExact
/// threads (its cost grows with their number squared), a normal curve over 0..n beyond.
std::vector<double> computingAtOnce(const std::vector<double>& shares) {
  constexpr size_t kMostExact = 24;
  std::vector<double> chance{1.0};
  if (shares.size() <= kMostExact) {
    for (double p : shares) {
      chance.push_back(0);
      for (size_t k = chance.size() - 1; k > 0; --k) chance[k] = chance[k] * (1 - p) + chance[k - 1] * p;
      chance[0] *= 1 - p;
    }
    return chance;
  }
  double mean = 0, variance = 0;
  for (double p : shares) {
    mean += p;
    variance += p * (1 - p);
  }
  chance.assign(shares.size() + 1, 0.0);
  double sum = 0;
  for (size_t k = 0; k < chance.size(); ++k) {
    const double z = static_cast<double>(k) - mean;
    chance[k] = std::exp(-z * z / (2 * std::max(variance, 1e-3)));
    sum += chance[k];
  }
  for (double& c : chance) c /= sum;
  return chance;
}

}  // namespace

double sharedCpuStretch(std::span<const double> demands, size_t self, double cpus) {
  if (self >= demands.size() || !(cpus > 0)) return 1;
  double always = 0;  // CPUs kept busy throughout by the others
  std::vector<double> bursting;  // the others' shares of the time computing, on one CPU each
  for (size_t j = 0; j < demands.size(); ++j) {
    const double d = std::max(0.0, demands[j]);
    if (j == self) continue;
    if (d >= 1) {
      always += d;
    } else if (d > 0) {
      bursting.push_back(d);
    }
  }
  const std::vector<double> chance = computingAtOnce(bursting);
  const double own = std::max(0.0, demands[self]);
  const double own_cpus = std::max(1.0, own);
  const double own_share = std::min(1.0, own);  // of its pass's time spent computing
  double burst_stretch = 0;
  for (size_t k = 0; k < chance.size(); ++k) {
    burst_stretch += chance[k] * std::max(1.0, (own_cpus + always + static_cast<double>(k)) / cpus);
  }
  return 1 - own_share + own_share * burst_stretch;
}

SimulationResult simulate(const Plan& plan, const CostModel& cost) {
  return PipelineSimulation(plan, cost).run();
}

}  // namespace stagecraft
