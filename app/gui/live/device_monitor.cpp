#include "live/device_monitor.h"

#include <QLoggingCategory>
#include <QMetaObject>

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcDeviceMonitor, "stagecraft.gui.devicemonitor")

using Clock = std::chrono::steady_clock;

DeviceMonitor::DeviceMonitor(QObject* parent) : QObject(parent) {
  thread_ = std::thread([this] { run(); });
}

DeviceMonitor::~DeviceMonitor() {
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void DeviceMonitor::setTargets(std::vector<control::WorkerEndpoint> targets) {
  std::lock_guard lock(mutex_);
  targets_ = std::move(targets);
}

void DeviceMonitor::setInterval(std::chrono::milliseconds interval) {
  {
    std::lock_guard lock(mutex_);
    interval_ = std::max(interval, std::chrono::milliseconds(10));
    next_round_ = std::min(next_round_, Clock::now() + interval_);
  }
  wake_.notify_all();
}

void DeviceMonitor::setCallTimeout(std::chrono::milliseconds timeout) {
  std::lock_guard lock(mutex_);
  call_timeout_ = std::max(timeout, std::chrono::milliseconds(10));
}

std::chrono::milliseconds DeviceMonitor::interval() const {
  std::lock_guard lock(mutex_);
  return interval_;
}

void DeviceMonitor::start() {
  {
    std::lock_guard lock(mutex_);
    running_ = true;
    next_round_ = Clock::now();
  }
  wake_.notify_all();
}

void DeviceMonitor::stop() {
  std::lock_guard lock(mutex_);
  running_ = false;
}

bool DeviceMonitor::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

void DeviceMonitor::probeNow() {
  {
    std::lock_guard lock(mutex_);
    round_requested_ = true;
  }
  wake_.notify_all();
}

void DeviceMonitor::describe(const QString& address) {
  {
    std::lock_guard lock(mutex_);
    describe_requests_.push_back(address);
  }
  wake_.notify_all();
}

control::WorkerProbe DeviceMonitor::describeEndpoint(const control::WorkerEndpoint& endpoint,
                                                     std::chrono::milliseconds deadline) {
  std::shared_ptr<control::WorkerClient> client;
  {
    std::lock_guard lock(mutex_);
    auto& slot = clients_[endpoint.name + '@' + endpoint.address];
    // A new token (the user chose another, a local cluster made one) needs a new client.
    if (!slot || slot->endpoint().token != endpoint.token) slot = std::make_shared<control::WorkerClient>(endpoint);
    client = slot;
  }
  control::WorkerProbe probe;
  probe.endpoint = endpoint;
  try {
    probe.info = client->describe(deadline, control::Resend::Never);  // a probe reports what it finds
    probe.reachable = true;
  } catch (const std::exception& e) {
    probe.error = e.what();
  }
  return probe;
}

void DeviceMonitor::run() {
  std::unique_lock lock(mutex_);
  while (true) {
    const auto due = [&] {
      return quit_ || round_requested_ || !describe_requests_.empty() || (running_ && Clock::now() >= next_round_);
    };
    if (running_ && !round_requested_) {
      wake_.wait_until(lock, next_round_, due);
    } else {
      wake_.wait(lock, due);
    }
    if (quit_) return;
    const auto deadline = call_timeout_;

    if (!describe_requests_.empty()) {
      const QString address = describe_requests_.front();
      describe_requests_.pop_front();
      lock.unlock();
      // Named after its address until it says its name.
      const control::WorkerProbe probe = describeEndpoint({address.toStdString(), address.toStdString()}, deadline);
      qCDebug(lcDeviceMonitor) << "described" << address << (probe.reachable ? "ok" : probe.error.c_str());
      QMetaObject::invokeMethod(
          this, [this, address, probe] { Q_EMIT described(address, probe); }, Qt::QueuedConnection);
      lock.lock();
      continue;
    }
    if (!(round_requested_ || (running_ && Clock::now() >= next_round_))) continue;
    round_requested_ = false;
    next_round_ = Clock::now() + interval_;
    const std::vector<control::WorkerEndpoint> targets = targets_;
    lock.unlock();

    std::vector<control::WorkerProbe> probes(targets.size());
    std::vector<std::thread> callers;
    callers.reserve(targets.size());
    for (size_t i = 0; i < targets.size(); ++i) {
      callers.emplace_back([&, i] { probes[i] = describeEndpoint(targets[i], deadline); });
    }
    for (auto& caller : callers) caller.join();
    QMetaObject::invokeMethod(
        this, [this, probes = std::move(probes)] { Q_EMIT probed(probes); }, Qt::QueuedConnection);
    lock.lock();
  }
}

}  // namespace stagecraft::gui
