#include "control/step_window.h"

#include <algorithm>

#include "control/replan.h"
#include "io/error.h"

namespace stagecraft::control {

namespace {

bool tookBackup(const v1::IterationReport& report) {
  return std::any_of(report.timeline().begin(), report.timeline().end(),
                     [](const auto& e) { return e.kind() == "backup"; });
}

/// Steps still waiting for a member's report, at most: a member that stopped reporting
/// (lost, or a step it skipped) must not make the window grow.
constexpr std::size_t kPendingSteps = 16;

}  // namespace

StepWindow::StepWindow(int members, std::size_t keep, std::int64_t warmup_through)
    : members_(members), keep_(keep), warmup_through_(warmup_through) {}

void StepWindow::add(int member, const v1::IterationReport& report) {
  const std::int64_t step = report.step();
  if (member < 0 || member >= members_ || keep_ == 0 || step <= warmup_through_) return;
  if (!complete_.empty() && step <= newestStep()) return;  // a step already taken, or older
  auto [it, added] = pending_.try_emplace(step, static_cast<std::size_t>(members_));
  it->second[static_cast<std::size_t>(member)] = report;
  const bool whole = std::all_of(it->second.begin(), it->second.end(), [](const auto& r) { return r.has_value(); });
  if (whole) {
    std::vector<v1::IterationReport> reports;
    for (auto& r : it->second) reports.push_back(std::move(*r));
    // Older steps still missing a report will not be completed before this one is used.
    pending_.erase(pending_.begin(), std::next(it));
    if (std::none_of(reports.begin(), reports.end(), tookBackup)) {
      complete_.push_back(std::move(reports));
      if (complete_.size() > keep_) complete_.erase(complete_.begin());
    }
  }
  while (pending_.size() > kPendingSteps) pending_.erase(pending_.begin());
}

std::vector<double> medianFactors(const Plan& plan, const CostModel& cost,
                                  std::span<const std::vector<v1::IterationReport>> steps) {
  if (steps.empty()) throw Error("calibrating speeds: no step measured yet");
  std::vector<std::vector<double>> per_device(static_cast<std::size_t>(cost.deviceCount()));
  for (const auto& reports : steps) {
    const std::vector<double> factors = computeFactors(plan, cost, reports);
    for (std::size_t d = 0; d < factors.size(); ++d) per_device[d].push_back(factors[d]);
  }
  std::vector<double> out;
  for (auto& values : per_device) {
    std::sort(values.begin(), values.end());
    const std::size_t n = values.size();
    out.push_back(n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2);
  }
  return out;
}

std::map<std::string, double> measuredFactors(const Plan& plan, const CostModel& uncalibrated,
                                              std::span<const std::vector<v1::IterationReport>> steps) {
  std::vector<double> factors;
  try {
    factors = medianFactors(plan, uncalibrated, steps);
  } catch (const std::exception&) {
    return {};  // advice for the planner only
  }
  return namedFactors(plan, uncalibrated.cluster(), factors, [](std::size_t) { return true; });
}

}  // namespace stagecraft::control
