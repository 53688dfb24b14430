#define USE_C10D_GLOO 1
#include "stage_group.h"

#include <grpcpp/grpcpp.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "control/cluster_token.h"
#include "peer_outbox.h"
#include "stagecraft/v1/group_store.grpc.pb.h"
#include "status_mapping.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

// What a group's store holds is Gloo's rendezvous: a few addresses per rank.
constexpr std::size_t kMaxKeyBytes = 512;
constexpr std::size_t kMaxValueBytes = 1 << 20;
constexpr int kMaxKeysPerCall = 1024;
constexpr std::int64_t kMaxKeys = 4096;

std::vector<std::uint8_t> bytesOf(const std::string& s) { return {s.begin(), s.end()}; }
std::string stringOf(const std::vector<std::uint8_t>& v) { return {v.begin(), v.end()}; }

/// The rank-0 side: c10d's in-memory store, and the checks a request from the network needs.
class HashGroupStore final : public GroupStoreHost {
 public:
  explicit HashGroupStore(std::chrono::milliseconds max_wait)
      : max_wait_(max_wait), store_(c10::make_intrusive<c10d::HashStore>()) {
    store_->setTimeout(max_wait);
  }

  c10::intrusive_ptr<c10d::Store> store() const { return store_; }

  v1::GroupStoreReply call(const v1::GroupStoreRequest& r) override {
    using Op = v1::GroupStoreRequest;
    if (r.keys_size() == 0 || r.keys_size() > kMaxKeysPerCall) invalid("a store call needs 1 to 1024 keys");
    for (const auto& key : r.keys()) {
      if (key.empty() || key.size() > kMaxKeyBytes) invalid("a store key must be 1 to 512 bytes");
    }
    if (r.value().size() > kMaxValueBytes || r.expected().size() > kMaxValueBytes) {
      invalid("a store value must be at most 1 MiB");
    }
    const std::string& key = r.keys(0);
    const std::vector<std::string> keys(r.keys().begin(), r.keys().end());
    const auto wait = std::chrono::milliseconds(std::clamp<std::int64_t>(r.timeout_ms(), 1, max_wait_.count()));
    v1::GroupStoreReply reply;
    try {
      switch (r.op()) {
        case Op::SET:
          room();
          store_->set(key, bytesOf(r.value()));
          break;
        case Op::GET:
          store_->wait({key}, wait);
          reply.set_value(stringOf(store_->get(key)));
          break;
        case Op::ADD:
          room();
          reply.set_number(store_->add(key, r.amount()));
          break;
        case Op::COMPARE_SET:
          room();
          reply.set_value(stringOf(store_->compareSet(key, bytesOf(r.expected()), bytesOf(r.value()))));
          break;
        case Op::DELETE_KEY:
          reply.set_result(store_->deleteKey(key));
          break;
        case Op::CHECK:
          reply.set_result(store_->check(keys));
          break;
        case Op::NUM_KEYS:
          reply.set_number(store_->getNumKeys());
          break;
        case Op::WAIT:
          store_->wait(keys, wait);
          break;
        default:
          invalid("unknown store operation " + std::to_string(static_cast<int>(r.op())));
      }
    } catch (const WorkerError&) {
      throw;
    } catch (const std::exception& e) {
      // c10d says "Wait timeout" after its backtrace-free first line.
      std::string what = e.what();
      if (const auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      throw WorkerError(ErrorCode::DeadlineExceeded, "group store: " + what);
    }
    return reply;
  }

 private:
  [[noreturn]] static void invalid(const std::string& why) { throw WorkerError(ErrorCode::InvalidArgument, why); }
  void room() {
    if (store_->getNumKeys() >= kMaxKeys) {
      throw WorkerError(ErrorCode::ResourceExhausted, "the group store holds 4096 keys, its limit");
    }
  }

  std::chrono::milliseconds max_wait_;
  c10::intrusive_ptr<c10d::HashStore> store_;
};

/// The other ranks' side: each operation is a GroupStore call to rank 0's worker, with the
/// cluster token (and TLS when this worker talks TLS).
class RemoteGroupStore final : public c10d::Store {
 public:
  RemoteGroupStore(const GroupRendezvous& at, std::chrono::milliseconds timeout)
      : c10d::Store(timeout), at_(at), stub_(v1::GroupStore::NewStub(makeChannel(at.rank0_address))) {}

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    auto r = request(v1::GroupStoreRequest::SET, {key});
    r.set_value(stringOf(value));
    call(r);
  }
  std::vector<std::uint8_t> compareSet(const std::string& key, const std::vector<std::uint8_t>& expected,
                                       const std::vector<std::uint8_t>& desired) override {
    auto r = request(v1::GroupStoreRequest::COMPARE_SET, {key});
    r.set_expected(stringOf(expected));
    r.set_value(stringOf(desired));
    return bytesOf(call(r).value());
  }
  std::vector<std::uint8_t> get(const std::string& key) override {
    return bytesOf(call(request(v1::GroupStoreRequest::GET, {key})).value());
  }
  std::int64_t add(const std::string& key, std::int64_t value) override {
    auto r = request(v1::GroupStoreRequest::ADD, {key});
    r.set_amount(value);
    return call(r).number();
  }
  bool deleteKey(const std::string& key) override {
    return call(request(v1::GroupStoreRequest::DELETE_KEY, {key})).result();
  }
  bool check(const std::vector<std::string>& keys) override {
    return call(request(v1::GroupStoreRequest::CHECK, keys)).result();
  }
  std::int64_t getNumKeys() override { return call(request(v1::GroupStoreRequest::NUM_KEYS, {"-"})).number(); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    auto r = request(v1::GroupStoreRequest::WAIT, keys);
    r.set_timeout_ms(timeout.count());
    call(r);
  }

 private:
  v1::GroupStoreRequest request(v1::GroupStoreRequest::Op op, const std::vector<std::string>& keys) const {
    v1::GroupStoreRequest r;
    r.set_job(at_.job);
    r.set_stage(at_.stage);
    r.set_op(op);
    for (const auto& k : keys) r.add_keys(k);
    r.set_timeout_ms(timeout_.count());
    return r;
  }
  v1::GroupStoreReply call(const v1::GroupStoreRequest& r) {
    // Rank 0 may not have been deployed yet: its worker answers FAILED_PRECONDITION (no
    // such group) or is not up; try again until the store's timeout, as TCPStore would.
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      grpc::ClientContext context;
      if (!at_.token.empty()) context.AddMetadata(control::kTokenMetadataKey, at_.token);
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(r.timeout_ms()) +
                           std::chrono::seconds(5));
      v1::GroupStoreReply reply;
      const grpc::Status status = stub_->Call(&context, r, &reply);
      if (status.ok()) return reply;
      const bool again = status.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
                         status.error_code() == grpc::StatusCode::UNAVAILABLE;
      if (!again || std::chrono::steady_clock::now() >= deadline) {
        throw fromStatus(status, "the group store at " + at_.rank0_address);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  GroupRendezvous at_;
  std::unique_ptr<v1::GroupStore::Stub> stub_;
};

}  // namespace

std::shared_ptr<GroupStoreHost> makeGroupStoreHost(std::chrono::milliseconds max_wait) {
  return std::make_shared<HashGroupStore>(max_wait);
}

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

StageGroup::StageGroup(GroupRendezvous rendezvous, std::string own_host, int rank, int size, std::string prefix,
                       std::chrono::milliseconds timeout)
    : rank_(rank), size_(size), timeout_(timeout), state_(std::make_shared<State>()) {
  const std::string where = rendezvous.rank0_address;
  state_->connector = std::thread([state = state_, rendezvous = std::move(rendezvous), where, own_host, rank, size,
                                   prefix, timeout] {
    try {
      c10::intrusive_ptr<c10d::Store> base;
      if (auto* local = dynamic_cast<HashGroupStore*>(rendezvous.local.get())) {
        base = local->store();
      } else {
        base = c10::make_intrusive<RemoteGroupStore>(rendezvous, timeout);
      }
      auto store = c10::make_intrusive<c10d::PrefixStore>(prefix, base);
      auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(own_host));
      gloo_options->threads = 1;
      auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, gloo_options);
      std::lock_guard lock(state->mutex);
      state->store = base;
      state->group = group;
      state->connected = true;
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (const auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      std::lock_guard lock(state->mutex);
      state->failure = "the stage group (store at " + where + ", rank " +
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

struct StageGroup::Pending {
  std::vector<at::Tensor> tensors;
  c10::intrusive_ptr<c10d::Work> work;
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
};

void StageGroup::allReduceSum(torch::Tensor& tensor, const std::atomic<bool>& stop) {
  if (size_ == 1) return;
  wait(*startAllReduceSum(tensor, stop), stop);
}

std::shared_ptr<StageGroup::Pending> StageGroup::startAllReduceSum(torch::Tensor tensor,
                                                                   const std::atomic<bool>& stop) {
  auto pending = std::make_shared<Pending>();
  if (size_ == 1) {
    pending->done = true;
    return pending;
  }
  waitConnected(stop);
  pending->tensors.push_back(std::move(tensor));
  c10d::AllreduceOptions options;
  options.reduceOp = c10d::ReduceOp::SUM;
  pending->work = state_->group->allreduce(pending->tensors, options);
  // Waited for through the future so a Stop can leave without waiting for Gloo's timeout.
  pending->work->getFuture()->addCallback([weak = std::weak_ptr<Pending>(pending)](c10::ivalue::Future&) {
    if (auto p = weak.lock()) {
      {
        std::lock_guard lock(p->mutex);
        p->done = true;
      }
      p->cv.notify_all();
    }
  });
  return pending;
}

void StageGroup::abandon() {
  std::lock_guard lock(state_->mutex);
  state_->abandoned = true;
}

void StageGroup::wait(Pending& pending, const std::atomic<bool>& stop) {
  if (!pending.work) return;
  {
    std::unique_lock lock(pending.mutex);
    while (!pending.done) {
      if (stop) {
        std::lock_guard state_lock(state_->mutex);
        state_->abandoned = true;
        throw WorkerError(ErrorCode::Aborted, "stopped during the all-reduce");
      }
      pending.cv.wait_for(lock, std::chrono::milliseconds(50));
    }
  }
  if (auto error = pending.work->exception()) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (const auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      throw WorkerError(ErrorCode::Unavailable, "all-reduce in the stage group failed: " + what);
    }
  }
}

}  // namespace stagecraft::worker
