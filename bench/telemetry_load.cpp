// Telemetry load on the console: N local workers (default 64) each reporting a step every
// --step-ms (default 100: 10 Hz), into one console (its MainWindow offscreen: coordinator,
// device list with its probes, charts, log) that trains a data-parallel plan over all of
// them. Measures the console's event-loop lateness (a 10 ms timer: how late each tick
// fires), the process's CPU (coordinator and console are one process, as in the console),
// and the iteration reports that did not reach the charts (expected: steps x members).
//
//   QT_QPA_PLATFORM=offscreen build/bench/bench_telemetry_load [--workers 64] [--steps 60]
//       [--step-ms 100] [--worker-binary PATH] [--workers-cpu CORES]
//
// By default the workers are tests/support's stand-in (stagecraft-fake-worker: the Worker
// protocol, the worker's flags, no LibTorch, a step every --step-ms), so that 64 of them
// report at 10 Hz on a small machine and the figure is the console's, not the workers'
// compute; --worker-binary build/worker/src/stagecraft-worker trains the tiny model on real
// workers instead (their step time is then what it is), and --workers-cpu 1.5 (root) holds
// them to that many cores in a cgroup, as devices with cores of their own. Exits 1 when the goal (p99
// lateness under 50 ms, every report charted) is missed.
#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTimer>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "io/json_io.h"
#include "live/training_controller.h"
#include "model/zoo.h"
#include "planner/planner.h"
#include "window/main_window.h"

namespace {

using stagecraft::gui::MainWindow;
using stagecraft::gui::TrainingController;
using stagecraft::gui::TrainingState;

/// Times every event the GUI thread delivers, by receiver class and event type, so the
/// report can say where the time behind the lateness went.
class TimedApplication final : public QApplication {
 public:
  using QApplication::QApplication;
  struct Cost {
    int count = 0;
    double total_ms = 0, max_ms = 0;
    double max_at_s = 0;  // when the longest one began, in seconds after recording began
  };
  QElapsedTimer since;  // started with the recording
  bool recording = false;
  std::map<std::string, Cost> costs;

  bool notify(QObject* receiver, QEvent* event) override {
    if (!recording) return QApplication::notify(receiver, event);
    QElapsedTimer timer;
    timer.start();
    // The event, and the receiver too (a deferred delete), may be gone after delivery.
    const int type = event->type();
    const char* receiver_class = receiver->metaObject()->className();
    const bool ok = QApplication::notify(receiver, event);
    const double ms = timer.nsecsElapsed() / 1e6;
    if (ms >= 1) {  // nested deliveries are counted inside their parents too
      Cost& c = costs[std::string(receiver_class) + " / event " + std::to_string(type)];
      ++c.count;
      c.total_ms += ms;
      if (ms > c.max_ms) {
        c.max_ms = ms;
        c.max_at_s = since.elapsed() / 1000.0 - ms / 1000.0;
      }
    }
    return ok;
  }
};

struct Options {
  int workers = 64;
  int steps = 60;
  double step_ms = 100;
  double workers_cpu = 0;  ///< cores the workers may use together (a cgroup); 0: no limit
  std::string worker_binary =
#ifdef STAGECRAFT_FAKE_WORKER
      STAGECRAFT_FAKE_WORKER;
#else
      "";
#endif
};

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

/// Runs the event loop until `done` or `seconds` pass; false on the timeout. Sleeps in
/// the loop between checks (processEvents would spin and count as the console's CPU).
bool waitFor(const std::function<bool()>& done, double seconds) {
  QElapsedTimer clock;
  clock.start();
  while (!done()) {
    if (clock.elapsed() > seconds * 1000) return false;
    QEventLoop loop;
    QTimer::singleShot(20, &loop, &QEventLoop::quit);
    loop.exec();
  }
  return true;
}

/// This process's children: the local workers LocalCluster spawned.
std::vector<int> childPids() {
  std::vector<int> out;
  const std::string self = std::to_string(::getpid());
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state, parent;
    rest >> state >> parent;
    if (parent == self) out.push_back(std::stoi(pid));
  }
  return out;
}

/// Holds the workers to `cores` of CPU in a cgroup (v1 cpu controller, root only), as on
/// the devices they stand for they have cores of their own and do not take the console's.
/// Empty on success, else why not.
std::string confine(const std::vector<int>& pids, double cores, const std::string& group) {
  std::error_code ec;
  std::filesystem::create_directory(group, ec);
  if (ec) return group + ": " + ec.message();
  std::ofstream(group + "/cpu.cfs_period_us") << 100000;
  std::ofstream(group + "/cpu.cfs_quota_us") << static_cast<long>(cores * 100000);
  for (const int pid : pids) {
    std::ofstream procs(group + "/cgroup.procs");
    procs << pid;
    if (!procs.flush()) return "cannot move worker " + std::to_string(pid) + " into " + group;
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const bool has_value = i + 1 < argc;
    if (flag == "--workers" && has_value) o.workers = std::atoi(argv[++i]);
    else if (flag == "--steps" && has_value) o.steps = std::atoi(argv[++i]);
    else if (flag == "--step-ms" && has_value) o.step_ms = std::atof(argv[++i]);
    else if (flag == "--worker-binary" && has_value) o.worker_binary = argv[++i];
    else if (flag == "--workers-cpu" && has_value) o.workers_cpu = std::atof(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_telemetry_load [--workers N] [--steps S] [--step-ms MS] [--worker-binary PATH] "
                           "[--workers-cpu CORES]\n");
      return 2;
    }
  }
  if (o.workers < 1 || o.steps < 1 || o.step_ms <= 0 || o.worker_binary.empty()) {
    std::fprintf(stderr, "bench_telemetry_load: needs workers, steps, a step time and the stand-in worker binary\n");
    return 2;
  }
  // Everything the console and its local workers write goes to a folder of this run's.
  QTemporaryDir scratch;
  if (!scratch.isValid()) return 2;
  const std::string dir = scratch.path().toStdString();
  setenv("XDG_RUNTIME_DIR", dir.c_str(), 1);
  setenv("XDG_CONFIG_HOME", dir.c_str(), 1);
  setenv("STAGECRAFT_FAKE_STEP_MS", std::to_string(o.step_ms).c_str(), 1);
  TimedApplication app(argc, argv);

  stagecraft::v1::Cluster proto;
  proto.set_name("load-" + std::to_string(o.workers));
  for (int d = 0; d < o.workers; ++d) {
    auto* device = proto.add_devices();
    char name[16];
    std::snprintf(name, sizeof name, "w%02d", d);
    device->set_name(name);
    device->set_tier("edge");
    device->set_gflops(10);
    device->set_memory_mb(4096);
    device->set_bandwidth_mbps(1000);
  }
  const std::string cluster_path = dir + "/load.json";
  std::ofstream(cluster_path) << stagecraft::io::toJson(proto);

  MainWindow window;
  window.resize(1600, 1000);
  window.show();
  window.openStartup(QString::fromStdString(cluster_path), QStringLiteral("mlp"), {});
  TrainingController* controller = window.controller();
  controller->setWorkerBinary(QString::fromStdString(o.worker_binary));

  std::optional<stagecraft::Cluster> local;
  QObject::connect(controller, &TrainingController::localClusterStarted, [&](const stagecraft::Cluster& c) { local = c; });
  QString failure;
  QObject::connect(controller, &TrainingController::failed, [&](const QString& message) { failure = message; });
  QElapsedTimer startup;
  startup.start();
  controller->startLocalCluster(QString::fromStdString(cluster_path));
  if (!waitFor([&] { return local.has_value() || !failure.isEmpty(); }, 300) || !local) {
    std::fprintf(stderr, "bench_telemetry_load: the local workers did not start: %s\n", qPrintable(failure));
    return 1;
  }
  const double startup_s = startup.elapsed() / 1000.0;
  const std::string group = "/sys/fs/cgroup/cpu/stagecraft-load-" + std::to_string(::getpid());
  const std::vector<int> children = childPids();
  if (o.workers_cpu > 0) {
    if (const std::string why = confine(children, o.workers_cpu, group); !why.empty()) {
      std::fprintf(stderr, "bench_telemetry_load: --workers-cpu: %s\n", why.c_str());
      controller->stopLocalCluster();
      return 2;
    }
  }

  // A tiny model (the zoo's mlp, 32 wide: ~27 k parameters), data parallel over every
  // worker: each member reports every step.
  stagecraft::v1::Model tiny = stagecraft::zooModel("mlp");
  tiny.set_name("mlp-32");
  for (int i = 0; i < tiny.layers_size(); ++i) {
    auto* layer = tiny.mutable_layers(i);
    if (i + 1 < tiny.layers_size()) layer->set_out_features(32);
    if (i > 0) {
      layer->clear_input_shape();
      layer->add_input_shape(32);
    }
  }
  const stagecraft::ModelSpec model = stagecraft::ModelSpec::fromProto(tiny);
  const stagecraft::CostModel cost(model, *local);
  stagecraft::PlanRequest request;
  request.batch_size = o.workers * 2;
  request.microbatches = 1;
  const stagecraft::PlanOutcome outcome = stagecraft::makePlan(*stagecraft::makePlanner("dp"), cost, request);
  if (!outcome.feasible) {
    std::fprintf(stderr, "bench_telemetry_load: no data-parallel plan: %s\n", outcome.reason.c_str());
    return 1;
  }
  int members = 0;
  for (const auto& stage : outcome.plan.stages) members += static_cast<int>(stage.members.size());
  controller->deploy(outcome.plan, model, *local, stagecraft::control::TrainingOptions{});
  if (!waitFor([&] { return controller->state() == TrainingState::Deployed || !failure.isEmpty(); }, 300) ||
      !failure.isEmpty()) {
    std::fprintf(stderr, "bench_telemetry_load: deploy failed: %s\n", qPrintable(failure));
    return 1;
  }

  // Lateness of a 10 ms timer while the reports stream in.
  std::vector<double> late_ms;
  QElapsedTimer tick;
  QTimer probe;
  probe.setTimerType(Qt::PreciseTimer);
  probe.setInterval(10);
  QObject::connect(&probe, &QTimer::timeout, [&] {
    if (tick.isValid()) late_ms.push_back(std::max(0.0, tick.nsecsElapsed() / 1e6 - 10.0));
    tick.start();
  });
  long long reports = 0, steps_seen = 0;
  QObject::connect(controller, &TrainingController::iterationReported, [&] { ++reports; });
  QObject::connect(controller, &TrainingController::stepCompleted, [&] { ++steps_seen; });
  bool finished = false;
  QObject::connect(controller, &TrainingController::trainingFinished, [&] { finished = true; });

  const double cpu_before = cpuSeconds();
  QElapsedTimer wall;
  wall.start();
  probe.start();
  app.recording = true;
  app.since.start();
  controller->start(o.steps);
  const bool done = waitFor([&] { return finished || !failure.isEmpty(); }, o.steps * o.step_ms / 1000.0 * 20 + 120);
  probe.stop();
  app.recording = false;
  const double seconds = wall.elapsed() / 1000.0;
  const double cpu = cpuSeconds() - cpu_before;
  controller->stopLocalCluster();
  waitFor([&] { return controller->state() == TrainingState::Idle; }, 60);
  if (o.workers_cpu > 0) std::filesystem::remove(group);
  if (!done || !failure.isEmpty()) {
    std::fprintf(stderr, "bench_telemetry_load: training did not finish: %s\n", qPrintable(failure));
    return 1;
  }

  const long long expected = static_cast<long long>(o.steps) * members;
  const double p99 = percentile(late_ms, 0.99);
  const std::string limit =
      o.workers_cpu > 0 ? ", " + std::to_string(children.size()) + " held to " + std::to_string(o.workers_cpu) + " cores" : "";
  std::printf("%d workers (%s%s), %d members, %d steps in %.1f s (workers up in %.1f s)\n", o.workers,
              o.worker_binary.c_str(), limit.c_str(), members, o.steps, seconds, startup_s);
  std::printf("| workers | reports/s | console CPU (%% of one core) | event-loop lateness p50 / p99 / max (ms) | "
              "reports not charted |\n|---:|---:|---:|---|---:|\n");
  std::printf("| %d | %.0f | %.0f | %.1f / %.1f / %.1f | %lld of %lld |\n", o.workers, reports / seconds,
              100.0 * cpu / seconds, percentile(late_ms, 0.5), p99, late_ms.empty() ? 0.0 : *std::max_element(late_ms.begin(), late_ms.end()),
              expected - std::min(expected, reports), expected);
  std::printf("steps charted: %lld of %d\n", steps_seen, o.steps);
  // Where the GUI thread's time went: the deliveries of 1 ms or more, longest first.
  std::vector<std::pair<std::string, TimedApplication::Cost>> costs(app.costs.begin(), app.costs.end());
  std::sort(costs.begin(), costs.end(), [](const auto& a, const auto& b) { return a.second.max_ms > b.second.max_ms; });
  std::printf(
      "GUI-thread deliveries of 1 ms or more (receiver / QEvent type: count, total ms, max ms at s after the start; "
      "training took %.1f s):\n",
      seconds);
  for (std::size_t i = 0; i < std::min<std::size_t>(costs.size(), 8); ++i) {
    std::printf("  %s: %d, %.0f, %.1f at %.1f s\n", costs[i].first.c_str(), costs[i].second.count,
                costs[i].second.total_ms, costs[i].second.max_ms, costs[i].second.max_at_s);
  }
  const bool met = p99 < 50 && reports >= expected;
  std::printf("goal console p99 lateness < 50 ms, every report charted: %s\n", met ? "met" : "MISSED");
  return met ? 0 : 1;
}
