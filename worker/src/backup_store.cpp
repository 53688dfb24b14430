#include "backup_store.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>

#include <algorithm>

#include "control/cluster_token.h"
#include "io/error.h"
#include "io/stage_weights.h"
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

void releaseState(void* owner) { delete static_cast<StateCopy*>(owner); }

/// StoreBackup's request for `state`, as bytes: the tensors' data go on the wire from where
/// they lie in the copy (each slice holds the copy alive) instead of being serialised into a
/// new buffer of the whole state, a pass over tens of megabytes and their fresh pages. The
/// receiver parses an ordinary StageWeights (each Tensor's data comes after its other fields).
grpc::ByteBuffer wireState(const StateCopy& state) {
  namespace wire = google::protobuf::internal;
  using google::protobuf::io::CodedOutputStream;
  using Lite = wire::WireFormatLite;
  const std::uint32_t tensor_tag = Lite::MakeTag(v1::StageWeights::kTensorsFieldNumber, Lite::WIRETYPE_LENGTH_DELIMITED);
  const std::uint32_t data_tag = Lite::MakeTag(v1::Tensor::kDataFieldNumber, Lite::WIRETYPE_LENGTH_DELIMITED);
  const auto varint = [](std::string& out, std::uint64_t value) {
    std::uint8_t bytes[10];
    const std::uint8_t* end = CodedOutputStream::WriteVarint64ToArray(value, bytes);
    out.append(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(end - bytes));
  };
  std::vector<grpc::Slice> slices;
  std::string head;  // the bytes up to the next tensor's data
  {
    v1::StageWeights rest;
    rest.set_layer_begin(state->layer_begin());
    rest.set_layer_end(state->layer_end());
    rest.set_step(state->step());
    rest.set_job(state->job());
    head = rest.SerializeAsString();
  }
  for (const v1::Tensor& tensor : state->tensors()) {
    v1::Tensor meta;
    meta.set_name(tensor.name());
    *meta.mutable_shape() = tensor.shape();
    meta.set_dtype(tensor.dtype());
    const std::size_t data = tensor.data().size();
    const std::size_t inner = meta.ByteSizeLong() + CodedOutputStream::VarintSize32(data_tag) +
                              CodedOutputStream::VarintSize64(data) + data;
    varint(head, tensor_tag);
    varint(head, inner);
    meta.AppendToString(&head);
    varint(head, data_tag);
    varint(head, data);
    if (data == 0) continue;
    slices.emplace_back(head.data(), head.size());  // copied: a few bytes
    head.clear();
    slices.emplace_back(const_cast<char*>(tensor.data().data()), data, releaseState, new StateCopy(state));
  }
  if (!head.empty()) slices.emplace_back(head.data(), head.size());
  return grpc::ByteBuffer(slices.data(), slices.size());
}

using Pinned = std::pair<std::int64_t, std::int64_t>;  // steps to keep (0: none)

/// Drops the oldest states beyond `limit`, never those of the `pinned` steps, so they and
/// the newest others stay: the memory the cost model counts.
void prune(std::deque<StateCopy>& states, std::size_t limit, Pinned pinned) {
  const auto unpinned = [&](const StateCopy& s) {
    return s->step() <= 0 || (s->step() != pinned.first && s->step() != pinned.second);
  };
  while (states.size() > limit) {
    const auto oldest = std::find_if(states.begin(), states.end(), unpinned);
    if (oldest == states.end()) break;
    states.erase(oldest);
  }
}

/// Appends `state` to `states`, replacing one of the same step, and prunes to `limit`.
void push(std::deque<StateCopy>& states, StateCopy state, std::size_t limit, Pinned pinned) {
  std::erase_if(states, [&](const StateCopy& s) { return s->step() == state->step(); });
  states.push_back(std::move(state));
  std::sort(states.begin(), states.end(), [](const StateCopy& a, const StateCopy& b) { return a->step() < b->step(); });
  prune(states, limit, pinned);
}

}  // namespace

void BackupStore::keep(StateCopy state) {
  std::lock_guard lock(mutex_);
  const Key key{state->job(), state->layer_begin(), state->layer_end()};
  std::erase_if(own_, [&](const auto& entry) { return std::get<0>(entry.first) != std::get<0>(key); });
  push(own_[key], std::move(state), kOwnCopies, pinnedFor(std::get<0>(key)));
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
  push(held.states, std::move(state), kHeldCopies, pinnedFor(std::get<0>(key)));
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

void BackupStore::pin(const std::string& job, std::int64_t keep, std::int64_t ship) {
  std::lock_guard lock(mutex_);
  pinned_job_ = job;  // the steps pinned before are ordinary copies now, pruned in turn
  keep_step_ = keep;
  ship_step_ = ship;
}

bool BackupStore::mustShip(const std::string& job, std::int64_t step) const {
  std::lock_guard lock(mutex_);
  return step > 0 && job == pinned_job_ && step == ship_step_;
}

StateCopy BackupStore::own(const std::string& job, std::int64_t step) const {
  std::lock_guard lock(mutex_);
  for (const auto& [key, states] : own_) {
    if (std::get<0>(key) != job) continue;
    for (const auto& s : states) {
      if (s->step() == step) return s;
    }
  }
  return nullptr;
}

std::pair<std::int64_t, std::int64_t> BackupStore::pinnedFor(const std::string& job) const {
  return job == pinned_job_ ? std::pair{keep_step_, ship_step_} : std::pair<std::int64_t, std::int64_t>{0, 0};
}

void BackupStore::keepOnly(const std::string& job) {
  std::lock_guard lock(mutex_);
  std::erase_if(own_, [&](const auto& entry) { return std::get<0>(entry.first) != job; });
  std::erase_if(held_, [&](const auto& entry) { return std::get<0>(entry.first) != job; });
}

v1::StageWeights restoreState(const v1::StageAssignment& assignment, const BackupStore& store,
                              const std::string& token, std::chrono::milliseconds deadline) {
  const int n = assignment.restore_size();
  std::vector<StateCopy> pieces(n);
  std::vector<std::string> errors(n);
  const auto fetch = [&](int i) {
    const v1::BackupSource& source = assignment.restore(i);
    const v1::BackupRef& ref = source.ref();
    const std::string what = "the state of layers [" + std::to_string(ref.layer_begin()) + ", " +
                             std::to_string(ref.layer_end()) + ") after step " + std::to_string(ref.step());
    if (source.address().empty()) {
      pieces[i] = store.find(ref);
      if (!pieces[i]) errors[i] = what + " is no longer held here";
      return;
    }
    // Only the layers this stage needs of it travel.
    v1::BackupRef part = ref;
    part.set_slice_begin(std::max(ref.layer_begin(), assignment.layer_begin()));
    part.set_slice_end(std::min(ref.layer_end(), assignment.layer_end()));
    auto stub = v1::Worker::NewStub(makeChannel(source.address()));
    grpc::ClientContext context;
    if (!token.empty()) context.AddMetadata(control::kTokenMetadataKey, token);
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    auto state = std::make_shared<v1::StageWeights>();
    const grpc::Status status = stub->GetBackup(&context, part, state.get());
    if (!status.ok()) {
      errors[i] = "fetching " + what + " from worker '" + source.name() + "' (" + source.address() +
                  ") failed: " + status.error_message();
    } else if (state->job() != ref.job() || state->step() != ref.step() ||
               state->layer_begin() != part.slice_begin() || state->layer_end() != part.slice_end()) {
      errors[i] = "worker '" + source.name() + "' sent another state for " + what;
    } else {
      pieces[i] = std::move(state);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    if (assignment.restore(i).address().empty()) {
      fetch(i);
    } else {
      threads.emplace_back(fetch, i);
    }
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < n; ++i) {
    if (!errors[i].empty()) {
      throw WorkerError(assignment.restore(i).address().empty() ? ErrorCode::NotFound : ErrorCode::Unavailable,
                        errors[i]);
    }
  }
  std::vector<const v1::StageWeights*> states;
  for (const auto& p : pieces) states.push_back(p.get());
  try {
    v1::StageWeights joined = control::joinLayers(states, assignment.layer_begin(), assignment.layer_end());
    if (joined.step() != assignment.start_step()) {
      throw Error("the state is of step " + std::to_string(joined.step()) + ", the assignment starts at step " +
                  std::to_string(assignment.start_step()));
    }
    return joined;
  } catch (const Error& e) {
    throw WorkerError(ErrorCode::InvalidArgument, std::string("restore: ") + e.what());
  }
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

void BackupSender::offer(StateCopy state, const std::string& address, bool must_arrive) {
  {
    std::lock_guard lock(mutex_);
    kept_job_ = state->job();  // only the job training here offers copies
    if (must_arrive) {
      const std::pair<std::string, std::int64_t> which{state->job(), state->step()};
      const bool sent = in_flight_ == which || std::find(delivered_.begin(), delivered_.end(), which) != delivered_.end();
      if (sent || (pending_must_ && pending_must_->job() == which.first && pending_must_->step() == which.second)) return;
      pending_must_ = std::move(state);
      pending_must_address_ = address;
    } else {
      pending_ = std::move(state);
      pending_address_ = address;
    }
  }
  changed_.notify_all();
}

void BackupSender::keepOnly(const std::string& job) {
  std::lock_guard lock(mutex_);
  kept_job_ = job;
  if (pending_ && pending_->job() != job) pending_.reset();
  if (pending_must_ && pending_must_->job() != job) pending_must_.reset();
  if (sending_ && in_flight_.first != job) sending_->TryCancel();
}

void BackupSender::run() {
  static const grpc::internal::RpcMethod kStoreBackup("/stagecraft.v1.Worker/StoreBackup",
                                                      grpc::internal::RpcMethod::NORMAL_RPC);
  std::string channel_address;
  std::shared_ptr<grpc::Channel> channel;
  for (;;) {
    StateCopy state;
    std::string address;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return closing_ || pending_ || pending_must_; });
      if (closing_) return;
      if (pending_must_) {
        state = std::move(pending_must_);
        pending_must_.reset();
        address = pending_must_address_;
      } else {
        state = std::move(pending_);
        pending_.reset();
        address = pending_address_;
      }
      // The newer state waiting behind one that must arrive is of no use once it is older.
      if (pending_ && pending_->job() == state->job() && pending_->step() <= state->step()) pending_.reset();
      in_flight_ = {state->job(), state->step()};
    }
    // Paced in pieces, so activations queued meanwhile go between them instead of waiting
    // behind a whole model.
    const auto given_up = [&] {
      std::lock_guard lock(mutex_);
      return closing_ || (!kept_job_.empty() && state->job() != kept_job_);
    };
    if ((link_ && !link_->send(state->ByteSizeLong(), given_up)) || given_up()) {
      std::lock_guard lock(mutex_);
      in_flight_ = {};
      if (closing_) return;
      continue;
    }
    if (!channel || address != channel_address) {
      channel = makeChannel(address, /*own_connection=*/true);
      channel_address = address;
    }
    grpc::ClientContext context;
    context.AddMetadata("stagecraft-sender", sender_name_);
    if (!token_.empty()) context.AddMetadata(control::kTokenMetadataKey, token_);
    // A neighbour that cannot take a stage's state within this long is of no use as its
    // backup; the next step's state is offered anyway.
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::StoreBackupReply reply;
    {
      std::lock_guard lock(mutex_);
      sending_ = &context;
    }
    const grpc::Status status = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, v1::StoreBackupReply>(
        channel.get(), kStoreBackup, &context, wireState(state), &reply);
    {
      std::lock_guard lock(mutex_);
      sending_ = nullptr;
      in_flight_ = {};
      if (status.ok()) {
        delivered_.emplace_back(state->job(), state->step());
        while (delivered_.size() > 8) delivered_.pop_front();
      }
    }
    if (!status.ok() && given_up()) continue;  // cancelled here: not the neighbour's failure
    const bool first_failure = !status.ok() && !failing_;
    failing_ = !status.ok();
    if (first_failure && on_failure_) {
      on_failure_(state->job(), "backup of step " + std::to_string(state->step()) + " to " + address +
                                    " failed (" + status.error_message() + "); later steps are still offered");
    }
  }
}

}  // namespace stagecraft::worker
