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

 private:
  struct State;
  void waitConnected(const std::atomic<bool>& stop);

  int rank_, size_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<State> state_;
};

}  // namespace stagecraft::worker
