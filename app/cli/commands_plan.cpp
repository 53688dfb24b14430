#include <iostream>
#include <stdexcept>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "io/json_io.h"
#include "model/zoo.h"
#include "plan/plan_io.h"
#include "plan/validation.h"
#include "sim/sim_report.h"

namespace stagecraft::cli {
namespace {

constexpr double kBytesPerMb = 1024.0 * 1024.0;

/// The human explanation of a plan, one line per entry; printed as is, and the
/// `explanation` of the JSON report.
std::vector<std::string> explainPlan(const PlanOutcome& outcome, const CostModel& cost, const PlanEstimate& estimate,
                                     const SimulationResult& sim) {
  const Plan& plan = outcome.plan;
  const ModelSpec& model = cost.model();
  const Cluster& cluster = cost.cluster();
  std::vector<std::string> lines;
  lines.push_back("Plan for " + model.name() + " on " + cluster.name() + " by " + plan.planner + " (planned in " +
                  fixed(outcome.plan_ms, 2) + " ms): batch " + std::to_string(plan.batch_size) + " in " +
                  counted(plan.microbatches, "micro-batch", "micro-batches") + " of " +
                  std::to_string(plan.microBatchSize()) +
                  ", " + std::string(scheduleName(plan.schedule)) + " schedule, " +
                  std::string(optimizerName(plan.optimizer)) + " optimizer");
  lines.push_back("");
  for (int s = 0; s < plan.stageCount(); ++s) {
    const Stage& st = plan.stages[s];
    const StageTiming& t = estimate.stages[s];
    lines.push_back("Stage " + std::to_string(s) + ": " + describeLayers(model, st.layer_begin, st.layer_end) +
                    " on " + describeMembers(st, cluster, plan.microBatchSize()));
    lines.push_back("  per micro-batch: forward " + fixed(t.forward_ms, 3) + " ms, backward " + fixed(t.backward_ms, 3) +
                    " ms, send activations " + fixed(t.send_activation_ms, 3) + " ms, send gradients " +
                    fixed(t.send_gradient_ms, 3) + " ms; all-reduce " + fixed(t.allreduce_ms, 3) +
                    " ms per iteration beyond the last backward");
  }
  lines.push_back("");
  lines.push_back("Memory per device (weights, gradients, optimizer state, activations in flight):");
  TextTable table({{"device", TextTable::Align::Left},
                   {"tier", TextTable::Align::Left},
                   {"stage"},
                   {"samples"},
                   {"need MB"},
                   {"limit MB"},
                   {"use"}});
  const auto stage_of = plan.stageOfDevice(cluster.size());
  for (int d = 0; d < cluster.size(); ++d) {
    const Device& dev = cluster.device(d);
    const double need = d < static_cast<int>(estimate.memory_bytes.size()) ? estimate.memory_bytes[d] : 0;
    const double limit = cost.memoryLimitBytes(d);
    int samples = 0;
    if (stage_of[d] >= 0) {
      for (const auto& m : plan.stages[stage_of[d]].members) {
        if (m.device == d) samples = m.samples;
      }
    }
    table.addRow({dev.name, std::string(tierName(dev.tier)), stage_of[d] >= 0 ? std::to_string(stage_of[d]) : "-",
                  std::to_string(samples), fixed(need / kBytesPerMb, 1), fixed(limit / kBytesPerMb, 1),
                  stage_of[d] >= 0 ? percent(limit > 0 ? need / limit : 0) : "idle"});
  }
  for (auto& line : table.lines("  ")) lines.push_back(std::move(line));
  lines.push_back("");
  lines.push_back("Predicted (simulated): " + fixed(sim.samples_per_second, 1) + " samples/s, iteration " +
                  fixed(sim.iteration_ms, 2) + " ms, bubble " + percent(sim.bubble_fraction) +
                  " (closed-form estimate " + fixed(estimate.samples_per_second, 1) + " samples/s)");
  for (auto& note : profileCoverageNotes(outcome.plan, cost)) lines.push_back(std::move(note));
  return lines;
}

}  // namespace

int runPlan(std::span<const std::string> args) {
  ArgumentParser parser("plan", "Plans a model on a cluster with one planner and explains the plan.");
  addModelOption(parser, true);
  parser.required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end")
      .option("planner", "P", "hybrid, dp, dp-weighted, gpipe, pipedream or exhaustive", "hybrid");
  addRequestOptions(parser);
  addCostOptions(parser);
  parser.option("out", "FILE", "write the plan (stagecraft.v1.Plan JSON) for `simulate` and the workers")
      .flag("json", "print a stagecraft.v1.PlanReport as JSON")
      .epilog("Exit status 3 when no plan fits; the reason is printed on one line.");
  const ParsedArguments parsed = parser.parse(args);

  // Flags first, files after: a typo should not wait for a model to load.
  const PlanRequest request = requestFromArguments(parsed);
  const auto planner = makePlanner(parsed.value("planner"));
  const PlanningInputs inputs(parsed);
  const ModelSpec& model = inputs.model;
  const Cluster& cluster = inputs.cluster;
  const CostModel& cost = inputs.cost;

  const PlanOutcome outcome = makePlan(*planner, cost, request);
  if (!outcome.feasible) {
    printFailure(outcome.reason.empty() ? "planner '" + parsed.value("planner") + "' found no feasible plan"
                                        : outcome.reason);
    return kExitInfeasible;
  }
  if (const auto problems = validatePlan(outcome.plan, cost); !problems.empty()) {
    throw std::logic_error("planner '" + parsed.value("planner") + "' produced an invalid plan: " + problems.front());
  }

  const PlanEstimate estimate = estimatePlan(outcome.plan, cost);
  const SimulationResult sim = simulate(outcome.plan, cost);
  v1::Plan file = planToProto(outcome.plan, model, cluster);
  file.mutable_predicted()->set_samples_per_second(sim.samples_per_second);
  file.mutable_predicted()->set_iteration_ms(sim.iteration_ms);
  file.mutable_predicted()->set_bubble_fraction(sim.bubble_fraction);
  const std::vector<std::string> explanation = explainPlan(outcome, cost, estimate, sim);

  if (parsed.has("out")) io::writeJsonFile(parsed.value("out"), file);

  if (parsed.flag("json")) {
    v1::PlanReport report;
    *report.mutable_plan() = file;
    *report.mutable_simulation() = toSimulationReport(sim, outcome.plan, cost, /*with_timeline=*/false);
    for (const auto& line : explanation) {
      if (!line.empty()) report.add_explanation(line);
    }
    printJson(report);
    return kExitOk;
  }
  for (const auto& line : explanation) std::cout << line << "\n";
  if (parsed.has("out")) std::cout << "\nWrote the plan to " << parsed.value("out") << "\n";
  return kExitOk;
}

}  // namespace stagecraft::cli
