// What a stage takes from its peers: only slices its plan has a neighbour send, of the
// shape, dtype and size that plan implies, and no more than a few steps' worth at once.
// (A hostile-input probe had NaN, malformed and far-future slices accepted from anyone.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "peer_inbox.h"
#include "stage_layout.h"

namespace stagecraft::worker {
namespace {

using namespace std::chrono_literals;

/// A stage fed activations of shape [8] by "a" (samples 0..1 of each micro-batch) and
/// gradients of shape [4] by "c" (samples 0..1), 2 micro-batches, 1 KiB at most.
InboxRules rules() {
  InboxRules r;
  r.flows.push_back({"a", false, 0, 2, {8}});
  r.flows.push_back({"c", true, 0, 2, {4}});
  r.microbatches = 2;
  r.max_bytes = 1024;
  return r;
}

v1::PeerTensor slice(const std::string& sender, bool gradient, std::int64_t step, int micro_batch,
                     std::vector<std::int64_t> shape, float value = 1.0f) {
  v1::PeerTensor t;
  t.set_job("j");
  t.set_sender(sender);
  t.set_step(step);
  t.set_micro_batch(micro_batch);
  t.set_gradient(gradient);
  t.set_sample_begin(0);
  t.set_samples(static_cast<int>(shape.at(0)));
  std::size_t n = 1;
  for (const auto d : shape) {
    t.mutable_tensor()->add_shape(d);
    n *= static_cast<std::size_t>(d);
  }
  t.mutable_tensor()->set_dtype("float32");
  std::string bytes(n * sizeof(float), '\0');
  for (std::size_t i = 0; i < n; ++i) std::memcpy(bytes.data() + i * sizeof(float), &value, sizeof value);
  t.mutable_tensor()->set_data(bytes);
  return t;
}

/// put()'s refusal: its code and message, or "taken".
std::pair<ErrorCode, std::string> put(PeerInbox& inbox, v1::PeerTensor t) {
  try {
    inbox.put(std::move(t));
  } catch (const WorkerError& e) {
    return {e.code(), e.what()};
  }
  return {ErrorCode::Internal, "taken"};
}

TEST(PeerInbox, TakesWhatTheNeighboursSendAndRefusesEverythingElse) {
  PeerInbox inbox;
  inbox.open("j", rules());
  EXPECT_EQ(put(inbox, slice("a", false, 3, 1, {2, 8})).second, "taken");
  EXPECT_EQ(put(inbox, slice("c", true, 3, 1, {2, 4})).second, "taken");
  EXPECT_EQ(inbox.take(3, 1, false, 0, 2, 1s).size(), 1u);
  EXPECT_EQ(inbox.take(3, 1, true, 0, 2, 1s).size(), 1u);

  const auto refused = [&](v1::PeerTensor t) {
    const auto [code, why] = put(inbox, std::move(t));
    EXPECT_EQ(code, ErrorCode::InvalidArgument) << why;
    return why;
  };
  EXPECT_EQ(refused(slice("mallory", false, 3, 0, {2, 8})),
            "activations from 'mallory': not a neighbour that sends this stage activations");
  EXPECT_EQ(refused(slice("a", true, 3, 0, {2, 4})),
            "gradients from 'a': not a neighbour that sends this stage gradients");
  EXPECT_EQ(refused(slice("a", false, 3, 0, {1, 8})),
            "activations from 'a' are for samples 0+1, which the plan has it not send here");
  EXPECT_EQ(refused(slice("a", false, 3, 0, {2, 9})), "activations from 'a' have shape [2, 9], not [2, 8]");
  EXPECT_EQ(refused(slice("a", false, 3, 0, {2, 2, 4})), "activations from 'a' have shape [2, 2, 4], not [2, 8]");
  EXPECT_EQ(refused(slice("a", false, 3, 2, {2, 8})), "activations from 'a' are for micro-batch 2 of 2");
  EXPECT_EQ(refused(slice("a", false, -1, 0, {2, 8})), "activations from 'a' have a bad step, micro-batch or sample range");
  auto cut = slice("a", false, 3, 0, {2, 8});
  cut.mutable_tensor()->mutable_data()->resize(5);
  EXPECT_EQ(refused(cut), "activations from 'a' hold 5 bytes for shape [2, 8] (64 expected)");
  auto ids = slice("a", false, 3, 0, {2, 8});
  ids.mutable_tensor()->set_dtype("int64");
  EXPECT_EQ(refused(ids), "activations from 'a' are of dtype 'int64', not float32");
  EXPECT_EQ(inbox.size(), 0u) << "nothing refused is held";
}

TEST(PeerInbox, APeerRunningAheadIsHeldToTheLimitAndTheRestRefused) {
  PeerInbox inbox;
  inbox.open("j", rules());
  // 64 bytes a slice, 1024 at most: 16 slices, then the inbox is full.
  int taken = 0;
  std::pair<ErrorCode, std::string> last;
  for (std::int64_t step = 0; step < 100; ++step) {
    last = put(inbox, slice("a", false, step, 0, {2, 8}));
    if (last.second != "taken") break;
    ++taken;
  }
  EXPECT_EQ(taken, 16);
  EXPECT_EQ(last.first, ErrorCode::ResourceExhausted) << last.second;
  // A resend of a held slice replaces it and needs no room.
  EXPECT_EQ(put(inbox, slice("a", false, 15, 0, {2, 8})).second, "taken");
  // Taking step 10 drops the stale steps before it and makes room again.
  EXPECT_EQ(inbox.take(10, 0, false, 0, 2, 1s).size(), 1u);
  EXPECT_EQ(inbox.size(), 5u);
  EXPECT_EQ(put(inbox, slice("a", false, 16, 0, {2, 8})).second, "taken");
  // A new deployment starts empty.
  inbox.open("j", rules());
  EXPECT_EQ(inbox.size(), 0u);
  for (std::int64_t step = 0; step < 16; ++step) EXPECT_EQ(put(inbox, slice("a", false, step, 1, {2, 8})).second, "taken");
}

TEST(PeerInbox, SlicesThatAreNotFiniteAreTakenAndCounted) {
  PeerInbox inbox;
  inbox.open("j", rules());
  EXPECT_EQ(put(inbox, slice("a", false, 1, 0, {2, 8}, std::nanf(""))).second, "taken");
  EXPECT_EQ(put(inbox, slice("a", false, 1, 1, {2, 8}, INFINITY)).second, "taken");
  EXPECT_EQ(put(inbox, slice("c", true, 1, 0, {2, 4}, 0.5f)).second, "taken");
  EXPECT_EQ(inbox.nonFiniteSlices(), 2u);
}

TEST(PeerInbox, EveryNonFiniteValueIsFoundWhereverItSits) {
  // Lengths around the 8-word vectors, the 32-word rounds of four vectors and the 4096-word
  // blocks; the value at the start, the middle and the end (the scalar tail included).
  const std::vector<float> bad = {std::nanf(""), -std::nanf(""), INFINITY, -INFINITY};
  const std::vector<float> good = {0.0f, -0.0f, 1.0f, std::numeric_limits<float>::max(),
                                   -std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min()};
  for (const std::size_t n : {0u, 1u, 3u, 4u, 5u, 7u, 8u, 9u, 31u, 32u, 33u, 63u, 64u, 65u, 1023u, 1024u, 1025u,
                              2051u, 4095u, 4096u, 4097u, 4127u, 4128u, 8193u}) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = good[i % good.size()];
    auto bytes = [&] { return std::string(reinterpret_cast<const char*>(values.data()), n * sizeof(float)); };
    EXPECT_TRUE(allFiniteFloats(bytes())) << n << " finite values";
    for (const std::size_t at : {std::size_t{0}, n / 2, n - 1}) {
      if (n == 0) break;
      for (const float v : bad) {
        const float kept = values[at];
        values[at] = v;
        EXPECT_FALSE(allFiniteFloats(bytes())) << v << " at " << at << " of " << n;
        values[at] = kept;
      }
    }
  }
  // A trailing partial word is not a float; it is copied all the same.
  EXPECT_TRUE(allFiniteFloats(std::string("\xff\xff\xff", 3)));
  std::string partial = std::string(4 * 40, '\0') + "\xff\xff\xff";
  std::string copy(partial.size(), 'x');
  EXPECT_TRUE(copyFiniteFloats(copy.data(), partial.data(), partial.size()));
  EXPECT_EQ(copy, partial);
}

TEST(PeerInbox, TheScanAndTheCopyAgreeWithTheExponentOfEveryWordInEveryLane) {
  // allFiniteFloats and copyFiniteFloats: every lane of every vector in two rounds plus a
  // tail, from every byte offset (gRPC's slices need not be aligned), with the non-finite
  // patterns of both signs and any payload and the finite words beside them: the largest,
  // the subnormals, an exponent one short.
  const std::vector<std::uint32_t> non_finite_words = {0x7f800000u, 0xff800000u, 0x7fc00000u,
                                                       0x7f800001u, 0xffffffffu, 0x7fbfffffu};
  const std::vector<std::uint32_t> finite_words = {0x7f7fffffu, 0xff7fffffu, 0x00000001u,
                                                   0x807fffffu, 0x7f000000u, 0x3f800000u};
  constexpr std::size_t kWords = 2 * 32 + 5;
  // The copying check writes exactly the bytes it reads, whatever it finds.
  auto copied = [](std::string_view from, bool& all_finite) {
    std::string to(from.size() + 1, '\x11');
    all_finite = copyFiniteFloats(to.data(), from.data(), from.size());
    EXPECT_EQ(to.back(), '\x11') << "a byte written past the copy";
    to.pop_back();
    return to;
  };
  for (std::size_t offset = 0; offset < sizeof(float); ++offset) {
    for (std::size_t at = 0; at < kWords; ++at) {
      std::vector<std::uint32_t> words(kWords);
      for (std::size_t i = 0; i < kWords; ++i) words[i] = finite_words[(i + at) % finite_words.size()];
      std::string bytes(offset, '\xff');  // not part of the view; only shifts the words' alignment
      auto view = [&] {
        bytes.resize(offset);
        bytes.append(reinterpret_cast<const char*>(words.data()), kWords * sizeof(std::uint32_t));
        return std::string_view(bytes).substr(offset);
      };
      bool all_finite = false;
      EXPECT_TRUE(allFiniteFloats(view())) << "finite words, offset " << offset;
      EXPECT_EQ(copied(view(), all_finite), view());
      EXPECT_TRUE(all_finite) << "finite words copied, offset " << offset;
      for (const std::uint32_t word : non_finite_words) {
        words[at] = word;
        EXPECT_FALSE(allFiniteFloats(view())) << std::hex << word << std::dec << " at " << at << ", offset " << offset;
        EXPECT_EQ(copied(view(), all_finite), view());
        EXPECT_FALSE(all_finite) << std::hex << word << std::dec << " copied at " << at << ", offset " << offset;
      }
    }
  }
}

TEST(PeerInbox, RulesFollowTheLayoutsNeighboursAndTheModelsShapes) {
  v1::Model model;
  for (const auto& shape : std::vector<std::vector<int>>{{3, 8, 8}, {16}, {10}}) {
    auto* layer = model.add_layers();
    for (const int d : shape) layer->add_input_shape(d);
  }
  StageLayout layout;
  layout.layer_begin = 1;
  layout.layer_end = 2;
  layout.microbatches = 4;
  layout.previous = {{"p0", "h:1", 0, 3}, {"p1", "h:2", 3, 1}};
  layout.next = {{"n0", "h:3", 0, 4}};
  const InboxRules r = inboxRules(layout, model);
  ASSERT_EQ(r.flows.size(), 3u);
  EXPECT_EQ(r.flows[0].sender, "p0");
  EXPECT_FALSE(r.flows[0].gradient);
  EXPECT_EQ(r.flows[1].sample_begin, 3);
  EXPECT_EQ(r.flows[0].sample_shape, (std::vector<std::int64_t>{16}));
  EXPECT_TRUE(r.flows[2].gradient);
  EXPECT_EQ(r.flows[2].sample_shape, (std::vector<std::int64_t>{10}));
  EXPECT_EQ(r.microbatches, 4);
  EXPECT_EQ(r.max_bytes, 64u << 20) << "a small stage still gets the floor";
}

}  // namespace
}  // namespace stagecraft::worker
