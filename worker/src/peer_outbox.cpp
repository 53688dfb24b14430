#include "peer_outbox.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "control/cluster_token.h"
#include "control/transport_security.h"
#include "push_wire.h"
#include "status_mapping.h"

namespace stagecraft::worker {

std::shared_ptr<grpc::Channel> makeChannel(const std::string& address, bool own_connection) {
  grpc::ChannelArguments args;
  if (own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // Fail over quickly to "unreachable" instead of backing off for long between tries.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // TLS when the worker was started with --tls-*: peers check each other as callers do.
  return grpc::CreateCustomChannel(address, control::workerChannelCredentials(), args);
}

namespace {

struct Outgoing {
  v1::PeerTensor tensor;
  WirePayload payload;
  std::size_t bytes() const { return tensor.ByteSizeLong() + payload.size; }
};

void releasePayload(void* owner) { delete static_cast<std::shared_ptr<const void>*>(owner); }

/// The wire form of `out` with bytes [offset, offset + size) of its payload: the message as
/// protobuf writes it, then, for a payload, the field `tensor` once more holding only
/// `data`. Protobuf merges a repeated embedded message into the first, so the receiver
/// parses the PeerTensor it would have got from one message with the data inside; the
/// payload's bytes are a slice of their own, referenced, not copied. Part of a payload is a
/// piece (data_offset, data_bytes).
grpc::ByteBuffer wireMessage(Outgoing& out, std::size_t offset, std::size_t size) {
  namespace wire = google::protobuf::internal;
  using google::protobuf::io::CodedOutputStream;
  if (size < out.payload.size) {
    out.tensor.set_data_offset(static_cast<std::int64_t>(offset));
    out.tensor.set_data_bytes(static_cast<std::int64_t>(out.payload.size));
  }
  // The prefix that opens the second `tensor` field, up to the payload's bytes.
  std::uint8_t prefix[4 * 10];
  std::uint8_t* end = prefix;
  if (size > 0) {
    const std::uint32_t data_tag = wire::WireFormatLite::MakeTag(v1::Tensor::kDataFieldNumber,
                                                                 wire::WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    const std::uint32_t tensor_tag = wire::WireFormatLite::MakeTag(v1::PeerTensor::kTensorFieldNumber,
                                                                   wire::WireFormatLite::WIRETYPE_LENGTH_DELIMITED);
    const std::uint64_t inner =
        CodedOutputStream::VarintSize32(data_tag) + CodedOutputStream::VarintSize64(size) + size;
    end = CodedOutputStream::WriteVarint32ToArray(tensor_tag, end);
    end = CodedOutputStream::WriteVarint64ToArray(inner, end);
    end = CodedOutputStream::WriteVarint32ToArray(data_tag, end);
    end = CodedOutputStream::WriteVarint64ToArray(size, end);
  }
  // The message and the prefix, serialised once into a slice of their own (what the
  // generated stub's serialiser does for a whole message).
  const std::size_t head = out.tensor.ByteSizeLong();
  const std::size_t prefix_size = static_cast<std::size_t>(end - prefix);
  grpc::Slice first(head + prefix_size);
  auto* at = const_cast<std::uint8_t*>(first.begin());  // freshly allocated, ours to fill
  out.tensor.SerializeWithCachedSizesToArray(at);
  std::memcpy(at + head, prefix, prefix_size);
  if (size == 0) return grpc::ByteBuffer(&first, 1);
  grpc::Slice slices[2] = {
      std::move(first),
      grpc::Slice(const_cast<char*>(out.payload.data + offset), size, releasePayload,
                  new std::shared_ptr<const void>(out.payload.owner)),
  };
  return grpc::ByteBuffer(slices, 2);
}

}  // namespace

struct PeerOutbox::Peer {
  std::string name;
  std::string address;
  std::deque<Outgoing> queue;
  bool writing = false;
  std::shared_ptr<grpc::Channel> channel;
  grpc::ClientContext context;
  grpc::ByteBuffer reply;
  // The Worker service's Push, written as bytes so a payload goes out without a copy
  // (wireMessage); the generated stub would serialise the whole message into a new buffer.
  std::unique_ptr<grpc::ClientWriter<grpc::ByteBuffer>> writer;
  // Or its tensor channel: set and reset under the outbox's mutex (cancel() aborts it).
  bool channel_asked = false;
  grpc::ClientContext* asking = nullptr;  // the call that asks for it, while it runs
  std::unique_ptr<TensorChannelClient> tensor_channel;
  std::thread thread;
};

LinkPacer::Clock::time_point LinkPacer::reserve(std::size_t bytes, Clock::time_point now) {
  if (bandwidth_mbps_ <= 0) return now;
  const auto wire = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(static_cast<double>(bytes) * 8.0 / (bandwidth_mbps_ * 1e6)));
  std::lock_guard lock(mutex_);
  link_free_ = std::max(link_free_, now) + wire;
  return link_free_;
}

bool LinkPacer::send(std::size_t bytes, const std::function<bool()>& stop) {
  if (!paced()) return true;
  // A piece is half a millisecond on the link (4 KiB at the least): what is queued while one
  // is on it waits that long at most. Pieces of a megabyte (8 ms at 1 Gbit/s) held every
  // activation of the steps a backup crossed, and cost those steps a third of their time
  // with a backup every other step (bench_recovery --backup-every 2).
  const std::size_t piece_bytes =
      std::max<std::size_t>(4 << 10, static_cast<std::size_t>(bandwidth_mbps_ * 1e6 / 8 * 0.0005));
  for (std::size_t left = bytes; left > 0;) {
    const std::size_t piece = std::min(left, piece_bytes);
    std::this_thread::sleep_until(reserve(piece));
    left -= piece;
    if (stop && stop()) return false;
  }
  return true;
}

PeerOutbox::PeerOutbox(LinkPacer* link, std::function<void(const WorkerError&)> on_error, std::string token)
    : link_(link), on_error_(std::move(on_error)), token_(std::move(token)), piece_bytes_(kPieceBytes) {}

PeerOutbox::~PeerOutbox() {
  {
    std::lock_guard lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  for (auto& [name, peer] : peers_) {
    if (peer->thread.joinable()) peer->thread.join();
  }
}

void PeerOutbox::send(const std::string& peer_name, const std::string& address, v1::PeerTensor tensor,
                      WirePayload payload) {
  if (payload.size > 0 && !tensor.tensor().data().empty()) {
    throw std::logic_error("PeerOutbox::send: a tensor with data of its own and a payload");
  }
  std::lock_guard lock(mutex_);
  if (cancelled_ || error_) return;
  auto& peer = peers_[peer_name];
  if (!peer) {
    peer = std::make_unique<Peer>();
    peer->name = peer_name;
    peer->address = address;
    Peer* p = peer.get();
    peer->thread = std::thread([this, p] { runPeer(*p); });
  }
  peer->queue.push_back({std::move(tensor), std::move(payload)});
  changed_.notify_all();
}

void PeerOutbox::fail(const WorkerError& error) {
  bool first = false;
  {
    std::lock_guard lock(mutex_);
    if (!error_ && !cancelled_) {
      error_ = error;
      first = true;
    }
    for (auto& [name, peer] : peers_) peer->queue.clear();
  }
  changed_.notify_all();
  if (first && on_error_) on_error_(error);
}

void PeerOutbox::runPeer(Peer& peer) {
  auto what = [&] { return "push to peer '" + peer.name + "' at " + peer.address; };
  for (;;) {
    Outgoing out;
    Clock::time_point start;
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [&] { return closing_ || cancelled_ || !peer.queue.empty(); });
      if (peer.queue.empty() || cancelled_) break;
      out = std::move(peer.queue.front());
      peer.queue.pop_front();
      peer.writing = true;
      start = Clock::now();
    }
    // The NIC is shared: this message goes on the wire after the ones before it.
    if (link_ && link_->paced()) std::this_thread::sleep_until(link_->reserve(out.bytes(), start));
    if (!peer.channel_asked) openChannel(peer, out.tensor.sender());
    bool ok = true;
    std::optional<WorkerError> channel_error;
    if (peer.tensor_channel) {
      // Only this thread writes; cancel() may abort the connection meanwhile.
      try {
        if (out.payload.size > 0) {
          peer.tensor_channel->write(out.tensor, out.payload.data, out.payload.size);
        } else {
          const std::string data = std::move(*out.tensor.mutable_tensor()->mutable_data());
          out.tensor.mutable_tensor()->clear_data();
          peer.tensor_channel->write(out.tensor, data.data(), data.size());
        }
      } catch (const WorkerError& error) {
        ok = false;
        channel_error = error;
      }
    } else {
      if (!peer.writer) {
        static const grpc::internal::RpcMethod kPush("/stagecraft.v1.Worker/Push",
                                                     grpc::internal::RpcMethod::CLIENT_STREAMING);
        if (!peer.channel) peer.channel = makeChannel(peer.address);
        if (!token_.empty()) peer.context.AddMetadata(control::kTokenMetadataKey, token_);
        // Only this thread touches writer.
        peer.writer.reset(grpc::internal::ClientWriterFactory<grpc::ByteBuffer>::Create(peer.channel.get(), kPush,
                                                                                       &peer.context, &peer.reply));
      }
      // A large payload in pieces (push_wire.h): the receiver copies each into place while
      // the next is on the wire.
      for (const auto& [offset, size] : pushPieces(out.payload.size, piece_bytes_)) {
        ok = peer.writer->Write(wireMessage(out, offset, size));
        if (!ok) break;
      }
    }
    const v1::PeerTensor& tensor = out.tensor;
    {
      std::lock_guard lock(mutex_);
      peer.writing = false;
      if (ok) {
        records_.push_back({peer.name, tensor.step(), tensor.micro_batch(), tensor.gradient(), start, Clock::now()});
      }
    }
    changed_.notify_all();
    if (channel_error) {
      fail(*channel_error);
      return;
    }
    if (!ok) {
      const grpc::Status status = peer.writer->Finish();
      peer.writer.reset();
      fail(status.ok() ? WorkerError(ErrorCode::Unavailable, what() + ": the stream closed")
                       : fromStatus(status, what()));
      return;
    }
  }
  bool cancelled;
  {
    std::lock_guard lock(mutex_);
    cancelled = cancelled_;
  }
  if (peer.tensor_channel && !cancelled) {
    // Waits, as Push's Finish does, until the receiver has taken everything or refused.
    try {
      peer.tensor_channel->close(std::chrono::seconds(10));
    } catch (const WorkerError& error) {
      fail(error);
    }
  }
  if (peer.writer) {
    if (!cancelled) peer.writer->WritesDone();
    const grpc::Status status = peer.writer->Finish();
    if (!status.ok() && !cancelled) fail(fromStatus(status, what()));
  }
}

void PeerOutbox::openChannel(Peer& peer, const std::string& sender) {
  peer.channel_asked = true;
  if (!use_channel_ || control::clientTlsEnabled()) return;
  peer.channel = makeChannel(peer.address);
  // Short waits: a peer slow to answer costs this path, not the transfer (Push is there).
  constexpr auto kWait = std::chrono::seconds(2);
  grpc::Status asked;
  v1::TensorChannelGrant grant;
  {
    grpc::ClientContext context;
    if (!token_.empty()) context.AddMetadata(control::kTokenMetadataKey, token_);
    context.set_deadline(std::chrono::system_clock::now() + kWait);
    v1::TensorChannelRequest request;
    request.set_sender(sender);
    {
      std::lock_guard lock(mutex_);
      if (cancelled_) return;
      peer.asking = &context;  // cancel() ends the call
    }
    asked = v1::Worker::NewStub(peer.channel)->OpenTensorChannel(&context, request, &grant);
    std::lock_guard lock(mutex_);
    peer.asking = nullptr;
  }
  // A peer that grants none (TLS, --no-tensor-channel, a build without the call) or cannot
  // be asked: Push, which reports an unreachable peer as it always has. Only a failed call
  // is worth a line (each run's segment asks again).
  if (!asked.ok() && asked.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
    std::fprintf(stderr, "stagecraft-worker: push to peer '%s' at %s: no tensor channel (%s: %s); sending over Push\n",
                 peer.name.c_str(), peer.address.c_str(), statusCodeName(asked.error_code()).c_str(),
                 asked.error_message().c_str());
  }
  if (!asked.ok() || grant.port() <= 0) return;
  try {
    auto client = std::make_unique<TensorChannelClient>(hostOf(peer.address), grant.port(), grant.ticket(), kWait,
                                                        "push to peer '" + peer.name + "' at " + peer.address);
    std::lock_guard lock(mutex_);
    if (!cancelled_) peer.tensor_channel = std::move(client);
  } catch (const WorkerError& error) {
    // A firewall that lets the gRPC port through but not the channel's: slower, not broken.
    std::fprintf(stderr, "stagecraft-worker: %s; sending over Push instead\n", error.what());
  }
}

void PeerOutbox::flush(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const bool done = changed_.wait_for(lock, timeout, [&] {
    if (error_ || cancelled_) return true;
    for (auto& [name, peer] : peers_) {
      if (!peer->queue.empty() || peer->writing) return false;
    }
    return true;
  });
  if (error_) throw *error_;
  if (cancelled_) throw WorkerError(ErrorCode::Aborted, "sends to peers were cancelled");
  if (!done) throw WorkerError(ErrorCode::DeadlineExceeded, "peers did not take the last tensors in time");
}

void PeerOutbox::cancel() {
  std::lock_guard lock(mutex_);
  cancelled_ = true;
  for (auto& [name, peer] : peers_) {
    peer->queue.clear();
    // Unblocks a Write stuck on a peer that stopped reading (thread-safe on the context;
    // a call not started yet starts cancelled).
    peer->context.TryCancel();
    if (peer->asking) peer->asking->TryCancel();
    if (peer->tensor_channel) peer->tensor_channel->abort();
  }
  changed_.notify_all();
}

std::vector<PeerOutbox::SentRecord> PeerOutbox::takeRecords() {
  std::lock_guard lock(mutex_);
  return std::exchange(records_, {});
}

}  // namespace stagecraft::worker
