// stagecraft-fake-worker: the test FakeWorker as a process, with stagecraft-worker's
// command line, so LocalCluster and `stagecraft-cli cluster up / run --local` can be
// tested without LibTorch. STAGECRAFT_FAKE_FAIL=<device>@<step> makes that device report
// an error at that step, STAGECRAFT_FAKE_DIE=<device>@<step> makes it vanish there as if
// SIGKILLed, STAGECRAFT_FAKE_SLOW=<device>@<step> makes its compute take three times as
// long from that step on (a straggler), STAGECRAFT_FAKE_DIVERGE=<step> makes the last
// stage's loss explode from that step on while the learning rate is 0.05 or more;
// STAGECRAFT_FAKE_STEP_MS sets the time per step (default 5).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "control/cluster_token.h"
#include "fake_worker.h"

int main(int argc, char** argv) {
  stagecraft::testing::FakeWorkerScript script;
  script.iteration_ms = 5;
  std::string listen = "127.0.0.1:0";
  pid_t parent_pid = 0;  // as stagecraft-worker's: end once that process is gone
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--insecure") {
      --i;  // a switch: no value
      continue;
    }
    if (i + 1 >= argc) {
      std::cerr << "stagecraft-fake-worker: " << flag << " needs a value\n";
      return 2;
    }
    const std::string value = argv[i + 1];
    if (flag == "--listen")
      listen = value;
    else if (flag == "--name")
      script.name = value;
    else if (flag == "--tier")
      script.tier = value;
    else if (flag == "--slowdown")
      script.slowdown = std::stod(value);
    else if (flag == "--bandwidth-mbps")
      script.bandwidth_mbps = std::stod(value);
    else if (flag == "--memory-mb")
      script.memory_mb = std::stod(value);
    else if (flag == "--parent-pid")
      parent_pid = std::atoi(value.c_str());
    else if (flag == "--token-file")
      script.token = stagecraft::control::readTokenFile(value);
    else if (flag == "--threads" || flag == "--data-dir" || flag == "--cache-dir" || flag == "--beacon-port" || flag == "--beacon-interval-ms" ||
             flag == "--beacon-to")
      continue;  // the fake worker sends no beacons
    else {
      std::cerr << "stagecraft-fake-worker: unknown flag " << flag << "\n";
      return 2;
    }
  }
  if (const char* ms = std::getenv("STAGECRAFT_FAKE_STEP_MS")) script.iteration_ms = std::atof(ms);
  if (const char* fail = std::getenv("STAGECRAFT_FAKE_FAIL")) {
    const std::string spec = fail;
    const auto at = spec.find('@');
    if (at != std::string::npos && spec.substr(0, at) == script.name)
      script.error_at_step = std::atoll(spec.c_str() + at + 1);
  }
  if (const char* die = std::getenv("STAGECRAFT_FAKE_DIE")) {
    const std::string spec = die;
    const auto at = spec.find('@');
    if (at != std::string::npos && spec.substr(0, at) == script.name)
      script.die_at_step = std::atoll(spec.c_str() + at + 1);
  }
  if (const char* slow = std::getenv("STAGECRAFT_FAKE_SLOW")) {
    const std::string spec = slow;
    const auto at = spec.find('@');
    if (at != std::string::npos && spec.substr(0, at) == script.name) {
      const std::int64_t from = std::atoll(spec.c_str() + at + 1);
      const double ms = script.iteration_ms;
      script.events = [from, ms](std::int64_t step, const stagecraft::v1::StageAssignment& assignment) {
        stagecraft::v1::TelemetryEvent e = stagecraft::testing::defaultIteration(step, assignment, ms);
        if (step >= from) e.mutable_iteration()->mutable_timeline(0)->set_end_ms(1.5 * ms);  // 0.5 x ms before
        return std::vector<stagecraft::v1::TelemetryEvent>{e};
      };
    }
  }
  if (const char* diverge = std::getenv("STAGECRAFT_FAKE_DIVERGE")) {
    const std::int64_t from = std::atoll(diverge);
    const double ms = script.iteration_ms;
    script.events = [from, ms](std::int64_t step, const stagecraft::v1::StageAssignment& assignment) {
      stagecraft::v1::TelemetryEvent e = stagecraft::testing::defaultIteration(step, assignment, ms);
      if (step >= from && assignment.optimizer().lr() >= 0.05 && e.iteration().loss_samples() > 0) {
        e.mutable_iteration()->set_loss(989376024.0);
      }
      return std::vector<stagecraft::v1::TelemetryEvent>{e};
    };
  }
  const auto colon = listen.rfind(':');
  const int port = std::atoi(listen.c_str() + colon + 1);

  // Signals are taken by sigwaitinfo / sigtimedwait below, not by gRPC's threads.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  try {
    stagecraft::testing::FakeWorkerServer server(script, port);
    std::cout << "stagecraft-fake-worker " << script.name << " listening on " << server.address() << std::endl;
    const timespec quarter{0, 250'000'000};
    int signal = -1;
    while (signal < 0) {
      signal = parent_pid > 0 ? sigtimedwait(&signals, nullptr, &quarter) : sigwaitinfo(&signals, nullptr);
      if (signal < 0 && parent_pid > 0 && getppid() != parent_pid) break;
    }
    if (signal < 0) {
      std::cout << "stagecraft-fake-worker " << script.name << ": the process that started it has ended, shutting down"
                << std::endl;
    } else {
      std::cout << "stagecraft-fake-worker " << script.name << ": signal " << signal << ", shutting down" << std::endl;
    }
    server.shutdown();
  } catch (const std::exception& e) {
    std::cerr << "stagecraft-fake-worker: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
