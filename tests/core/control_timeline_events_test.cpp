// A worker's reported timeline in the simulator's terms.
#include <gtest/gtest.h>

#include "control/timeline_events.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

TEST(ControlTimelineEvents, ParsesEveryKindTheSimulatorNames) {
  for (EventKind kind : {EventKind::Forward, EventKind::Backward, EventKind::Send, EventKind::Receive,
                         EventKind::AllReduce, EventKind::Update}) {
    EXPECT_EQ(control::parseEventKind(eventKindName(kind)), kind);
  }
  EXPECT_EQ(control::parseEventKind("nap"), EventKind::Invalid);
  EXPECT_EQ(control::parseEventKind(""), EventKind::Invalid);
}

TEST(ControlTimelineEvents, MapsPeersToClusterIndicesAndDropsUnknownKinds) {
  const Cluster cluster = testing::makeCluster({100, 50, 25});
  v1::IterationReport report;
  auto* forward = report.add_timeline();
  forward->set_micro_batch(2);
  forward->set_kind("forward");
  forward->set_start_ms(1.5);
  forward->set_end_ms(3);
  auto* send = report.add_timeline();
  send->set_micro_batch(2);
  send->set_kind("send");
  send->set_peer(cluster.device(2).name);
  auto* stranger = report.add_timeline();
  stranger->set_kind("receive");
  stranger->set_peer("not-in-cluster");
  report.add_timeline()->set_kind("nap");

  const auto events = control::timelineEvents(report, 1, cluster);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].device, 1);
  EXPECT_EQ(events[0].kind, EventKind::Forward);
  EXPECT_EQ(events[0].micro_batch, 2);
  EXPECT_EQ(events[0].peer, -1);
  EXPECT_DOUBLE_EQ(events[0].start_ms, 1.5);
  EXPECT_DOUBLE_EQ(events[0].end_ms, 3);
  EXPECT_EQ(events[1].kind, EventKind::Send);
  EXPECT_EQ(events[1].peer, 2);
  EXPECT_EQ(events[2].kind, EventKind::Receive);
  EXPECT_EQ(events[2].peer, -1);
}

}  // namespace
}  // namespace stagecraft
