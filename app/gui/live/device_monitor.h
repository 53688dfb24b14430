#pragma once

#include <QObject>
#include <QString>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "control/coordinator.h"
#include "control/worker_client.h"

namespace stagecraft::gui {

/// Asks workers what they are doing, off the GUI thread: every interval it calls Describe
/// on each target in parallel (one round at a time), and on request Describes one address
/// at once. Results arrive as signals on the thread that owns the monitor. Nothing here
/// blocks the caller: a round against silent workers takes up to the call timeout on the
/// monitor's own thread.
class DeviceMonitor : public QObject {
  Q_OBJECT

 public:
  explicit DeviceMonitor(QObject* parent = nullptr);
  /// Waits for a round in progress (at most the call timeout).
  ~DeviceMonitor() override;

  /// The workers each round asks; takes effect from the next round.
  void setTargets(std::vector<control::WorkerEndpoint> targets);
  /// Time between rounds (default 2 s) and each Describe's deadline (default 1.5 s).
  void setInterval(std::chrono::milliseconds interval);
  void setCallTimeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds interval() const;

  /// Rounds every interval from now on, the first one at once.
  void start();
  /// No more rounds (a round in progress still reports).
  void stop();
  bool running() const;
  /// One round now, whether or not the monitor is running.
  void probeNow();
  /// One Describe of `address` now, answered by described().
  void describe(const QString& address);

 Q_SIGNALS:
  /// One round: a probe per target, in target order.
  void probed(const std::vector<stagecraft::control::WorkerProbe>& probes);
  /// The answer to describe(): `probe.reachable` with `probe.info`, else `probe.error`.
  void described(const QString& address, const stagecraft::control::WorkerProbe& probe);

 private:
  void run();
  control::WorkerProbe describeEndpoint(const control::WorkerEndpoint& endpoint, std::chrono::milliseconds deadline);

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<control::WorkerEndpoint> targets_;
  std::deque<QString> describe_requests_;
  std::map<std::string, std::shared_ptr<control::WorkerClient>> clients_;  // by name@address, reused across rounds
  std::chrono::milliseconds interval_{2000};
  std::chrono::milliseconds call_timeout_{1500};
  bool running_ = false;
  bool round_requested_ = false;
  bool quit_ = false;
  std::chrono::steady_clock::time_point next_round_;
  std::thread thread_;
};

}  // namespace stagecraft::gui
