#include "peer_inbox.h"

#include <cstdio>
#include <limits>

namespace stagecraft::worker {

void PeerInbox::open(const std::string& job) {
  {
    std::lock_guard lock(mutex_);
    job_ = job;
    open_ = true;
    aborted_.reset();
    slices_.clear();
  }
  arrived_.notify_all();
}

void PeerInbox::abort(const WorkerError& reason) {
  {
    std::lock_guard lock(mutex_);
    aborted_ = reason;
    slices_.clear();
  }
  arrived_.notify_all();
}

void PeerInbox::put(v1::PeerTensor tensor) {
  {
    std::lock_guard lock(mutex_);
    if (aborted_) throw *aborted_;
    if (!open_) throw WorkerError(ErrorCode::FailedPrecondition, "not deployed: no stage takes peer tensors");
    if (tensor.job() != job_) {
      throw WorkerError(ErrorCode::FailedPrecondition,
                        "tensor of job '" + tensor.job() + "' but this worker runs job '" + job_ + "'");
    }
    // The end of the range must fit an int too: take() adds the samples up from the begin.
    if (tensor.samples() <= 0 || tensor.sample_begin() < 0 ||
        tensor.samples() > std::numeric_limits<int>::max() - tensor.sample_begin() || tensor.micro_batch() < 0 ||
        tensor.step() < 0) {
      throw WorkerError(ErrorCode::InvalidArgument, "peer tensor from '" + tensor.sender() +
                                                         "' has a bad step, micro-batch or sample range");
    }
    Key key{tensor.step(), tensor.micro_batch(), tensor.gradient(), tensor.sample_begin()};
    slices_[key] = std::move(tensor);
  }
  arrived_.notify_all();
}

int PeerInbox::coveredLocked(std::int64_t step, int micro_batch, bool gradient, int begin, int count) const {
  int at = begin;
  for (auto it = slices_.lower_bound(Key{step, micro_batch, gradient, begin});
       it != slices_.end() && std::get<0>(it->first) == step && std::get<1>(it->first) == micro_batch &&
       std::get<2>(it->first) == gradient && std::get<3>(it->first) == at && at < begin + count;
       ++it) {
    at += it->second.samples();
  }
  return at - begin;
}

std::vector<v1::PeerTensor> PeerInbox::take(std::int64_t step, int micro_batch, bool gradient, int begin,
                                            int count, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  slices_.erase(slices_.begin(), slices_.lower_bound(Key{step, 0, false, 0}));
  const bool done = arrived_.wait_for(lock, timeout, [&] {
    return aborted_.has_value() || coveredLocked(step, micro_batch, gradient, begin, count) >= count;
  });
  if (aborted_) throw *aborted_;
  if (!done) {
    const int have = coveredLocked(step, micro_batch, gradient, begin, count);
    char text[200];
    std::snprintf(text, sizeof text, "no %s for samples %d..%d of micro-batch %d of step %lld within %.1f s",
                  gradient ? "gradients" : "activations", begin + have, begin + count - 1, micro_batch,
                  static_cast<long long>(step), static_cast<double>(timeout.count()) / 1000.0);
    throw WorkerError(ErrorCode::DeadlineExceeded, text);
  }
  std::vector<v1::PeerTensor> out;
  int at = begin;
  while (at < begin + count) {
    auto it = slices_.find(Key{step, micro_batch, gradient, at});
    at += it->second.samples();
    out.push_back(std::move(it->second));
    slices_.erase(it);
  }
  if (at != begin + count) {
    throw WorkerError(ErrorCode::InvalidArgument, "peer slices of micro-batch " + std::to_string(micro_batch) +
                                                      " stick out of samples " + std::to_string(begin) + ".." +
                                                      std::to_string(begin + count - 1));
  }
  return out;
}

size_t PeerInbox::size() const {
  std::lock_guard lock(mutex_);
  return slices_.size();
}

}  // namespace stagecraft::worker
