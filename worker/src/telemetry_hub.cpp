#include "telemetry_hub.h"

#include <algorithm>

namespace stagecraft::worker {

std::optional<v1::TelemetryEvent> TelemetryHub::Subscription::next(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return closed_ || !queue_.empty(); });
  if (queue_.empty()) return std::nullopt;
  v1::TelemetryEvent event = std::move(queue_.front());
  queue_.pop_front();
  event.set_dropped(dropped_);
  return event;
}

bool TelemetryHub::Subscription::closed() const {
  std::lock_guard lock(mutex_);
  return closed_ && queue_.empty();
}

std::shared_ptr<TelemetryHub::Subscription> TelemetryHub::subscribe() {
  auto subscription = std::make_shared<Subscription>();
  std::lock_guard lock(mutex_);
  subscription->closed_ = closed_;
  subscribers_.push_back(subscription);
  return subscription;
}

void TelemetryHub::unsubscribe(const std::shared_ptr<Subscription>& subscription) {
  std::lock_guard lock(mutex_);
  std::erase(subscribers_, subscription);
}

size_t TelemetryHub::subscribers() const {
  std::lock_guard lock(mutex_);
  return subscribers_.size();
}

void TelemetryHub::publish(v1::TelemetryEvent event) {
  event.set_worker(worker_);
  std::lock_guard lock(mutex_);
  for (const auto& s : subscribers_) {
    {
      std::lock_guard sub_lock(s->mutex_);
      if (s->queue_.size() >= kMaxQueued) {
        const auto droppable = std::find_if(s->queue_.begin(), s->queue_.end(), [](const v1::TelemetryEvent& e) {
          return e.event_case() == v1::TelemetryEvent::kIteration || e.event_case() == v1::TelemetryEvent::kLog;
        });
        if (droppable != s->queue_.end()) {
          s->queue_.erase(droppable);
          ++s->dropped_;
        }
      }
      s->queue_.push_back(event);
    }
    s->ready_.notify_all();
  }
}

void TelemetryHub::log(const std::string& job, const std::string& line) {
  v1::TelemetryEvent event;
  event.set_job(job);
  event.set_log(line);
  publish(std::move(event));
}

void TelemetryHub::error(const std::string& job, const std::string& message) {
  v1::TelemetryEvent event;
  event.set_job(job);
  event.set_error(message);
  publish(std::move(event));
}

void TelemetryHub::close() {
  std::lock_guard lock(mutex_);
  closed_ = true;
  for (const auto& s : subscribers_) {
    {
      std::lock_guard sub_lock(s->mutex_);
      s->closed_ = true;
    }
    s->ready_.notify_all();
  }
}

}  // namespace stagecraft::worker
