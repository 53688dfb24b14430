// BackupSender after a Deploy of another job: the last job's copies, the one on the wire
// included, are of no use any more and must not hold the link (a recovery's fetches need it).

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backup_store.h"
#include "peer_outbox.h"

namespace stagecraft::worker {
namespace {

using Clock = std::chrono::steady_clock;

/// A neighbour that keeps the job and step of every backup stored with it.
class Neighbour final : public v1::Worker::Service {
 public:
  Neighbour() {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.SetMaxReceiveMessageSize(64 << 20);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (!server_ || port == 0) throw std::runtime_error("the test neighbour cannot listen");
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  ~Neighbour() override { server_->Shutdown(); }

  grpc::Status StoreBackup(grpc::ServerContext* context, const v1::StageWeights* state,
                           v1::StoreBackupReply*) override {
    if (state->job() == stall_job) {
      {
        std::lock_guard lock(mutex_);
        stalling_ = true;
      }
      // Taking its time, as a neighbour on a thin link would, until the sender gives up.
      const auto until = Clock::now() + std::chrono::seconds(10);
      while (!context->IsCancelled() && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard lock(mutex_);
      stalled_call_cancelled_ = context->IsCancelled();
      stall_over_ = true;
      arrived_.notify_all();
      return grpc::Status::OK;
    }
    std::lock_guard lock(mutex_);
    stored_.emplace_back(state->job(), state->step());
    last_ = *state;
    arrived_.notify_all();
    return grpc::Status::OK;
  }
  bool stalling() {
    std::lock_guard lock(mutex_);
    return stalling_;
  }
  /// Whether the stalled call ended by the sender's cancelling it (waits for its end).
  bool stalledCallCancelled() {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, std::chrono::seconds(30), [&] { return stall_over_; });
    return stalled_call_cancelled_;
  }
  /// What was stored once `job`'s step `step` is (or after 30 s).
  std::vector<std::pair<std::string, std::int64_t>> waitFor(const std::string& job, std::int64_t step) {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, std::chrono::seconds(30), [&] {
      return std::find(stored_.begin(), stored_.end(), std::make_pair(job, step)) != stored_.end();
    });
    return stored_;
  }
  /// The last state stored, whole (waitFor it first).
  v1::StageWeights last() {
    std::lock_guard lock(mutex_);
    return last_;
  }
  const std::string& address() const { return address_; }

  std::string stall_job;  // StoreBackup of this job waits until cancelled (10 s at most)

 private:
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<std::pair<std::string, std::int64_t>> stored_;
  v1::StageWeights last_;
  bool stalling_ = false;
  bool stall_over_ = false;
  bool stalled_call_cancelled_ = false;
};

StateCopy state(const std::string& job, std::int64_t step, std::size_t bytes) {
  auto s = std::make_shared<v1::StageWeights>();
  s->set_job(job);
  s->set_step(step);
  s->set_layer_begin(0);
  s->set_layer_end(1);
  auto* t = s->add_tensors();
  t->set_name("w");
  t->set_dtype("float32");
  t->add_shape(static_cast<std::int64_t>(bytes / 4));
  t->set_data(std::string(bytes, '\1'));
  return s;
}

TEST(BackupSender, ACopyOfANewJobAbandonsTheLastJobsCopyOnTheWire) {
  Neighbour neighbour;
  LinkPacer link(80);  // 10 MB/s: the old job's 20 MB copy holds the link for 2 s
  BackupSender sender("d0", "", &link);
  sender.offer(state("old", 4, 20 << 20), neighbour.address());
  // On the wire: the link is reserved ahead of now (the sender reserves half a millisecond
  // of it at a time).
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && link.reserve(0) <= Clock::now()) {
    std::this_thread::yield();
  }
  ASSERT_LT(Clock::now(), deadline) << "the old job's copy never went on the wire";

  sender.offer(state("new", 1, 1 << 10), neighbour.address());
  const auto stored = neighbour.waitFor("new", 1);
  // The new job's copy arrived, and the old job's never did: it was not finished after the
  // new one came, nor did the new one wait for it.
  EXPECT_NE(std::find(stored.begin(), stored.end(), std::make_pair(std::string("new"), std::int64_t{1})),
            stored.end());
  EXPECT_EQ(std::find(stored.begin(), stored.end(), std::make_pair(std::string("old"), std::int64_t{4})),
            stored.end());
}

TEST(BackupSender, ADeployOfAnotherJobCancelsTheLastJobsCopyBeingStored) {
  // A Deploy comes before the new job offers anything: keepOnly alone must free the sender.
  Neighbour neighbour;
  neighbour.stall_job = "old";
  int failures = 0;
  BackupSender sender("d0", "", nullptr, [&](const std::string&, const std::string&) { ++failures; });
  sender.offer(state("old", 4, 1 << 10), neighbour.address());
  // The neighbour has the call (keepOnly before it would drop a pending copy, also right).
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && !neighbour.stalling()) std::this_thread::yield();
  ASSERT_TRUE(neighbour.stalling());
  sender.keepOnly("new");
  EXPECT_TRUE(neighbour.stalledCallCancelled());
  sender.offer(state("new", 1, 1 << 10), neighbour.address());
  neighbour.waitFor("new", 1);
  EXPECT_EQ(failures, 0);  // a copy given up here is not the neighbour's failure
}

TEST(BackupSender, TheNeighbourParsesTheStateThatWasOffered) {
  // The tensors' bytes go on the wire from the copy itself, beside their fields written by
  // hand: the neighbour must read the very state, every field and tensor, an empty one too.
  Neighbour neighbour;
  BackupSender sender("d0", "", nullptr);
  auto offered = std::make_shared<v1::StageWeights>(*state("job", 7, 3 << 20));
  offered->set_layer_begin(2);
  offered->set_layer_end(5);
  auto* bias = offered->add_tensors();
  bias->set_name("b#momentum_buffer");
  bias->set_dtype("float32");
  bias->add_shape(3);
  bias->add_shape(1);
  bias->set_data(std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c", 12));
  auto* empty = offered->add_tensors();
  empty->set_name("num_batches_tracked");
  empty->set_dtype("int64");
  empty->add_shape(0);
  auto* ids = offered->add_tensors();
  ids->set_name("ids");
  ids->set_dtype("int64");
  ids->add_shape(300'000);  // a length of three varint bytes
  ids->set_data(std::string(2'400'000, '\x7f'));
  sender.offer(offered, neighbour.address());
  neighbour.waitFor("job", 7);
  const v1::StageWeights received = neighbour.last();
  EXPECT_EQ(received.layer_begin(), 2);
  EXPECT_EQ(received.layer_end(), 5);
  ASSERT_EQ(received.tensors_size(), 4);
  EXPECT_EQ(received.tensors(1).name(), "b#momentum_buffer");
  EXPECT_EQ(received.tensors(1).data(), bias->data());
  EXPECT_EQ(received.SerializeAsString(), offered->SerializeAsString());
}

TEST(BackupSender, CopiesOfTheJobKeptStillGo) {
  Neighbour neighbour;
  BackupSender sender("d0", "", nullptr);
  sender.keepOnly("job");
  sender.offer(state("job", 3, 1 << 10), neighbour.address());
  const auto stored = neighbour.waitFor("job", 3);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0], std::make_pair(std::string("job"), std::int64_t{3}));
}

}  // namespace
}  // namespace stagecraft::worker
