// The worker's emulated network interface (in process): everything a worker sends takes its
// turn on one link, at its bandwidth.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "peer_outbox.h"

namespace stagecraft::worker {
namespace {

using Clock = LinkPacer::Clock;
using std::chrono::milliseconds;

TEST(LinkPacer, MessagesTakeTurnsAtTheLinksBandwidth) {
  LinkPacer link(8);  // 8 Mbit/s: a megabyte a second
  const Clock::time_point t0 = Clock::now();
  const Clock::time_point first = link.reserve(1'000'000, t0);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(first - t0).count(), 1000);
  // Queued at the same moment: through after the first.
  const Clock::time_point second = link.reserve(500'000, t0);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(second - t0).count(), 1500);
  // A message sent after the link went idle starts when it is sent.
  const Clock::time_point later = t0 + std::chrono::seconds(10);
  EXPECT_EQ(std::chrono::duration_cast<milliseconds>(link.reserve(250'000, later) - later).count(), 250);
}

TEST(LinkPacer, WhatIsQueuedBesideALongSendWaitsForOnePieceAtMost) {
  LinkPacer link(80);  // 10 MB/s: 5 MB take half a second
  std::atomic<bool> stop{false};
  std::thread backup([&] { link.send(5'000'000, [&] { return stop.load(); }); });
  // Once the long send holds the link, a small message (an activation, 0.1 ms of the link)
  // goes after the piece on it, half a millisecond, not after the whole send.
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && link.reserve(0) <= Clock::now()) std::this_thread::yield();
  const Clock::time_point now = Clock::now();
  const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(link.reserve(1'000, now) - now);
  stop = true;
  backup.join();
  ASSERT_LT(now, deadline) << "the long send never held the link";
  EXPECT_LE(waited.count(), 600);
}

TEST(LinkPacer, AnUnpacedLinkNeverDelays) {
  LinkPacer link;
  EXPECT_FALSE(link.paced());
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(link.reserve(1'000'000'000, t0), t0);
}

}  // namespace
}  // namespace stagecraft::worker
