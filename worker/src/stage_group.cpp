#define USE_C10D_GLOO 1
#include "stage_group.h"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "worker_error.h"

namespace stagecraft::worker {

struct StageGroup::State {
  std::mutex mutex;
  std::condition_variable changed;
  bool connected = false;
  std::optional<std::string> failure;
  bool abandoned = false;  // a collective was left running: do not wait for its threads
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
  std::thread connector;
};

StageGroup::StageGroup(std::string store_address, std::string own_host, int rank, int size, std::string prefix,
                       std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout), state_(std::make_shared<State>()) {
  const auto colon = store_address.rfind(':');
  const std::string host = store_address.substr(0, colon);
  const int port = std::stoi(store_address.substr(colon + 1));
  state_->connector = std::thread([state = state_, host, port, own_host, rank, size, prefix, timeout] {
    try {
      c10d::TCPStoreOptions options;
      options.port = static_cast<std::uint16_t>(port);
      options.isServer = rank == 0;
      options.numWorkers = size;
      options.waitWorkers = false;
      options.timeout = timeout;
      auto tcp = c10::make_intrusive<c10d::TCPStore>(host, options);
      auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, tcp);
      auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(own_host));
      gloo_options->threads = 1;
      auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, gloo_options);
      std::lock_guard lock(state->mutex);
      state->store = tcp;
      state->group = group;
      state->connected = true;
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (const auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      std::lock_guard lock(state->mutex);
      state->failure = "the stage group (store " + host + ":" + std::to_string(port) + ", rank " +
                       std::to_string(rank) + " of " + std::to_string(size) + ") did not form: " + what;
    }
    state->changed.notify_all();
  });
}

StageGroup::~StageGroup() {
  bool settled;
  {
    std::lock_guard lock(state_->mutex);
    settled = !state_->abandoned && (state_->connected || state_->failure);
  }
  if (settled) {
    if (state_->connector.joinable()) state_->connector.join();
    return;
  }
  // Still forming, or a peer never joined a collective we left: the store and Gloo only
  // give up at their timeout, so let them do that off to the side.
  std::thread([state = state_] {
    if (state->connector.joinable()) state->connector.join();
    std::lock_guard lock(state->mutex);
    state->group.reset();
    state->store.reset();
  }).detach();
}

void StageGroup::waitConnected(const std::atomic<bool>& stop) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_ + std::chrono::seconds(1);
  std::unique_lock lock(state_->mutex);
  while (!state_->connected && !state_->failure) {
    if (stop) throw WorkerError(ErrorCode::Aborted, "stopped while the stage group was forming");
    if (std::chrono::steady_clock::now() > deadline) {
      throw WorkerError(ErrorCode::DeadlineExceeded, "the stage group did not form in time");
    }
    state_->changed.wait_for(lock, std::chrono::milliseconds(50));
  }
  if (state_->failure) throw WorkerError(ErrorCode::Unavailable, *state_->failure);
}

void StageGroup::allReduceSum(torch::Tensor& tensor, const std::atomic<bool>& stop) {
  if (size_ == 1) return;
  waitConnected(stop);
  std::vector<at::Tensor> tensors{tensor};
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  auto work = state_->group->allreduce(tensors, options);
  // Wait through the future so a Stop can leave without waiting for Gloo's timeout.
  struct Done {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
  };
  auto done = std::make_shared<Done>();
  work->getFuture()->addCallback([done](c10::ivalue::Future&) {
    {
      std::lock_guard lock(done->mutex);
      done->done = true;
    }
    done->cv.notify_all();
  });
  {
    std::unique_lock lock(done->mutex);
    while (!done->done) {
      if (stop) {
        std::lock_guard state_lock(state_->mutex);
        state_->abandoned = true;
        throw WorkerError(ErrorCode::Aborted, "stopped during the all-reduce");
      }
      done->cv.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  if (auto error = work->exception()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (const auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      throw WorkerError(ErrorCode::Unavailable, "all-reduce in the stage group failed: " + what);
    }
  }
  tensor = tensors[0];
}

}  // namespace stagecraft::worker
