#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "stagecraft/v1/worker.grpc.pb.h"
#include "tensor_channel.h"
#include "tensor_wire.h"
#include "worker_error.h"

namespace stagecraft::worker {

/// Channel arguments every worker-to-worker and client channel uses: messages up to
/// kMaxMessageBytes (a stage's weights or a big activation slice).
constexpr int kMaxMessageBytes = 256 * 1024 * 1024;
/// `own_connection`: a TCP connection of the channel's own rather than the one every channel
/// to `address` shares (a state copy of tens of megabytes must not queue in the socket ahead
/// of the activations that stage is waiting for).
std::shared_ptr<grpc::Channel> makeChannel(const std::string& address, bool own_connection = false);

/// The worker's one emulated network interface (--bandwidth-mbps): everything it sends, to
/// any peer (activations, gradients, backups), takes its turn on it.
class LinkPacer {
 public:
  using Clock = std::chrono::steady_clock;
  explicit LinkPacer(double bandwidth_mbps = 0) : bandwidth_mbps_(bandwidth_mbps) {}
  bool paced() const { return bandwidth_mbps_ > 0; }
  /// Puts `bytes` on the link after whatever is on it (from `now` at the earliest) and
  /// returns when they are through; `now` when unpaced.
  Clock::time_point reserve(std::size_t bytes, Clock::time_point now = Clock::now());
  /// Waits until `bytes` are through, half a millisecond of the link at a time so that what
  /// is queued meanwhile (a stage's activations) goes between the pieces; returns false,
  /// early, once `stop` (asked between pieces, may be empty) says so. At once when unpaced.
  bool send(std::size_t bytes, const std::function<bool()>& stop = {});

 private:
  double bandwidth_mbps_;
  std::mutex mutex_;
  Clock::time_point link_free_;
};

/// Sends activation and gradient slices to peers without holding up the stage: one
/// thread per peer, in the order they were queued, over the peer's tensor channel
/// (tensor_channel.h) where it grants one, else over one long-lived Push stream.
/// Outgoing bytes are paced by `link` (a shared NIC; null: unpaced).
class PeerOutbox {
 public:
  using Clock = std::chrono::steady_clock;
  /// One finished write, for the timeline.
  struct SentRecord {
    std::string peer;
    std::int64_t step = 0;
    int micro_batch = 0;
    bool gradient = false;
    Clock::time_point start, end;
  };

  /// `on_error` runs (on a sender thread) once, for the first failed send.
  /// `token`: the cluster token the peers ask for (empty: none).
  PeerOutbox(LinkPacer* link, std::function<void(const WorkerError&)> on_error, std::string token = {});
  /// Finishes the streams (cancel() first to drop what is queued).
  ~PeerOutbox();

  /// Payloads over 1.5 times `bytes` go in pieces of about that size (push_wire.h;
  /// kPieceBytes unless set; 0: whole). Before the first send.
  void setPieceBytes(std::size_t bytes) { piece_bytes_ = bytes; }
  /// Whether to ask peers for a tensor channel (true unless set; never under TLS, whose
  /// peers push over gRPC). Before the first send.
  void setTensorChannel(bool use) { use_channel_ = use; }
  /// Queues `tensor` for `peer`; with a `payload`, `tensor`'s data must be empty and the
  /// payload's bytes become it on the wire (a receiver parses an ordinary PeerTensor).
  void send(const std::string& peer, const std::string& address, v1::PeerTensor tensor, WirePayload payload = {});
  /// Waits until everything queued is written; throws the first send error, Aborted
  /// after cancel(), or DeadlineExceeded after `timeout`.
  void flush(std::chrono::milliseconds timeout);
  /// Drops queued tensors and cancels the streams (a stopped or failed job).
  void cancel();
  /// The writes finished since the last call.
  std::vector<SentRecord> takeRecords();

 private:
  struct Peer;
  void runPeer(Peer& peer);
  /// The peer's tensor channel, asked for once; null where it grants none or cannot be
  /// reached that way (then Push).
  void openChannel(Peer& peer, const std::string& sender);
  void fail(const WorkerError& error);

  LinkPacer* link_;
  std::function<void(const WorkerError&)> on_error_;
  std::string token_;
  std::size_t piece_bytes_;
  bool use_channel_ = true;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::unique_ptr<Peer>> peers_;
  std::optional<WorkerError> error_;
  bool cancelled_ = false;
  bool closing_ = false;
  std::vector<SentRecord> records_;
};

}  // namespace stagecraft::worker
