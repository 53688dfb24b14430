#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "cluster/cluster_catalog.h"
#include "cost/cost_model.h"
#include "io/error.h"
#include "model/model_spec.h"
#include "planner/planner.h"

namespace google::protobuf {
class Message;
}

namespace stagecraft::cli {

class ArgumentParser;
class ParsedArguments;

// Exit statuses shared by every command: the outcomes, then one per error kind (the
// table in core/io/error.h; README "Exit statuses").
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;      ///< the work itself failed: training diverged or was interrupted
constexpr int kExitInfeasible = 3;  ///< the input is fine but no plan fits
/// A flag, file or plan the user gave is wrong.
constexpr int kExitBadInput = errorKindInfo(ErrorKind::InvalidInput).exit_status;
/// The machine or the network: a worker that does not answer, a port in use.
constexpr int kExitEnvironment = errorKindInfo(ErrorKind::Environment).exit_status;
/// A worker broke the protocol.
constexpr int kExitProtocol = errorKindInfo(ErrorKind::Protocol).exit_status;
/// A bug in Stagecraft.
constexpr int kExitInternal = errorKindInfo(ErrorKind::Internal).exit_status;

/// Prints `stagecraft-cli: <reason>` to stderr as exactly one line.
void printFailure(std::string_view reason);

/// `first`, then " (+N more)" when `count` problems were found: one line for many.
std::string firstOfMany(const std::string& first, size_t count);

/// Prints message as JSON (snake_case names, defaults included) to stdout.
void printJson(const google::protobuf::Message& message);

/// Declares --batch, --microbatches and --schedule on `parser`.
void addRequestOptions(ArgumentParser& parser);
/// Reads the flags addRequestOptions declared; throws Error for a value that is not
/// allowed (non-positive, batch not divisible by micro-batches, unknown schedule).
PlanRequest requestFromArguments(const ParsedArguments& args);

/// Declares --model (required or not; `note` ends its help) and --input-shape on `parser`.
void addModelOption(ArgumentParser& parser, bool required, const std::string& note = {});
/// The model --model and --input-shape name: a zoo model, a model JSON, or a TorchScript
/// file imported through the worker's shape probe (control/model_import.h).
ModelSpec modelFromArguments(const ParsedArguments& args);

/// Declares --optimizer and --profile on `parser`.
void addCostOptions(ArgumentParser& parser);
/// The --optimizer flag; throws Error unless it is sgd or adam.
Optimizer optimizerFromArguments(const ParsedArguments& args);
/// Loads the --profile file, when given, into `cost`.
void applyProfile(const ParsedArguments& args, CostModel& cost);

/// What planning commands read: the model and cluster (--model, --cluster), and a cost
/// model over them with --optimizer and --profile applied. `cost` refers to `model` and
/// `cluster`, so this stays where it was made.
struct PlanningInputs {
  explicit PlanningInputs(const ParsedArguments& args);
  PlanningInputs(const PlanningInputs&) = delete;
  PlanningInputs& operator=(const PlanningInputs&) = delete;

  Optimizer optimizer;
  ModelSpec model;
  Cluster cluster;
  CostModel cost;
};

/// Throws Error unless `names` (comma separated) are all known planners.
std::vector<std::string> parsePlannerList(const std::string& names);

/// `value` with `digits` decimals.
std::string fixed(double value, int digits);
/// "1 stage", "3 stages": `n` and the noun, `plural` unless n is 1 (`noun` + "s" when empty).
std::string counted(std::int64_t n, const std::string& noun, const std::string& plural = {});
/// `fraction` as a percentage with one decimal, e.g. "12.5%".
std::string percent(double fraction);
/// "layers 3-7 (conv3 .. fc)" or "layer 3 (conv3)".
std::string describeLayers(const ModelSpec& model, int begin, int end);

/// Devices that compute at least one sample of each micro-batch.
int devicesUsed(const Plan& plan);
/// "edge-1 3/4, edge-2 1/4": a stage's members with their share of the micro-batch.
std::string describeMembers(const Stage& stage, const Cluster& cluster, int micro_batch);

/// A note per member of `plan` whose share of a micro-batch is smaller than any size its
/// device's profile timed (sharesBelowProfiles): that time is a bound, not a prediction.
std::vector<std::string> profileCoverageNotes(const Plan& plan, const CostModel& cost);

/// A plain-text table: a header row and aligned columns, numbers right-aligned.
class TextTable {
 public:
  enum class Align { Left, Right };
  struct Column {
    std::string title;
    Align align = Align::Right;
  };
  explicit TextTable(std::vector<Column> columns);
  void addRow(std::vector<std::string> cells);
  /// The header and every row, each prefixed by `indent`, without trailing spaces.
  std::vector<std::string> lines(std::string_view indent = "") const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace stagecraft::cli
