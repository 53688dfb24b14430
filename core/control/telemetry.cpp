#include "control/telemetry.h"

#include <algorithm>

namespace stagecraft::control {

TelemetryAggregator::TelemetryAggregator(std::vector<TelemetryMember> members, int batch_size, std::string job)
    : members_(std::move(members)),
      batch_size_(batch_size),
      job_(std::move(job)),
      finished_(members_.size(), false),
      last_step_(members_.size(), 0) {}

std::vector<StepResult> TelemetryAggregator::add(int member, const v1::TelemetryEvent& event) {
  const WorkerEndpoint& who = members_.at(member).endpoint;
  if (!event.job().empty() && !job_.empty() && event.job() != job_) return {};
  switch (event.event_case()) {
    case v1::TelemetryEvent::kError:
      // The worker writes "CODE: message" (its status for the failure).
      throw WorkerError(who.name, who.label() + " failed: " + oneLine(event.error()),
                        errorKindOfReport(event.error()));
    case v1::TelemetryEvent::kFinished:
      if (event.finished()) finished_[member] = true;
      return {};
    case v1::TelemetryEvent::kIteration:
      break;
    default:
      return {};
  }

  const v1::IterationReport& report = event.iteration();
  Partial& partial = pending_[report.step()];
  if (partial.reported.empty()) partial.reported.assign(members_.size(), false);
  if (partial.reported[member]) {
    throw WorkerError(who.name, who.label() + " reported step " + std::to_string(report.step()) + " twice");
  }
  partial.reported[member] = true;
  ++partial.count;
  if (members_[member].last_stage && report.loss_samples() > 0) {
    partial.loss_weighted += report.loss() * report.loss_samples();
    partial.loss_samples += report.loss_samples();
  }
  partial.iteration_ms = std::max(partial.iteration_ms, report.iteration_ms());
  last_step_[member] = std::max(last_step_[member], report.step());

  // Members report their steps in order, so a complete step has no incomplete one before
  // it for long; emitting only from the front keeps the results in step order.
  std::vector<StepResult> done;
  while (!pending_.empty() && pending_.begin()->second.count == static_cast<int>(members_.size())) {
    const auto& [step, p] = *pending_.begin();
    StepResult result;
    result.step = step;
    result.loss_samples = p.loss_samples;
    result.loss = p.loss_samples > 0 ? p.loss_weighted / p.loss_samples : 0;
    result.iteration_ms = p.iteration_ms;
    result.samples_per_second = p.iteration_ms > 0 ? batch_size_ * 1000.0 / p.iteration_ms : 0;
    done.push_back(result);
    pending_.erase(pending_.begin());
  }
  return done;
}

bool TelemetryAggregator::finished() const { return pending_.empty() && everyMemberFinished(); }

bool TelemetryAggregator::everyMemberFinished() const {
  return std::all_of(finished_.begin(), finished_.end(), [](bool f) { return f; });
}

std::vector<int> TelemetryAggregator::missing(std::int64_t step) const {
  std::vector<int> out;
  const auto it = pending_.find(step);
  for (int m = 0; m < static_cast<int>(members_.size()); ++m) {
    if (it == pending_.end() || !it->second.reported[m]) out.push_back(m);
  }
  return out;
}

std::vector<std::int64_t> TelemetryAggregator::incompleteSteps() const {
  std::vector<std::int64_t> steps;
  for (const auto& [step, p] : pending_) steps.push_back(step);
  return steps;
}

}  // namespace stagecraft::control
