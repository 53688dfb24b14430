#include "plan/validation.h"

#include <cstdio>

#include "cost/cost_model.h"

namespace stagecraft {
namespace {

std::string mb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / (1024.0 * 1024.0));
  return buf;
}

std::string layerRange(const ModelSpec& model, int begin, int end) {
  if (end - begin == 1) return "layer " + std::to_string(begin) + " '" + model.layer(begin).name() + "'";
  return "layers " + std::to_string(begin) + "-" + std::to_string(end - 1) + " ('" +
         model.layer(begin).name() + "' to '" + model.layer(end - 1).name() + "')";
}

}  // namespace

std::vector<std::string> validatePlan(const Plan& plan, const CostModel& cost) {
  std::vector<std::string> errors;
  const ModelSpec& model = cost.model();
  const Cluster& cluster = cost.cluster();
  const int layers = model.layerCount();

  if (plan.batch_size <= 0) errors.push_back("batch size must be positive");
  if (plan.microbatches <= 0) errors.push_back("micro-batch count must be positive");
  if (plan.batch_size > 0 && plan.microbatches > 0 && plan.batch_size % plan.microbatches != 0) {
    errors.push_back("batch " + std::to_string(plan.batch_size) + " is not divisible into " +
                     std::to_string(plan.microbatches) + " micro-batches");
  }
  if (plan.schedule == Schedule::Invalid) errors.push_back("schedule must be 1f1b or gpipe");
  if (plan.optimizer == Optimizer::Invalid) errors.push_back("optimizer must be sgd or adam");
  if (plan.stages.empty()) {
    errors.push_back("the plan has no stages");
    return errors;
  }

  // Layers: stages must tile [0, layers) in order.
  int covered = 0;
  bool layers_ok = true;
  for (int s = 0; s < plan.stageCount(); ++s) {
    const Stage& st = plan.stages[s];
    const std::string where = "stage " + std::to_string(s);
    if (st.layer_begin < 0 || st.layer_end > layers || st.layer_begin >= st.layer_end) {
      errors.push_back(where + ": layer range [" + std::to_string(st.layer_begin) + ", " +
                       std::to_string(st.layer_end) + ") is not within the model's " +
                       std::to_string(layers) + " layers");
      layers_ok = false;
      continue;
    }
    if (st.layer_begin > covered) {
      errors.push_back(layerRange(model, covered, st.layer_begin) + " in no stage (gap before " + where + ")");
      layers_ok = false;
    } else if (st.layer_begin < covered) {
      errors.push_back(layerRange(model, st.layer_begin, std::min(covered, st.layer_end)) +
                       " covered twice (" + where + " overlaps the stage before)");
      layers_ok = false;
    }
    covered = std::max(covered, st.layer_end);
  }
  if (covered < layers) {
    errors.push_back(layerRange(model, covered, layers) + " in no stage (after the last stage)");
    layers_ok = false;
  }

  // Devices: known, each in at most one place, shares summing to the micro-batch.
  std::vector<int> stage_of(cluster.size(), -1);
  bool devices_ok = true;
  const int micro = plan.microBatchSize();
  for (int s = 0; s < plan.stageCount(); ++s) {
    const Stage& st = plan.stages[s];
    const std::string where = "stage " + std::to_string(s);
    if (st.members.empty()) {
      errors.push_back(where + ": has no devices");
      devices_ok = false;
    }
    for (const auto& m : st.members) {
      if (m.device < 0 || m.device >= cluster.size()) {
        errors.push_back(where + ": unknown device #" + std::to_string(m.device));
        devices_ok = false;
        continue;
      }
      const std::string& name = cluster.device(m.device).name;
      if (stage_of[m.device] >= 0) {
        errors.push_back("device '" + name + "' used twice (stage " + std::to_string(stage_of[m.device]) +
                         " and " + where + ")");
        devices_ok = false;
      }
      stage_of[m.device] = s;
      if (m.samples < 0) {
        errors.push_back(where + ": device '" + name + "' has a negative share");
        devices_ok = false;
      }
    }
    if (micro > 0 && !st.members.empty() && st.samples() != micro) {
      errors.push_back(where + ": shares sum to " + std::to_string(st.samples()) +
                       " samples, not the micro-batch size " + std::to_string(micro));
      devices_ok = false;
    }
  }

  if (!layers_ok || !devices_ok || micro <= 0) return errors;
  for (int s = 0; s < plan.stageCount(); ++s) {
    const Stage& st = plan.stages[s];
    for (const auto& m : st.members) {
      const double held = cost.heldBackupBytes(plan, m.device);
      const double need = cost.memoryBytes(st.layer_begin, st.layer_end, m.samples, plan.inFlight(s)) + held;
      const double limit = cost.memoryLimitBytes(m.device);
      if (need > limit) {
        errors.push_back("device '" + cluster.device(m.device).name + "' needs " + mb(need) +
                         " for stage " + std::to_string(s) +
                         (held > 0 ? " (" + mb(held) + " of it the previous stage's backups)" : std::string()) +
                         " but has " + mb(limit) + " (over by " + mb(need - limit) + ")");
      }
    }
  }
  return errors;
}

}  // namespace stagecraft
