#pragma once

#include <span>
#include <string>

namespace stagecraft::cli {

// One function per subcommand; each gets the arguments after its name, writes its
// results to stdout and returns the exit status. Bad input throws stagecraft::Error.

/// `models`: the built-in model zoo.
int runModels(std::span<const std::string> args);
/// `plan`: plans a model on a cluster and explains the plan.
int runPlan(std::span<const std::string> args);
/// `simulate`: validates a plan file and simulates one iteration of it.
int runSimulate(std::span<const std::string> args);
/// `compare`: every planner on the same model and cluster, side by side.
int runCompare(std::span<const std::string> args);
/// `cluster up|down|status`: local workers for a cluster's devices.
int runCluster(std::span<const std::string> args);
/// `profile`: every worker times every layer of a model.
int runProfile(std::span<const std::string> args);
/// `discover`: the workers whose UDP beacons arrive within a few seconds.
int runDiscover(std::span<const std::string> args);
/// `run`: profile, plan, deploy and train on a cluster's workers.
int runRun(std::span<const std::string> args);

}  // namespace stagecraft::cli
