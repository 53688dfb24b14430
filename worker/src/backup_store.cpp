#include "backup_store.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

#include "control/cluster_token.h"
#include "peer_outbox.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

v1::BackupRef refOf(const v1::StageWeights& state, const std::string& held_for) {
  v1::BackupRef ref;
  ref.set_job(state.job());
  ref.set_layer_begin(state.layer_begin());
  ref.set_layer_end(state.layer_end());
  ref.set_step(state.step());
  ref.set_held_for(held_for);
  return ref;
}

/// Appends `state` to `states`, replacing one of the same step, and keeps the newest `limit`.
void push(std::deque<StateCopy>& states, StateCopy state, std::size_t limit) {
  std::erase_if(states, [&](const StateCopy& s) { return s->step() == state->step(); });
  states.push_back(std::move(state));
  std::sort(states.begin(), states.end(), [](const StateCopy& a, const StateCopy& b) { return a->step() < b->step(); });
  while (states.size() > limit) states.pop_front();
}

}  // namespace

void BackupStore::keep(StateCopy state) {
  std::lock_guard lock(mutex_);
  const Key key{state->job(), state->layer_begin(), state->layer_end()};
  std::erase_if(own_, [&](const auto& entry) { return std::get<0>(entry.first) != std::get<0>(key); });
  push(own_[key], std::move(state), kOwnCopies);
}

void BackupStore::hold(StateCopy state, const std::string& sender) {
  if (state->job().empty()) throw WorkerError(ErrorCode::InvalidArgument, "a backup must name its job");
  if (state->layer_begin() < 0 || state->layer_end() <= state->layer_begin()) {
    throw WorkerError(ErrorCode::InvalidArgument, "a backup of layers [" + std::to_string(state->layer_begin()) + ", " +
                                                      std::to_string(state->layer_end()) + ") holds no layer");
  }
  std::lock_guard lock(mutex_);
  const Key key{state->job(), state->layer_begin(), state->layer_end()};
  Held& held = held_[key];
  held.sender = sender;
  push(held.states, std::move(state), kHeldCopies);
}

std::vector<v1::BackupRef> BackupStore::list(const std::string& job) const {
  std::lock_guard lock(mutex_);
  std::vector<v1::BackupRef> out;
  for (const auto& [key, states] : own_) {
    if (!job.empty() && std::get<0>(key) != job) continue;
    for (auto it = states.rbegin(); it != states.rend(); ++it) out.push_back(refOf(**it, ""));
  }
  for (const auto& [key, held] : held_) {
    if (!job.empty() && std::get<0>(key) != job) continue;
    for (auto it = held.states.rbegin(); it != held.states.rend(); ++it) out.push_back(refOf(**it, held.sender));
  }
  return out;
}

StateCopy BackupStore::find(const v1::BackupRef& ref) const {
  std::lock_guard lock(mutex_);
  const Key key{ref.job(), ref.layer_begin(), ref.layer_end()};
  const auto pick = [&](const std::deque<StateCopy>& states) -> StateCopy {
    for (const auto& s : states) {
      if (s->step() == ref.step()) return s;
    }
    return nullptr;
  };
  if (const auto it = own_.find(key); it != own_.end()) {
    if (auto s = pick(it->second)) return s;
  }
  if (const auto it = held_.find(key); it != held_.end()) return pick(it->second.states);
  return nullptr;
}

void BackupStore::keepOnly(const std::string& job) {
  std::lock_guard lock(mutex_);
  std::erase_if(own_, [&](const auto& entry) { return std::get<0>(entry.first) != job; });
  std::erase_if(held_, [&](const auto& entry) { return std::get<0>(entry.first) != job; });
}

BackupSender::BackupSender(std::string sender_name, std::string token, LinkPacer* link,
                           std::function<void(const std::string& job, const std::string& why)> on_failure)
    : sender_name_(std::move(sender_name)), token_(std::move(token)), link_(link), on_failure_(std::move(on_failure)) {
  thread_ = std::thread([this] { run(); });
}

BackupSender::~BackupSender() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BackupSender::offer(StateCopy state, const std::string& address) {
  {
    std::lock_guard lock(mutex_);
    pending_ = std::move(state);
    pending_address_ = address;
  }
  changed_.notify_all();
}

void BackupSender::run() {
  std::string channel_address;
  std::unique_ptr<v1::Worker::Stub> stub;
  for (;;) {
    StateCopy state;
    std::string address;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return closing_ || pending_; });
      if (closing_) return;
      state = std::move(pending_);
      pending_.reset();
      address = pending_address_;
    }
    if (link_ && link_->paced()) {
      // A megabyte at a time, so activations queued meanwhile go between the pieces
      // instead of waiting behind a whole model.
      constexpr std::size_t kPiece = 1 << 20;
      for (std::size_t left = state->ByteSizeLong(); left > 0;) {
        const std::size_t piece = std::min(left, kPiece);
        std::this_thread::sleep_until(link_->reserve(piece));
        left -= piece;
        std::lock_guard lock(mutex_);
        if (closing_) return;
      }
    }
    if (!stub || address != channel_address) {
      stub = v1::Worker::NewStub(makeChannel(address));
      channel_address = address;
    }
    grpc::ClientContext context;
    context.AddMetadata("stagecraft-sender", sender_name_);
    if (!token_.empty()) context.AddMetadata(control::kTokenMetadataKey, token_);
    // A neighbour that cannot take a stage's state within this long is of no use as its
    // backup; the next step's state is offered anyway.
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::StoreBackupReply reply;
    const grpc::Status status = stub->StoreBackup(&context, *state, &reply);
    const bool first_failure = !status.ok() && !failing_;
    failing_ = !status.ok();
    if (first_failure && on_failure_) {
      on_failure_(state->job(), "backup of step " + std::to_string(state->step()) + " to " + address +
                                    " failed (" + status.error_message() + "); later steps are still offered");
    }
  }
}

}  // namespace stagecraft::worker
