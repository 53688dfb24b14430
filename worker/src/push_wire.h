#pragma once
// Push messages read without protobuf copying their tensor bytes, and large tensors sent as
// pieces. A receiver parses everything of a v1::PeerTensor but tensor.data, then copies
// the data once, straight from gRPC's slices to where the tensor is assembled; a tensor
// split into pieces (PeerTensor.data_offset / data_bytes) is copied piece by piece while
// the next piece is still on the wire, which a single message cannot do (gRPC hands a
// message over only when all of it is in). Torch- and gRPC-free: tested against protobuf's
// own parser and fuzzed (tests/fuzz/push_wire_fuzz.cpp).

#include <google/protobuf/io/zero_copy_stream.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::worker {

/// A Push message as read by readPushHeader().
struct PushMessage {
  v1::PeerTensor header;      ///< the message with tensor.data left empty
  std::int64_t data_at = 0;   ///< where tensor.data's bytes start in the message
  std::size_t data_size = 0;  ///< how many there are
};

/// Reads `message` (a serialised v1::PeerTensor of `size` bytes) into `out` without copying
/// tensor.data: the same fields, merged the same way, as PeerTensor::ParseFromString would
/// give, and the data's place. False for bytes protobuf would not parse, and for a message
/// with a group field (a wire type no proto3 sender writes).
bool readPushHeader(google::protobuf::io::ZeroCopyInputStream& message, std::size_t size, PushMessage& out);

/// Appends bytes [at, at + size) of `message` to `into` (one copy). False when the message
/// is shorter. With `finite`, also checks the float32 words appended (`into` must hold
/// whole words before) as they are copied (copyFiniteFloats; a word cut between slices when
/// its last byte lands), and sets *finite to false on a NaN or an infinity (a trailing
/// partial word is not checked).
bool appendMessageBytes(google::protobuf::io::ZeroCopyInputStream& message, std::int64_t at, std::size_t size,
                        std::string& into, bool* finite = nullptr);

/// The byte ranges (offset, size) a sender cuts a tensor's `bytes` into: whole under 1.5
/// `piece_bytes` (or with `piece_bytes` 0), else pieces of about `piece_bytes` on 64-byte
/// boundaries. Two pieces of 2 MiB measured 1.05-1.20x raw gRPC for a 4 MiB activation,
/// one whole 1.20-1.40x, four 1.25x (bench_data_path's raw stream).
constexpr std::size_t kPieceBytes = std::size_t{2} << 20;
std::vector<std::pair<std::size_t, std::size_t>> pushPieces(std::size_t bytes, std::size_t piece_bytes = kPieceBytes);

/// Puts a Push stream's messages back into tensors. One per stream: the pieces of a tensor
/// come one after another on their stream, so at most one tensor is half assembled, and it
/// goes with the stream when the stream ends or breaks.
class PieceAssembler {
 public:
  /// A tensor taken whole, and whether its float32 values are all finite (checked piece by
  /// piece as they are copied, while the bytes are in cache; true for another dtype).
  struct Assembled {
    v1::PeerTensor tensor;
    bool finite = true;
  };
  /// Appends the message's tensor bytes to a string, checking them with `finite` when not
  /// null (appendMessageBytes on the message).
  using CopyData = std::function<bool(std::string& into, bool* finite)>;

  /// `max_bytes`: the largest tensor a stream may announce in pieces (the receiver reserves
  /// that much for it at the first piece).
  explicit PieceAssembler(std::size_t max_bytes) : max_bytes_(max_bytes) {}

  /// Takes one message. Returns the tensor it completes (a whole message, or the last piece
  /// of one), or nothing while pieces are missing. Throws WorkerError (InvalidArgument) for
  /// a piece that does not continue the tensor being assembled, or one out of range.
  std::optional<Assembled> add(PushMessage message, const CopyData& copy);

  /// Bytes of the tensor being assembled that are in (0: none is).
  std::size_t pending() const { return partial_ ? partial_->tensor.tensor().data().size() : 0; }

 private:
  std::size_t max_bytes_;
  std::optional<Assembled> partial_;
};

}  // namespace stagecraft::worker
