#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "stagecraft/v1/cluster.pb.h"

namespace stagecraft::control {

struct LocalClusterOptions {
  std::string worker_binary;                           ///< see findWorkerBinary()
  std::string state_directory;                         ///< empty: defaultStateDirectory()
  std::chrono::milliseconds startup_timeout{120'000};  ///< until every worker answers Describe
  std::chrono::milliseconds stop_grace{5'000};         ///< SIGTERM to SIGKILL
  int threads = 1;                                     ///< LibTorch threads per worker
  std::string data_dir;                                ///< the workers' --data-dir; empty: no data files
  /// The workers end when this process does, however it ends (--parent-pid): for a run or
  /// a console that starts workers for itself. Off for `cluster up`, whose workers outlive it.
  bool end_with_this_process = false;
};

/// $XDG_RUNTIME_DIR/stagecraft when XDG_RUNTIME_DIR is set, else /tmp/stagecraft-<uid>.
std::string defaultStateDirectory();
/// <state directory>/<cluster name>.json
std::string stateFilePath(const std::string& cluster_name, const std::string& state_directory = {});

/// The stagecraft-worker to start: `explicit_path` when given, else $STAGECRAFT_WORKER,
/// else next to `cli_path` (../../worker/src/stagecraft-worker from build/app/cli, or
/// ../worker/src/stagecraft-worker from build/bench, in a build tree; the same
/// folder once installed), else the PATH. Throws Error saying where it looked.
std::string findWorkerBinary(const std::string& explicit_path, const std::string& cli_path);

/// Whether process `pid` runs: it exists and is neither a zombie nor dead (/proc/<pid>/stat),
/// and, when `start_ticks` is not 0, it started then (not a later process given the same
/// pid). A finished child of this process is reaped first.
bool processRunning(long pid, std::uint64_t start_ticks = 0);

/// The command-line arguments of the worker for device `device`, listening on `listen`:
/// its name and tier, `threads`, and emulation knobs that keep the cluster's relative
/// speeds (--slowdown = fastest gflops / this device's gflops), its NIC bandwidth and its
/// memory; its discovery beacon goes to the loopback broadcast 127.255.255.255 (default
/// port), so every listener on this machine hears it and the LAN does not. It asks for the
/// token in `token_file`, or nobody's (--insecure) when that is empty.
std::vector<std::string> workerArguments(const Cluster& cluster, int device, const std::string& listen, int threads,
                                         const std::string& token_file);

/// One stagecraft-worker process per device of a cluster, on loopback, emulating each
/// device's speed, bandwidth and memory. The workers run in their own session, so they
/// outlive the process that started them; a state file records them so a later process
/// can find (find()) and stop them.
class LocalCluster {
 public:
  /// Starts the workers and waits until each answers Describe. A device listens on the
  /// port of its address, or on a free port when it has none or shares one with an
  /// earlier device. Throws Error when the cluster is already up, a port is taken or the
  /// binary is missing, and WorkerError naming the device when a worker exits or stays
  /// silent; whatever was started is stopped again.
  static LocalCluster start(const Cluster& cluster, const std::string& cluster_path,
                            const LocalClusterOptions& options);
  /// The workers `start` recorded for `cluster_name`, or nullopt without a state file.
  static std::optional<LocalCluster> find(const std::string& cluster_name, const std::string& state_directory = {});

  const v1::LocalClusterState& state() const { return state_; }
  /// The token its workers ask for (kept in a 0600 file next to the state file; start()
  /// makes a fresh one each time). Throws Error when the file is gone or not private.
  std::string token() const;
  const std::string& statePath() const { return state_path_; }
  /// `cluster` with each device's address replaced by its local worker's.
  Cluster apply(const Cluster& cluster) const;
  /// Whether worker `i`'s process still runs (and is the one that was started).
  bool alive(int i) const;
  /// Devices whose worker process is gone.
  std::vector<std::string> deadWorkers() const;
  bool anyAlive() const;

  /// SIGTERM to every worker still running, SIGKILL to those still there after `grace`;
  /// then removes the state file.
  void stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  LocalCluster() = default;
  v1::LocalClusterState state_;
  std::string state_path_;
};

}  // namespace stagecraft::control
