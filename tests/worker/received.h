#pragma once
// What a test's receiver (a Push stream, a tensor channel) was handed, in order, for the
// test's thread to wait for.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace stagecraft::worker {

template <class T>
class Received {
 public:
  void add(T item) {
    std::lock_guard lock(mutex_);
    got_.push_back(std::move(item));
    arrived_.notify_all();
  }
  /// What came, once `count` have (or after 30 s, whatever came by then).
  std::vector<T> waitFor(size_t count) {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, std::chrono::seconds(30), [&] { return got_.size() >= count; });
    return got_;
  }
  size_t size() const {
    std::lock_guard lock(mutex_);
    return got_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<T> got_;
};

}  // namespace stagecraft::worker
