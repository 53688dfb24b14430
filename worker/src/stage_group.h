#pragma once
// The data-parallel group of a stage: a store kept by rank 0's worker (group_store.h) and
// a Gloo process group, connected in the background so Deploy never waits for the other
// members.

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "group_store.h"

namespace stagecraft::worker {

class StageGroup {
 public:
  /// Starts connecting rank `rank` of `size` through `rendezvous` (rank 0's own store, or
  /// rank 0's worker); `own_host` is the address Gloo binds to. Returns at once.
  StageGroup(GroupRendezvous rendezvous, std::string own_host, int rank, int size, std::string prefix,
             std::chrono::milliseconds timeout);
  ~StageGroup();
  StageGroup(const StageGroup&) = delete;
  StageGroup& operator=(const StageGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// Sums `tensor` in place across the group. Throws WorkerError: Unavailable when the
  /// group could not form or a member failed, DeadlineExceeded after the timeout,
  /// Aborted as soon as `stop` is set (the collective is abandoned).
  void allReduceSum(torch::Tensor& tensor, const std::atomic<bool>& stop);

  /// An all-reduce started by startAllReduceSum and not yet waited for.
  struct Pending;
  /// Starts summing `tensor` (dense, contiguous) in place across the group and returns at
  /// once; Gloo's threads run it beside whatever the caller does next. Every member must
  /// start the same collectives in the same order. Throws as allReduceSum while the group
  /// is still forming.
  std::shared_ptr<Pending> startAllReduceSum(torch::Tensor tensor, const std::atomic<bool>& stop);
  /// Waits for `pending`; throws as allReduceSum.
  void wait(Pending& pending, const std::atomic<bool>& stop);
  /// Started collectives will not be waited for: the group is not to wait for Gloo's
  /// threads when it goes (they give up at their timeout).
  void abandon();

 private:
  struct State;
  void waitConnected(const std::atomic<bool>& stop);

  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<State> state_;
};

}  // namespace stagecraft::worker
