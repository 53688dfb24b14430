#include <filesystem>
#include <iostream>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "control/local_cluster.h"
#include "io/error.h"
#include "live_cluster.h"

namespace stagecraft::cli {
namespace {

constexpr char kClusterHelp[] =
    "Usage: stagecraft-cli cluster <up|down|status|stop> --cluster C [options]\n"
    "\n"
    "Runs a cluster's devices as local stagecraft-worker processes on loopback, each slowed\n"
    "down to its device's relative speed and limited to its bandwidth and memory.\n"
    "\n"
    "Subcommands:\n"
    "  up      start one worker per device; they keep running after this command exits\n"
    "  down    stop the workers `up` started\n"
    "  status  ask every worker of the cluster what it is doing\n"
    "  stop    stop the job the cluster's workers are training (one whose coordinator is gone)\n"
    "\n"
    "`stagecraft-cli cluster <subcommand> --help` shows a subcommand's options.\n";

void printReport(const v1::ClusterStatusReport& report) {
  for (const auto& line : workerTable(report)) std::cout << line << "\n";
}

int clusterUp(std::span<const std::string> args) {
  ArgumentParser parser("cluster up",
                        "Starts one stagecraft-worker per device of a cluster on this machine (127.0.0.1, the port "
                        "of the device's address or a free one), emulating each device's relative speed, NIC "
                        "bandwidth and memory, and waits until every worker answers.");
  parser.required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end")
      .option("worker-binary", "PATH",
              "the stagecraft-worker to run (else $STAGECRAFT_WORKER, next to stagecraft-cli, or PATH)")
      .option("threads", "N", "LibTorch threads per worker", "1")
      .option("timeout", "SECONDS", "how long each worker may take to start", "120")
      .option("data-dir", "DIR", "the folder the workers may read data files (MNIST, CIFAR-10, image folders) from")
      .flag("json", "print a stagecraft.v1.ClusterStatusReport as JSON")
      .epilog("The workers outlive this command; stop them with `stagecraft-cli cluster down --cluster C`.");
  const ParsedArguments parsed = parser.parse(args);
  control::LocalClusterOptions options;
  options.threads = parsed.positiveInt("threads");
  options.startup_timeout = secondsFlag("timeout", parsed.value("timeout"));
  if (parsed.has("data-dir")) options.data_dir = std::filesystem::absolute(parsed.value("data-dir")).string();
  const std::string path = resolveClusterPath(parsed.value("cluster"));
  const Cluster cluster = Cluster::load(path);
  options.worker_binary = control::findWorkerBinary(parsed.value("worker-binary"), executablePath());

  control::LocalCluster::start(cluster, path, options);
  const LiveCluster live = openCluster(path);
  control::CoordinatorOptions coordinator_options;
  coordinator_options.token = live.token;
  control::Coordinator coordinator(live.cluster, coordinator_options);
  const v1::ClusterStatusReport report = statusReport(live, coordinator.probe());
  if (parsed.flag("json")) {
    printJson(report);
    return kExitOk;
  }
  std::cout << "Started " << report.workers_size() << " workers for cluster " << cluster.name() << " ("
            << options.worker_binary << ")\n\n";
  printReport(report);
  std::cout << "\nState: " << report.state_path() << "\n";
  if (live.local) {
    std::cout << "Token: " << live.local->state().token_file()
              << " (every call to these workers must carry it; the CLI finds it by itself)\n";
  }
  std::cout << "Stop them with `stagecraft-cli cluster down --cluster " << parsed.value("cluster") << "`\n";
  return kExitOk;
}

int clusterDown(std::span<const std::string> args) {
  ArgumentParser parser("cluster down",
                        "Stops the workers `cluster up` started for a cluster: SIGTERM, then SIGKILL after a grace "
                        "period.");
  parser.required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end")
      .option("grace", "SECONDS", "how long workers may take to exit before they are killed", "5");
  const ParsedArguments parsed = parser.parse(args);
  const auto grace = secondsFlag("grace", parsed.value("grace"));
  const Cluster cluster = loadCluster(parsed.value("cluster"));
  auto local = control::LocalCluster::find(cluster.name());
  if (!local) {
    std::cout << "No local workers of cluster " << cluster.name() << " are running\n";
    return kExitOk;
  }
  int running = 0;
  for (int i = 0; i < local->state().workers_size(); ++i) running += local->alive(i) ? 1 : 0;
  local->stop(grace);
  std::cout << "Stopped " << running << " workers of cluster " << cluster.name() << "\n";
  return kExitOk;
}

int clusterStatus(std::span<const std::string> args) {
  ArgumentParser parser("cluster status",
                        "Asks every worker of a cluster (its local workers when `cluster up` started them, else the "
                        "addresses in the cluster file) what it is doing.");
  parser.required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end")
      .flag("json", "print a stagecraft.v1.ClusterStatusReport as JSON")
      .epilog("Exit status 4 when a worker does not answer.");
  addTokenOption(parser);
  const ParsedArguments parsed = parser.parse(args);
  const LiveCluster live = openCluster(parsed.value("cluster"), parsed);
  control::CoordinatorOptions options;
  options.token = live.token;
  options.call_timeout = std::chrono::milliseconds(3000);
  control::Coordinator coordinator(live.cluster, options);
  const v1::ClusterStatusReport report = statusReport(live, coordinator.probe());
  int unreachable = 0;
  std::string first;
  for (const auto& w : report.workers()) {
    if (!w.reachable()) {
      if (unreachable++ == 0) first = w.error();
    }
  }
  if (parsed.flag("json")) {
    printJson(report);
  } else {
    std::cout << "Cluster " << live.cluster.name()
              << (live.local ? " (local workers, state " + live.local->statePath() + ")" : "") << "\n\n";
    printReport(report);
  }
  if (unreachable > 0) {
    std::string reason = firstOfMany(first, unreachable);
    // `cluster up` helps with workers that are not running, not with refusals.
    if (!live.local && reason.find("is not reachable") != std::string::npos) {
      reason += "; " + clusterUpHint(parsed.value("cluster"));
    }
    printFailure(reason);
    return kExitEnvironment;
  }
  return kExitOk;
}

int clusterStop(std::span<const std::string> args) {
  ArgumentParser parser("cluster stop",
                        "Stops the job a cluster's workers are training, e.g. after the `run` that deployed it was "
                        "killed: each worker stops at the end of its step and keeps the job deployed, ready for "
                        "a new run. Works on any cluster's workers, local or not.");
  parser.required("cluster", "C", "a cluster .json, or a shipped example such as cloud-edge-end")
      .option("job", "J", "only this job (default: whatever each worker trains)")
      .epilog("Exit status 4 when a worker does not answer.");
  addTokenOption(parser);
  const ParsedArguments parsed = parser.parse(args);
  const LiveCluster live = openCluster(parsed.value("cluster"), parsed);
  control::CoordinatorOptions options;
  options.token = live.token;
  options.call_timeout = std::chrono::milliseconds(10000);
  control::Coordinator coordinator(live.cluster, options);
  int stopped = 0, failed = 0;
  std::string first_error;
  for (const auto& o : coordinator.stopJobs(parsed.value("job"))) {
    if (!o.error.empty()) {
      if (failed++ == 0) first_error = o.error;
      continue;
    }
    if (o.stopped) {
      ++stopped;
      std::cout << "Stopped job " << o.job << " on " << o.device << " at step " << o.step << "\n";
    }
  }
  if (stopped == 0) std::cout << "No worker of cluster " << live.cluster.name() << " was training\n";
  if (failed > 0) {
    printFailure(firstOfMany(first_error, failed));
    return kExitEnvironment;
  }
  return kExitOk;
}

}  // namespace

int runCluster(std::span<const std::string> args) {
  if (args.empty()) throw Error("cluster: needs a subcommand: up, down, status or stop (see --help)");
  if (args[0] == "--help" || args[0] == "-h") {
    std::cout << kClusterHelp;
    return kExitOk;
  }
  const std::string& sub = args[0];
  const auto rest = args.subspan(1);
  if (sub == "up") return clusterUp(rest);
  if (sub == "down") return clusterDown(rest);
  if (sub == "status") return clusterStatus(rest);
  if (sub == "stop") return clusterStop(rest);
  throw Error("cluster: unknown subcommand '" + sub + "' (up, down, status or stop; see --help)");
}

}  // namespace stagecraft::cli
