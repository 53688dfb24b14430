#include <iostream>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "io/error.h"
#include "model/zoo.h"
#include "plan/validation.h"
#include "sim/simulator.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft::cli {
namespace {

/// One planner's row: its plan simulated, or why it has none. A planner that rejects
/// the instance (too large to enumerate...) is a row with a reason, not a failure.
v1::PlannerRow comparePlanner(const std::string& name, const CostModel& cost, const PlanRequest& request,
                              double ideal) {
  v1::PlannerRow row;
  row.set_name(name);
  PlanOutcome outcome;
  try {
    outcome = makePlan(*makePlanner(name), cost, request);
  } catch (const Error& e) {
    row.set_reason(e.what());
    return row;
  }
  row.set_plan_ms(outcome.plan_ms);
  if (!outcome.feasible) {
    row.set_reason(outcome.reason.empty() ? "no feasible plan" : outcome.reason);
    return row;
  }
  if (const auto problems = validatePlan(outcome.plan, cost); !problems.empty()) {
    row.set_reason("produced an invalid plan: " + problems.front());
    return row;
  }
  const SimulationResult sim = simulate(outcome.plan, cost);
  row.set_feasible(true);
  row.set_samples_per_second(sim.samples_per_second);
  row.set_iteration_ms(sim.iteration_ms);
  row.set_bubble_fraction(sim.bubble_fraction);
  row.set_ratio_to_ideal(ideal > 0 ? sim.samples_per_second / ideal : 0);
  row.set_microbatches(outcome.plan.microbatches);
  row.set_stages(outcome.plan.stageCount());
  row.set_devices_used(devicesUsed(outcome.plan));
  return row;
}

void printTable(const v1::CompareReport& report) {
  std::cout << "Planners on " << report.model() << " / " << report.cluster() << ", batch " << report.batch_size();
  if (report.microbatches() > 0) {
    std::cout << " in " << report.microbatches() << " micro-batches\n\n";
  } else {
    std::cout << ", micro-batches chosen by each planner\n\n";
  }
  TextTable table({{"planner", TextTable::Align::Left},
                   {"feasible", TextTable::Align::Left},
                   {"samples/s"},
                   {"iteration ms"},
                   {"bubble"},
                   {"plan ms"},
                   {"of ideal"},
                   {"stages"},
                   {"micro-batches"},
                   {"devices"}});
  for (const auto& r : report.planners()) {
    if (r.feasible()) {
      table.addRow({r.name(), "yes", fixed(r.samples_per_second(), 1), fixed(r.iteration_ms(), 2),
                    percent(r.bubble_fraction()), fixed(r.plan_ms(), 2), percent(r.ratio_to_ideal()),
                    std::to_string(r.stages()), std::to_string(r.microbatches()), std::to_string(r.devices_used())});
    } else {
      table.addRow({r.name(), "no", "-", "-", "-", fixed(r.plan_ms(), 2), "-", "-", "-", "-"});
    }
  }
  for (const auto& line : table.lines()) std::cout << line << "\n";

  bool any_reason = false;
  for (const auto& r : report.planners()) {
    if (r.feasible()) continue;
    if (!any_reason) std::cout << "\nNo plan from:\n";
    any_reason = true;
    std::cout << "  " << r.name() << ": " << r.reason() << "\n";
  }
  std::cout << "\nIdeal (every device training the model alone, summed): "
            << fixed(report.ideal_samples_per_second(), 1) << " samples/s\n";
  const v1::PlannerRow* best = nullptr;
  for (const auto& r : report.planners()) {
    // Ties (the same plan found twice) go to the planner listed first.
    if (r.feasible() && (!best || r.samples_per_second() > best->samples_per_second() * (1 + 1e-9))) best = &r;
  }
  if (best) {
    std::cout << "Best: " << best->name() << ", " << fixed(best->samples_per_second(), 1) << " samples/s ("
              << percent(best->ratio_to_ideal()) << " of ideal)\n";
  }
}

}  // namespace

int runCompare(std::span<const std::string> args) {
  std::string all;
  for (const auto& name : plannerNames()) all += (all.empty() ? "" : ",") + name;
  ArgumentParser parser("compare", "Runs several planners on one model and cluster and simulates each plan.");
  addModelOption(parser, true);
  parser.required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end");
  addRequestOptions(parser);
  addCostOptions(parser);
  parser.option("planners", "LIST", "comma-separated planners", all)
      .flag("json", "print a stagecraft.v1.CompareReport as JSON")
      .epilog("Exit status 3 when no planner finds a feasible plan (the report is printed anyway).");
  const ParsedArguments parsed = parser.parse(args);

  const PlanRequest request = requestFromArguments(parsed);
  const std::vector<std::string> planners = parsePlannerList(parsed.value("planners"));
  const PlanningInputs inputs(parsed);
  const ModelSpec& model = inputs.model;
  const Cluster& cluster = inputs.cluster;
  const CostModel& cost = inputs.cost;

  v1::CompareReport report;
  report.set_model(model.name());
  report.set_cluster(cluster.name());
  report.set_batch_size(request.batch_size);
  report.set_microbatches(request.microbatches);
  double ideal = 0;
  for (int d = 0; d < cluster.size(); ++d) ideal += cost.soloSamplesPerSecond(d, request.batch_size);
  report.set_ideal_samples_per_second(ideal);
  bool any_feasible = false;
  for (const auto& name : planners) {
    *report.add_planners() = comparePlanner(name, cost, request, ideal);
    any_feasible = any_feasible || report.planners().rbegin()->feasible();
  }

  if (parsed.flag("json")) {
    printJson(report);
  } else {
    printTable(report);
  }
  if (!any_feasible) {
    printFailure("no planner found a feasible plan for " + model.name() + " on " + cluster.name());
    return kExitInfeasible;
  }
  return kExitOk;
}

}  // namespace stagecraft::cli
