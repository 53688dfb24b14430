#include <iostream>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "model/zoo.h"
#include "stagecraft/v1/model.pb.h"

namespace stagecraft::cli {

int runModels(std::span<const std::string> args) {
  ArgumentParser parser("models", "Lists the built-in models: their layers, parameters and forward cost.");
  parser.flag("json", "print a stagecraft.v1.ModelList as JSON");
  const ParsedArguments parsed = parser.parse(args);

  v1::ModelList list;
  for (const auto& name : zooModelNames()) {
    const ModelSpec model = ModelSpec::fromProto(zooModel(name));
    auto* summary = list.add_models();
    summary->set_name(model.name());
    summary->set_description(model.proto().description());
    summary->set_layers(model.layerCount());
    summary->set_parameters(model.parameters(0, model.layerCount()));
    summary->set_forward_gflops_per_sample(model.forwardFlops(0, model.layerCount()) / 1e9);
  }
  if (parsed.flag("json")) {
    printJson(list);
    return kExitOk;
  }
  TextTable table({{"model", TextTable::Align::Left},
                   {"layers"},
                   {"params (M)"},
                   {"fwd GFLOP/sample"},
                   {"description", TextTable::Align::Left}});
  for (const auto& m : list.models()) {
    table.addRow({m.name(), std::to_string(m.layers()), fixed(m.parameters() / 1e6, 2),
                  fixed(m.forward_gflops_per_sample(), 3), m.description()});
  }
  for (const auto& line : table.lines()) std::cout << line << "\n";
  return kExitOk;
}

}  // namespace stagecraft::cli
