// The worker reads Push messages without protobuf copying their tensor bytes
// (readPushHeader, appendMessageBytes) and puts tensors sent in pieces back together
// (PieceAssembler). What it reads must be what protobuf's own parser reads, for every
// message protobuf takes, and it must refuse what protobuf refuses.

#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "push_wire.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

using google::protobuf::io::ArrayInputStream;

/// readPushHeader and appendMessageBytes over `bytes`, in chunks of `chunk` bytes (gRPC
/// hands a message over in slices); the PeerTensor they make, or nothing when refused.
std::optional<v1::PeerTensor> readRaw(const std::string& bytes, int chunk = 7) {
  ArrayInputStream header(bytes.data(), static_cast<int>(bytes.size()), chunk);
  PushMessage message;
  if (!readPushHeader(header, bytes.size(), message)) return std::nullopt;
  EXPECT_TRUE(message.header.tensor().data().empty());
  ArrayInputStream data(bytes.data(), static_cast<int>(bytes.size()), chunk);
  std::string into;
  EXPECT_TRUE(appendMessageBytes(data, message.data_at, message.data_size, into));
  if (message.header.has_tensor()) *message.header.mutable_tensor()->mutable_data() = std::move(into);
  return message.header;
}

std::string hex(const std::string& bytes) {
  std::string out;
  char byte[4];
  for (unsigned char c : bytes) {
    std::snprintf(byte, sizeof byte, "%02x ", c);
    out += byte;
  }
  return out;
}

/// Whether `fields` hold a group (which readPushHeader refuses, protobuf keeps as unknown).
bool hasGroup(const google::protobuf::UnknownFieldSet& fields) {
  for (int i = 0; i < fields.field_count(); ++i) {
    if (fields.field(i).type() == google::protobuf::UnknownField::TYPE_GROUP) return true;
  }
  return false;
}

/// Whether readRaw agrees with protobuf's parser on `bytes`: both refuse, or both give
/// the same message; a message with a group field is refused.
void expectSameAsProtobuf(const std::string& bytes, const std::string& what) {
  v1::PeerTensor parsed;
  const bool ok = parsed.ParseFromString(bytes) &&
                  !hasGroup(parsed.GetReflection()->GetUnknownFields(parsed)) &&
                  !hasGroup(parsed.tensor().GetReflection()->GetUnknownFields(parsed.tensor()));
  for (int chunk : {1, 5, 64, 1 << 20}) {
    const auto raw = readRaw(bytes, chunk);
    ASSERT_EQ(raw.has_value(), ok) << what << " (chunks of " << chunk << "): " << hex(bytes);
    if (ok) {
      EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*raw, parsed))
          << what << ": " << raw->ShortDebugString() << " vs " << parsed.ShortDebugString();
      EXPECT_EQ(raw->SerializeAsString(), parsed.SerializeAsString()) << what;  // unknown fields too
    }
  }
}

std::string floats(std::size_t count, float first = 0.5F) {
  std::string bytes(count * sizeof(float), '\0');
  for (std::size_t i = 0; i < count; ++i) {
    const float v = first + static_cast<float>(i % 1000) * 0.25F;
    std::memcpy(bytes.data() + i * sizeof v, &v, sizeof v);
  }
  return bytes;
}

v1::PeerTensor sample(std::mt19937& random) {
  v1::PeerTensor t;
  t.set_job("job-" + std::to_string(random() % 100));
  t.set_sender(random() % 2 ? "stage0" : "");
  t.set_step(static_cast<std::int64_t>(random() % 100000));
  t.set_micro_batch(static_cast<int>(random() % 64));
  t.set_gradient(random() % 2);
  t.set_sample_begin(static_cast<int>(random() % 8));
  t.set_samples(static_cast<int>(random() % 300));
  t.set_eval(random() % 3 == 0);
  if (random() % 2) {
    t.set_data_offset(64 * static_cast<std::int64_t>(random() % 100));
    t.set_data_bytes(static_cast<std::int64_t>(random() % 100000));
  }
  if (random() % 5) {
    auto* tensor = t.mutable_tensor();
    tensor->set_name(random() % 2 ? "x" : "");
    tensor->set_dtype(random() % 4 ? "float32" : "int64");
    for (unsigned d = random() % 4; d > 0; --d) tensor->add_shape(static_cast<std::int64_t>(random() % 70));
    *tensor->mutable_data() = floats(random() % 3000);
  }
  return t;
}

TEST(PushWire, ReadsEveryMessageAsProtobufDoes) {
  std::mt19937 random(7);
  for (int i = 0; i < 300; ++i) {
    const v1::PeerTensor t = sample(random);
    std::string bytes = t.SerializeAsString();
    expectSameAsProtobuf(bytes, "message " + std::to_string(i));
    // The sender's form: the header, then `tensor` once more holding only the data (merged
    // into the first by the parser). Also a second data field replacing the first, and an
    // unknown field on both levels.
    v1::PeerTensor second;
    *second.mutable_tensor()->mutable_data() = floats(random() % 100, 2.0F);
    expectSameAsProtobuf(bytes + second.SerializeAsString(), "message " + std::to_string(i) + " + data");
    const std::string unknown_top = std::string("\xf8\x01\x05", 3);      // field 31, varint 5
    expectSameAsProtobuf(unknown_top + bytes, "message " + std::to_string(i) + " after an unknown field");
    expectSameAsProtobuf(bytes + std::string("\x42\x02\x50\x07", 4),  // tensor { field 10: 7 }
                         "message " + std::to_string(i) + " + unknown in tensor");
  }
}

TEST(PushWire, RefusesWhatProtobufRefuses) {
  const google::protobuf::LogSilencer quiet;  // protobuf logs each string that is not UTF-8
  std::mt19937 random(11);
  for (int i = 0; i < 60; ++i) {
    v1::PeerTensor t = sample(random);
    t.mutable_tensor()->set_data(floats(5));
    const std::string bytes = t.SerializeAsString();
    // Cut at every byte: a length past the end, a varint cut off, a field cut.
    for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
      expectSameAsProtobuf(bytes.substr(0, cut), "message " + std::to_string(i) + " cut at " + std::to_string(cut));
    }
    // Bytes changed at random: a wrong wire type, a zero tag, an end-group tag, a length
    // that lies, invalid UTF-8 in a string.
    for (int k = 0; k < 40; ++k) {
      std::string mutated = bytes;
      for (int n = 1 + static_cast<int>(random() % 3); n > 0; --n) {
        mutated[random() % mutated.size()] = static_cast<char>(random() % 256);
      }
      expectSameAsProtobuf(mutated, "message " + std::to_string(i) + " mutated");
    }
  }
  // Hand-made: a group (kept by protobuf as an unknown field, refused here), a zero tag, an end-group tag with no group, one inside tensor, a data
  // length past tensor's end, a tag longer than any varint in front of a good message, and
  // after one a six-byte tag (protobuf reads five at most) of a fixed64 field.
  const std::string good = sample(random).SerializeAsString();
  for (const std::string& bytes : {good + std::string("\x33\x08\x01\x34", 4), std::string("\x00", 1), std::string("\x18\x01\x00\x00", 4), std::string("\x0c", 1),
                                   std::string("\x42\x01\x0c", 3), std::string("\x42\x05\x1a\x09xx", 6),
                                   std::string(25, '\xe9') + good, std::string(4, '\xe9') + '\x01' + good,
                                   good + std::string("\xf9\xfd\xd7\xfe\xff\x19\x01\x02\x03\x04\x05\x06\x07\x08", 14)}) {
    expectSameAsProtobuf(bytes, "hand-made");
  }
}

TEST(PushWire, CopiedBytesAreCheckedForNonFiniteValuesWhereverTheSlicesCutThem) {
  // Slices of 1-9 bytes cut every word; slices of 127-1 000 bytes run the vector loop and
  // leave words to finish in the next slice; a message offset of 3 bytes puts every word
  // across the slices' alignment.
  constexpr std::size_t kWords = 400;
  for (const std::size_t skip : {std::size_t{0}, std::size_t{3}}) {
    const std::string clean = std::string(skip, '@') + floats(kWords);
    for (int block : {1, 2, 3, 4, 5, 6, 7, 8, 9, 127, 128, 129, 131, 512, 1000}) {
      std::string into;
      bool finite = true;
      ArrayInputStream in(clean.data(), static_cast<int>(clean.size()), block);
      ASSERT_TRUE(appendMessageBytes(in, static_cast<std::int64_t>(skip), clean.size() - skip, into, &finite));
      EXPECT_EQ(into, clean.substr(skip));
      EXPECT_TRUE(finite) << "slices of " << block;
      for (float bad : {std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::infinity()}) {
        for (std::size_t word = 0; word < kWords; ++word) {
          std::string data = clean;
          std::memcpy(data.data() + skip + word * sizeof bad, &bad, sizeof bad);
          std::string got = "head";  // whole words before: the check starts after them
          finite = true;
          ArrayInputStream stream(data.data(), static_cast<int>(data.size()), block);
          ASSERT_TRUE(appendMessageBytes(stream, static_cast<std::int64_t>(skip), data.size() - skip, got, &finite));
          ASSERT_EQ(got, "head" + data.substr(skip)) << bad << " at word " << word << ", slices of " << block;
          EXPECT_FALSE(finite) << bad << " at word " << word << ", slices of " << block << ", offset " << skip;
        }
      }
    }
  }
}

TEST(PushWire, PiecesCoverTheTensorOnSixtyFourByteBoundaries) {
  EXPECT_EQ(pushPieces(0), (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}}));
  EXPECT_EQ(pushPieces(4096).size(), 1u);
  EXPECT_EQ(pushPieces(kPieceBytes + kPieceBytes / 2 - 4).size(), 1u);  // under 1.5 pieces: whole
  EXPECT_EQ(pushPieces(std::size_t{4} << 20).size(), 2u);               // a 4 MiB activation: two
  for (std::size_t bytes : {std::size_t{3} << 20, std::size_t{4} << 20, (std::size_t{33} << 20) + 12}) {
    std::size_t at = 0;
    const auto pieces = pushPieces(bytes);
    for (const auto& [offset, size] : pieces) {
      EXPECT_EQ(offset, at);
      EXPECT_EQ(offset % 64, 0u);
      EXPECT_GT(size, kPieceBytes / 2);
      EXPECT_LT(size, kPieceBytes * 2);
      at += size;
    }
    EXPECT_EQ(at, bytes);
  }
}

/// The PushMessage of piece [offset, offset + size) of `data`, and its bytes.
struct Piece {
  std::string bytes;
  PushMessage message;
};
Piece piece(const v1::PeerTensor& header, const std::string& data, std::size_t offset, std::size_t size) {
  v1::PeerTensor t = header;
  if (size < data.size()) {
    t.set_data_offset(static_cast<std::int64_t>(offset));
    t.set_data_bytes(static_cast<std::int64_t>(data.size()));
  }
  t.mutable_tensor()->set_data(data.substr(offset, size));
  Piece p{t.SerializeAsString(), {}};
  ArrayInputStream in(p.bytes.data(), static_cast<int>(p.bytes.size()));
  EXPECT_TRUE(readPushHeader(in, p.bytes.size(), p.message));
  return p;
}

PieceAssembler::CopyData copyOf(const Piece& p) {
  return [&p](std::string& into, bool* finite) {
    ArrayInputStream in(p.bytes.data(), static_cast<int>(p.bytes.size()), 1001);  // slices cut words
    return appendMessageBytes(in, p.message.data_at, p.message.data_size, into, finite);
  };
}

v1::PeerTensor activationHeader(std::int64_t step) {
  v1::PeerTensor t;
  t.set_job("job");
  t.set_sender("stage0");
  t.set_step(step);
  t.set_samples(4);
  t.mutable_tensor()->set_dtype("float32");
  t.mutable_tensor()->add_shape(4);
  t.mutable_tensor()->add_shape(1000);
  return t;
}

TEST(PieceAssembler, PutsPiecesBackTogetherAndChecksEachForNonFiniteValues) {
  const std::string data = floats(4000);
  PieceAssembler assembler(1 << 20);
  // Whole: handed on at once.
  Piece whole = piece(activationHeader(1), data, 0, data.size());
  auto done = assembler.add(whole.message, copyOf(whole));
  ASSERT_TRUE(done);
  EXPECT_EQ(done->tensor.tensor().data(), data);
  EXPECT_TRUE(done->finite);
  // Three pieces: nothing until the last, then the tensor as if sent whole.
  const std::vector<std::pair<std::size_t, std::size_t>> cuts = {{0, 6400}, {6400, 6400}, {12800, 3200}};
  for (std::size_t k = 0; k < cuts.size(); ++k) {
    Piece p = piece(activationHeader(2), data, cuts[k].first, cuts[k].second);
    done = assembler.add(p.message, copyOf(p));
    EXPECT_EQ(done.has_value(), k + 1 == cuts.size());
    if (!done) {
      EXPECT_EQ(assembler.pending(), cuts[k].first + cuts[k].second);
    }
  }
  ASSERT_TRUE(done);
  v1::PeerTensor expected = activationHeader(2);
  expected.mutable_tensor()->set_data(data);
  EXPECT_EQ(done->tensor.SerializeAsString(), expected.SerializeAsString());  // no piece fields left
  EXPECT_EQ(done->tensor.data_bytes(), 0);
  EXPECT_TRUE(done->finite);
  EXPECT_EQ(assembler.pending(), 0u);
  // A NaN in the second piece only: the tensor is counted as not finite.
  std::string bad = data;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bad.data() + 8000, &nan, sizeof nan);
  for (std::size_t k = 0; k < cuts.size(); ++k) {
    Piece p = piece(activationHeader(3), bad, cuts[k].first, cuts[k].second);
    done = assembler.add(p.message, copyOf(p));
  }
  ASSERT_TRUE(done);
  EXPECT_FALSE(done->finite);
  EXPECT_EQ(done->tensor.tensor().data(), bad);
}

TEST(PieceAssembler, RefusesPiecesThatDoNotContinueTheTensor) {
  const std::string data = floats(4000);
  auto expectRefused = [&](PieceAssembler& assembler, const Piece& p, const std::string& words) {
    try {
      assembler.add(p.message, copyOf(p));
      ADD_FAILURE() << "taken: " << words;
    } catch (const WorkerError& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  {  // A piece that skips bytes, and one of another step.
    PieceAssembler assembler(1 << 20);
    Piece first = piece(activationHeader(1), data, 0, 6400);
    ASSERT_FALSE(assembler.add(first.message, copyOf(first)));
    expectRefused(assembler, piece(activationHeader(1), data, 12800, 3200), "does not continue");
    expectRefused(assembler, piece(activationHeader(2), data, 6400, 6400), "does not continue");
    // A whole tensor, or the start of another, while pieces are missing.
    expectRefused(assembler, piece(activationHeader(2), data, 0, data.size()), "lacked pieces");
    expectRefused(assembler, piece(activationHeader(2), data, 0, 6400), "lacked pieces");
  }
  {  // A piece with no tensor begun, one off the 64-byte grid, one past the end, one too large.
    PieceAssembler assembler(1 << 20);
    expectRefused(assembler, piece(activationHeader(1), data, 6400, 6400), "any tensor");
    Piece odd = piece(activationHeader(1), data, 32, 64);
    expectRefused(assembler, odd, "a piece of 64 bytes at 32");
    Piece past = piece(activationHeader(1), data, 0, 6400);
    past.message.header.set_data_bytes(100);
    expectRefused(assembler, past, "a piece of 6400 bytes at 0 of 100");
    PieceAssembler small(8 << 10);
    expectRefused(small, piece(activationHeader(1), data, 0, 6400), "over the");
    EXPECT_EQ(assembler.pending(), 0u);
  }
}

}  // namespace
}  // namespace stagecraft::worker
