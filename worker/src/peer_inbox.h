#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "stagecraft/v1/worker.pb.h"
#include "worker_error.h"

namespace stagecraft::worker {

/// What a stage may be pushed: by whom, which samples, of which shape. Anything else is
/// refused with INVALID_ARGUMENT before it is held.
/// The most micro-batches one evaluation pass may have (Evaluate refuses more).
constexpr int kMaxEvalMicroBatches = 4096;

struct InboxRules {
  /// One neighbour's slice of every micro-batch: activations from a member of the previous
  /// group, or gradients from a member of the next.
  struct Flow {
    std::string sender;
    bool gradient = false;
    int sample_begin = 0;                   ///< within the micro-batch
    int samples = 0;
    std::vector<std::int64_t> sample_shape; ///< one sample's; the tensor is [samples, ...] float32
  };
  std::vector<Flow> flows;
  int microbatches = 0;
  /// The most bytes of tensor data held at once; a peer running ahead past it is refused
  /// (RESOURCE_EXHAUSTED) instead of growing the inbox without bound.
  std::size_t max_bytes = 0;
};

/// Activation and gradient slices that peers pushed, until the stage takes them.
/// Slices are keyed by (step, micro-batch, gradient, sample_begin): a peer that resends a
/// slice after a restart replaces the old copy (which, for an unfinished step, is equal).
class PeerInbox {
 public:
  /// Starts accepting slices of `job` that `rules` allow and drops everything held.
  void open(const std::string& job, InboxRules rules);
  /// open() again with the job and rules it had (after a failed or stopped run).
  void reopen();
  /// Stops accepting; waiters and later put()s fail with `reason` until open() again.
  void abort(const WorkerError& reason);

  /// Files a slice. Throws WorkerError: FailedPrecondition for another job, InvalidArgument
  /// for a slice the rules do not allow (a sender that is no neighbour, samples it does not
  /// send, a wrong shape, dtype or size), ResourceExhausted past max_bytes, or the abort
  /// reason. Values that are not finite are taken, and counted (nonFiniteSlices()): they are
  /// a diverging peer's, and the coordinator's divergence guard sees them in the loss.
  /// `finite`: whether its values are all finite, when the caller has checked them as they
  /// arrived (PieceAssembler); scanned here when not given.
  void put(v1::PeerTensor tensor, std::optional<bool> finite = std::nullopt);

  /// Slices taken in that held a NaN or an infinity, since open(); the stage logs each new
  /// one to the coordinator.
  std::size_t nonFiniteSlices() const;

  /// Waits until slices covering samples [begin, begin + count) of a micro-batch have come
  /// and removes them, in sample order. Slices of earlier steps are dropped as stale.
  /// Throws WorkerError: the abort reason, or DeadlineExceeded naming what is missing.
  /// `eval`: the activations of the evaluation pass after `step` steps.
  std::vector<v1::PeerTensor> take(std::int64_t step, int micro_batch, bool gradient, int begin,
                                   int count, std::chrono::milliseconds timeout, bool eval = false);

  /// Slices held (for tests and logs).
  size_t size() const;

 private:
  using Key = std::tuple<std::int64_t, bool, int, bool, int>;  // step, eval, micro-batch, gradient, sample_begin
  /// Samples of [begin, begin + count) covered by the held slices, or -1 when they overlap
  /// the range only partly or stick out of it.
  int coveredLocked(std::int64_t step, bool eval, int micro_batch, bool gradient, int begin, int count) const;

  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::string job_;
  bool open_ = false;
  std::optional<WorkerError> aborted_;
  std::map<Key, v1::PeerTensor> slices_;
  InboxRules rules_;
  std::size_t held_bytes_ = 0;
  std::size_t non_finite_ = 0;
};

/// Why `tensor` breaks `rules` (one sentence naming the sender), or empty when it does not.
std::string inboxRefusal(const v1::PeerTensor& tensor, const InboxRules& rules);

/// Whether every float32 in `bytes` (native byte order; a trailing partial word is ignored)
/// is finite: no NaN and no infinity.
bool allFiniteFloats(std::string_view bytes);

/// Copies `bytes` bytes from `from` to `to` (not overlapping) and returns whether every whole
/// float32 word copied is finite (allFiniteFloats of the copy), checked as it is copied.
bool copyFiniteFloats(char* to, const char* from, std::size_t bytes);

}  // namespace stagecraft::worker
