#include "editor/plan_edits.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace stagecraft::gui {
namespace {

PlanEditResult refuse(const QString& why) { return PlanEditResult{std::nullopt, why}; }

PlanEditResult accept(Plan plan) { return PlanEditResult{std::move(plan), {}}; }

int stageOfLayer(const Plan& plan, int layer) {
  for (int s = 0; s < plan.stageCount(); ++s) {
    if (layer >= plan.stages[s].layer_begin && layer < plan.stages[s].layer_end) return s;
  }
  return -1;
}

bool validStage(const Plan& plan, int stage) { return stage >= 0 && stage < plan.stageCount(); }

}  // namespace

bool samePlan(const Plan& a, const Plan& b) {
  return a.model == b.model && a.cluster == b.cluster && a.planner == b.planner && a.batch_size == b.batch_size &&
         a.microbatches == b.microbatches && a.schedule == b.schedule && a.optimizer == b.optimizer &&
         a.stages == b.stages;
}

void PlanEdits::resplit(Plan& plan, const CostModel& cost, int stage) {
  Stage& st = plan.stages[stage];
  const int micro = plan.microBatchSize();
  if (st.members.empty() || micro <= 0 || st.layer_begin >= st.layer_end) return;
  const std::vector<int> group = st.devices();
  if (const auto split = cost.splitMicroBatch(group, st.layer_begin, st.layer_end, micro, plan.inFlight(stage))) {
    for (size_t i = 0; i < group.size(); ++i) st.members[i].samples = (*split)[i];
    return;
  }
  // The group cannot hold the micro-batch: split by speed (largest remainder) and let
  // validation name the device that is short of memory.
  double total = 0;
  for (int d : group) total += cost.cluster().device(d).gflops;
  std::vector<double> exact(group.size());
  int given = 0;
  for (size_t i = 0; i < group.size(); ++i) {
    exact[i] = total > 0 ? micro * cost.cluster().device(group[i]).gflops / total : double(micro) / group.size();
    st.members[i].samples = static_cast<int>(std::floor(exact[i]));
    given += st.members[i].samples;
  }
  std::vector<size_t> order(group.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return exact[a] - std::floor(exact[a]) > exact[b] - std::floor(exact[b]);
  });
  for (size_t k = 0; given < micro; k = (k + 1) % order.size(), ++given) ++st.members[order[k]].samples;
}

void PlanEdits::resplitAll(Plan& plan, const CostModel& cost) {
  for (int s = 0; s < plan.stageCount(); ++s) resplit(plan, cost, s);
}

PlanEditResult PlanEdits::moveBoundary(const Plan& plan, const CostModel& cost, int boundary, int layer) {
  if (boundary < 0 || boundary + 1 >= plan.stageCount()) {
    return refuse(tr("There is no boundary after stage %1.").arg(boundary));
  }
  Plan next = plan;
  Stage& a = next.stages[boundary];
  Stage& b = next.stages[boundary + 1];
  if (layer <= a.layer_begin || layer >= b.layer_end) {
    return refuse(tr("Stage %1 and stage %2 must each keep at least one layer.").arg(boundary).arg(boundary + 1));
  }
  a.layer_end = layer;
  b.layer_begin = layer;
  resplit(next, cost, boundary);
  resplit(next, cost, boundary + 1);
  return accept(std::move(next));
}

PlanEditResult PlanEdits::moveLayersToStage(const Plan& plan, const CostModel& cost, std::vector<int> layers,
                                            int stage) {
  if (!validStage(plan, stage)) return refuse(tr("There is no stage %1.").arg(stage));
  if (layers.empty()) return refuse(tr("No layers to move."));
  const auto [lo, hi] = std::minmax_element(layers.begin(), layers.end());
  const int first = *lo;
  const int last = *hi;
  if (first < 0 || last >= cost.layerCount()) return refuse(tr("Layer %1 is not in the model.").arg(last));
  const Stage& target = plan.stages[stage];
  if (first >= target.layer_begin && last < target.layer_end) {
    return refuse(tr("The layers are already in stage %1.").arg(stage));
  }
  if (first >= target.layer_end) {
    // Layers after the stage: they must all sit in the next stage, which keeps one layer.
    if (stageOfLayer(plan, first) != stage + 1 || stageOfLayer(plan, last) != stage + 1) {
      return refuse(tr("Layers can only move to an adjacent stage; stage %1 does not border them.").arg(stage));
    }
    if (last + 1 >= plan.stages[stage + 1].layer_end) {
      return refuse(tr("Stage %1 would have no layers left.").arg(stage + 1));
    }
    return moveBoundary(plan, cost, stage, last + 1);
  }
  if (last < target.layer_begin) {
    if (stageOfLayer(plan, first) != stage - 1 || stageOfLayer(plan, last) != stage - 1) {
      return refuse(tr("Layers can only move to an adjacent stage; stage %1 does not border them.").arg(stage));
    }
    if (first <= plan.stages[stage - 1].layer_begin) {
      return refuse(tr("Stage %1 would have no layers left.").arg(stage - 1));
    }
    return moveBoundary(plan, cost, stage - 1, first);
  }
  return refuse(tr("The layers straddle stage %1; drop layers of one neighbouring stage.").arg(stage));
}

PlanEditResult PlanEdits::addDeviceToStage(const Plan& plan, const CostModel& cost, int device, int stage) {
  if (!validStage(plan, stage)) return refuse(tr("There is no stage %1.").arg(stage));
  if (device < 0 || device >= cost.deviceCount()) return refuse(tr("The device is not in the cluster."));
  const QString name = QString::fromStdString(cost.cluster().device(device).name);
  const std::vector<int> stage_of = plan.stageOfDevice(cost.deviceCount());
  const int from = stage_of[device];
  if (from == stage) return refuse(tr("Device %1 is already in stage %2.").arg(name).arg(stage));
  Plan next = plan;
  if (from >= 0) {
    auto& members = next.stages[from].members;
    if (members.size() == 1) {
      return refuse(tr("Device %1 is the only device of stage %2; a stage needs at least one device.")
                        .arg(name)
                        .arg(from));
    }
    members.erase(std::remove_if(members.begin(), members.end(), [&](const DeviceShare& m) { return m.device == device; }),
                  members.end());
    resplit(next, cost, from);
  }
  next.stages[stage].members.push_back(DeviceShare{device, 0});
  resplit(next, cost, stage);
  return accept(std::move(next));
}

PlanEditResult PlanEdits::removeDevice(const Plan& plan, const CostModel& cost, int device) {
  if (device < 0 || device >= cost.deviceCount()) return refuse(tr("The device is not in the cluster."));
  const QString name = QString::fromStdString(cost.cluster().device(device).name);
  const int from = plan.stageOfDevice(cost.deviceCount())[device];
  if (from < 0) return refuse(tr("Device %1 is not in any stage.").arg(name));
  Plan next = plan;
  auto& members = next.stages[from].members;
  if (members.size() == 1) {
    return refuse(
        tr("Device %1 is the only device of stage %2; remove the stage instead.").arg(name).arg(from));
  }
  members.erase(std::remove_if(members.begin(), members.end(), [&](const DeviceShare& m) { return m.device == device; }),
                members.end());
  resplit(next, cost, from);
  return accept(std::move(next));
}

PlanEditResult PlanEdits::addStage(const Plan& plan, const CostModel& cost) {
  const ModelSpec& model = cost.model();
  auto work = [&](const Stage& st) {
    return model.forwardFlops(st.layer_begin, st.layer_end) + model.backwardFlops(st.layer_begin, st.layer_end);
  };
  int victim = -1;
  for (int s = 0; s < plan.stageCount(); ++s) {
    const Stage& st = plan.stages[s];
    if (st.layer_end - st.layer_begin < 2) continue;
    if (victim < 0 || work(st) > work(plan.stages[victim])) victim = s;
  }
  if (victim < 0) return refuse(tr("Every stage holds a single layer; there is nothing to split."));

  // The unused device with the most compute, if any.
  const std::vector<int> stage_of = plan.stageOfDevice(cost.deviceCount());
  int spare = -1;
  for (int d = 0; d < cost.deviceCount(); ++d) {
    if (stage_of[d] >= 0) continue;
    if (spare < 0 || cost.cluster().device(d).gflops > cost.cluster().device(spare).gflops) spare = d;
  }
  const Stage& st = plan.stages[victim];
  if (spare < 0 && st.members.size() < 2) {
    return refuse(tr("No device is unused and stage %1 has a single device; free a device first.").arg(victim));
  }
  // Cut where the forward + backward work is halved, keeping a layer on each side.
  const double half = work(st) / 2;
  int cut = st.layer_begin + 1;
  while (cut + 1 < st.layer_end &&
         model.forwardFlops(st.layer_begin, cut) + model.backwardFlops(st.layer_begin, cut) < half) {
    ++cut;
  }
  Plan next = plan;
  Stage back;
  back.layer_begin = cut;
  back.layer_end = st.layer_end;
  next.stages[victim].layer_end = cut;
  if (spare >= 0) {
    back.members.push_back(DeviceShare{spare, 0});
  } else {
    auto& members = next.stages[victim].members;
    const size_t keep = (members.size() + 1) / 2;
    back.members.assign(members.begin() + static_cast<long>(keep), members.end());
    members.resize(keep);
  }
  next.stages.insert(next.stages.begin() + victim + 1, back);
  resplitAll(next, cost);  // in-flight counts change with the stage count
  return accept(std::move(next));
}

PlanEditResult PlanEdits::removeStage(const Plan& plan, const CostModel& cost, int stage) {
  if (!validStage(plan, stage)) return refuse(tr("There is no stage %1.").arg(stage));
  if (plan.stageCount() < 2) return refuse(tr("A plan needs at least one stage."));
  Plan next = plan;
  const Stage gone = next.stages[stage];
  if (stage > 0) {
    next.stages[stage - 1].layer_end = gone.layer_end;
  } else {
    next.stages[1].layer_begin = gone.layer_begin;
  }
  next.stages.erase(next.stages.begin() + stage);
  resplitAll(next, cost);
  return accept(std::move(next));
}

PlanEditResult PlanEdits::setBatch(const Plan& plan, const CostModel& cost, int batch, int microbatches) {
  if (batch <= 0 || microbatches <= 0) return refuse(tr("The batch and the micro-batch count must be positive."));
  if (batch % microbatches != 0) {
    return refuse(tr("A batch of %1 samples does not divide into %2 micro-batches.").arg(batch).arg(microbatches));
  }
  Plan next = plan;
  next.batch_size = batch;
  next.microbatches = microbatches;
  resplitAll(next, cost);
  return accept(std::move(next));
}

PlanEditResult PlanEdits::setSchedule(const Plan& plan, const CostModel& cost, Schedule schedule) {
  if (schedule == Schedule::Invalid) return refuse(tr("Unknown schedule."));
  Plan next = plan;
  next.schedule = schedule;
  resplitAll(next, cost);  // in-flight micro-batches differ between 1F1B and GPipe
  return accept(std::move(next));
}

}  // namespace stagecraft::gui
