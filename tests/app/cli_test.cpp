// Runs the real stagecraft-cli binary and pins its contract: exit statuses, one-line
// failures on stderr, and --json output that parses as the report protos.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "io/json_io.h"
#include "planner/planner.h"
#include "stagecraft/v1/cluster.pb.h"
#include "stagecraft/v1/model.pb.h"
#include "stagecraft/v1/plan.pb.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft {
namespace {

namespace fs = std::filesystem;
using test_support::CapturedRun;
using test_support::contains;
using test_support::linesOf;
using test_support::slurp;

class CliTest : public test_support::CliFixture {
 protected:
  /// The shipped cloud-edge-end example, by path.
  static std::string clusterPath() { return std::string(STAGECRAFT_TEST_CLUSTERS) + "/cloud-edge-end.json"; }

  /// A plan file for mlp from the data-parallel planner (a real planner, not a placeholder).
  v1::Plan makePlanFile(const fs::path& path) {
    const CapturedRun r = run({"plan", "--model", "mlp", "--cluster", "cloud-edge-end", "--planner", "dp-weighted",
                             "--out", path.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    v1::Plan plan;
    io::readJsonFile(path.string(), plan);
    return plan;
  }

};


TEST_F(CliTest, ModelsJsonListsTheFiveZooModels) {
  const CapturedRun r = run({"models", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::ModelList list;
  io::parseJson(r.out, list, "models --json");
  ASSERT_EQ(list.models_size(), 5);
  for (const auto& m : list.models()) {
    EXPECT_FALSE(m.name().empty());
    EXPECT_GT(m.layers(), 0) << m.name();
    EXPECT_GT(m.parameters(), 0) << m.name();
    EXPECT_GT(m.forward_gflops_per_sample(), 0) << m.name();
  }
  EXPECT_TRUE(r.err.empty());
}

TEST_F(CliTest, ModelsTableNamesEveryModel) {
  const CapturedRun r = run({"models"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"mlp", "vgg11", "resnet18", "mobilenetv2", "gpt-mini"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
}

TEST_F(CliTest, CompareJsonHasOneRowPerPlannerAndAPositiveIdeal) {
  const CapturedRun r = run({"compare", "--model", "resnet18", "--cluster", "cloud-edge-end", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::CompareReport report;
  io::parseJson(r.out, report, "compare --json");
  const auto names = plannerNames();
  ASSERT_EQ(report.planners_size(), static_cast<int>(names.size()));
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& row = report.planners(static_cast<int>(i));
    EXPECT_EQ(row.name(), names[i]);
    if (row.feasible()) {
      EXPECT_GT(row.samples_per_second(), 0) << row.name();
      EXPECT_GT(row.iteration_ms(), 0) << row.name();
      EXPECT_GT(row.stages(), 0) << row.name();
      EXPECT_GT(row.devices_used(), 0) << row.name();
      ASSERT_GT(row.microbatches(), 0) << row.name();
      EXPECT_EQ(64 % row.microbatches(), 0) << row.name();
    } else {
      EXPECT_FALSE(row.reason().empty()) << row.name();
    }
  }
  EXPECT_GT(report.ideal_samples_per_second(), 0);
  EXPECT_EQ(report.batch_size(), 64);
  EXPECT_EQ(report.microbatches(), 0);  // not given: each planner chose
  // The hybrid planner is feasible here and no other planner beats it.
  ASSERT_TRUE(report.planners(0).feasible()) << report.planners(0).reason();
  for (const auto& row : report.planners()) {
    EXPECT_LE(row.samples_per_second(), report.planners(0).samples_per_second() * (1 + 1e-9)) << row.name();
  }
  // The snake_case names other tools read, printed even when zero.
  for (const char* key : {"\"planners\"", "\"name\"", "\"feasible\"", "\"samples_per_second\"", "\"iteration_ms\"",
                          "\"bubble_fraction\"", "\"plan_ms\"", "\"ideal_samples_per_second\""}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << key;
  }
}

TEST_F(CliTest, CompareTableShowsIdealAndBest) {
  const CapturedRun r = run({"compare", "--model", "mlp", "--cluster", clusterPath(), "--planners", "dp,dp-weighted"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Ideal"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Best: "), std::string::npos) << r.out;
}

TEST_F(CliTest, PlanOutThenSimulateRoundTrips) {
  const fs::path plan_path = dir_ / "plan.json";
  const v1::Plan plan = makePlanFile(plan_path);
  EXPECT_EQ(plan.model(), "mlp");
  EXPECT_EQ(plan.cluster(), "cloud-edge-end");
  EXPECT_EQ(plan.planner(), "dp-weighted");
  EXPECT_GT(plan.stages_size(), 0);

  const fs::path trace_path = dir_ / "trace.json";
  const CapturedRun r = run({"simulate", "--plan", plan_path.string(), "--cluster", clusterPath(), "--timeline",
                           trace_path.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::SimulationReport report;
  io::parseJson(r.out, report, "simulate --json");
  EXPECT_GT(report.samples_per_second(), 0);
  EXPECT_GT(report.iteration_ms(), 0);
  EXPECT_EQ(report.schedule(), "1f1b");
  EXPECT_EQ(report.devices_size(), 6);
  v1::ChromeTrace trace;
  io::readJsonFile(trace_path.string(), trace);
  EXPECT_GT(trace.traceevents_size(), 0);

  const CapturedRun human = run({"simulate", "--plan", plan_path.string(), "--cluster", "cloud-edge-end"});
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("samples/s"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("cloud-gpu"), std::string::npos) << human.out;
}

TEST_F(CliTest, PlanJsonIsAPlanReportWithExplanation) {
  const CapturedRun r =
      run({"plan", "--model", "resnet18", "--cluster", "cloud-edge-end", "--planner", "gpipe", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::PlanReport report;
  io::parseJson(r.out, report, "plan --json");
  EXPECT_EQ(report.plan().planner(), "gpipe");
  EXPECT_GT(report.plan().stages_size(), 1);
  EXPECT_GT(report.simulation().samples_per_second(), 0);
  EXPECT_EQ(report.simulation().timeline_size(), 0);
  EXPECT_FALSE(report.explanation().empty());
}

TEST_F(CliTest, PlanHumanOutputExplainsStagesMemoryAndThroughput) {
  const CapturedRun r = run({"plan", "--model", "mlp", "--cluster", "cloud-edge-end", "--planner", "gpipe"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* text : {"Stage 0: layer", "forward", "all-reduce", "limit MB", "samples/s", "bubble"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
  }
}

TEST_F(CliTest, PlanThatCannotFitExitsThreeWithTheReason) {
  v1::Cluster tiny;
  tiny.set_name("tiny");
  auto* d = tiny.add_devices();
  d->set_name("pico");
  d->set_tier("end");
  d->set_gflops(1);
  d->set_memory_mb(1);
  d->set_bandwidth_mbps(10);
  const fs::path cluster = writeJson("tiny.json", tiny);
  const CapturedRun r = run({"plan", "--model", "gpt-mini", "--cluster", cluster.string(), "--planner", "dp"});
  EXPECT_ONE_LINE_FAILURE(r, 3);
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(CliTest, MissingClusterFileIsOneLineFailure) {
  const CapturedRun r = run({"plan", "--model", "mlp", "--cluster", (dir_ / "absent.json").string()});
  EXPECT_ONE_LINE_FAILURE(r, 2);
  EXPECT_NE(r.err.find("absent.json"), std::string::npos);
}

TEST_F(CliTest, MalformedClusterJsonIsOneLineFailure) {
  const fs::path cluster = write("broken.json", "{\"name\": \"x\", \"devices\": [ {\"name\": \n");
  EXPECT_ONE_LINE_FAILURE(run({"compare", "--model", "mlp", "--cluster", cluster.string()}), 2);
}

TEST_F(CliTest, ClusterWithUnknownFieldIsOneLineFailure) {
  const fs::path cluster = write(
      "unknown-field.json",
      R"({"name": "x", "devices": [{"name": "a", "tier": "edge", "gflops": 10, "memory_mb": 100,
          "bandwidth_mbps": 100, "colour": "blue"}]})");
  EXPECT_ONE_LINE_FAILURE(run({"plan", "--model", "mlp", "--cluster", cluster.string(), "--planner", "dp"}), 2);
}

TEST_F(CliTest, MissingPlanFileIsOneLineFailure) {
  EXPECT_ONE_LINE_FAILURE(
      run({"simulate", "--plan", (dir_ / "absent-plan.json").string(), "--cluster", "cloud-edge-end"}), 2);
}

TEST_F(CliTest, PlanNamingAnUnknownDeviceIsOneLineFailure) {
  v1::Plan plan = makePlanFile(dir_ / "plan.json");
  ASSERT_GT(plan.stages_size(), 0);
  ASSERT_GT(plan.stages(0).devices_size(), 0);
  plan.mutable_stages(0)->mutable_devices(0)->set_device("ghost");
  const fs::path bad = writeJson("ghost.json", plan);
  const CapturedRun r = run({"simulate", "--plan", bad.string(), "--cluster", "cloud-edge-end"});
  EXPECT_ONE_LINE_FAILURE(r, 2);
  EXPECT_NE(r.err.find("ghost"), std::string::npos) << r.err;
}

TEST_F(CliTest, PlanWithALayerGapIsInvalidOnOneLine) {
  v1::Plan plan = makePlanFile(dir_ / "plan.json");
  ASSERT_GT(plan.stages_size(), 0);
  plan.mutable_stages(0)->set_layer_begin(1);
  const fs::path bad = writeJson("gap.json", plan);
  const CapturedRun r = run({"simulate", "--plan", bad.string(), "--cluster", "cloud-edge-end"});
  EXPECT_ONE_LINE_FAILURE(r, 2);
  EXPECT_TRUE(r.err.starts_with("stagecraft-cli: invalid plan: ")) << r.err;
  EXPECT_NE(r.err.find("in no stage"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;

  // --json also lists every problem on stdout.
  const CapturedRun json = run({"simulate", "--plan", bad.string(), "--cluster", "cloud-edge-end", "--json"});
  EXPECT_ONE_LINE_FAILURE(json, 2);
  EXPECT_NE(json.out.find("\"problems\""), std::string::npos) << json.out;
}

TEST_F(CliTest, UnknownFlagIsOneLineFailure) {
  EXPECT_ONE_LINE_FAILURE(run({"plan", "--model", "mlp", "--cluster", "cloud-edge-end", "--frobnicate"}), 2);
  EXPECT_ONE_LINE_FAILURE(run({"models", "--verbose"}), 2);
}

TEST_F(CliTest, MissingRequiredFlagIsOneLineFailure) {
  const CapturedRun r = run({"compare", "--model", "mlp"});
  EXPECT_ONE_LINE_FAILURE(r, 2);
  EXPECT_NE(r.err.find("--cluster"), std::string::npos) << r.err;
}

TEST_F(CliTest, UnknownModelIsOneLineFailure) {
  const CapturedRun r = run({"plan", "--model", "alexnet", "--cluster", "cloud-edge-end"});
  EXPECT_ONE_LINE_FAILURE(r, 2);
  EXPECT_NE(r.err.find("alexnet"), std::string::npos) << r.err;
}

TEST_F(CliTest, FilesThatAreNotJsonAreRefusedWithoutQuotingThem) {
  // Not a regular file: refused at once, not read until memory runs out.
  const CapturedRun zero = run({"plan", "--model", "mlp", "--cluster", "/dev/zero"});
  EXPECT_ONE_LINE_FAILURE(zero, 2);
  EXPECT_NE(zero.err.find("/dev/zero: not a regular file"), std::string::npos) << zero.err;
  // A file that is not JSON: the error says so and does not show what is in it.
  const std::string secret = (dir_ / "shadow").string();
  std::ofstream(secret) << "root:$6$secret-hash-line:19000:0:99999:7:::\nsecond line\n";
  const CapturedRun shadow = run({"plan", "--model", "mlp", "--cluster", secret});
  EXPECT_ONE_LINE_FAILURE(shadow, 2);
  EXPECT_NE(shadow.err.find("not a valid Cluster"), std::string::npos) << shadow.err;
  EXPECT_EQ(shadow.err.find("secret-hash"), std::string::npos) << shadow.err;
  EXPECT_EQ(shadow.err.find("root:"), std::string::npos) << shadow.err;
}

TEST_F(CliTest, UnknownPlannerIsOneLineFailure) {
  EXPECT_ONE_LINE_FAILURE(run({"plan", "--model", "mlp", "--cluster", "cloud-edge-end", "--planner", "magic"}), 2);
  EXPECT_ONE_LINE_FAILURE(
      run({"compare", "--model", "mlp", "--cluster", "cloud-edge-end", "--planners", "dp,magic"}), 2);
}

TEST_F(CliTest, UnknownClusterNameIsOneLineFailure) {
  EXPECT_ONE_LINE_FAILURE(run({"plan", "--model", "mlp", "--cluster", "moon-base"}), 2);
}

TEST_F(CliTest, BatchNotDivisibleIsOneLineFailure) {
  EXPECT_ONE_LINE_FAILURE(
      run({"plan", "--model", "mlp", "--cluster", "cloud-edge-end", "--batch", "10", "--microbatches", "4"}), 2);
  EXPECT_ONE_LINE_FAILURE(run({"plan", "--model", "mlp", "--cluster", "cloud-edge-end", "--batch", "lots"}), 2);
}

TEST_F(CliTest, UnknownCommandIsOneLineFailure) {
  EXPECT_ONE_LINE_FAILURE(run({"deploy"}), 2);
  EXPECT_ONE_LINE_FAILURE(run({}), 2);
}

TEST_F(CliTest, HelpOnEveryCommandExitsZero) {
  for (const char* command : {"models", "plan", "simulate", "compare"}) {
    const CapturedRun r = run({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("Usage: stagecraft-cli ") + command), std::string::npos) << r.out;
    EXPECT_TRUE(r.err.empty()) << r.err;
    const CapturedRun via_help = run({"help", command});
    EXPECT_EQ(via_help.exit_code, 0) << command;
    EXPECT_EQ(via_help.out, r.out);
  }
  // --help wins over missing required flags.
  EXPECT_EQ(run({"plan", "--model", "mlp", "--help"}).exit_code, 0);
}

TEST_F(CliTest, TopLevelHelpListsCommandsAndVersionPrints) {
  const CapturedRun help = run({"--help"});
  ASSERT_EQ(help.exit_code, 0);
  for (const char* command : {"models", "plan", "simulate", "compare"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command;
  }
  const CapturedRun version = run({"--version"});
  ASSERT_EQ(version.exit_code, 0);
  EXPECT_TRUE(version.out.starts_with("stagecraft-cli ")) << version.out;
}

}  // namespace
}  // namespace stagecraft
