#include <google/protobuf/struct.pb.h>

#include <iostream>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "io/json_io.h"
#include "plan/plan_io.h"
#include "plan/validation.h"
#include "sim/sim_report.h"

namespace stagecraft::cli {
namespace {

/// {"valid": false, "problems": [...]} for --json callers of an invalid plan.
void printProblemsJson(const std::vector<std::string>& problems) {
  google::protobuf::Struct out;
  (*out.mutable_fields())["valid"].set_bool_value(false);
  auto* list = (*out.mutable_fields())["problems"].mutable_list_value();
  for (const auto& p : problems) list->add_values()->set_string_value(p);
  printJson(out);
}

}  // namespace

int runSimulate(std::span<const std::string> args) {
  ArgumentParser parser("simulate", "Validates a plan file and simulates one training iteration of it, event by event.");
  parser.required("plan", "FILE", "a plan (stagecraft.v1.Plan JSON), e.g. from `plan --out`")
      .required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end")
      .option("timeline", "FILE", "write the iteration's timeline as a Chrome trace (open in ui.perfetto.dev)")
      .flag("json", "print a stagecraft.v1.SimulationReport as JSON (the timeline goes to --timeline)")
      .epilog("An invalid plan exits with status 2 and its first problem on one line;\n"
              "with --json every problem is also printed to stdout.");
  const ParsedArguments parsed = parser.parse(args);

  v1::Plan proto;
  io::readJsonFile(parsed.value("plan"), proto);
  const Cluster cluster = loadCluster(parsed.value("cluster"));
  const ModelSpec model = modelOfPlan(proto);
  const Plan plan = planFromProto(proto, cluster);
  CostModel cost(model, cluster, plan.optimizer);

  if (const auto problems = validatePlan(plan, cost); !problems.empty()) {
    if (parsed.flag("json")) printProblemsJson(problems);
    printFailure(firstOfMany("invalid plan: " + problems.front(), problems.size()));
    return kExitBadInput;
  }

  const SimulationResult sim = simulate(plan, cost);
  if (parsed.has("timeline")) io::writeJsonFile(parsed.value("timeline"), toChromeTrace(sim, cluster));
  const v1::SimulationReport report = toSimulationReport(sim, plan, cost, /*with_timeline=*/false);
  if (parsed.flag("json")) {
    printJson(report);
    return kExitOk;
  }

  std::cout << "Simulated " << model.name() << " on " << cluster.name() << " (planner "
            << (plan.planner.empty() ? "unknown" : plan.planner) << ", " << scheduleName(plan.schedule)
            << ", batch " << plan.batch_size << " in " << plan.microbatches << " micro-batches)\n";
  if (!proto.cluster().empty() && proto.cluster() != cluster.name()) {
    std::cout << "Note: the plan was made for cluster '" << proto.cluster() << "'\n";
  }
  std::cout << "\n"
            << fixed(report.samples_per_second(), 1) << " samples/s, iteration " << fixed(report.iteration_ms(), 2)
            << " ms, bubble " << percent(report.bubble_fraction()) << "\n\n";
  TextTable table({{"device", TextTable::Align::Left},
                   {"stage"},
                   {"samples"},
                   {"busy"},
                   {"peak MB"},
                   {"limit MB"}});
  for (const auto& d : report.devices()) {
    const bool used = d.stage() >= 0;
    table.addRow({d.device(), used ? std::to_string(d.stage()) : "-", std::to_string(d.samples()),
                  used ? percent(d.busy_fraction()) : "idle", fixed(d.peak_memory_mb(), 1),
                  fixed(d.memory_limit_mb(), 1)});
  }
  for (const auto& line : table.lines()) std::cout << line << "\n";
  if (parsed.has("timeline")) {
    std::cout << "\nWrote the timeline to " << parsed.value("timeline") << " (open it in https://ui.perfetto.dev)\n";
  }
  return kExitOk;
}

}  // namespace stagecraft::cli
