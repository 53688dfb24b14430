// The closed-form estimate of one training iteration (estimatePlan): what the planners
// optimise before the simulator checks their finalists event by event.
#include <algorithm>

#include "cost/cost_model.h"

namespace stagecraft {

PlanEstimate estimatePlan(const Plan& plan, const CostModel& cost) {
  PlanEstimate e;
  const int S = plan.stageCount();
  const int M = plan.microbatches;
  e.stages.resize(S);
  e.memory_bytes.assign(cost.deviceCount(), 0);
  const ModelSpec& model = cost.model();
  for (int s = 0; s < S; ++s) {
    const Stage& st = plan.stages[s];
    StageTiming& t = e.stages[s];
    for (const auto& m : st.members) {
      t.forward_ms = std::max(t.forward_ms, cost.forwardMs(m.device, st.layer_begin, st.layer_end, m.samples));
      t.backward_ms = std::max(t.backward_ms, cost.backwardMs(m.device, st.layer_begin, st.layer_end, m.samples));
      t.update_ms = std::max(t.update_ms, cost.updateMs(m.device, st.layer_begin, st.layer_end));
      const double bytes = cost.memoryBytes(st.layer_begin, st.layer_end, m.samples, plan.inFlight(s)) +
                           cost.heldBackupBytes(plan, m.device);
      e.memory_bytes[m.device] = bytes;
      if (bytes > cost.memoryLimitBytes(m.device)) e.fits = false;
    }
    t.allreduce_ms = cost.exposedAllReduceMs(st);
    if (s + 1 < S) {
      const double per_sample = model.outputBytes(st.layer_end - 1);
      StageTiming& next = e.stages[s + 1];
      for (const auto& x : boundaryTransfers(st, plan.stages[s + 1])) {
        const double bytes = x.samples * per_sample;
        t.send_activation_ms = std::max(t.send_activation_ms, cost.transferMs(x.from_device, x.to_device, bytes));
        t.activation_wire_ms = std::max(t.activation_wire_ms, cost.wireMs(x.from_device, x.to_device, bytes));
        next.send_gradient_ms = std::max(next.send_gradient_ms, cost.transferMs(x.to_device, x.from_device, bytes));
        next.gradient_wire_ms = std::max(next.gradient_wire_ms, cost.wireMs(x.to_device, x.from_device, bytes));
      }
    }
  }
  // Fill and drain: one micro-batch's trip through every stage and link, both ways.
  double fill = 0, period = 0, fwd_period = 0, bwd_period = 0, fwd_fill = 0, bwd_fill = 0;
  for (const auto& t : e.stages) {
    fwd_fill += t.forward_ms + t.send_activation_ms;
    bwd_fill += t.backward_ms + t.send_gradient_ms;
    period = std::max({period, t.forward_ms + t.backward_ms, t.activation_wire_ms, t.gradient_wire_ms});
    fwd_period = std::max({fwd_period, t.forward_ms, t.activation_wire_ms});
    bwd_period = std::max({bwd_period, t.backward_ms, t.gradient_wire_ms});
  }
  fill = fwd_fill + bwd_fill;
  // Under 1F1B a stage runs only one micro-batch ahead of the next one, so each
  // neighbouring pair also bounds the period: in two periods both must compute and the
  // activation and gradient must cross between them, latency included.
  for (int s = 0; s + 1 < S; ++s) {
    const StageTiming& a = e.stages[s];
    const StageTiming& b = e.stages[s + 1];
    period = std::max(period, (a.forward_ms + a.backward_ms + b.forward_ms + b.backward_ms +
                               a.send_activation_ms + b.send_gradient_ms) / 2);
  }
  double pipeline = 0;
  if (plan.schedule == Schedule::GPipe) {
    pipeline = fill + (M - 1) * (fwd_period + bwd_period);
    e.bottleneck_ms = fwd_period + bwd_period;
  } else {
    // fill + (M - 1) periods charges a bottleneck stage the round trip through the
    // others once more than it waits for it: a first stage twice as slow as the rest
    // never idles, the gradient of its first micro-batch is back before its second
    // forward ends. So the links and neighbouring pairs bound the steady state here, and
    // each stage bounds the iteration by its own work: its first input's trip through the
    // earlier stages, M forwards and backwards, its last gradient's trip back to stage 0.
    // Equal stages give fill + (M - 1) periods either way.
    double steady = 0;
    for (const auto& t : e.stages) steady = std::max({steady, t.activation_wire_ms, t.gradient_wire_ms});
    for (int s = 0; s + 1 < S; ++s) {
      const StageTiming& a = e.stages[s];
      const StageTiming& b = e.stages[s + 1];
      steady = std::max(steady, (a.forward_ms + a.backward_ms + b.forward_ms + b.backward_ms +
                                 a.send_activation_ms + b.send_gradient_ms) / 2);
    }
    pipeline = fill + (M - 1) * steady;
    double to = 0, back = 0;  // the trips to stage s and back down from it
    for (int s = 0; s < S; ++s) {
      const StageTiming& t = e.stages[s];
      back += t.send_gradient_ms;
      pipeline = std::max(pipeline, to + M * (t.forward_ms + t.backward_ms) + back);
      to += t.forward_ms + t.send_activation_ms;
      back += t.backward_ms;
    }
    e.bottleneck_ms = period;
  }
  // Stage s finishes its last backward earlier than stage 0 by the gradient's trip down,
  // which hides that much of its all-reduce and optimizer step.
  double tail = 0, slack = 0;
  for (int s = 0; s < S; ++s) {
    slack += e.stages[s].send_gradient_ms;
    tail = std::max(tail, e.stages[s].allreduce_ms + e.stages[s].update_ms - slack);
    slack += e.stages[s].backward_ms;
  }
  e.iteration_ms = pipeline + tail;
  e.samples_per_second = e.iteration_ms > 0 ? plan.batch_size * 1000.0 / e.iteration_ms : 0;
  return e;
}

}  // namespace stagecraft
