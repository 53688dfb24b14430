#pragma once
// Push's tensors over a TCP connection of their own, received straight into the tensor's
// memory. gRPC hands a message over as slices of its own buffers, so a contiguous tensor
// costs one more copy of every byte than the wire needs (bench_data_path: Push 1.25-1.32x
// raw gRPC unary for a 4 MiB activation, a plain socket read into one buffer 0.78x). A
// receiver grants a sender a port and a one-time ticket over an authenticated gRPC call
// (OpenTensorChannel); the sender connects, sends the ticket, then frames:
//
//   "SCT1"  u32 header bytes  u64 data bytes   (little-endian)
//   the header: a serialised v1::PeerTensor whose tensor.data is empty
//   the data: tensor.data's bytes
//
// The receiver answers with a status,
//
//   "SCTE"  u32 gRPC status code  u32 message bytes  the message
//
// OK once for the ticket and once when the sender has closed its side and every tensor
// before was taken. A receiver that refuses a tensor (the inbox's rules, a bad frame) sends
// the refusal, closes its side and drops what follows; the sender raises it at its next
// write or when it closes, as Push's stream status would be. No TLS: a worker started with
// --tls-* grants no port, and its peers push over gRPC.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::worker {

/// What a Push stream or a tensor channel hands on: each tensor taken whole, and whether its
/// float32 values are all finite (checked as its bytes came in).
using PushReceiver = std::function<void(v1::PeerTensor, bool finite)>;

/// The largest header a frame may announce.
constexpr std::uint32_t kMaxTensorHeaderBytes = 1u << 20;

/// The receiving end: a listening socket, one thread per connection, tickets issued by
/// the worker's gRPC service.
class TensorChannelServer {
 public:
  /// Listens on `host` (a name or address, as in the worker's --listen) at `port` (0: one the
  /// system picks). `max_bytes`: the largest tensor a frame may announce. Throws WorkerError
  /// (Unavailable) when it cannot listen.
  TensorChannelServer(const std::string& host, PushReceiver receive, std::size_t max_bytes, int port = 0);
  /// Stops listening, closes every connection and waits for their threads.
  ~TensorChannelServer();
  TensorChannelServer(const TensorChannelServer&) = delete;
  TensorChannelServer& operator=(const TensorChannelServer&) = delete;

  int port() const { return port_; }
  /// A ticket (16 random bytes) that lets one connection in, within `valid` from now.
  std::string issue(const std::string& sender, std::chrono::milliseconds valid = std::chrono::seconds(10));
  /// Connections let in since the start (for tests and logs).
  int admitted() const;

 private:
  struct Connection {
    int fd = -1;
    std::thread thread;
    bool done = false;
  };
  struct Ticket {
    std::string sender;
    std::chrono::steady_clock::time_point expires;
  };
  void acceptLoop();
  void serve(Connection& connection);
  /// The sender a ticket was issued to, once; empty for a ticket unknown or expired.
  std::string redeem(const std::string& ticket);

  PushReceiver receive_;
  std::size_t max_bytes_;
  int listen_fd_ = -1;
  int port_ = 0;
  mutable std::mutex mutex_;
  bool stopping_ = false;
  int admitted_ = 0;
  std::map<std::string, Ticket> tickets_;
  std::list<Connection> connections_;
  std::thread acceptor_;
};

/// The sending end: one connection, written by one thread.
class TensorChannelClient {
 public:
  /// Connects to `host`:`port` within `timeout` and presents `ticket`. Throws WorkerError
  /// (Unavailable) naming `what` when it cannot.
  TensorChannelClient(const std::string& host, int port, const std::string& ticket, std::chrono::milliseconds timeout,
                      std::string what);
  /// Closes the connection (without waiting for the receiver; see close()).
  ~TensorChannelClient();
  TensorChannelClient(const TensorChannelClient&) = delete;
  TensorChannelClient& operator=(const TensorChannelClient&) = delete;

  /// Writes one tensor: `header` (its tensor.data must be empty) and `size` bytes at `data`,
  /// from where they are. Throws WorkerError: the receiver's refusal, with `what` before its
  /// message, or Unavailable when the connection broke.
  void write(const v1::PeerTensor& header, const char* data, std::size_t size);
  /// Ends the stream and waits up to `timeout` for the receiver to confirm it took every
  /// tensor; throws its refusal, Unavailable when it closed without a word, or
  /// DeadlineExceeded.
  void close(std::chrono::milliseconds timeout);
  /// Makes a write blocked on a receiver that stopped reading fail at once (any thread).
  void abort();

 private:
  /// Reads the receiver's status when one comes within `timeout`: true for OK, false for
  /// none; throws a refusal as WorkerError, a closed connection as Unavailable.
  bool readStatus(std::chrono::milliseconds timeout);

  int fd_ = -1;
  std::string what_;
};

/// "host" of "host:port" ("[::1]:80" gives "::1"; an address without a port is the host).
std::string hostOf(const std::string& address);

}  // namespace stagecraft::worker
