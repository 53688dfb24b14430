// The worker's emulated network interface (in process): everything a worker sends takes its
// turn on one link, at its bandwidth.
#include <gtest/gtest.h>

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

TEST(LinkPacer, AnUnpacedLinkNeverDelays) {
  LinkPacer link;
  EXPECT_FALSE(link.paced());
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(link.reserve(1'000'000'000, t0), t0);
}

}  // namespace
}  // namespace stagecraft::worker
