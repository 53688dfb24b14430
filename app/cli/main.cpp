// stagecraft-cli: plans, simulates and compares hybrid pipeline-parallel training from
// the command line, and runs it on stagecraft-worker processes. Dispatches to one
// function per subcommand and maps failures to exit statuses in this one place.
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "control/worker_status.h"
#include "io/error.h"

namespace {

using stagecraft::cli::kExitInternal;
using stagecraft::cli::kExitOk;
using stagecraft::errorKindInfo;

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(std::span<const std::string>);
};

constexpr Command kCommands[] = {
    {"models", "list the built-in models", stagecraft::cli::runModels},
    {"plan", "plan a model on a cluster and explain the plan", stagecraft::cli::runPlan},
    {"simulate", "validate a plan file and simulate one training iteration", stagecraft::cli::runSimulate},
    {"compare", "run every planner on one model and cluster, side by side", stagecraft::cli::runCompare},
    {"cluster", "start, stop or inspect local workers for a cluster; stop its job (up, down, status, stop)", stagecraft::cli::runCluster},
    {"discover", "list the workers announcing themselves on the LAN (UDP beacons)", stagecraft::cli::runDiscover},
    {"profile", "have every worker of a cluster time each layer of a model", stagecraft::cli::runProfile},
    {"run", "profile, plan, deploy and train a model on a cluster's workers", stagecraft::cli::runRun},
};

std::string topLevelHelp() {
  std::string out =
      "Usage: stagecraft-cli <command> [options]\n"
      "\n"
      "Plans hybrid pipeline-parallel DNN training across heterogeneous devices.\n"
      "\n"
      "Commands:\n";
  for (const auto& c : kCommands) {
    out += "  " + std::string(c.name) + std::string(10 - c.name.size(), ' ') + std::string(c.summary) + "\n";
  }
  out +=
      "  help      show this help; `help <command>` shows a command's\n"
      "\n"
      "Options:\n"
      "  --help     show this help\n"
      "  --version  print the version\n"
      "\n"
      "Every command takes --help, and --json for machine-readable output.\n"
      "Exit status: 0 success, 1 the training failed (diverged, interrupted), 2 bad input, 3 no feasible\n"
      "plan, 4 the environment (a worker lost or not reachable, a port in use, a file not writable), 5 a\n"
      "worker failed inside or broke the protocol, 70 an internal error (a bug: please report it).\n";
  return out;
}

const Command* findCommand(std::string_view name) {
  for (const auto& c : kCommands) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string commandList() {
  std::string out;
  for (const auto& c : kCommands) out += (out.empty() ? "" : ", ") + std::string(c.name);
  return out;
}

int dispatch(const std::vector<std::string>& args) {
  if (args.empty()) throw stagecraft::Error("no command given (commands: " + commandList() + "; see --help)");
  const std::string& first = args.front();
  if (first == "--help" || first == "-h" || (first == "help" && args.size() == 1)) {
    std::cout << topLevelHelp();
    return kExitOk;
  }
  if (first == "--version") {
    std::cout << "stagecraft-cli " << STAGECRAFT_VERSION << "\n";
    return kExitOk;
  }
  if (first == "help") {
    if (args.size() > 2) throw stagecraft::Error("help: takes one command, got " + std::to_string(args.size() - 1));
    const Command* command = findCommand(args[1]);
    if (!command) {
      throw stagecraft::Error("help: unknown command '" + args[1] + "' (commands: " + commandList() + ")");
    }
    const std::string help_flag = "--help";
    return command->run(std::span<const std::string>(&help_flag, 1));
  }
  const Command* command = findCommand(first);
  if (!command) {
    throw stagecraft::Error("unknown command '" + first + "' (commands: " + commandList() + "; see --help)");
  }
  return command->run(std::span<const std::string>(args).subspan(1));
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return dispatch(args);
  } catch (const stagecraft::cli::HelpRequested& help) {
    std::cout << help.help();
    return kExitOk;
  } catch (const stagecraft::Error& e) {
    stagecraft::cli::printFailure(e.what());
    return errorKindInfo(e.kind()).exit_status;
  } catch (const stagecraft::control::WorkerError& e) {
    // Unreachable or silent: the environment; refused: the input; a broken answer: protocol.
    stagecraft::cli::printFailure(e.what());
    return errorKindInfo(e.kind()).exit_status;
  } catch (const std::logic_error& e) {
    stagecraft::cli::printFailure(std::string("internal error (a bug, please report it): ") + e.what());
    return kExitInternal;
  } catch (const std::exception& e) {
    stagecraft::cli::printFailure(std::string("internal error: ") + e.what());
    return kExitInternal;
  }
}
