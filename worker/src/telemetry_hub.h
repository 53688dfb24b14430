#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::worker {

/// Fans telemetry events out to every subscriber (one per Telemetry stream). A slow
/// subscriber loses its oldest iteration reports and log lines beyond kMaxQueued rather
/// than holding up training; each event it is given says how many it lost (`dropped`).
/// Errors and `finished` are never dropped.
class TelemetryHub {
 public:
  static constexpr size_t kMaxQueued = 4096;

  class Subscription {
   public:
    /// The next event; nullopt after `timeout` or once the hub is closed.
    std::optional<v1::TelemetryEvent> next(std::chrono::milliseconds timeout);
    bool closed() const;

   private:
    friend class TelemetryHub;
    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<v1::TelemetryEvent> queue_;
    std::int64_t dropped_ = 0;
    bool closed_ = false;
  };

  explicit TelemetryHub(std::string worker) : worker_(std::move(worker)) {}

  std::shared_ptr<Subscription> subscribe();
  void unsubscribe(const std::shared_ptr<Subscription>& subscription);

  /// Stamps the worker's name and sends `event` to every subscriber.
  void publish(v1::TelemetryEvent event);
  void log(const std::string& job, const std::string& line);
  void error(const std::string& job, const std::string& message);

  /// Ends every subscription (server shutdown).
  void close();
  /// Open Telemetry streams: a coordinator watching this worker.
  size_t subscribers() const;

 private:
  std::string worker_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<Subscription>> subscribers_;
  bool closed_ = false;
};

}  // namespace stagecraft::worker
