#pragma once
// Announces the worker on the LAN: a UDP beacon (core/control/discovery.h) with its
// identity and current state, every interval, until destroyed. Torch-free.

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "stagecraft/v1/discovery.pb.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::worker {

class BeaconAnnouncer {
 public:
  /// Starts a thread that sends `describe()` as a beacon to `host`:`port` every
  /// `interval`. Throws stagecraft::Error for a host that is not an IPv4 address.
  BeaconAnnouncer(std::function<v1::WorkerInfo()> describe, const std::string& host, int port,
                  std::chrono::milliseconds interval);
  /// Stops the thread at once (it waits on a condition, not a sleep).
  ~BeaconAnnouncer();
  BeaconAnnouncer(const BeaconAnnouncer&) = delete;
  BeaconAnnouncer& operator=(const BeaconAnnouncer&) = delete;

 private:

  std::function<v1::WorkerInfo()> describe_;
  std::chrono::milliseconds interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

/// The beacon that announces a worker described by `info`.
v1::Beacon beaconOf(const v1::WorkerInfo& info, std::uint64_t sequence, std::chrono::milliseconds interval);

}  // namespace stagecraft::worker
