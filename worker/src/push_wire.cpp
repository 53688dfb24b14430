#include "push_wire.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/wire_format_lite.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

#include "peer_inbox.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;
using google::protobuf::io::StringOutputStream;
using google::protobuf::internal::WireFormatLite;

bool lengthDelimited(std::uint32_t tag, int field) {
  return WireFormatLite::GetTagFieldNumber(tag) == field &&
         WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
}

/// The next tag into `tag`: 0 at the limit (the message's end, or the end of a nested
/// message). False for a tag protobuf refuses: zero, cut off by the end, or over the five
/// bytes its parser reads for a tag (CodedInputStream reads ten; a failed read stops where
/// it began, so the end is told by the limit).
bool nextTag(CodedInputStream& in, std::uint32_t& tag) {
  const int before = in.CurrentPosition();
  tag = in.ReadTag();
  if (tag == 0) return in.CurrentPosition() == before && in.BytesUntilLimit() == 0;
  return in.CurrentPosition() - before <= 5;
}

/// A length prefix that fits the int protobuf's streams count in.
bool readLength(CodedInputStream& in, int& length) {
  std::uint32_t size = 0;
  if (!in.ReadVarint32(&size) || size > static_cast<std::uint32_t>(std::numeric_limits<int>::max())) return false;
  length = static_cast<int>(size);
  return true;
}

/// Copies the field that `tag` opens (tag included) from `in` to `out`; false for a broken
/// field, and for a group (a wire type proto3 never writes: its nested tags would be read by
/// CodedInputStream's rules, which take tags protobuf's parser refuses).
bool copyField(CodedInputStream& in, std::uint32_t tag, CodedOutputStream& out) {
  const auto type = WireFormatLite::GetTagWireType(tag);
  if (type == WireFormatLite::WIRETYPE_START_GROUP || type == WireFormatLite::WIRETYPE_END_GROUP) return false;
  return WireFormatLite::SkipField(&in, tag, &out);
}

/// One occurrence of field `tensor`, `in` limited to it: every field but data copied to
/// `rest`, the place of the last data field noted in `out`.
bool readTensorField(CodedInputStream& in, std::string& rest, PushMessage& out) {
  StringOutputStream sink(&rest);
  CodedOutputStream copy(&sink);
  std::uint32_t tag = 0;
  while (nextTag(in, tag)) {
    if (tag == 0) return !copy.HadError();
    if (lengthDelimited(tag, v1::Tensor::kDataFieldNumber)) {
      int size = 0;
      if (!readLength(in, size)) return false;
      out.data_at = in.CurrentPosition();
      out.data_size = static_cast<std::size_t>(size);
      if (!in.Skip(size)) return false;
      continue;
    }
    if (!copyField(in, tag, copy)) return false;
  }
  return false;
}

// Appends `size` bytes to `into` (whose whole words are checked) and checks every float32
// word they complete; a word they leave partial is checked by the append that completes it.
// The whole words are checked in the registers that copy them (copyFiniteFloats), written
// where resize_and_overwrite (C++23, push_wire.cpp's standard; CMakeLists) lets them be
// written without zeroing the string's new bytes first.
bool appendCheckingFloats(std::string& into, const char* from, std::size_t size) {
  bool finite = true;
  const std::size_t lead = std::min(size, (sizeof(float) - into.size() % sizeof(float)) % sizeof(float));
  if (lead > 0) {
    into.append(from, lead);
    if (into.size() % sizeof(float) == 0) {
      finite = allFiniteFloats(std::string_view(into).substr(into.size() - sizeof(float)));
    }
    from += lead;
    size -= lead;
  }
  const std::size_t whole = size - size % sizeof(float);
#if defined(__cpp_lib_string_resize_and_overwrite)
  into.resize_and_overwrite(into.size() + whole, [&](char* to, std::size_t n) {
    if (!copyFiniteFloats(to + (n - whole), from, whole)) finite = false;
    return n;
  });
#else
  into.append(from, whole);
  if (!allFiniteFloats(std::string_view(into).substr(into.size() - whole))) finite = false;
#endif
  into.append(from + whole, size - whole);
  return finite;
}

}  // namespace

bool readPushHeader(google::protobuf::io::ZeroCopyInputStream& message, std::size_t size, PushMessage& out) {
  out = PushMessage{};
  if (size > static_cast<std::size_t>(std::numeric_limits<int>::max())) return false;
  CodedInputStream in(&message);
  in.PushLimit(static_cast<int>(size));
  // What protobuf would parse, but tensor.data: the other top-level fields in order, and each
  // occurrence of `tensor` merged into the ones before (as the parser merges a repeated
  // singular message field), the last data field winning.
  std::string top;
  std::vector<std::string> tensors;
  {
    StringOutputStream sink(&top);
    CodedOutputStream copy(&sink);
    std::uint32_t tag = 0;
    for (;;) {
      if (!nextTag(in, tag)) return false;
      if (tag == 0) break;
      if (lengthDelimited(tag, v1::PeerTensor::kTensorFieldNumber)) {
        int size = 0;
        // A nested limit past the message's end would be cut to it, and the field's end
        // taken for the message's.
        if (!readLength(in, size) || size > in.BytesUntilLimit() || !in.IncrementRecursionDepth()) return false;
        const auto limit = in.PushLimit(size);
        tensors.emplace_back();
        if (!readTensorField(in, tensors.back(), out)) return false;
        in.PopLimit(limit);
        in.DecrementRecursionDepth();
        continue;
      }
      if (!copyField(in, tag, copy)) return false;
    }
    if (copy.HadError()) return false;
  }
  if (!out.header.ParseFromString(top)) return false;
  for (const auto& tensor : tensors) {
    if (!out.header.mutable_tensor()->MergeFromString(tensor)) return false;
  }
  return true;
}

bool appendMessageBytes(google::protobuf::io::ZeroCopyInputStream& message, std::int64_t at, std::size_t size,
                        std::string& into, bool* finite) {
  if (at < 0 || at > std::numeric_limits<int>::max() || !message.Skip(static_cast<int>(at))) return false;
  into.reserve(into.size() + size);
  while (size > 0) {
    const void* data = nullptr;
    int n = 0;
    if (!message.Next(&data, &n)) return false;
    const std::size_t take = std::min(size, static_cast<std::size_t>(n));
    if (finite && *finite) {
      *finite = appendCheckingFloats(into, static_cast<const char*>(data), take);
    } else {
      into.append(static_cast<const char*>(data), take);
    }
    size -= take;
  }
  return true;
}

std::vector<std::pair<std::size_t, std::size_t>> pushPieces(std::size_t bytes, std::size_t piece_bytes) {
  const std::size_t count = piece_bytes == 0 ? 1 : std::max<std::size_t>(1, (bytes + piece_bytes / 2) / piece_bytes);
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  const std::size_t each = ((bytes / count) + 63) / 64 * 64;
  for (std::size_t at = 0; at < bytes || pieces.empty();) {
    const std::size_t size = pieces.size() + 1 == count ? bytes - at : std::min(each, bytes - at);
    pieces.emplace_back(at, size);
    at += size;
    if (size == 0) break;
  }
  return pieces;
}

namespace {

/// Whether `a` and `b` are pieces of the same tensor slice.
bool samePiece(const v1::PeerTensor& a, const v1::PeerTensor& b) {
  return a.job() == b.job() && a.sender() == b.sender() && a.step() == b.step() && a.eval() == b.eval() &&
         a.micro_batch() == b.micro_batch() && a.gradient() == b.gradient() && a.sample_begin() == b.sample_begin() &&
         a.samples() == b.samples() && a.data_bytes() == b.data_bytes();
}

std::string pieceText(const v1::PeerTensor& t) {
  return std::string(t.gradient() ? "gradients" : "activations") + " from '" + t.sender() + "' (step " +
         std::to_string(t.step()) + ", micro-batch " + std::to_string(t.micro_batch()) + ")";
}

}  // namespace

std::optional<PieceAssembler::Assembled> PieceAssembler::add(PushMessage message, const CopyData& copy) {
  v1::PeerTensor& header = message.header;
  const bool float32 = header.tensor().dtype() == "float32";
  auto fail = [&](const std::string& why) { return WorkerError(ErrorCode::InvalidArgument, why); };
  if (header.data_bytes() == 0 && header.data_offset() == 0) {  // a whole tensor
    if (partial_) {
      throw fail(pieceText(header) + " came whole while " + pieceText(partial_->tensor) + " lacked pieces");
    }
    Assembled whole{std::move(header), true};
    if (!copy(*whole.tensor.mutable_tensor()->mutable_data(), float32 ? &whole.finite : nullptr)) {
      throw fail("a Push message shorter than it says");
    }
    return whole;
  }
  const std::int64_t total = header.data_bytes();
  const std::int64_t offset = header.data_offset();
  const auto size = static_cast<std::int64_t>(message.data_size);
  if (total <= 0 || offset < 0 || offset % 64 != 0 || size == 0 || offset > total - size) {
    throw fail(pieceText(header) + ": a piece of " + std::to_string(size) + " bytes at " + std::to_string(offset) +
               " of " + std::to_string(total));
  }
  if (static_cast<std::uint64_t>(total) > max_bytes_) {
    throw fail(pieceText(header) + " announce " + std::to_string(total >> 20) + " MiB, over the " +
               std::to_string(max_bytes_ >> 20) + " MiB a tensor may have");
  }
  if (offset == 0) {
    if (partial_) {
      throw fail(pieceText(header) + " began while " + pieceText(partial_->tensor) + " lacked pieces");
    }
    partial_ = Assembled{std::move(header), true};
    partial_->tensor.mutable_tensor()->mutable_data()->reserve(static_cast<std::size_t>(total));
  } else if (!partial_ || !samePiece(partial_->tensor, header) ||
             static_cast<std::int64_t>(partial_->tensor.tensor().data().size()) != offset) {
    throw fail(pieceText(header) + ": a piece at " + std::to_string(offset) + " that does not continue " +
               (partial_ ? pieceText(partial_->tensor) : std::string("any tensor")));
  }
  std::string& data = *partial_->tensor.mutable_tensor()->mutable_data();
  if (!copy(data, float32 && partial_->finite ? &partial_->finite : nullptr)) {
    throw fail("a Push message shorter than it says");
  }
  if (static_cast<std::int64_t>(data.size()) < total) return std::nullopt;
  Assembled done = std::move(*partial_);
  partial_.reset();
  done.tensor.clear_data_offset();
  done.tensor.clear_data_bytes();
  return done;
}

}  // namespace stagecraft::worker
