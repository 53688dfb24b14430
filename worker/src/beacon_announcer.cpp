#include "beacon_announcer.h"

#include <cstdio>
#include <memory>

#include "control/discovery.h"

namespace stagecraft::worker {

v1::Beacon beaconOf(const v1::WorkerInfo& info, std::uint64_t sequence, std::chrono::milliseconds interval) {
  v1::Beacon b;
  b.set_name(info.name());
  b.set_tier(info.tier());
  b.set_address(info.address());
  b.set_version(info.version());
  b.set_state(info.state());
  b.set_job(info.job());
  b.set_cores(info.cores());
  b.set_memory_mb(info.memory_mb());
  b.set_measured_gflops(info.measured_gflops());
  b.set_insecure(info.insecure());
  b.set_sequence(sequence);
  b.set_interval_ms(static_cast<std::int32_t>(interval.count()));
  return b;
}

BeaconAnnouncer::BeaconAnnouncer(std::function<v1::WorkerInfo()> describe, const std::string& host, int port,
                                 std::chrono::milliseconds interval)
    : describe_(std::move(describe)), interval_(interval) {
  // Made here so a bad --beacon-to fails the start-up, not a thread.
  auto sender = std::make_shared<control::BeaconSender>(host, port);
  thread_ = std::thread([this, sender] {
    std::uint64_t sequence = 0;
    bool warned = false;
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();
      if (!sender->send(beaconOf(describe_(), sequence++, interval_)) && !warned) {
        // Once: a host without a broadcast route would otherwise fill the log.
        std::fprintf(stderr, "stagecraft-worker: %s\n", sender->lastError().c_str());
        warned = true;
      }
      lock.lock();
      wake_.wait_for(lock, interval_, [this] { return stop_; });
    }
  });
}

BeaconAnnouncer::~BeaconAnnouncer() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace stagecraft::worker
