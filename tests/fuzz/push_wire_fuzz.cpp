// The worker's raw Push reader (worker/src/push_wire.cpp): a message's header parsed without
// its tensor bytes, then the bytes copied from where it found them, must give what
// protobuf's parser gives, and refuse what it refuses (and a group field, which proto3
// never writes); the piece assembler must take or
// refuse (WorkerError) whatever that reader passes on, never crash.

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>

#include <limits>

#include "fuzz_support.h"
#include "peer_inbox.h"
#include "push_wire.h"
#include "stagecraft/v1/worker.pb.h"
#include "worker_error.h"

using namespace stagecraft;
using google::protobuf::io::ArrayInputStream;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) return 0;
  const int n = static_cast<int>(size);
  v1::PeerTensor parsed;
  // A group field (which proto3 never writes) is refused; protobuf keeps it as unknown.
  auto hasGroup = [](const google::protobuf::UnknownFieldSet& fields) {
    for (int i = 0; i < fields.field_count(); ++i) {
      if (fields.field(i).type() == google::protobuf::UnknownField::TYPE_GROUP) return true;
    }
    return false;
  };
  const bool ok = parsed.ParseFromArray(data, n) && !hasGroup(parsed.GetReflection()->GetUnknownFields(parsed)) &&
                  !hasGroup(parsed.tensor().GetReflection()->GetUnknownFields(parsed.tensor()));
  // In slices of a few bytes, as gRPC hands a message over in slices.
  const int chunk = size > 0 ? 1 + data[0] % 13 : 1;
  ArrayInputStream header_in(data, n, chunk);
  worker::PushMessage message;
  const bool read = worker::readPushHeader(header_in, size, message);
  fuzz::require(read == ok, "refuses exactly what protobuf refuses");
  if (!read) return 0;
  fuzz::require(message.header.tensor().data().empty(), "the header holds no tensor bytes");
  v1::PeerTensor raw = message.header;
  std::string bytes;
  {
    ArrayInputStream data_in(data, n, chunk);
    fuzz::require(worker::appendMessageBytes(data_in, message.data_at, message.data_size, bytes),
                  "the data lies within the message");
  }
  if (raw.has_tensor()) *raw.mutable_tensor()->mutable_data() = std::move(bytes);
  fuzz::require(raw.SerializeAsString() == parsed.SerializeAsString(), "the same message as protobuf parses");
  worker::PieceAssembler assembler(1 << 20);
  try {
    ArrayInputStream copy_in(data, n, chunk);
    const auto done = assembler.add(message, [&](std::string& into, bool* finite) {
      return worker::appendMessageBytes(copy_in, message.data_at, message.data_size, into, finite);
    });
    if (done) {
      fuzz::require(done->tensor.data_bytes() == 0, "a whole tensor carries no piece fields");
      const std::string& copied = done->tensor.tensor().data();
      fuzz::require(copied == parsed.tensor().data(), "the bytes copied in place are the message's");
      // The check made while copying, slice by slice, agrees with a scan of the whole copy.
      if (done->tensor.tensor().dtype() == "float32") {
        fuzz::require(done->finite == worker::allFiniteFloats(copied), "the finite check of the copy");
      }
    }
  } catch (const worker::WorkerError& e) {
    fuzz::require(e.code() == worker::ErrorCode::InvalidArgument, "a bad piece is an invalid argument");
  }
  return 0;
}
