#include "command_support.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <tuple>

#include "arguments.h"
#include "control/model_import.h"
#include "io/error.h"
#include "io/json_io.h"
#include "model/zoo.h"

namespace stagecraft::cli {

void printFailure(std::string_view reason) {
  std::string line(reason);
  // A reason from a parser may carry newlines; the contract is one line.
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::replace(line.begin(), line.end(), '\r', ' ');
  std::cout.flush();
  std::cerr << "stagecraft-cli: " << line << std::endl;
}

std::string firstOfMany(const std::string& first, size_t count) {
  return count > 1 ? first + " (+" + std::to_string(count - 1) + " more)" : first;
}

void printJson(const google::protobuf::Message& message) {
  std::cout << io::toJson(message);
  std::cout << "\n";
  std::cout.flush();
}

void addRequestOptions(ArgumentParser& parser) {
  parser.option("batch", "B", "global batch size per iteration", "64")
      .option("microbatches", "K", "micro-batches per iteration (must divide the batch), or auto to let the planner choose", "auto")
      .option("schedule", "1f1b|gpipe", "pipeline schedule", "1f1b");
}

PlanRequest requestFromArguments(const ParsedArguments& args) {
  PlanRequest request;
  request.batch_size = args.positiveInt("batch");
  request.microbatches = args.value("microbatches") == "auto" ? 0 : args.positiveInt("microbatches");
  if (request.microbatches > 0 && request.batch_size % request.microbatches != 0) {
    throw Error("--batch " + std::to_string(request.batch_size) + " is not divisible into --microbatches " +
                std::to_string(request.microbatches));
  }
  request.schedule = parseSchedule(args.value("schedule"));
  if (request.schedule == Schedule::Invalid) {
    throw Error("--schedule must be 1f1b or gpipe, got '" + args.value("schedule") + "'");
  }
  return request;
}

void addModelOption(ArgumentParser& parser, bool required, const std::string& note) {
  const std::string help = "a built-in model (see `models`), a model .json, or a TorchScript nn.Sequential (.pt)" + note;
  if (required) {
    parser.required("model", "M", help);
  } else {
    parser.option("model", "M", help);
  }
  parser.option("input-shape", "C,H,W|D|T", "a TorchScript model's sample shape: image C,H,W, vector D, or T tokens");
}

ModelSpec modelFromArguments(const ParsedArguments& args) {
  return control::loadModelOrScript(args.value("model"), args.has("input-shape") ? args.value("input-shape") : "");
}

void addCostOptions(ArgumentParser& parser) {
  parser.option("optimizer", "sgd|adam", "optimizer whose state counts against memory", "sgd")
      .option("profile", "FILE", "measured per-layer times (stagecraft.v1.ProfileSet JSON) instead of FLOPs");
}

Optimizer optimizerFromArguments(const ParsedArguments& args) {
  const Optimizer optimizer = parseOptimizer(args.value("optimizer"));
  if (optimizer == Optimizer::Invalid) {
    throw Error("--optimizer must be sgd or adam, got '" + args.value("optimizer") + "'");
  }
  return optimizer;
}

void applyProfile(const ParsedArguments& args, CostModel& cost) {
  if (!args.has("profile")) return;
  v1::ProfileSet profiles;
  io::readJsonFile(args.value("profile"), profiles);
  try {
    cost.setProfiles(profiles);
  } catch (const Error& e) {
    throw Error(args.value("profile") + ": " + e.what());
  }
}

PlanningInputs::PlanningInputs(const ParsedArguments& args)
    : optimizer(optimizerFromArguments(args)),
      model(modelFromArguments(args)),
      cluster(loadCluster(args.value("cluster"))),
      cost(model, cluster, optimizer) {
  applyProfile(args, cost);
}

std::vector<std::string> parsePlannerList(const std::string& names) {
  std::vector<std::string> out;
  std::stringstream in(names);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    makePlanner(name);  // throws Error listing the known planners
    out.push_back(name);
  }
  if (out.empty()) throw Error("--planners names no planner");
  return out;
}

std::string fixed(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string counted(std::int64_t n, const std::string& noun, const std::string& plural) {
  return std::to_string(n) + " " + (n == 1 ? noun : plural.empty() ? noun + "s" : plural);
}

std::string percent(double fraction) { return fixed(100.0 * fraction, 1) + "%"; }

std::string describeLayers(const ModelSpec& model, int begin, int end) {
  if (end - begin == 1) return "layer " + std::to_string(begin) + " (" + model.layer(begin).name() + ")";
  return "layers " + std::to_string(begin) + "-" + std::to_string(end - 1) + " (" + model.layer(begin).name() +
         " .. " + model.layer(end - 1).name() + ")";
}

int devicesUsed(const Plan& plan) {
  int used = 0;
  for (const auto& st : plan.stages) {
    used += static_cast<int>(std::count_if(st.members.begin(), st.members.end(),
                                           [](const DeviceShare& m) { return m.samples > 0; }));
  }
  return used;
}

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::addRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::vector<std::string> TextTable::lines(std::string_view indent) const {
  std::vector<size_t> width(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    width[c] = columns_[c].title.size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].size());
  }
  auto render = [&](const std::vector<std::string>& cells) {
    std::string line(indent);
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      if (c > 0) line += "  ";
      line += columns_[c].align == Align::Right ? pad + cells[c] : cells[c] + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    return line;
  };
  std::vector<std::string> out;
  std::vector<std::string> header;
  for (const auto& col : columns_) header.push_back(col.title);
  out.push_back(render(header));
  for (const auto& row : rows_) out.push_back(render(row));
  return out;
}

std::string describeMembers(const Stage& stage, const Cluster& cluster, int micro_batch) {
  std::string out;
  for (const auto& m : stage.members) {
    out += (out.empty() ? "" : ", ") + cluster.device(m.device).name + " " + std::to_string(m.samples) + "/" +
           std::to_string(micro_batch);
  }
  return out;
}

std::vector<std::string> profileCoverageNotes(const Plan& plan, const CostModel& cost) {
  // One note per share, smallest size and kind of profile, naming every device it holds for.
  using Key = std::tuple<int, int, bool>;
  std::vector<std::pair<Key, std::vector<std::string>>> groups;
  for (const ShareBelowProfile& s : sharesBelowProfiles(plan, cost)) {
    const Key key{s.samples, s.smallest, s.only};
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == key; });
    if (it == groups.end()) it = groups.insert(groups.end(), {key, {}});
    it->second.push_back(cost.cluster().device(s.device).name);
  }
  std::vector<std::string> notes;
  for (const auto& [key, names] : groups) {
    const auto& [share, least, only] = key;
    const std::string samples = std::to_string(share), smallest = std::to_string(least);
    const bool many = names.size() > 1;
    std::string who;
    for (size_t i = 0; i < names.size(); ++i) who += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    notes.push_back("note: the profile" + std::string(many ? "s of " : " of ") + who + " timed micro-batches of " +
                    smallest + " samples and more; " + (many ? "their " : "its ") + samples +
                    " of each micro-batch here " +
                    (only ? "are priced as " + smallest + " (no faster), so the prediction is a lower bound"
                          : "are extrapolated from the two smallest sizes (no faster than " + smallest +
                                ", nor cheaper per sample), not measured") +
                    ". Profile with --micro-batches " + samples + "," + smallest + " to predict it.");
  }
  return notes;
}

}  // namespace stagecraft::cli
