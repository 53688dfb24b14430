#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "stagecraft/v1/worker.pb.h"
#include "worker_error.h"

namespace stagecraft::worker {

/// Activation and gradient slices that peers pushed, until the stage takes them.
/// Slices are keyed by (step, micro-batch, gradient, sample_begin): a peer that resends a
/// slice after a restart replaces the old copy (which, for an unfinished step, is equal).
class PeerInbox {
 public:
  /// Starts accepting slices of `job` and drops everything held.
  void open(const std::string& job);
  /// Stops accepting; waiters and later put()s fail with `reason` until open() again.
  void abort(const WorkerError& reason);

  /// Files a slice. Throws WorkerError: FailedPrecondition for another job, or the abort
  /// reason.
  void put(v1::PeerTensor tensor);

  /// Waits until slices covering samples [begin, begin + count) of a micro-batch have come
  /// and removes them, in sample order. Slices of earlier steps are dropped as stale.
  /// Throws WorkerError: the abort reason, or DeadlineExceeded naming what is missing.
  std::vector<v1::PeerTensor> take(std::int64_t step, int micro_batch, bool gradient, int begin,
                                   int count, std::chrono::milliseconds timeout);

  /// Slices held (for tests and logs).
  size_t size() const;

 private:
  using Key = std::tuple<std::int64_t, int, bool, int>;  // step, micro-batch, gradient, sample_begin
  /// Samples of [begin, begin + count) covered by the held slices, or -1 when they overlap
  /// the range only partly or stick out of it.
  int coveredLocked(std::int64_t step, int micro_batch, bool gradient, int begin, int count) const;

  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::string job_;
  bool open_ = false;
  std::optional<WorkerError> aborted_;
  std::map<Key, v1::PeerTensor> slices_;
};

}  // namespace stagecraft::worker
