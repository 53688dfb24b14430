#include "editor/plan_evaluation.h"

#include <QElapsedTimer>
#include <algorithm>

#include "plan/validation.h"

namespace stagecraft::gui {

namespace {

/// The stage that bounds the iteration: the one whose busiest member is occupied longest
/// in the simulated iteration, on its processor (forward, backward, update) or on its link
/// (sending, all-reduce), which work side by side: a stage can bound it through its links
/// as well as its compute. Without a simulation, the slowest compute. -1 for fewer than two
/// stages.
int bottleneckStage(const Plan& plan, PlanEvaluation& ev, int devices) {
  if (plan.stageCount() < 2) return -1;
  const std::vector<double>* load = &ev.stage_compute_ms;
  if (!ev.timeline.empty()) {
    std::vector<double> compute(static_cast<size_t>(devices), 0.0), link(static_cast<size_t>(devices), 0.0);
    for (const TimelineEvent& e : ev.timeline) {
      if (e.kind == EventKind::Receive || e.device < 0 || e.device >= devices) continue;  // the sender counts a transfer
      const bool on_link = e.kind == EventKind::Send || e.kind == EventKind::AllReduce;
      (on_link ? link : compute)[static_cast<size_t>(e.device)] += e.end_ms - e.start_ms;
    }
    std::vector<double> occupied(static_cast<size_t>(devices), 0.0);
    for (size_t d = 0; d < occupied.size(); ++d) occupied[d] = std::max(compute[d], link[d]);
    ev.stage_busy_ms.assign(static_cast<size_t>(plan.stageCount()), 0.0);
    for (int s = 0; s < plan.stageCount(); ++s) {
      for (const DeviceShare& m : plan.stages[s].members) {
        if (m.device >= 0 && m.device < devices) {
          ev.stage_busy_ms[s] = std::max(ev.stage_busy_ms[s], occupied[static_cast<size_t>(m.device)]);
        }
      }
    }
    load = &ev.stage_busy_ms;
  }
  if (static_cast<int>(load->size()) != plan.stageCount()) return -1;
  const auto slowest = std::max_element(load->begin(), load->end());
  return *slowest > 0 ? static_cast<int>(slowest - load->begin()) : -1;
}

}  // namespace

PlanEvaluation evaluatePlan(const Plan& plan, const CostModel& cost) {
  QElapsedTimer timer;
  timer.start();
  PlanEvaluation ev;
  const int devices = cost.deviceCount();
  const int layers = cost.layerCount();
  ev.microbatches = plan.microbatches;
  ev.micro_batch_size = plan.microBatchSize();
  ev.stage_of_device = plan.stageOfDevice(devices);
  ev.busy_fraction.assign(devices, 0.0);
  ev.memory_bytes.assign(devices, 0.0);
  ev.memory_limit_bytes.resize(devices);
  ev.device_over_memory.assign(devices, false);
  for (int d = 0; d < devices; ++d) ev.memory_limit_bytes[d] = cost.memoryLimitBytes(d);
  ev.stage_compute_ms.assign(plan.stageCount(), 0.0);
  ev.stage_has_problem.assign(plan.stageCount(), false);

  for (const std::string& p : validatePlan(plan, cost)) ev.problems << QString::fromStdString(p);
  ev.valid = ev.problems.isEmpty();

  // Memory and compute per member from core's cost model, valid plan or not, so an
  // over-full device can be drawn as such.
  for (int s = 0; s < plan.stageCount(); ++s) {
    const Stage& st = plan.stages[s];
    const bool range_ok = st.layer_begin >= 0 && st.layer_end <= layers && st.layer_begin < st.layer_end;
    if (!range_ok || st.members.empty()) {
      ev.stage_has_problem[s] = true;
      continue;
    }
    for (const DeviceShare& m : st.members) {
      if (m.device < 0 || m.device >= devices) {
        ev.stage_has_problem[s] = true;
        continue;
      }
      const double need = cost.memoryBytes(st.layer_begin, st.layer_end, std::max(m.samples, 0), plan.inFlight(s));
      ev.memory_bytes[m.device] = need;
      if (need > ev.memory_limit_bytes[m.device]) {
        ev.device_over_memory[m.device] = true;
        ev.stage_has_problem[s] = true;
      }
      if (m.samples > 0) {
        const double ms = cost.forwardMs(m.device, st.layer_begin, st.layer_end, m.samples) +
                          cost.backwardMs(m.device, st.layer_begin, st.layer_end, m.samples);
        ev.stage_compute_ms[s] = std::max(ev.stage_compute_ms[s], ms);
      }
    }
  }

  if (ev.valid) {
    const PlanEstimate estimate = estimatePlan(plan, cost);
    SimulationResult sim = simulate(plan, cost);
    ev.estimated_samples_per_second = estimate.samples_per_second;
    ev.samples_per_second = sim.samples_per_second;
    ev.iteration_ms = sim.iteration_ms;
    ev.bubble_fraction = sim.bubble_fraction;
    if (static_cast<int>(sim.busy_fraction.size()) == devices) ev.busy_fraction = sim.busy_fraction;
    if (static_cast<int>(sim.peak_memory_bytes.size()) == devices) ev.memory_bytes = sim.peak_memory_bytes;
    ev.timeline = std::move(sim.timeline);
  }
  ev.bottleneck_stage = bottleneckStage(plan, ev, devices);
  ev.evaluate_ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  return ev;
}

}  // namespace stagecraft::gui
