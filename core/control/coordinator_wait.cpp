// Coordinator::wait: the members' telemetry folded into steps, and the watch over members
// that go quiet (a Heartbeat, then given up when it is not answered, or waited for when it is).
#include <grpcpp/support/status.h>

#include <algorithm>
#include <string>
#include <vector>

#include "control/coordinator.h"
#include "control/telemetry.h"
#include "io/error.h"

namespace stagecraft::control {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string wholeSeconds(milliseconds ms) { return std::to_string((ms.count() + 500) / 1000) + " s"; }

}  // namespace

TrainingResult Coordinator::wait(const TrainingCallbacks& callbacks, const std::atomic<bool>* cancel) {
  const int n = static_cast<int>(member_device_.size());
  if (streams_.empty()) throw std::logic_error("no run in progress: call start() before wait()");
  std::vector<TelemetryMember> members;
  for (int m = 0; m < n; ++m) members.push_back({memberClient(m).endpoint(), member_last_stage_[m]});
  TelemetryAggregator aggregator(std::move(members), batch_size_, job_);

  TrainingResult result;
  std::vector<Clock::time_point> last_heard(n, Clock::now());
  std::vector<Clock::time_point> last_probe(n, Clock::now());
  std::vector<std::int64_t> dropped(n, 0);  // as each member's stream counts them
  std::vector<bool> noted(n, false);        // its silence past stall_limit_ was logged
  // A member probed after a short silence gets as short an answer time (at least 1 s).
  const milliseconds probe_deadline =
      std::min({options_.call_timeout, milliseconds(5000), std::max(options_.probe_after, milliseconds(1000))});
  const milliseconds tick = std::min(milliseconds(200), options_.probe_after);
  auto next_watch = Clock::now() + tick;

  // One item from a member's stream: a step, a log line, an error or the stream's end.
  const auto handle = [&](StreamItem& item) {
    const int m = item.member;
    const WorkerEndpoint& who = memberClient(m).endpoint();
    last_heard[m] = Clock::now();
    noted[m] = false;
    if (item.kind == StreamItem::Kind::Closed) {
      if (aggregator.memberFinished(m)) return;
      if (item.status_code == 0) {
        abortRun(WorkerError(who.name, who.label() + " closed its telemetry stream after step " +
                                           std::to_string(aggregator.lastStep(m)) + " without finishing",
                             ErrorKind::Environment));
      }
      if (item.status_code == static_cast<int>(grpc::StatusCode::UNAVAILABLE)) {
        // The stream was open and talking (its greeting came before Start): a broken
        // connection now is the process or its host gone, never the TLS mismatch the same
        // words mean when a connection is first made.
        const std::string detail = oneLine(item.status_message);
        abortRun(WorkerError(who.name,
                             who.label() + " went away while training (after step " +
                                 std::to_string(aggregator.lastStep(m)) + ": its telemetry stream broke" +
                                 (detail.empty() ? "" : ", " + detail) + ")",
                             item.status_code));
      }
      abortRun(workerFailure(who, "Telemetry",
                             grpc::Status(static_cast<grpc::StatusCode>(item.status_code), item.status_message),
                             options_.silence_limit));
    }
    if (item.event.dropped() > dropped[m]) {
      result.telemetry_dropped += item.event.dropped() - dropped[m];
      dropped[m] = item.event.dropped();
    }
    if (item.event.has_log()) {
      // The worker's greeting on every stream it opens is protocol, not news for a user.
      if (callbacks.on_log && item.event.log() != "telemetry subscribed") callbacks.on_log(who.name, item.event.log());
      return;
    }
    if (item.event.has_iteration() && callbacks.on_iteration) callbacks.on_iteration(m, item.event.iteration());
    std::vector<StepResult> steps;
    try {
      steps = aggregator.add(m, item.event);
    } catch (const WorkerError& e) {
      abortRun(e);
    }
    for (const auto& step : steps) {
      result.steps.push_back(step);
      if (callbacks.on_step) callbacks.on_step(step);
    }
  };

  // Members that have gone quiet: a Heartbeat after probe_after, given up when it is not
  // answered (a frozen process, a host gone) or no longer on this job, and otherwise after
  // silence_limit. One that answers is slow (a loaded or throttled device, or waiting on a
  // slow neighbour), not lost: past stall_limit_ it is named once, and the run waits on.
  // Checked every tick even while other members keep talking.
  const auto watch = [&](Clock::time_point now) {
    for (int m = 0; m < n; ++m) {
      if (aggregator.memberFinished(m)) continue;
      const WorkerEndpoint& who = memberClient(m).endpoint();
      if (now - last_heard[m] >= options_.silence_limit) {
        abortRun(WorkerError(who.name, who.label() + " sent no telemetry for " + wholeSeconds(options_.silence_limit) +
                                           " (last step " + std::to_string(aggregator.lastStep(m)) + ")",
                             ErrorKind::Environment));
      }
      if (now - last_heard[m] < options_.probe_after || now - last_probe[m] < options_.probe_after) continue;
      last_probe[m] = now;
      v1::HeartbeatReply beat;
      try {
        beat = memberClient(m).heartbeat(probe_deadline);
      } catch (const WorkerError& e) {
        abortRun(e);
      }
      // Alive but no longer on this job: it restarted, or someone else deployed to it.
      if (beat.state() == "idle" || (!beat.job().empty() && beat.job() != job_)) {
        abortRun(WorkerError(who.name, who.label() + " no longer runs job '" + job_ + "' (state " +
                                           (beat.state().empty() ? "unknown" : beat.state()) +
                                           (beat.job().empty() ? "" : ", job '" + beat.job() + "'") +
                                           "); did it restart?",
                             ErrorKind::Environment));
      }
      if (!noted[m] && now - last_heard[m] >= stall_limit_) {
        noted[m] = true;
        if (callbacks.on_log) {
          callbacks.on_log(who.name, "sent no telemetry for " + wholeSeconds(stall_limit_) +
                                         " but answers on its job (at step " + std::to_string(beat.step()) +
                                         "): slow, not lost; waiting up to " +
                                         wholeSeconds(options_.silence_limit));
        }
      }
    }
  };

  while (!aggregator.finished()) {
    if ((cancel && cancel->load()) || (callbacks.halt && callbacks.halt())) {
      stopQuietly();
      result.cancelled = true;
      result.wall_seconds = secondsSince(started_at_);
      return result;
    }
    std::optional<StreamItem> item;
    {
      std::unique_lock lock(mutex_);
      changed_.wait_for(lock, tick, [&] { return !queue_.empty(); });
      if (!queue_.empty()) {
        item = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    if (item) handle(*item);
    // Each stream ends its events with `finished`, so once every member has finished no
    // report is still on its way: a step someone skipped will never complete.
    if (aggregator.everyMemberFinished() && !aggregator.finished()) {
      const std::int64_t step = aggregator.incompleteSteps().front();
      const WorkerEndpoint& who = memberClient(aggregator.missing(step).front()).endpoint();
      abortRun(WorkerError(who.name, who.label() + " finished without reporting step " + std::to_string(step) +
                                         (dropped[aggregator.missing(step).front()] > 0
                                              ? " (it dropped reports: this side read them too slowly)"
                                              : "")));
    }
    const auto now = Clock::now();
    if (now >= next_watch) {
      next_watch = now + tick;
      watch(now);
    }
  }
  result.wall_seconds = secondsSince(started_at_);
  closeStreams();
  return result;
}

}  // namespace stagecraft::control
