#include <iostream>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "control/coordinator.h"
#include "io/json_io.h"
#include "live_cluster.h"
#include "model/zoo.h"

namespace stagecraft::cli {

int runProfile(std::span<const std::string> args) {
  ArgumentParser parser("profile",
                        "Has every worker of a cluster time each layer of a model, forward and backward, at the "
                        "given micro-batch sizes. The result is what `plan --profile` and `compare --profile` read.");
  parser.required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end")
      .option("micro-batches", "N,N,...", "micro-batch sizes to time", "1,4,16")
      .option("repeats", "N", "timed repetitions per size", "3")
      .option("timeout", "SECONDS", "how long one worker may take", "600")
      .option("out", "FILE", "write the profiles (stagecraft.v1.ProfileSet JSON)")
      .flag("json", "print the stagecraft.v1.ProfileSet as JSON")
      .epilog("The workers must be running: `stagecraft-cli cluster up --cluster C` starts local ones.");
  addModelOption(parser, true);
  addTokenOption(parser);
  const ParsedArguments parsed = parser.parse(args);
  const std::vector<int> sizes = parsePositiveList("micro-batches", parsed.value("micro-batches"));
  const int repeats = parsed.positiveInt("repeats");
  control::CoordinatorOptions options;
  options.profile_timeout = secondsFlag("timeout", parsed.value("timeout"));
  const ModelSpec model = modelFromArguments(parsed);
  const LiveCluster live = openCluster(parsed.value("cluster"), parsed);
  options.token = live.token;

  control::Coordinator coordinator(live.cluster, options);
  describeAll(coordinator, clusterUpHint(parsed.value("cluster")));
  const v1::ProfileSet profiles =
      coordinator.profile(model, sizes, repeats, [](const std::string& device, int done, int total) {
        std::cerr << "profiled " << device << " (" << done << "/" << total << ")\n";
      });
  if (parsed.has("out")) io::writeJsonFile(parsed.value("out"), profiles);
  if (parsed.flag("json")) {
    printJson(profiles);
    return kExitOk;
  }

  std::cout << "Profile of " << model.name() << " (" << model.layerCount() << " layers) on " << live.cluster.name()
            << "\n\n";
  TextTable table(
      {{"device", TextTable::Align::Left}, {"micro-batch"}, {"forward ms"}, {"backward ms"}, {"samples/s"}});
  for (const auto& device : profiles.devices()) {
    for (const auto& batch : device.batches()) {
      double forward = 0, backward = 0;
      for (const auto& layer : batch.layers()) {
        forward += layer.forward_ms();
        backward += layer.backward_ms();
      }
      const double total = forward + backward;
      table.addRow({device.device(), std::to_string(batch.micro_batch()), fixed(forward, 3), fixed(backward, 3),
                    total > 0 ? fixed(batch.micro_batch() * 1000.0 / total, 1) : "-"});
    }
  }
  for (const auto& line : table.lines()) std::cout << line << "\n";
  if (parsed.has("out")) {
    std::cout << "\nWrote the profiles to " << parsed.value("out") << " (use them with `plan --profile "
              << parsed.value("out") << "`)\n";
  }
  return kExitOk;
}

}  // namespace stagecraft::cli
