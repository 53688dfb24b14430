#include "planner/planner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "io/error.h"
#include "plan/validation.h"
#include "planner/planners.h"
#include "sim/simulator.h"

namespace stagecraft {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Planner> (*make)();
};

const Entry kPlanners[] = {
    {"hybrid", [] { return makeHybridPlanner(); }},
    {"dp", [] { return makeDataParallelPlanner(false); }},
    {"dp-weighted", [] { return makeDataParallelPlanner(true); }},
    {"gpipe", makeGPipePlanner},
    {"pipedream", makePipeDreamPlanner},
    {"exhaustive", makeExhaustivePlanner},
};

std::string mb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

std::vector<std::string> plannerNames() {
  std::vector<std::string> out;
  for (const auto& e : kPlanners) out.emplace_back(e.name);
  return out;
}

std::unique_ptr<Planner> makePlanner(std::string_view name) {
  for (const auto& e : kPlanners) {
    if (name == e.name) return e.make();
  }
  std::string known;
  for (const auto& e : kPlanners) known += (known.empty() ? "" : ", ") + std::string(e.name);
  throw Error("unknown planner '" + std::string(name) + "' (known: " + known + ")");
}

PlanOutcome makePlan(const Planner& planner, const CostModel& cost, const PlanRequest& request) {
  if (request.batch_size <= 0) throw Error("batch size must be positive");
  if (request.batch_size > kMaxBatchSize) {
    throw Error("batch " + std::to_string(request.batch_size) + " is larger than " + std::to_string(kMaxBatchSize) +
                ", the most a plan is searched for");
  }
  if (request.microbatches < 0) throw Error("micro-batch count must be positive (or 0 for automatic)");
  if (request.microbatches > 0 && request.batch_size % request.microbatches != 0) {
    throw Error("batch " + std::to_string(request.batch_size) + " is not divisible into " +
                std::to_string(request.microbatches) + " micro-batches");
  }
  if (request.schedule == Schedule::Invalid) throw Error("schedule must be 1f1b or gpipe");
  const auto start = std::chrono::steady_clock::now();
  PlanOutcome outcome;
  if (request.microbatches > 0) {
    outcome = planner.plan(cost, request);
  } else if (!planner.pipelined()) {
    PlanRequest whole = request;
    whole.microbatches = 1;
    outcome = planner.plan(cost, whole);
  } else {
    // More micro-batches shrink the pipeline bubble; fewer give finer shares inside a
    // group and fewer transfers. Try each and keep the fastest.
    for (int m = 1; m <= std::min(request.batch_size, kMaxAutoMicrobatches); ++m) {
      if (request.batch_size % m != 0) continue;
      PlanRequest fixed = request;
      fixed.microbatches = m;
      PlanOutcome candidate = planner.plan(cost, fixed);
      const bool better = candidate.feasible &&
                          (!outcome.feasible || candidate.simulated_ms < outcome.simulated_ms);
      if (better || (!outcome.feasible && outcome.reason.empty())) outcome = std::move(candidate);
    }
  }
  outcome.plan_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  outcome.plan.planner = std::string(planner.name());
  return outcome;
}

Plan emptyPlan(const CostModel& cost, const PlanRequest& request, std::string_view planner) {
  Plan plan;
  plan.model = cost.model().name();
  plan.cluster = cost.cluster().name();
  plan.planner = std::string(planner);
  plan.batch_size = request.batch_size;
  plan.microbatches = request.microbatches;
  plan.schedule = request.schedule;
  plan.optimizer = cost.optimizer();
  return plan;
}

PlanOutcome finishOutcome(Plan plan, const CostModel& cost) {
  PlanOutcome out;
  const auto errors = validatePlan(plan, cost);
  out.plan = std::move(plan);
  out.estimate = estimatePlan(out.plan, cost);
  out.feasible = errors.empty();
  if (!errors.empty()) out.reason = errors.front();
  if (out.feasible) out.simulated_ms = simulate(out.plan, cost).iteration_ms;
  return out;
}

PlanOutcome chooseBySimulation(std::vector<Plan> finalists, const CostModel& cost) {
  if (finalists.empty()) throw std::logic_error("chooseBySimulation: no finalists");
  std::optional<size_t> best;
  double best_ms = 0;
  for (size_t i = 0; i < finalists.size(); ++i) {
    if (!validatePlan(finalists[i], cost).empty()) continue;
    const double ms = simulate(finalists[i], cost).iteration_ms;
    if (!best || ms < best_ms) {
      best = i;
      best_ms = ms;
    }
  }
  return finishOutcome(std::move(finalists[best.value_or(0)]), cost);
}

std::string explainNoFit(const CostModel& cost, const PlanRequest& request) {
  const Cluster& cluster = cost.cluster();
  const ModelSpec& model = cost.model();
  int roomiest = 0;
  double total_memory = 0;
  for (int d = 0; d < cluster.size(); ++d) {
    total_memory += cost.memoryLimitBytes(d);
    if (cost.memoryLimitBytes(d) > cost.memoryLimitBytes(roomiest)) roomiest = d;
  }
  int heaviest = 0;
  double heaviest_bytes = 0, model_bytes = 0;
  for (int l = 0; l < model.layerCount(); ++l) {
    const double need = cost.memoryBytes(l, l + 1, 1, 1);
    model_bytes += need;
    if (need > heaviest_bytes) {
      heaviest_bytes = need;
      heaviest = l;
    }
  }
  const double limit = cost.memoryLimitBytes(roomiest);
  const std::string device = "'" + cluster.device(roomiest).name + "'";
  if (heaviest_bytes > limit) {
    return "no plan fits: layer '" + model.layer(heaviest).name() + "' alone needs " + mb(heaviest_bytes) +
           " (weights, gradients, optimizer state, one sample) but the largest device " + device +
           " has " + mb(limit) + ", short by " + mb(heaviest_bytes - limit);
  }
  if (model_bytes > total_memory) {
    return "no plan fits: model '" + model.name() + "' needs at least " + mb(model_bytes) +
           " but the whole cluster has " + mb(total_memory) + ", short by " + mb(model_bytes - total_memory);
  }
  return "no plan fits micro-batches of " + std::to_string(request.batch_size / request.microbatches) +
         " samples in memory (the largest device, " + device + ", has " + mb(limit) +
         "); use more micro-batches or a smaller batch";
}

}  // namespace stagecraft
