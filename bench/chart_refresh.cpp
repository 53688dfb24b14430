// Live-chart refresh cost: feeds the console's LiveCharts as the training controller
// does (one step and one sample per device per update) offscreen, and times each update
// together with the replot it causes.
//
//   QT_QPA_PLATFORM=offscreen build/bench/bench_chart_refresh [--devices 16] [--rate 20]
//       [--seconds 150] [--microbatches 64] [--realtime 5]
//
// Worst case first: every update is replotted at once (no coalescing), with the moving
// 120 s window full; with a measured timeline of devices x micro-batches x 4 blocks on
// every update, and without. Then --realtime seconds on the event loop at --rate and at 5x
// --rate updates/s, counting the replots the coalescing actually does. Exits 1 when a goal
// is missed.
#include <QApplication>
#include <QElapsedTimer>
#include <QFile>
#include <QThread>
#include <QTimer>

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "live/chart_plot.h"
#include "live/device_chart.h"
#include "live/live_charts.h"
#include "live/loss_chart.h"
#include "live/throughput_chart.h"
#include "live/timeline_chart.h"

namespace {

using stagecraft::EventKind;
using stagecraft::TimelineEvent;
using stagecraft::gui::LiveCharts;

struct Options {
  int devices = 16;
  double rate = 20;
  double seconds = 150;  // more than the 120 s window: it fills, then scrolls
  int microbatches = 64;
  double realtime = 5;
};

/// A 1F1B-shaped iteration: each device forwards and backwards every micro-batch, sends
/// to the next device and receives from the previous one (devices x micro-batches x 4).
std::vector<TimelineEvent> syntheticTimeline(int devices, int microbatches, double jitter) {
  std::vector<TimelineEvent> events;
  events.reserve(static_cast<std::size_t>(devices * microbatches * 4));
  for (int d = 0; d < devices; ++d) {
    for (int m = 0; m < microbatches; ++m) {
      const double f = (m + d) * 1.0 + jitter;
      const double b = (microbatches + 2 * devices - d + m) * 1.0 + jitter;
      events.push_back({d, m, EventKind::Forward, -1, f, f + 0.45});
      events.push_back({d, m, EventKind::Backward, -1, b, b + 0.9});
      events.push_back({d, m, EventKind::Send, (d + 1) % devices, f + 0.45, f + 0.55});
      events.push_back({d, m, EventKind::Receive, (d + devices - 1) % devices, f - 0.1, f});
    }
  }
  return events;
}

struct Stats {
  double mean = 0;
  double p99 = 0;
  double max = 0;
};

/// CPU time of this thread: what an update costs, whatever else shares the machine.
double threadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

QByteArray loadAverage() {
  QFile file(QStringLiteral("/proc/loadavg"));
  return file.open(QIODevice::ReadOnly) ? file.readLine().split(' ').value(0) : QByteArray("?");
}

Stats summarise(std::vector<double> ms) {
  Stats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  s.mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  s.p99 = ms[std::min(ms.size() - 1, static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(ms.size()))) - 1)];
  s.max = ms.back();
  return s;
}

void feed(LiveCharts& charts, const Options& o, int update) {
  const double t = update / o.rate;
  charts.addStep(update, t, 1000 + 50 * std::sin(t), 1100, 2.0 * std::exp(-t / 300) + 0.1);
  for (int d = 0; d < o.devices; ++d) {
    charts.addDeviceSample(d, t, 0.5 + 0.4 * std::sin(t + d), 800 + 50 * d + 100 * std::sin(t), 2500 + 100 * d);
  }
}

/// Every update replotted at once: the cost a chart pays when nothing is coalesced.
/// Wall-clock and thread-CPU milliseconds per update.
std::pair<Stats, Stats> worstCase(const Options& o, bool timeline_every_update) {
  LiveCharts charts;
  QStringList names;
  for (int d = 0; d < o.devices; ++d) names << QStringLiteral("device-%1").arg(d);
  charts.setDevices(names);
  charts.resize(1400, 900);
  charts.show();
  QApplication::processEvents();
  const int updates = static_cast<int>(o.seconds * o.rate);
  std::vector<double> ms;
  std::vector<double> cpu_ms;
  ms.reserve(static_cast<std::size_t>(updates));
  cpu_ms.reserve(static_cast<std::size_t>(updates));
  std::vector<std::vector<TimelineEvent>> timelines;
  for (int k = 0; k < 4; ++k) timelines.push_back(syntheticTimeline(o.devices, o.microbatches, 0.05 * k));
  const double iteration_ms = (o.microbatches + 3 * o.devices) * 1.0;
  charts.setTimeline(timelines[0], iteration_ms, false);
  QElapsedTimer clock;
  for (int u = 0; u < updates; ++u) {
    clock.start();
    const double cpu_start = threadCpuMs();
    feed(charts, o, u);
    if (timeline_every_update) charts.setTimeline(timelines[static_cast<std::size_t>(u) % 4], iteration_ms, true);
    charts.flushReplots();
    ms.push_back(static_cast<double>(clock.nsecsElapsed()) / 1e6);
    cpu_ms.push_back(threadCpuMs() - cpu_start);
  }
  return {summarise(ms), summarise(cpu_ms)};
}

struct Realtime {
  int updates = 0;
  int replots = 0;  ///< all four charts together
  double max_lag_ms = 0;
};

/// The event loop at o.rate updates/s for o.realtime seconds: replots really done and
/// how late the feeding timer fired at worst.
Realtime realtime(const Options& o, double rate) {
  LiveCharts charts;
  QStringList names;
  for (int d = 0; d < o.devices; ++d) names << QStringLiteral("device-%1").arg(d);
  charts.setDevices(names);
  charts.resize(1400, 900);
  charts.show();
  charts.setTimeline(syntheticTimeline(o.devices, o.microbatches, 0), (o.microbatches + 3 * o.devices) * 1.0, false);
  QApplication::processEvents();
  charts.flushReplots();
  auto replots = [&charts] {
    int n = 0;
    for (auto which : {LiveCharts::Chart::Throughput, LiveCharts::Chart::Loss, LiveCharts::Chart::Devices,
                       LiveCharts::Chart::Timeline}) {
      n += charts.chart(which)->replotCount();
    }
    return n;
  };
  const int replots_before = replots();
  Realtime r;
  QElapsedTimer clock;
  clock.start();
  QTimer timer;
  timer.setTimerType(Qt::PreciseTimer);
  const double period_ms = 1000.0 / rate;
  timer.setInterval(static_cast<int>(period_ms));
  QObject::connect(&timer, &QTimer::timeout, [&] {
    const double due = r.updates * period_ms;
    r.max_lag_ms = std::max(r.max_lag_ms, static_cast<double>(clock.elapsed()) - due - period_ms);
    feed(charts, o, r.updates);
    ++r.updates;
    if (clock.elapsed() >= o.realtime * 1000) QApplication::quit();
  });
  timer.start();
  QApplication::exec();
  r.replots = replots() - replots_before;
  return r;
}

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto next = [&](double& value) {
      if (i + 1 >= argc) return false;
      value = std::atof(argv[++i]);
      return value > 0;
    };
    double value = 0;
    if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: bench_chart_refresh [--devices N] [--rate UPDATES_PER_S] [--seconds S]\n"
          "                           [--microbatches M] [--realtime S]\n"
          "Times LiveCharts updates + replots offscreen (set QT_QPA_PLATFORM=offscreen).\n");
      std::exit(0);
    } else if (arg == "--devices" && next(value)) {
      o.devices = static_cast<int>(value);
    } else if (arg == "--rate" && next(value)) {
      o.rate = value;
    } else if (arg == "--seconds" && next(value)) {
      o.seconds = value;
    } else if (arg == "--microbatches" && next(value)) {
      o.microbatches = static_cast<int>(value);
    } else if (arg == "--realtime" && next(value)) {
      o.realtime = value;
    } else {
      std::fprintf(stderr, "bench_chart_refresh: bad argument %s (see --help)\n", arg.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);

  const int blocks = o.devices * o.microbatches * 4;
  std::printf("LiveCharts at 1400x900, %d devices, %.0f s of updates at %.0f/s (window %.0f s), timeline %d blocks\n\n",
              o.devices, o.seconds, o.rate, stagecraft::gui::ThroughputChart::kDefaultWindowSeconds, blocks);
  std::printf("load average at start: %s (this machine has %d cores)\n\n", loadAverage().constData(),
              QThread::idealThreadCount());
  std::printf("| case | updates | mean ms | p99 ms | max ms | CPU mean ms | CPU p99 ms | sustainable updates/s (1000 / CPU p99) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  const auto [plain, plain_cpu] = worstCase(o, false);
  const auto [with_timeline, with_timeline_cpu] = worstCase(o, true);
  const int updates = static_cast<int>(o.seconds * o.rate);
  std::printf("| step + %d device samples, replot | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f |\n", o.devices, updates,
              plain.mean, plain.p99, plain.max, plain_cpu.mean, plain_cpu.p99, 1000 / plain_cpu.p99);
  std::printf("| same + measured timeline (%d blocks), replot | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.0f |\n", blocks,
              updates, with_timeline.mean, with_timeline.p99, with_timeline.max, with_timeline_cpu.mean,
              with_timeline_cpu.p99, 1000 / with_timeline_cpu.p99);

  std::printf("\n| event loop, %.0f s | updates | replots (4 charts) | replots per chart per s | feeding timer late, max ms |\n",
              o.realtime);
  std::printf("|---|---:|---:|---:|---:|\n");
  Realtime rt;
  for (double rate : {o.rate, 5 * o.rate}) {
    const Realtime r = realtime(o, rate);
    std::printf("| %.0f updates/s | %d | %d | %.1f | %.1f |\n", rate, r.updates, r.replots,
                r.replots / 4.0 / o.realtime, std::max(0.0, r.max_lag_ms));
    if (r.replots > rt.replots) rt = r;
  }
  std::printf("\n");

  // The console needs 2 updates/s; ask for 5x that at the 99th percentile, worst case.
  constexpr double kGoalUpdatesPerSecond = 10;
  bool ok = true;
  // CPU time, not wall time: on a shared machine the wall clock measures the neighbours.
  const double sustainable = 1000 / with_timeline_cpu.p99;
  std::printf("GOAL %s sustainable rate with a timeline on every update = %.0f updates/s (>= %.0f: 5x the 2/s needed)\n",
              sustainable >= kGoalUpdatesPerSecond ? "met:   " : "MISSED:", sustainable, kGoalUpdatesPerSecond);
  ok = ok && sustainable >= kGoalUpdatesPerSecond;
  const double max_replots = 4.0 * o.realtime * 1000.0 / stagecraft::gui::ChartPlot::kReplotIntervalMs;
  const bool coalesced = rt.replots <= max_replots + 4;
  std::printf("GOAL %s replots %d <= %.0f (one per chart per %d ms at most)\n", coalesced ? "met:   " : "MISSED:",
              rt.replots, max_replots, stagecraft::gui::ChartPlot::kReplotIntervalMs);
  ok = ok && coalesced;
  return ok ? 0 : 1;
}
