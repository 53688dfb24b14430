#include "control/promise.h"

#include <cmath>
#include <utility>

namespace stagecraft::control {

void PromiseWatch::begin(double promised_sps, double before_sps, Plan previous, Cluster previous_cluster,
                         std::int64_t from_step) {
  pending_.reset();
  if (std::isfinite(promised_sps) && promised_sps > 0) {
    PlanPromise p;
    p.from_step = from_step;
    p.promised_sps = promised_sps;
    p.before_sps = before_sps;
    p.previous = std::move(previous);
    p.previous_cluster = std::move(previous_cluster);
    pending_ = std::move(p);
  }
  recent_.clear();
  settled_ = 0;
}

void PromiseWatch::forget() {
  pending_.reset();
  recent_.clear();
  settled_ = 0;
}

std::optional<PlanPromise> PromiseWatch::observe(const StepResult& step) {
  if (step.iteration_ms <= 0 || !std::isfinite(step.iteration_ms)) return std::nullopt;
  if (pending_ && settled_ < rule_.settle_steps) {
    ++settled_;
    return std::nullopt;
  }
  recent_.push_back(step);
  while (static_cast<int>(recent_.size()) > rule_.steps) recent_.pop_front();
  if (!pending_ || static_cast<int>(recent_.size()) < rule_.steps) return std::nullopt;
  PlanPromise verdict = std::move(*pending_);
  pending_.reset();
  verdict.judged_step = step.step;
  verdict.measured_sps = throughput(recent_);
  verdict.missed = verdict.measured_sps < (1 - rule_.shortfall) * verdict.promised_sps;
  return verdict;
}

double PromiseWatch::throughput(const std::deque<StepResult>& steps) {
  double samples = 0, ms = 0;
  for (const StepResult& s : steps) {
    samples += s.samples_per_second * s.iteration_ms / 1000.0;
    ms += s.iteration_ms;
  }
  return ms > 0 ? samples * 1000.0 / ms : 0;
}

}  // namespace stagecraft::control
