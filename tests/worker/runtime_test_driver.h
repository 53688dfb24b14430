#pragma once
// A small driver for integration tests: real stagecraft-worker processes on loopback,
// driven through the generated Worker stub. Workers are started with --listen
// 127.0.0.1:0 and print "listening on 127.0.0.1:PORT" once they accept calls; that line
// is both the port and the readiness signal. Every process is killed when its
// WorkerProcess goes away, whatever the test's outcome.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.h"
#include "control/cluster_token.h"
#include "model/zoo.h"
#include "peer_outbox.h"
#include "stagecraft/v1/worker.grpc.pb.h"

namespace stagecraft::worker::testing {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

/// A loopback port nobody listens on (bound, then released).
inline int unusedPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

/// A child process with its stdout on a pipe; SIGKILLed (after a SIGTERM) when destroyed.
class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& argv) {
    // Everything the child needs is ready before fork: only async-signal-safe calls after.
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphan workers when the test dies
      ::dup2(out[1], STDOUT_FILENO);  // the duplicate stays open across exec
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::close(out[1]);
    stdout_ = out[0];
  }
  ~ChildProcess() { kill(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  /// The next line of stdout, or "" at end of file or after `timeout`.
  std::string readLine(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (const auto nl = buffer_.find('\n'); nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return {};
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) return {};
      char chunk[512];
      const ssize_t n = ::read(stdout_, chunk, sizeof chunk);
      if (n <= 0) return {};
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

  /// Waits for the exit; the exit status, or -1 after `timeout`.
  int wait(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (pid_ > 0) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (Clock::now() > deadline) return -1;
      std::this_thread::sleep_for(10ms);
    }
    return exit_status_;
  }

  void signal(int sig) {
    if (pid_ > 0) ::kill(pid_, sig);
  }

  void kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      if (wait(3s) < 0) {
        ::kill(pid_, SIGKILL);
        wait(10s);
      }
    }
    if (stdout_ >= 0) ::close(stdout_);
    stdout_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int stdout_ = -1;
  int exit_status_ = -1;
  std::string buffer_;
};

/// Collects a worker's telemetry stream on a thread.
class TelemetryLog {
 public:
  explicit TelemetryLog(v1::Worker::Stub& stub) {
    reader_ = stub.Telemetry(&context_, v1::TelemetryRequest());
    thread_ = std::thread([this] {
      v1::TelemetryEvent e;
      while (reader_->Read(&e)) {
        std::lock_guard lock(mutex_);
        events_.push_back(e);
        changed_.notify_all();
      }
      std::lock_guard lock(mutex_);
      ended_ = true;
      changed_.notify_all();
    });
    // The worker's first event says the subscription is in place.
    waitFor([](const v1::TelemetryEvent& e) { return e.has_log(); }, 10s);
  }
  ~TelemetryLog() {
    context_.TryCancel();
    thread_.join();
    reader_->Finish();
  }

  /// The first event matching `match`, waiting up to `timeout`.
  std::optional<v1::TelemetryEvent> waitFor(const std::function<bool(const v1::TelemetryEvent&)>& match,
                                            std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    std::optional<v1::TelemetryEvent> found;
    changed_.wait_for(lock, timeout, [&] {
      for (const auto& e : events_) {
        if (match(e)) {
          found = e;
          return true;
        }
      }
      return ended_;
    });
    return found;
  }

  /// Waits for the `nth` `finished` event or any error; the error's text, or "" when
  /// finished.
  std::string waitFinished(std::chrono::milliseconds timeout, int nth = 1) {
    std::unique_lock lock(mutex_);
    std::string outcome = "no finished or error event within the deadline";
    changed_.wait_for(lock, timeout, [&] {
      int finished = 0;
      for (const auto& e : events_) {
        if (e.has_error()) {
          outcome = e.error();
          return true;
        }
        if (e.has_finished() && ++finished == nth) {
          outcome.clear();
          return true;
        }
      }
      return ended_;
    });
    return outcome;
  }

  std::vector<v1::IterationReport> iterations() {
    std::lock_guard lock(mutex_);
    std::vector<v1::IterationReport> out;
    for (const auto& e : events_) {
      if (e.has_iteration()) out.push_back(e.iteration());
    }
    return out;
  }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::TelemetryEvent>> reader_;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<v1::TelemetryEvent> events_;
  bool ended_ = false;
};

/// One stagecraft-worker process and a stub to it.
class WorkerProcess {
 public:
  /// Starts the worker and, unless `wait` is false, waits until it listens. `launcher`
  /// runs first and execs the worker with the arguments that follow it (e.g. a shell
  /// that joins a cgroup).
  explicit WorkerProcess(const std::string& name, std::vector<std::string> extra = {}, bool wait = true,
                         std::vector<std::string> launcher = {})
      : name_(name) {
    std::vector<std::string> argv = std::move(launcher);
    // For debugging, e.g. STAGECRAFT_WORKER_WRAPPER="/usr/bin/gdb -q -batch -ex run -ex bt --args".
    if (const char* wrapper = std::getenv("STAGECRAFT_WORKER_WRAPPER")) {
      std::istringstream words(wrapper);
      for (std::string word; words >> word;) argv.push_back(word);
    }
    // No discovery beacons on the LAN from tests; a test that wants them passes its own flags.
    for (std::string arg : {STAGECRAFT_WORKER, "--listen", "127.0.0.1:0", "--name", name.c_str(), "--tier", "edge",
                            "--threads", "1", "--beacon-port", "0"}) {
      argv.push_back(arg);
    }
    // A worker asks for a token only when the test gives it one.
    const auto token_flag = std::find(extra.begin(), extra.end(), "--token-file");
    if (token_flag == extra.end()) {
      if (std::find(extra.begin(), extra.end(), "--insecure") == extra.end()) argv.push_back("--insecure");
    } else if (token_flag + 1 != extra.end()) {
      try {
        token_ = control::readTokenFile(*(token_flag + 1));
      } catch (const std::exception&) {
        // a test of a bad token file: the worker refuses it
      }
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<ChildProcess>(argv);
    if (wait) waitReady();
  }

  /// Reads the worker's "listening on" line (its address) within 60 s.
  void waitReady() {
    const std::string prefix = "listening on ";
    const auto deadline = Clock::now() + 60s;
    std::string line;
    while (line.rfind(prefix, 0) != 0) {  // a wrapper may print lines of its own first
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left <= 0ms) throw std::runtime_error("worker '" + name_ + "' did not start within 60 s");
      line = process_->readLine(left);
    }
    address_ = line.substr(prefix.size());
    stub_ = v1::Worker::NewStub(makeChannel(address_));
  }

  const std::string& name() const { return name_; }
  const std::string& address() const { return address_; }
  v1::Worker::Stub& stub() { return *stub_; }
  ChildProcess& process() { return *process_; }

  /// Calls with a deadline so a hung worker fails the test instead of hanging it.
  template <typename Request, typename Reply>
  grpc::Status call(grpc::Status (v1::Worker::Stub::*method)(grpc::ClientContext*, const Request&, Reply*),
                    const Request& request, Reply* reply, std::chrono::seconds timeout = 60s) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    if (!token_.empty()) context.AddMetadata(control::kTokenMetadataKey, token_);
    return (stub_.get()->*method)(&context, request, reply);
  }

  /// The token it was started with (empty: an --insecure worker).
  const std::string& token() const { return token_; }

 private:
  std::string name_;
  std::string token_;
  std::string address_;
  std::unique_ptr<ChildProcess> process_;
  std::unique_ptr<v1::Worker::Stub> stub_;
};

/// A fresh cluster token in a private file of its own temporary folder, gone with it.
class TokenFile {
 public:
  TokenFile() {
    char pattern[] = "/tmp/stagecraft-token-XXXXXX";
    if (!::mkdtemp(pattern)) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    path_ = dir_ + "/cluster.token";
    token_ = control::makeTokenFile(path_);
  }
  ~TokenFile() {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  const std::string& path() const { return path_; }
  const std::string& token() const { return token_; }
  /// The flags that make a worker ask for it.
  std::vector<std::string> flags() const { return {"--token-file", path_}; }

 private:
  std::string dir_, path_, token_;
};

/// Starts `names.size()` workers at once and waits until all of them listen. (Forked
/// from this thread: a child dies with the thread that forked it, see PR_SET_PDEATHSIG.)
inline std::vector<std::unique_ptr<WorkerProcess>> startWorkers(const std::vector<std::string>& names,
                                                                const std::vector<std::string>& extra = {}) {
  std::vector<std::unique_ptr<WorkerProcess>> out;
  for (const auto& name : names) out.push_back(std::make_unique<WorkerProcess>(name, extra, false));
  for (auto& w : out) w->waitReady();
  return out;
}

/// A stage of a test pipeline: layers and the share of each member (one worker each).
struct TestStage {
  int layer_begin = 0;
  int layer_end = 0;
  std::vector<int> shares;
};

inline v1::Member member(const std::string& name, const std::string& address, int samples) {
  v1::Member m;
  m.set_name(name);
  m.set_address(address);
  m.set_samples(samples);
  return m;
}

/// The assignments of `stages` over `workers` (in order: stage 0's members first).
inline std::vector<v1::StageAssignment> assignPipeline(const v1::StageAssignment& common,
                                                       const std::vector<TestStage>& stages,
                                                       const std::vector<WorkerProcess*>& workers) {
  std::vector<std::vector<v1::Member>> groups;
  size_t w = 0;
  for (const auto& s : stages) {
    auto& g = groups.emplace_back();
    for (int share : s.shares) {
      g.push_back(member(workers.at(w)->name(), workers.at(w)->address(), share));
      ++w;
    }
  }
  std::vector<v1::StageAssignment> out;
  for (size_t s = 0; s < stages.size(); ++s) {
    // As the coordinator does: the group meets at its rank-0 member's worker.
    const std::string store = groups[s].front().address();
    for (size_t r = 0; r < groups[s].size(); ++r) {
      v1::StageAssignment a = common;
      a.set_stage(static_cast<int>(s));
      a.set_stages(static_cast<int>(stages.size()));
      a.set_layer_begin(stages[s].layer_begin);
      a.set_layer_end(stages[s].layer_end);
      for (const auto& m : groups[s]) *a.add_group() = m;
      a.set_rank(static_cast<int>(r));
      if (s > 0) {
        for (const auto& m : groups[s - 1]) *a.add_previous() = m;
      }
      if (s + 1 < stages.size()) {
        for (const auto& m : groups[s + 1]) *a.add_next() = m;
      }
      if (groups[s].size() > 1) a.set_store_address(store);
      out.push_back(std::move(a));
    }
  }
  return out;
}

/// The zoo's mlp (fc1..fc8 with ReLU) at width 128 instead of 2048: the same structure,
/// a megabyte of weights instead of a hundred, so moving them takes no time.
/// The zoo's mlp with every hidden layer `width` wide (the input stays 1024 features).
inline v1::Model mlpOfWidth(int width) {
  v1::Model m = zooModel("mlp");
  m.set_name("mlp-" + std::to_string(width));
  for (int i = 0; i < m.layers_size(); ++i) {
    auto* layer = m.mutable_layers(i);
    if (i + 1 < m.layers_size()) layer->set_out_features(width);
    if (i > 0) {
      layer->clear_input_shape();
      layer->add_input_shape(width);
    }
  }
  return m;
}

inline v1::Model smallMlp() { return mlpOfWidth(128); }

/// Cluster `name` of one device per worker, named after it, at its address (edge, 10
/// GFLOP/s, 4 GiB, 1 Gbit/s).
inline v1::Cluster clusterProtoOf(const std::vector<std::unique_ptr<WorkerProcess>>& workers, const std::string& name) {
  v1::Cluster c;
  c.set_name(name);
  for (const auto& w : workers) {
    auto* d = c.add_devices();
    d->set_name(w->name());
    d->set_tier("edge");
    d->set_gflops(10);
    d->set_memory_mb(4096);
    d->set_bandwidth_mbps(1000);
    d->set_address(w->address());
  }
  return c;
}

}  // namespace stagecraft::worker::testing
