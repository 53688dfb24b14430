#include "control/local_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "control/cluster_token.h"
#include "control/net.h"
#include "control/worker_client.h"
#include "control/worker_status.h"
#include "io/error.h"
#include "io/json_io.h"

extern char** environ;

namespace stagecraft::control {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kWorkerName[] = "stagecraft-worker";

bool isExecutableFile(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

/// A cluster's name as a file name.
std::string fileStem(const std::string& name) {
  std::string out = name.empty() ? "cluster" : name;
  for (char& c : out) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return out;
}

std::string number(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

/// What /proc says about a process: its state letter and start time in clock ticks.
struct ProcStat {
  char state = '?';
  std::uint64_t start_ticks = 0;
};

std::optional<ProcStat> readProcStat(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!in || !std::getline(in, text)) return std::nullopt;
  // The command name is in parentheses and may hold spaces: fields resume after the last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  ProcStat stat;
  fields >> stat.state;
  std::string skip;
  for (int field = 4; field < 22 && fields >> skip; ++field) {
  }
  fields >> stat.start_ticks;
  if (!fields) return std::nullopt;
  return stat;
}

/// Reaps `pid` if it is a finished child of this process; harmless otherwise.
void reap(long pid) {
  int status = 0;
  ::waitpid(static_cast<pid_t>(pid), &status, WNOHANG);
}

bool processAlive(const v1::LocalWorker& worker) { return processRunning(worker.pid(), worker.start_ticks()); }

/// The last non-empty line of a log file, for a message about a worker that died.
std::string lastLogLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return oneLine(last);
}

/// Starts `binary args...` in a new session with stdin from /dev/null and stdout and
/// stderr to `log_path`; returns its pid. Throws Error when it cannot be started.
pid_t spawnDetached(const std::string& binary, const std::vector<std::string>& args, const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  // Its own session: a Ctrl-C meant for the CLI does not reach the workers, and they
  // outlive the CLI that started them.
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> storage{binary};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, binary.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) throw environmentError("cannot start " + binary + ": " + std::strerror(rc));
  return pid;
}

void writeStateFile(const std::string& path, const v1::LocalClusterState& state) {
  const std::string temporary = path + ".tmp";
  io::writeJsonFile(temporary, state);
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) throw environmentError(path + ": cannot write (" + ec.message() + ")");
}

std::int64_t unixMs() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

bool processRunning(long pid, std::uint64_t start_ticks) {
  if (pid <= 0) return false;
  reap(pid);
  const auto stat = readProcStat(pid);
  if (!stat || stat->state == 'Z' || stat->state == 'X') return false;
  return start_ticks == 0 || stat->start_ticks == start_ticks;
}

std::string defaultStateDirectory() {
  if (const char* runtime = std::getenv("XDG_RUNTIME_DIR"); runtime && *runtime) {
    std::error_code ec;
    if (fs::is_directory(runtime, ec)) return (fs::path(runtime) / "stagecraft").string();
  }
  return "/tmp/stagecraft-" + std::to_string(::getuid());
}

std::string stateFilePath(const std::string& cluster_name, const std::string& state_directory) {
  const fs::path dir = state_directory.empty() ? fs::path(defaultStateDirectory()) : fs::path(state_directory);
  return (dir / (fileStem(cluster_name) + ".json")).string();
}

std::string findWorkerBinary(const std::string& explicit_path, const std::string& cli_path) {
  if (!explicit_path.empty()) {
    if (!isExecutableFile(explicit_path)) throw Error("--worker-binary " + explicit_path + ": not an executable file");
    return explicit_path;
  }
  if (const char* env = std::getenv("STAGECRAFT_WORKER"); env && *env) {
    if (!isExecutableFile(env)) throw Error(std::string("STAGECRAFT_WORKER=") + env + ": not an executable file");
    return env;
  }
  std::vector<fs::path> looked;
  if (!cli_path.empty()) {
    const fs::path dir = fs::path(cli_path).parent_path();
    // build/app/cli/stagecraft-cli, build/bench/bench_*, or installed side by side.
    for (const fs::path& candidate : {dir / ".." / ".." / "worker" / "src" / kWorkerName,
                                      dir / ".." / "worker" / "src" / kWorkerName, dir / kWorkerName}) {
      const fs::path normal = candidate.lexically_normal();
      if (isExecutableFile(normal)) return normal.string();
      looked.push_back(normal);
    }
  }
  if (const char* path = std::getenv("PATH"); path && *path) {
    std::istringstream dirs(path);
    for (std::string dir; std::getline(dirs, dir, ':');) {
      if (dir.empty()) continue;
      const fs::path candidate = fs::path(dir) / kWorkerName;
      if (isExecutableFile(candidate)) return candidate.string();
    }
  }
  std::string where;
  for (const auto& p : looked) where += p.string() + ", ";
  throw environmentError(std::string("cannot find ") + kWorkerName + " (looked at " + where +
              "and in PATH); build it with -DSTAGECRAFT_BUILD_WORKER=ON, or pass --worker-binary or set "
              "STAGECRAFT_WORKER");
}

std::vector<std::string> workerArguments(const Cluster& cluster, int device, const std::string& listen, int threads,
                                         const std::string& token_file) {
  double fastest = 0;
  for (const auto& d : cluster.devices()) fastest = std::max(fastest, d.gflops);
  const Device& d = cluster.device(device);
  std::vector<std::string> args = token_file.empty() ? std::vector<std::string>{"--insecure"}
                                                     : std::vector<std::string>{"--token-file", token_file};
  args.insert(args.end(), {"--listen",         listen,
                           "--name",           d.name,
                           "--tier",           std::string(tierName(d.tier)),
                           "--threads",        std::to_string(threads),
                           "--slowdown",       number(fastest / d.gflops),
                           "--bandwidth-mbps", number(d.bandwidth_mbps),
                           "--memory-mb",      number(d.memory_mb),
                           // Discoverable on this machine (`stagecraft-cli discover`), not on the
                           // LAN: the loopback broadcast reaches every listener on the port, where
                           // a unicast to 127.0.0.1 would reach only one of those sharing it
                           // (SO_REUSEPORT balances).
                           "--beacon-to",      "127.255.255.255"});
  return args;
}

LocalCluster LocalCluster::start(const Cluster& cluster, const std::string& cluster_path,
                                 const LocalClusterOptions& options) {
  if (!isExecutableFile(options.worker_binary)) {
    throw Error("worker binary " + options.worker_binary + ": not an executable file");
  }
  const std::string dir = options.state_directory.empty() ? defaultStateDirectory() : options.state_directory;
  if (auto running = find(cluster.name(), dir); running && running->anyAlive()) {
    throw environmentError("cluster '" + cluster.name() + "' is already up (" + running->statePath() +
                "); run `stagecraft-cli cluster down --cluster " + cluster.name() + "` first");
  }

  // Ports: the one in the device's address where it is usable, else a free one.
  std::vector<int> ports(cluster.size(), 0);
  std::set<int> taken;
  int missing = 0;
  for (int d = 0; d < cluster.size(); ++d) {
    const auto hp = splitHostPort(cluster.device(d).address);
    if (!hp || taken.count(hp->port)) {
      ++missing;
      continue;
    }
    if (!loopbackPortIsFree(hp->port)) {
      throw environmentError("port " + std::to_string(hp->port) + " of device '" + cluster.device(d).name +
                  "' is already in use on 127.0.0.1");
    }
    ports[d] = hp->port;
    taken.insert(hp->port);
  }
  if (missing > 0) {
    std::vector<int> free = freeLoopbackPorts(missing + static_cast<int>(taken.size()));
    std::erase_if(free, [&](int p) { return taken.count(p) > 0; });
    for (int d = 0, next = 0; d < cluster.size(); ++d) {
      if (ports[d] == 0) ports[d] = free.at(next++);
    }
  }

  std::error_code ec;
  fs::create_directories(dir, ec);
  // The folder holds the cluster's token: it must be this user's and nobody else's.
  struct stat dir_stat {};
  if (::lstat(dir.c_str(), &dir_stat) != 0 || !S_ISDIR(dir_stat.st_mode)) {
    throw environmentError(dir + ": cannot create the state directory");
  }
  if (dir_stat.st_uid != ::geteuid()) {
    throw environmentError(dir + ": the state directory belongs to another user; set XDG_RUNTIME_DIR or remove it");
  }
  ::chmod(dir.c_str(), 0700);

  LocalCluster local;
  local.state_path_ = stateFilePath(cluster.name(), dir);
  local.state_.set_cluster(cluster.name());
  std::error_code abs_ec;
  local.state_.set_cluster_path(cluster_path.empty() ? "" : fs::absolute(cluster_path, abs_ec).string());
  local.state_.set_worker_binary(fs::absolute(options.worker_binary, abs_ec).string());
  local.state_.set_started_unix_ms(unixMs());
  const std::string token_file = (fs::path(dir) / (fileStem(cluster.name()) + ".token")).string();
  const std::string token = makeTokenFile(token_file);
  local.state_.set_token_file(token_file);

  try {
    for (int d = 0; d < cluster.size(); ++d) {
      const std::string address = joinHostPort("127.0.0.1", ports[d]);
      const std::string log =
          (fs::path(dir) / (fileStem(cluster.name()) + "-" + fileStem(cluster.device(d).name) + ".log")).string();
      std::vector<std::string> args = workerArguments(cluster, d, address, options.threads, token_file);
      if (!options.data_dir.empty()) args.insert(args.end(), {"--data-dir", options.data_dir});
      if (options.end_with_this_process) args.insert(args.end(), {"--parent-pid", std::to_string(::getpid())});
      // The TorchScript files coordinators send, once per machine, beside the state.
      args.insert(args.end(), {"--cache-dir", (fs::path(dir) / "models").string()});
      const pid_t pid = spawnDetached(options.worker_binary, args, log);
      auto* worker = local.state_.add_workers();
      worker->set_device(cluster.device(d).name);
      worker->set_address(address);
      worker->set_pid(pid);
      if (const auto stat = readProcStat(pid)) worker->set_start_ticks(stat->start_ticks);
      worker->set_log_path(log);
    }
    // Written before waiting, so `cluster down` can clean up whatever happens next.
    writeStateFile(local.state_path_, local.state_);

    const int n = local.state_.workers_size();
    std::vector<bool> ready(n, false);
    const auto deadline = Clock::now() + options.startup_timeout;
    while (true) {
      bool all = true;
      for (int i = 0; i < n; ++i) {
        if (ready[i]) continue;
        const auto& w = local.state_.workers(i);
        if (!processAlive(w)) {
          const std::string last = lastLogLine(w.log_path());
          throw WorkerError(w.device(), "worker '" + w.device() + "' (" + w.address() +
                                            ") exited before answering Describe" + (last.empty() ? "" : ": " + last) +
                                            " (log: " + w.log_path() + ")",
                            ErrorKind::Environment);
        }
        try {
          // A fresh channel each time: a gRPC 1.51 channel whose first connect was refused
          // can keep failing for seconds after the worker listens.
          WorkerClient(WorkerEndpoint{w.device(), w.address(), token}).describe(milliseconds(1000), Resend::Never);
          ready[i] = true;
        } catch (const WorkerError&) {
          all = false;
        }
      }
      if (all) break;
      if (Clock::now() >= deadline) {
        for (int i = 0; i < n; ++i) {
          if (ready[i]) continue;
          const auto& w = local.state_.workers(i);
          throw WorkerError(w.device(), "worker '" + w.device() + "' (" + w.address() +
                                            ") did not answer Describe within " +
                                            std::to_string(options.startup_timeout.count() / 1000) +
                                            " s of starting (log: " + w.log_path() + ")",
                            ErrorKind::Environment);
        }
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
  } catch (...) {
    local.stop(options.stop_grace);
    throw;
  }
  return local;
}

std::string LocalCluster::token() const {
  if (state_.token_file().empty()) throw environmentError(state_path_ + " names no token file: restart the cluster");
  return readTokenFile(state_.token_file());
}

std::optional<LocalCluster> LocalCluster::find(const std::string& cluster_name, const std::string& state_directory) {
  const std::string path = stateFilePath(cluster_name, state_directory);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  LocalCluster local;
  local.state_path_ = path;
  io::readJsonFile(path, local.state_);
  return local;
}

Cluster LocalCluster::apply(const Cluster& cluster) const {
  std::vector<std::pair<std::string, std::string>> addresses;
  for (const auto& w : state_.workers()) addresses.emplace_back(w.device(), w.address());
  v1::Cluster proto = cluster.toProto();
  for (auto& device : *proto.mutable_devices()) {
    for (const auto& [name, address] : addresses) {
      if (device.name() == name) device.set_address(address);
    }
  }
  return Cluster::fromProto(proto);
}

bool LocalCluster::alive(int i) const { return processAlive(state_.workers(i)); }

std::vector<std::string> LocalCluster::deadWorkers() const {
  std::vector<std::string> dead;
  for (int i = 0; i < state_.workers_size(); ++i) {
    if (!alive(i)) dead.push_back(state_.workers(i).device());
  }
  return dead;
}

bool LocalCluster::anyAlive() const {
  for (int i = 0; i < state_.workers_size(); ++i) {
    if (alive(i)) return true;
  }
  return false;
}

void LocalCluster::stop(std::chrono::milliseconds grace) {
  auto signalAll = [&](int sig) {
    bool any = false;
    for (const auto& w : state_.workers()) {
      if (processAlive(w)) {
        ::kill(static_cast<pid_t>(w.pid()), sig);
        any = true;
      }
    }
    return any;
  };
  auto waitGone = [&](milliseconds limit) {
    const auto until = Clock::now() + limit;
    while (Clock::now() < until) {
      if (!anyAlive()) return true;
      std::this_thread::sleep_for(milliseconds(20));
    }
    return !anyAlive();
  };
  if (signalAll(SIGTERM) && !waitGone(grace)) {
    signalAll(SIGKILL);
    waitGone(milliseconds(2000));
  }
  std::error_code ec;
  if (!state_.token_file().empty()) fs::remove(state_.token_file(), ec);
  if (!state_path_.empty()) fs::remove(state_path_, ec);
}

}  // namespace stagecraft::control
