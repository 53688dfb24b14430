// PeerOutbox's Push writes a tensor's bytes from the tensor's own memory (toWire) after the
// rest of the message; the receiving worker's generated Push handler must parse the same
// PeerTensor it would have got from one serialised message.

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "peer_outbox.h"
#include "torch_stage.h"

namespace stagecraft::worker {
namespace {

/// Keeps every PeerTensor a Push stream brings, parsed by the generated code as a worker's is.
class Collector final : public v1::Worker::Service {
 public:
  grpc::Status Push(grpc::ServerContext*, grpc::ServerReader<v1::PeerTensor>* reader, v1::PushReply*) override {
    v1::PeerTensor tensor;
    while (reader->Read(&tensor)) {
      std::lock_guard lock(mutex_);
      got_.push_back(tensor);
      arrived_.notify_all();
    }
    return grpc::Status::OK;
  }
  std::vector<v1::PeerTensor> waitFor(size_t count) {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, std::chrono::seconds(30), [&] { return got_.size() >= count; });
    return got_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<v1::PeerTensor> got_;
};

v1::PeerTensor header(std::int64_t step, bool gradient) {
  v1::PeerTensor t;
  t.set_job("job");
  t.set_sender("stage0");
  t.set_step(step);
  t.set_micro_batch(3);
  t.set_gradient(gradient);
  t.set_sample_begin(2);
  t.set_samples(5);
  return t;
}

TEST(PeerOutbox, APayloadArrivesAsTheTensorsDataOfAnOrdinaryPeerTensor) {
  Collector collector;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.RegisterService(&collector);
  auto server = builder.BuildAndStart();
  ASSERT_TRUE(server && port > 0);
  const std::string address = "127.0.0.1:" + std::to_string(port);

  // Large (over a megabyte, several HTTP/2 frames), a view into a bigger tensor, int64, and
  // a message sent the old way with its data inside.
  const torch::Tensor big = torch::randn({700, 513});
  const torch::Tensor rows = torch::randn({40, 9}).narrow(0, 10, 5);
  const torch::Tensor ids = torch::arange(0, 77, torch::kInt64);
  std::vector<torch::Tensor> sent{big, rows, ids};
  {
    PeerOutbox outbox(nullptr, [](const WorkerError& e) { ADD_FAILURE() << e.what(); });
    for (size_t i = 0; i < sent.size(); ++i) {
      auto [tensor, payload] = toWire(sent[i], "t" + std::to_string(i));
      EXPECT_TRUE(tensor.data().empty());
      EXPECT_EQ(payload.size, static_cast<size_t>(sent[i].nbytes()));
      v1::PeerTensor message = header(static_cast<std::int64_t>(i) + 1, i == 1);
      *message.mutable_tensor() = std::move(tensor);
      outbox.send("stage1", address, std::move(message), std::move(payload));
    }
    v1::PeerTensor plain = header(4, false);
    *plain.mutable_tensor() = toProto(rows, "plain");
    outbox.send("stage1", address, std::move(plain));
    // A message that has its data already cannot take a payload too.
    auto [extra, payload] = toWire(rows);
    v1::PeerTensor both = header(5, false);
    *both.mutable_tensor() = toProto(rows);
    EXPECT_THROW(outbox.send("stage1", address, std::move(both), std::move(payload)), std::logic_error);
    outbox.flush(std::chrono::seconds(30));
  }
  std::vector<v1::PeerTensor> got = collector.waitFor(4);
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < got.size(); ++i) {
    const v1::PeerTensor& g = got[i];
    EXPECT_EQ(g.job(), "job");
    EXPECT_EQ(g.sender(), "stage0");
    EXPECT_EQ(g.step(), static_cast<std::int64_t>(i) + 1);
    EXPECT_EQ(g.micro_batch(), 3);
    EXPECT_EQ(g.gradient(), i == 1);
    EXPECT_EQ(g.sample_begin(), 2);
    EXPECT_EQ(g.samples(), 5);
  }
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(got[i].tensor().name(), "t" + std::to_string(i));
    v1::Tensor wire = got[i].tensor();
    const torch::Tensor back = fromProto(std::move(wire));  // takes the bytes
    EXPECT_TRUE(wire.data().empty() || wire.data().size() < 4096);
    EXPECT_EQ(back.scalar_type(), sent[i].scalar_type());
    EXPECT_TRUE(torch::equal(back, sent[i])) << "tensor " << i;
    EXPECT_TRUE(torch::equal(fromProto(got[i].tensor()), sent[i])) << "tensor " << i << ", copied";
  }
  EXPECT_EQ(got[3].tensor().name(), "plain");
  EXPECT_TRUE(torch::equal(fromProto(got[3].tensor()), rows));
  server->Shutdown();
}

}  // namespace
}  // namespace stagecraft::worker
