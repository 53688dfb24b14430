// Data-path overhead: one activation from a sending stage to a receiving one on loopback,
// through the paths the workers use: the receiver's tensor channel (PeerOutbox writing the
// tensor's own memory to a TCP connection of its own, the receiver reading it straight into
// the tensor -> PeerInbox::put, PeerInbox::take, fromProto taking the bytes), and Push over
// gRPC where a peer grants no channel (PeerOutbox's long-lived Push stream, a large tensor in
// pieces, the service's raw callback reader copying each piece into place; and the same with
// the tensor in one message). Against a raw gRPC unary call carrying the same bytes in a
// ByteBuffer (generic API, no protobuf), both with an empty reply and echoed back. Two raw
// paths keep the bytes in one contiguous buffer, as a received tensor must: a unary call
// copied on arrival (the floor for a tensor taken whole over gRPC), and a long-lived stream
// whose pieces are copied into place as each arrives while the next is on the wire. One
// transfer in flight at a time; prints a Markdown table of per-transfer medians and p90s,
// and the goal (the worker's way within 1.2x raw gRPC unary for 4 MiB; exit 1 when missed).
//
//   build/bench/bench_data_path [--repeat N]

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "allocator_settings.h"
#include "peer_inbox.h"
#include "peer_outbox.h"
#include "push_wire.h"
#include "torch_stage.h"
#include "worker_service.h"

namespace {

using Clock = std::chrono::steady_clock;
using stagecraft::worker::PeerInbox;
using stagecraft::worker::PeerOutbox;
using stagecraft::worker::WorkerError;
namespace v1 = stagecraft::v1;

constexpr char kJob[] = "data-path";
/// The raw stream's pieces per transfer.
constexpr std::array<int, 4> kPieceCounts = {1, 2, 4, 8};

/// The receiving half of the worker's Push: the same reactor as WorkerService::Push
/// (readPushStream, each tensor to WorkerNode::receive, which is PeerInbox::put) without a
/// deployed stage around it, and the same tensor channel as the worker grants.
class PushSink final : public v1::Worker::WithRawCallbackMethod_Push<v1::Worker::Service> {
 public:
  explicit PushSink(PeerInbox& inbox)
      : inbox_(inbox),
        channel_("127.0.0.1", [this](v1::PeerTensor tensor, bool finite) { inbox_.put(std::move(tensor), finite); },
                 stagecraft::worker::kMaxMessageBytes) {}
  grpc::ServerReadReactor<grpc::ByteBuffer>* Push(grpc::CallbackServerContext*, grpc::ByteBuffer* reply) override {
    return stagecraft::worker::readPushStream(
        reply, [this](v1::PeerTensor tensor, bool finite) { inbox_.put(std::move(tensor), finite); });
  }
  grpc::Status OpenTensorChannel(grpc::ServerContext*, const v1::TensorChannelRequest* request,
                                 v1::TensorChannelGrant* grant) override {
    grant->set_ticket(channel_.issue(request->sender()));
    grant->set_port(channel_.port());
    return grpc::Status::OK;
  }

 private:
  PeerInbox& inbox_;
  stagecraft::worker::TensorChannelServer channel_;
};

/// Where the raw paths that keep the bytes put them: one contiguous buffer, as a tensor
/// needs, filled piece by piece at the offset the pieces before left it.
class Assembly {
 public:
  /// Expects `bytes` more, from the start of the buffer.
  void expect(size_t bytes) {
    std::lock_guard lock(mutex_);
    if (buffer_.size() < bytes) buffer_.resize(bytes);
    filled_ = 0;
    total_ = bytes;
  }
  /// Copies `piece` (gRPC's slices) to where the last piece ended.
  void add(const grpc::ByteBuffer& piece) {
    std::vector<grpc::Slice> slices;
    if (!piece.Dump(&slices).ok()) throw std::runtime_error("a piece that cannot be read");
    std::unique_lock lock(mutex_);
    size_t at = filled_;
    lock.unlock();  // one piece in flight at a time: the copy needs no lock
    for (const auto& slice : slices) {
      if (at + slice.size() > buffer_.size()) throw std::runtime_error("more bytes than expected");
      std::memcpy(buffer_.data() + at, slice.begin(), slice.size());
      at += slice.size();
    }
    lock.lock();
    filled_ = at;
    if (filled_ >= total_) done_.notify_all();
  }
  /// Waits until every expected byte is in.
  void wait() {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return filled_ >= total_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<char> buffer_;
  size_t filled_ = 0, total_ = 0;
};

/// "/raw/Pieces": a client stream whose every message is the next piece of one buffer,
/// copied into place as it arrives.
class PiecesReader final : public grpc::ServerGenericBidiReactor {
 public:
  explicit PiecesReader(Assembly& assembly) : assembly_(assembly) { StartRead(&piece_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    assembly_.add(piece_);
    piece_.Clear();
    StartRead(&piece_);
  }
  void OnDone() override { delete this; }

 private:
  Assembly& assembly_;
  grpc::ByteBuffer piece_;
};

/// "/raw/SinkCopy": one unary request whose bytes are copied into one buffer before the
/// empty reply: raw gRPC plus the one copy any contiguous tensor received from gRPC's slices
/// costs.
class CopyingSink final : public grpc::ServerGenericBidiReactor {
 public:
  explicit CopyingSink(Assembly& assembly) : assembly_(assembly) { StartRead(&request_); }
  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request"));
      return;
    }
    assembly_.expect(request_.Length());
    assembly_.add(request_);
    grpc::Slice empty;
    reply_ = grpc::ByteBuffer(&empty, 1);
    StartWriteAndFinish(&reply_, grpc::WriteOptions(), grpc::Status::OK);
  }
  void OnDone() override { delete this; }

 private:
  Assembly& assembly_;
  grpc::ByteBuffer request_, reply_;
};

/// Raw bytes over gRPC: "/raw/Sink" answers with an empty message, "/raw/Echo" with the
/// request's bytes; "/raw/SinkCopy" and "/raw/Pieces" keep the bytes in `assembly`.
class RawService final : public grpc::CallbackGenericService {
 public:
  Assembly assembly;
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    if (context->method() == "/raw/Pieces") return new PiecesReader(assembly);
    if (context->method() == "/raw/SinkCopy") return new CopyingSink(assembly);
    class Reactor final : public grpc::ServerGenericBidiReactor {
     public:
      explicit Reactor(bool echo) : echo_(echo) { StartRead(&request_); }
      void OnReadDone(bool ok) override {
        if (!ok) {
          Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request"));
          return;
        }
        if (echo_) {
          reply_ = request_;  // shares the slices, copies no bytes
        } else {
          grpc::Slice empty;  // a default ByteBuffer is no message at all
          reply_ = grpc::ByteBuffer(&empty, 1);
        }
        StartWriteAndFinish(&reply_, grpc::WriteOptions(), grpc::Status::OK);
      }
      void OnDone() override { delete this; }

     private:
      bool echo_;
      grpc::ByteBuffer request_, reply_;
    };
    return new Reactor(context->method() == "/raw/Echo");
  }
};

std::unique_ptr<grpc::Server> serve(std::vector<grpc::Service*> services, grpc::CallbackGenericService* generic,
                                    std::string& address) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  // gRPC's default limit is 4 MiB; the 4 MiB activation plus its header exceeds it.
  builder.SetMaxReceiveMessageSize(stagecraft::worker::kMaxMessageBytes);
  builder.SetMaxSendMessageSize(stagecraft::worker::kMaxMessageBytes);
  for (auto* s : services) builder.RegisterService(s);
  if (generic) builder.RegisterCallbackGenericService(generic);
  auto server = builder.BuildAndStart();
  if (!server || port == 0) throw std::runtime_error("cannot start a server on 127.0.0.1");
  address = "127.0.0.1:" + std::to_string(port);
  return server;
}

struct Stats {
  double median_ms = 0, p90_ms = 0;
};

Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) { return ms[std::min(ms.size() - 1, static_cast<size_t>(q * (ms.size() - 1) + 0.5))]; };
  return {at(0.5), at(0.9)};
}

double msSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// `repeat` transfers of `activation` (rows = samples) through PeerOutbox -> PeerInbox: the
/// worker's path (`channel`: over the receiver's tensor channel, read straight into the
/// tensor; else Push, `copying` false: the tensor's memory on the wire, in pieces of about
/// `piece_bytes` (0: one message), each copied into place as it arrives, the bytes taken),
/// or the path before it (the bytes copied into the message and out of it again).
std::vector<double> pushPath(const std::string& address, PeerInbox& inbox, const torch::Tensor& activation,
                             int repeat, std::int64_t& step, bool copying, bool channel,
                             std::size_t piece_bytes = stagecraft::worker::kPieceBytes) {
  PeerOutbox outbox(0, [](const WorkerError& e) { std::fprintf(stderr, "send failed: %s\n", e.what()); });
  outbox.setPieceBytes(piece_bytes);
  outbox.setTensorChannel(channel);
  const int samples = static_cast<int>(activation.size(0));
  std::vector<double> out;
  for (int i = -5; i < repeat; ++i) {  // five warm-up transfers open the stream (or channel)
    const auto start = Clock::now();
    v1::PeerTensor message;
    message.set_job(kJob);
    message.set_sender("stage0");
    message.set_step(++step);
    message.set_micro_batch(0);
    message.set_sample_begin(0);
    message.set_samples(samples);
    torch::Tensor received;
    if (copying) {
      *message.mutable_tensor() = stagecraft::worker::toProto(activation);
      outbox.send("stage1", address, std::move(message));
      auto slices = inbox.take(step, 0, false, 0, samples, std::chrono::seconds(30));
      received = stagecraft::worker::fromProto(slices.at(0).tensor());
    } else {
      auto [header, payload] = stagecraft::worker::toWire(activation);
      *message.mutable_tensor() = std::move(header);
      outbox.send("stage1", address, std::move(message), std::move(payload));
      auto slices = inbox.take(step, 0, false, 0, samples, std::chrono::seconds(30));
      received = stagecraft::worker::fromProto(std::move(*slices.at(0).mutable_tensor()));
    }
    const double ms = msSince(start);
    if (received.numel() != activation.numel()) throw std::runtime_error("the activation arrived cut");
    if (i >= 0) out.push_back(ms);
  }
  outbox.flush(std::chrono::seconds(30));
  return out;
}

/// `repeat` transfers of `tensor`'s bytes over one long-lived raw stream ("/raw/Pieces"),
/// each in `pieces` messages that reference the tensor's memory; a transfer ends when the
/// receiver has copied its last piece into place.
std::vector<double> piecesPath(const std::shared_ptr<grpc::Channel>& channel, Assembly& assembly,
                               const torch::Tensor& tensor, int pieces, int repeat) {
  static const grpc::internal::RpcMethod kPieces("/raw/Pieces", grpc::internal::RpcMethod::CLIENT_STREAMING);
  grpc::ClientContext context;
  grpc::ByteBuffer reply;
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer(
      grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(channel.get(), kPieces, &context, &reply));
  const char* data = static_cast<const char*>(tensor.data_ptr());
  const size_t bytes = tensor.nbytes();
  const size_t piece = (bytes + pieces - 1) / pieces;
  std::vector<double> out;
  for (int i = -5; i < repeat; ++i) {  // five warm-up transfers open the stream
    assembly.expect(bytes);
    const auto start = Clock::now();
    for (size_t at = 0; at < bytes; at += piece) {
      grpc::Slice slice(data + at, std::min(piece, bytes - at), grpc::Slice::STATIC_SLICE);
      if (!writer->Write(grpc::ByteBuffer(&slice, 1))) throw std::runtime_error("/raw/Pieces: the stream broke");
    }
    assembly.wait();
    const double ms = msSince(start);
    if (i >= 0) out.push_back(ms);
  }
  writer->WritesDone();
  (void)writer->Finish();  // the reader answers no message: only the stream's end matters here
  return out;
}

/// `repeat` unary calls of `bytes` to `method`, one at a time.
std::vector<double> rawCalls(grpc::GenericStub& stub, const std::string& method, size_t bytes, int repeat) {
  const std::string payload(bytes, '\x5a');
  grpc::Slice slice(payload);
  const grpc::ByteBuffer request(&slice, 1);
  std::vector<double> out;
  for (int i = -5; i < repeat; ++i) {
    grpc::ClientContext context;
    grpc::ByteBuffer reply;
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    grpc::Status status;
    const auto start = Clock::now();
    stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &reply, [&](grpc::Status s) {
      std::lock_guard lock(mutex);
      status = std::move(s);
      done = true;
      done_cv.notify_one();
    });
    {
      std::unique_lock lock(mutex);
      done_cv.wait(lock, [&] { return done; });
    }
    const double ms = msSince(start);
    if (!status.ok()) throw std::runtime_error(method + ": " + status.error_message());
    if (i >= 0) out.push_back(ms);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  // The worker's allocator settings: received tensors reuse freed memory as they do there.
  stagecraft::worker::keepFreedMemory();
  int repeat = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--help") {
      std::printf("usage: bench_data_path [--repeat N]\n");
      return 0;
    } else {
      std::fprintf(stderr, "bench_data_path: unknown argument '%s'\n", arg.c_str());
      return 2;
    }
  }
  torch::set_num_threads(1);
  PeerInbox inbox;
  PushSink sink(inbox);
  RawService raw;
  std::string address;
  auto server = serve({&sink}, &raw, address);
  auto channel = stagecraft::worker::makeChannel(address);
  grpc::GenericStub stub(channel);

  struct Size {
    const char* label;
    std::int64_t rows, columns;  // float32
  };
  std::printf("| activation | path | median ms | p90 ms | median / raw one-way |\n|---|---|---:|---:|---:|\n");
  std::int64_t step = 0;
  double worker_over_raw = 0;  // the 4 MiB activation, the worker's way (the tensor channel)
  for (const Size size : {Size{"4 KiB (1 x 1024 floats)", 1, 1024}, Size{"4 MiB (512 x 2048 floats)", 512, 2048}}) {
    const torch::Tensor activation = torch::randn({size.rows, size.columns});
    const size_t bytes = static_cast<size_t>(activation.numel()) * sizeof(float);
    // What a stage of this activation's shape takes from its one neighbour.
    stagecraft::worker::InboxRules rules;
    rules.flows.push_back({"stage0", false, 0, static_cast<int>(size.rows), {size.columns}});
    rules.microbatches = 1;
    rules.max_bytes = 4 * bytes;
    inbox.open(kJob, rules);
    // The paths in alternating rounds, so a busy moment weighs on all of them alike.
    std::vector<double> channel_ms, push_ms, whole_ms, copying_ms, sink_ms, echo_ms, sink_copy_ms;
    std::array<std::vector<double>, kPieceCounts.size()> pieces_ms;
    constexpr int kRounds = 5;
    for (int r = 0; r < kRounds; ++r) {
      const int n = std::max(1, repeat / kRounds);
      for (double ms : pushPath(address, inbox, activation, n, step, false, true)) channel_ms.push_back(ms);
      for (double ms : pushPath(address, inbox, activation, n, step, false, false)) push_ms.push_back(ms);
      for (double ms : pushPath(address, inbox, activation, n, step, false, false, 0)) whole_ms.push_back(ms);
      for (double ms : pushPath(address, inbox, activation, n, step, true, false)) copying_ms.push_back(ms);
      for (double ms : rawCalls(stub, "/raw/Sink", bytes, n)) sink_ms.push_back(ms);
      for (double ms : rawCalls(stub, "/raw/Echo", bytes, n)) echo_ms.push_back(ms);
      for (double ms : rawCalls(stub, "/raw/SinkCopy", bytes, n)) sink_copy_ms.push_back(ms);
      for (size_t k = 0; k < kPieceCounts.size(); ++k) {
        for (double ms : piecesPath(channel, raw.assembly, activation, kPieceCounts[k], n)) pieces_ms[k].push_back(ms);
      }
    }
    const Stats push = stats(push_ms);
    const Stats copying = stats(copying_ms);
    const Stats sink_only = stats(sink_ms);
    const Stats echo = stats(echo_ms);
    auto row = [&](const char* path, const Stats& s) {
      std::printf("| %s | %s | %.3f | %.3f | %.2f |\n", size.label, path, s.median_ms, s.p90_ms,
                  s.median_ms / sink_only.median_ms);
    };
    const Stats channel = stats(channel_ms);
    worker_over_raw = channel.median_ms / sink_only.median_ms;
    row("worker, over the tensor channel (toWire, PeerOutbox, read into the tensor, PeerInbox, fromProto taking "
        "the bytes)", channel);
    row("worker Push over gRPC (toWire, PeerOutbox in pieces of 2 MiB, raw reader, PeerInbox, fromProto taking the "
        "bytes)", push);
    row("worker Push over gRPC, the tensor in one message", stats(whole_ms));
    row("Push copying the bytes (toProto, PeerOutbox, PeerInbox, fromProto copying)", copying);
    row("raw gRPC unary, bytes in, empty reply", sink_only);
    row("raw gRPC unary echo, bytes both ways", echo);
    row("raw gRPC unary, bytes copied into one buffer, empty reply", stats(sink_copy_ms));
    for (size_t k = 0; k < kPieceCounts.size(); ++k) {
      const std::string label = "raw gRPC stream, the bytes in " + std::to_string(kPieceCounts[k]) +
                                (kPieceCounts[k] == 1 ? " piece" : " pieces") + " copied into place as they arrive";
      row(label.c_str(), stats(pieces_ms[k]));
    }
  }
  std::printf("\n%d timed transfers per row, in 5 rounds that alternate the paths, each round after 5 "
              "warm-up transfers of its own; sender and receiver in one process, 127.0.0.1, with the worker's "
              "allocator settings.\n", repeat);
  const bool met = worker_over_raw <= 1.2;
  std::printf("\ngoal: a 4 MiB activation the worker's way within 1.2x raw gRPC unary: %.2fx (%s)\n", worker_over_raw,
              met ? "met" : "missed");
  server->Shutdown();
  return met ? 0 : 1;
}
