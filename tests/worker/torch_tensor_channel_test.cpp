// The tensor channel (tensor_channel.h): tensors written from their own memory arrive whole,
// in order, with a NaN found wherever it is; a ticket lets one connection in, once; a
// receiver's refusal reaches the sender with its code; and PeerOutbox takes the channel a
// peer grants, Push where it grants none.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "peer_outbox.h"
#include "peer_test_support.h"
#include "tensor_channel.h"
#include "torch_stage.h"
#include "worker_service.h"

namespace stagecraft::worker {
namespace {

using Got = std::pair<v1::PeerTensor, bool>;
constexpr char kWhat[] = "push to the test's receiver";

v1::PeerTensor header(std::int64_t step, const std::string& dtype, std::int64_t words) {
  v1::PeerTensor t;
  t.set_job("job");
  t.set_sender("stage0");
  t.set_step(step);
  t.set_micro_batch(1);
  t.set_samples(1);
  t.mutable_tensor()->set_dtype(dtype);
  t.mutable_tensor()->add_shape(words);
  return t;
}

/// `words` random finite floats, as bytes.
std::string finiteFloats(std::size_t words, unsigned seed) {
  std::mt19937 random(seed);
  std::normal_distribution<float> normal;
  std::string bytes(words * sizeof(float), '\0');
  for (std::size_t i = 0; i < words; ++i) {
    const float v = normal(random);
    std::memcpy(bytes.data() + i * sizeof(float), &v, sizeof v);
  }
  return bytes;
}

void putFloat(std::string& bytes, std::size_t word, float value) {
  std::memcpy(bytes.data() + word * sizeof(float), &value, sizeof value);
}

TEST(TensorChannel, TensorsArriveWholeInOrderAndANaNIsFoundWhereverItIs) {
  Received<Got> received;
  TensorChannelServer server("127.0.0.1", [&](v1::PeerTensor t, bool finite) { received.add({std::move(t), finite}); },
                             64 << 20);
  // Empty, one word, 3 MiB and 3 words (many reads of the socket), the same with a NaN or an
  // infinity at the first word, around the 256 KiB read, and at the last word; and int64
  // bytes that would read as a NaN in float32 (not checked).
  const std::size_t big = (3 << 20) / 4 + 3;
  std::vector<std::pair<std::string, std::string>> sent{
      {"float32", ""}, {"float32", finiteFloats(1, 1)}, {"float32", finiteFloats(big, 2)}};
  for (const std::size_t word : {std::size_t{0}, std::size_t{65535}, std::size_t{65536}, big - 1}) {
    std::string bytes = finiteFloats(big, 3);
    putFloat(bytes, word, word % 2 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN());
    sent.push_back({"float32", bytes});
  }
  std::string ids(16, '\xff');
  sent.push_back({"int64", ids});
  {
    TensorChannelClient client("127.0.0.1", server.port(), server.issue("stage0"), std::chrono::seconds(5), kWhat);
    for (std::size_t i = 0; i < sent.size(); ++i) {
      const auto& [dtype, bytes] = sent[i];
      client.write(header(static_cast<std::int64_t>(i), dtype, static_cast<std::int64_t>(bytes.size() / 4)),
                   bytes.data(), bytes.size());
    }
    client.close(std::chrono::seconds(10));  // the receiver confirms it took every one
  }
  const auto got = received.waitFor(sent.size());
  ASSERT_EQ(got.size(), sent.size());
  for (std::size_t i = 0; i < sent.size(); ++i) {
    const auto& [tensor, finite] = got[i];
    EXPECT_EQ(tensor.step(), static_cast<std::int64_t>(i));
    EXPECT_EQ(tensor.sender(), "stage0");
    EXPECT_EQ(tensor.tensor().dtype(), sent[i].first);
    EXPECT_TRUE(tensor.tensor().data() == sent[i].second) << "tensor " << i;
    EXPECT_EQ(finite, i < 3 || i == sent.size() - 1) << "tensor " << i;
  }
  EXPECT_EQ(server.admitted(), 1);
}

/// A connection to `port` that has sent `ticket` and read the answer (12 bytes).
/// `half_close`: says it will send nothing more after the ticket.
int admittedSocket(int port, const std::string& ticket, std::string& answer, bool half_close = false) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  at.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) return -1;
  if (::send(fd, ticket.data(), ticket.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(ticket.size())) return -1;
  if (half_close) ::shutdown(fd, SHUT_WR);
  answer.assign(12, '\0');
  answer.resize(static_cast<std::size_t>(std::max<ssize_t>(0, ::recv(fd, answer.data(), answer.size(), MSG_WAITALL))));
  return fd;
}

TEST(TensorChannel, ATicketLetsOneConnectionInOnceAndNothingElseDoes) {
  Received<Got> received;
  TensorChannelServer server("127.0.0.1", [&](v1::PeerTensor t, bool finite) { received.add({std::move(t), finite}); },
                             1 << 20);
  const std::string ticket = server.issue("stage0");
  TensorChannelClient first("127.0.0.1", server.port(), ticket, std::chrono::seconds(5), kWhat);
  auto refused = [&](const std::string& t) {
    try {
      TensorChannelClient again("127.0.0.1", server.port(), t, std::chrono::seconds(5), kWhat);
    } catch (const WorkerError& e) {
      EXPECT_EQ(e.code(), ErrorCode::Unavailable);
      EXPECT_NE(std::string(e.what()).find("did not take the ticket"), std::string::npos) << e.what();
      return true;
    }
    return false;
  };
  EXPECT_TRUE(refused(ticket)) << "a ticket used twice";
  EXPECT_TRUE(refused(std::string(16, 'x'))) << "a ticket never issued";
  EXPECT_TRUE(refused(server.issue("stage0", std::chrono::milliseconds(-1)))) << "an expired ticket";
  // A caller that sends part of a valid ticket and goes: closed unanswered, and the ticket
  // is not spent by it.
  const std::string spare = server.issue("stage0");
  std::string answer = "?";
  const int cut = admittedSocket(server.port(), spare.substr(0, 3), answer, true);
  ASSERT_GE(cut, 0);
  EXPECT_EQ(answer, "");
  ::close(cut);
  // A port nobody listens on (held, so that nobody can).
  {
    const HeldPort closed(false);
    try {
      TensorChannelClient nowhere("127.0.0.1", closed.port(), ticket, std::chrono::seconds(5), kWhat);
      ADD_FAILURE() << "connected to a port nobody listens on";
    } catch (const WorkerError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(server.admitted(), 1);
  TensorChannelClient("127.0.0.1", server.port(), spare, std::chrono::seconds(5), kWhat);  // the spare ticket works
  EXPECT_EQ(server.admitted(), 2);
  // Tickets asked for and never used are held within a bound; expired ones make room.
  std::optional<WorkerError> full;
  int issued = 0;
  for (; issued < 4000 && !full; ++issued) {
    try {
      server.issue("greedy", issued < 1000 ? std::chrono::milliseconds(-1) : std::chrono::milliseconds(10000));
    } catch (const WorkerError& e) {
      full = e;
    }
  }
  ASSERT_TRUE(full.has_value()) << "4000 tickets held at once";
  EXPECT_EQ(full->code(), ErrorCode::ResourceExhausted);
  EXPECT_GT(issued, 2000) << "expired tickets took room";
  // The one let in first still works.
  const std::string bytes = finiteFloats(4, 4);
  first.write(header(7, "float32", 4), bytes.data(), bytes.size());
  first.close(std::chrono::seconds(10));
  const auto got = received.waitFor(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first.step(), 7);
}

TEST(TensorChannel, ARefusalReachesTheSenderWithItsCodeAndNothingAfterItIsTaken) {
  Received<Got> received;
  TensorChannelServer server(
      "127.0.0.1",
      [&](v1::PeerTensor t, bool finite) {
        if (t.step() == 2) throw WorkerError(ErrorCode::InvalidArgument, "step 2 is not wanted");
        received.add({std::move(t), finite});
      },
      2 << 20);
  const std::string bytes = finiteFloats(1 << 18, 5);  // 1 MiB
  std::optional<WorkerError> error;
  try {
    TensorChannelClient client("127.0.0.1", server.port(), server.issue("stage0"), std::chrono::seconds(5), kWhat);
    // The refusal comes back while later tensors are on their way; a write or the close sees it.
    for (int step = 1; step <= 40; ++step) client.write(header(step, "float32", 1 << 18), bytes.data(), bytes.size());
    client.close(std::chrono::seconds(10));
  } catch (const WorkerError& e) {
    error = e;
  }
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code(), ErrorCode::InvalidArgument);
  EXPECT_NE(std::string(error->what()).find(kWhat), std::string::npos) << error->what();
  EXPECT_NE(std::string(error->what()).find("step 2 is not wanted"), std::string::npos) << error->what();
  EXPECT_EQ(received.size(), 1u);
  EXPECT_EQ(received.waitFor(1).at(0).first.step(), 1);

  // A frame over the receiver's limit, and bytes that are no frame.
  for (const bool too_big : {true, false}) {
    std::optional<WorkerError> refusal;
    try {
      TensorChannelClient client("127.0.0.1", server.port(), server.issue("stage0"), std::chrono::seconds(5), kWhat);
      if (too_big) {
        const std::string huge = finiteFloats(3 << 18, 6);  // 3 MiB
        client.write(header(3, "float32", 3 << 18), huge.data(), huge.size());
      } else {
        client.write(header(3, "float32", 0), nullptr, 0);
        // A header that claims bytes in its tensor: not a frame this channel takes.
        v1::PeerTensor stuffed = header(4, "float32", 1);
        stuffed.mutable_tensor()->set_data("abcd");
        client.write(stuffed, nullptr, 0);
      }
      client.close(std::chrono::seconds(10));
    } catch (const WorkerError& e) {
      refusal = e;
    }
    ASSERT_TRUE(refusal.has_value()) << "too big: " << too_big;
    EXPECT_EQ(refusal->code(), ErrorCode::InvalidArgument) << refusal->what();
    EXPECT_NE(std::string(refusal->what()).find(too_big ? "over the limit" : "tensor bytes"), std::string::npos)
        << refusal->what();
  }
}

TEST(TensorChannel, BytesThatAreNoFrameAreRefusedAndTheServerGoesOn) {
  Received<Got> received;
  TensorChannelServer server("127.0.0.1", [&](v1::PeerTensor t, bool finite) { received.add({std::move(t), finite}); },
                             1 << 20);
  std::mt19937 random(11);
  for (int round = 0; round < 20; ++round) {
    std::string answer;
    const int fd = admittedSocket(server.port(), server.issue("stage0"), answer);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(answer, std::string("SCTE\0\0\0\0\0\0\0\0", 12));  // the ticket taken
    // Random bytes: a wrong mark, or the right one and random sizes and header.
    std::string junk(16 + random() % 200, '\0');
    for (char& c : junk) c = static_cast<char>(random());
    if (round % 2) std::memcpy(junk.data(), "SCT1", 4);
    ::send(fd, junk.data(), junk.size(), MSG_NOSIGNAL);
    ::shutdown(fd, SHUT_WR);
    // A refusal, or (random sizes that ask for more than was sent) the end of the stream.
    char head[12] = {};
    const ssize_t got = ::recv(fd, head, sizeof head, MSG_WAITALL);
    if (got == 12) {
      EXPECT_EQ(std::string(head, 4), "SCTE");
      std::uint32_t code = 0;
      std::memcpy(&code, head + 4, 4);
      EXPECT_EQ(code, static_cast<std::uint32_t>(grpc::StatusCode::INVALID_ARGUMENT)) << "round " << round;
    } else {
      EXPECT_EQ(got, 0) << "round " << round;
    }
    ::close(fd);
  }
  EXPECT_EQ(received.size(), 0u);
  // Still serving.
  TensorChannelClient client("127.0.0.1", server.port(), server.issue("stage0"), std::chrono::seconds(5), kWhat);
  client.write(header(1, "float32", 0), nullptr, 0);
  client.close(std::chrono::seconds(10));
  EXPECT_EQ(received.waitFor(1).size(), 1u);
}

TEST(TensorChannel, AServerStoppedEndsItsConnectionsAndTheSenderIsTold) {
  auto server = std::make_unique<TensorChannelServer>("127.0.0.1", [](v1::PeerTensor, bool) {}, 1 << 20);
  TensorChannelClient client("127.0.0.1", server->port(), server->issue("stage0"), std::chrono::seconds(5), kWhat);
  server.reset();  // returns: its connection's thread ended
  std::optional<WorkerError> error;
  const std::string bytes = finiteFloats(1 << 16, 7);
  try {
    // The first writes may still fit the socket's buffer; the close never gets its answer.
    for (int i = 0; i < 100; ++i) client.write(header(i, "float32", 1 << 16), bytes.data(), bytes.size());
    client.close(std::chrono::seconds(10));
  } catch (const WorkerError& e) {
    error = e;
  }
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code(), ErrorCode::Unavailable) << error->what();
}

/// A peer that grants a tensor channel (or, `grant` false, port 0), and counts what comes
/// each way.
class Granter final : public v1::Worker::WithRawCallbackMethod_Push<v1::Worker::Service> {
 public:
  explicit Granter(bool grant)
      : grant_(grant), channel_("127.0.0.1", [this](v1::PeerTensor t, bool finite) { take(std::move(t), finite); },
                                64 << 20) {}
  grpc::ServerReadReactor<grpc::ByteBuffer>* Push(grpc::CallbackServerContext*, grpc::ByteBuffer* reply) override {
    return readPushStream(reply, [this](v1::PeerTensor t, bool finite) {
      ++pushed_;
      take(std::move(t), finite);
    });
  }
  grpc::Status OpenTensorChannel(grpc::ServerContext*, const v1::TensorChannelRequest* request,
                                 v1::TensorChannelGrant* grant) override {
    senders_.add(request->sender());
    if (grant_) {
      grant->set_ticket(channel_.issue(request->sender()));
      grant->set_port(channel_.port());
    }
    return grpc::Status::OK;
  }
  Received<Got> received;
  Received<std::string> senders_;
  std::atomic<int> pushed_{0};
  int admitted() const { return channel_.admitted(); }

 private:
  void take(v1::PeerTensor t, bool finite) {
    if (t.step() == 99) throw WorkerError(ErrorCode::InvalidArgument, "step 99 is refused");
    received.add({std::move(t), finite});
  }
  bool grant_;
  TensorChannelServer channel_;
};

TEST(TensorChannel, PeerOutboxTakesTheChannelAPeerGrantsAndPushWhereItGrantsNone) {
  const torch::Tensor big = torch::randn({1100, 1024});  // 4.3 MiB: Push would cut it in two
  const torch::Tensor rows = torch::randn({40, 9}).narrow(0, 10, 5);
  for (const bool grant : {true, false}) {
    for (const bool use : {true, false}) {
      SCOPED_TRACE(std::string(grant ? "granted" : "not granted") + (use ? ", used" : ", not used"));
      Granter peer(grant);
      std::string address;
      auto server = serveOnLoopback(peer, address);
      {
        PeerOutbox outbox(nullptr, [](const WorkerError& e) { ADD_FAILURE() << e.what(); });
        outbox.setTensorChannel(use);
        auto [wire, payload] = toWire(big, "big");
        v1::PeerTensor first = header(1, "float32", 0);
        *first.mutable_tensor() = std::move(wire);
        outbox.send("stage1", address, std::move(first), std::move(payload));
        v1::PeerTensor second = header(2, "float32", 0);
        *second.mutable_tensor() = toProto(rows, "rows");  // its bytes in the message
        outbox.send("stage1", address, std::move(second));
        outbox.flush(std::chrono::seconds(30));
      }  // closed: over the channel, the receiver has confirmed both
      const auto got = peer.received.waitFor(2);
      ASSERT_EQ(got.size(), 2u);
      EXPECT_TRUE(torch::equal(fromProto(got[0].first.tensor()), big));
      EXPECT_TRUE(torch::equal(fromProto(got[1].first.tensor()), rows));
      EXPECT_EQ(got[1].first.tensor().name(), "rows");
      const bool channel = grant && use;
      EXPECT_EQ(peer.admitted(), channel ? 1 : 0);
      EXPECT_EQ(peer.pushed_.load(), channel ? 0 : 2);
      EXPECT_EQ(peer.senders_.size(), use ? 1u : 0u);
      if (use) EXPECT_EQ(peer.senders_.waitFor(1).at(0), "stage0");
      server->Shutdown();
    }
  }
  // A refusal over the channel reaches the outbox's error handler, naming the peer.
  Granter peer(true);
  std::string address;
  auto server = serveOnLoopback(peer, address);
  Received<std::string> errors;
  {
    PeerOutbox outbox(nullptr, [&](const WorkerError& e) {
      errors.add(std::to_string(static_cast<int>(e.code())) + " " + e.what());
    });
    v1::PeerTensor refused = header(99, "float32", 0);
    *refused.mutable_tensor() = toProto(rows);
    outbox.send("stage1", address, std::move(refused));
  }  // the close hears the refusal, if no write did
  const auto said = errors.waitFor(1);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].rfind(std::to_string(static_cast<int>(ErrorCode::InvalidArgument)) + " ", 0), 0u) << said[0];
  EXPECT_NE(said[0].find("push to peer 'stage1' at " + address), std::string::npos) << said[0];
  EXPECT_NE(said[0].find("step 99 is refused"), std::string::npos) << said[0];
  server->Shutdown();
}

}  // namespace
}  // namespace stagecraft::worker
