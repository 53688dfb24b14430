// PeerOutbox's Push writes a tensor's bytes from the tensor's own memory (toWire) after the
// rest of the message, a large one in pieces: protobuf's generated parser must read each
// message as an ordinary PeerTensor, and the worker's own reader (readPushStream) must put
// the pieces back into the tensor that was sent.

#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "peer_outbox.h"
#include "peer_test_support.h"
#include "torch_stage.h"
#include "worker_service.h"

namespace stagecraft::worker {
namespace {

/// Keeps every PeerTensor a Push stream brings, parsed by the generated code.
class Collector final : public v1::Worker::Service {
 public:
  grpc::Status Push(grpc::ServerContext*, grpc::ServerReader<v1::PeerTensor>* reader, v1::PushReply*) override {
    v1::PeerTensor tensor;
    while (reader->Read(&tensor)) received_.add(tensor);
    return grpc::Status::OK;
  }
  std::vector<v1::PeerTensor> waitFor(size_t count) { return received_.waitFor(count); }

 private:
  Received<v1::PeerTensor> received_;
};

/// Keeps every tensor a Push stream brings through the worker's own reader, and whether it
/// was found finite.
class RawCollector final : public v1::Worker::WithRawCallbackMethod_Push<v1::Worker::Service> {
 public:
  grpc::ServerReadReactor<grpc::ByteBuffer>* Push(grpc::CallbackServerContext*, grpc::ByteBuffer* reply) override {
    return readPushStream(reply, [this](v1::PeerTensor tensor, bool finite) {
      received_.add({std::move(tensor), finite});
    });
  }
  std::vector<std::pair<v1::PeerTensor, bool>> waitFor(size_t count) { return received_.waitFor(count); }

 private:
  Received<std::pair<v1::PeerTensor, bool>> received_;
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
  std::string address;
  auto server = serveOnLoopback(collector, address);

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

TEST(PeerOutbox, ALargeTensorGoesInPiecesEachAnOrdinaryPeerTensor) {
  Collector collector;
  std::string address;
  auto server = serveOnLoopback(collector, address);
  const torch::Tensor big = torch::randn({1100, 1024});  // 4.3 MiB: two pieces
  {
    PeerOutbox outbox(nullptr, [](const WorkerError& e) { ADD_FAILURE() << e.what(); });
    auto [tensor, payload] = toWire(big, "big");
    v1::PeerTensor message = header(1, false);
    *message.mutable_tensor() = std::move(tensor);
    outbox.send("stage1", address, std::move(message), std::move(payload));
    outbox.flush(std::chrono::seconds(30));
  }
  const std::vector<v1::PeerTensor> got = collector.waitFor(2);
  ASSERT_EQ(got.size(), 2u);
  std::string data;
  for (const v1::PeerTensor& piece : got) {
    EXPECT_EQ(piece.step(), 1);
    EXPECT_EQ(piece.tensor().name(), "big");
    EXPECT_EQ(piece.tensor().shape_size(), 2);
    EXPECT_EQ(piece.data_bytes(), static_cast<std::int64_t>(big.nbytes()));
    EXPECT_EQ(piece.data_offset(), static_cast<std::int64_t>(data.size()));
    data += piece.tensor().data();
  }
  ASSERT_EQ(data.size(), static_cast<size_t>(big.nbytes()));
  EXPECT_EQ(std::memcmp(data.data(), big.data_ptr(), data.size()), 0);
  server->Shutdown();
}

TEST(PeerOutbox, TheWorkersReaderPutsThePiecesBackAndFindsANaNInAnyOfThem) {
  RawCollector collector;
  std::string address;
  auto server = serveOnLoopback(collector, address);
  // Two pieces, six pieces with a NaN in the fifth, one small tensor, one int64, and one
  // message with its data inside.
  const torch::Tensor big = torch::randn({1100, 1024});
  torch::Tensor bigger = torch::randn({3000, 1024});
  bigger[2600][7] = std::numeric_limits<float>::quiet_NaN();
  const torch::Tensor rows = torch::randn({40, 9}).narrow(0, 10, 5);
  const torch::Tensor ids = torch::arange(0, 77, torch::kInt64);
  const std::vector<torch::Tensor> sent{big, bigger, rows, ids};
  {
    PeerOutbox outbox(nullptr, [](const WorkerError& e) { ADD_FAILURE() << e.what(); });
    for (size_t i = 0; i < sent.size(); ++i) {
      auto [tensor, payload] = toWire(sent[i], "t" + std::to_string(i));
      v1::PeerTensor message = header(static_cast<std::int64_t>(i) + 1, i == 2);
      *message.mutable_tensor() = std::move(tensor);
      outbox.send("stage1", address, std::move(message), std::move(payload));
    }
    v1::PeerTensor plain = header(5, false);
    *plain.mutable_tensor() = toProto(rows, "plain");
    outbox.send("stage1", address, std::move(plain));
    outbox.flush(std::chrono::seconds(30));
  }
  auto got = collector.waitFor(5);
  ASSERT_EQ(got.size(), 5u);
  for (size_t i = 0; i < got.size(); ++i) {
    const auto& [tensor, finite] = got[i];
    EXPECT_EQ(tensor.step(), static_cast<std::int64_t>(i) + 1);
    EXPECT_EQ(tensor.gradient(), i == 2);
    EXPECT_EQ(tensor.samples(), 5);
    EXPECT_EQ(tensor.data_bytes(), 0);
    EXPECT_EQ(tensor.data_offset(), 0);
    EXPECT_EQ(finite, i != 1) << "tensor " << i;
    const torch::Tensor back = fromProto(tensor.tensor());
    const torch::Tensor& expected = i < sent.size() ? sent[i] : rows;
    EXPECT_TRUE(torch::equal(back.nan_to_num(0), expected.nan_to_num(0))) << "tensor " << i;
  }
  EXPECT_EQ(got[4].first.tensor().name(), "plain");
  server->Shutdown();
}

/// Writes `messages` on one Push stream as they are, and returns how the stream ended;
/// `finish` false: the stream is cancelled after the last message instead of closed.
grpc::Status pushRaw(const std::string& address, const std::vector<v1::PeerTensor>& messages, bool finish = true) {
  static const grpc::internal::RpcMethod kPush("/stagecraft.v1.Worker/Push", grpc::internal::RpcMethod::CLIENT_STREAMING);
  auto channel = makeChannel(address);
  grpc::ClientContext context;
  grpc::ByteBuffer reply;
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(channel.get(), kPush, &context, &reply));
  for (const auto& message : messages) {
    grpc::Slice slice(message.SerializeAsString());
    if (!writer->Write(grpc::ByteBuffer(&slice, 1))) break;
  }
  if (!finish) {
    context.TryCancel();
    return writer->Finish();
  }
  writer->WritesDone();
  return writer->Finish();
}

/// Piece [offset, offset + size) of `data` under `message`'s header.
v1::PeerTensor piece(v1::PeerTensor message, const std::string& data, std::size_t offset, std::size_t size) {
  message.set_data_offset(static_cast<std::int64_t>(offset));
  message.set_data_bytes(static_cast<std::int64_t>(data.size()));
  message.mutable_tensor()->set_data(data.substr(offset, size));
  return message;
}

TEST(PeerOutbox, AStreamCutOffMidTensorHandsNothingOnAndAPieceOutOfOrderEndsIt) {
  RawCollector collector;
  std::string address;
  auto server = serveOnLoopback(collector, address);
  v1::PeerTensor message = header(1, false);
  *message.mutable_tensor() = toProto(torch::randn({8, 1024}));
  const std::string data = message.tensor().data();
  // The sender goes away after the first of two pieces: the half tensor goes with its stream.
  (void)pushRaw(address, {piece(message, data, 0, 16384)}, false);
  // Pieces that skip bytes: INVALID_ARGUMENT, naming the sender.
  const grpc::Status skipped = pushRaw(address, {piece(message, data, 0, 8192), piece(message, data, 16384, 16384)});
  EXPECT_EQ(skipped.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(skipped.error_message().find("does not continue"), std::string::npos) << skipped.error_message();
  EXPECT_NE(skipped.error_message().find("'stage0'"), std::string::npos) << skipped.error_message();
  // Bytes that are no PeerTensor.
  {
    static const grpc::internal::RpcMethod kPush("/stagecraft.v1.Worker/Push",
                                                 grpc::internal::RpcMethod::CLIENT_STREAMING);
    auto channel = makeChannel(address);
    grpc::ClientContext context;
    grpc::ByteBuffer reply;
    std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer(
        grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(channel.get(), kPush, &context, &reply));
    grpc::Slice slice(std::string("\x0a\x09job", 5));  // a length past the end
    writer->Write(grpc::ByteBuffer(&slice, 1));
    writer->WritesDone();
    const grpc::Status broken = writer->Finish();
    EXPECT_EQ(broken.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(broken.error_message().find("not a PeerTensor"), std::string::npos) << broken.error_message();
  }
  // A whole stream of pieces in order, then a whole tensor: both handed on, nothing else.
  v1::PeerTensor second = message;
  second.set_step(2);
  const grpc::Status fine = pushRaw(address, {piece(second, data, 0, 16384), piece(second, data, 16384, 16384), message});
  EXPECT_TRUE(fine.ok()) << fine.error_message();
  const auto got = collector.waitFor(2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].first.step(), 2);
  EXPECT_EQ(got[0].first.tensor().data(), data);
  EXPECT_EQ(got[1].first.step(), 1);
  EXPECT_EQ(got[1].first.tensor().data(), data);
  server->Shutdown();
  EXPECT_EQ(collector.waitFor(0).size(), 2u);
}

}  // namespace
}  // namespace stagecraft::worker
