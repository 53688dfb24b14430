// What a worker keeps for others, bounded (in process): the stage states it backs up and
// holds for a neighbour, with the step the coordinator pins, and the telemetry it queues
// for a subscriber that falls behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "backup_store.h"
#include "telemetry_hub.h"

namespace stagecraft::worker {
namespace {

StateCopy state(std::int64_t step, const std::string& job = "j") {
  auto s = std::make_shared<v1::StageWeights>();
  s->set_job(job);
  s->set_layer_begin(0);
  s->set_layer_end(3);
  s->set_step(step);
  return s;
}

/// The steps `store` lists for job "j", own (held_for empty) or held, oldest first.
std::vector<std::int64_t> steps(const BackupStore& store, bool own) {
  std::vector<std::int64_t> out;
  for (const auto& ref : store.list("j")) {
    if (ref.held_for().empty() == own) out.push_back(ref.step());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(BackupStore, KeepsTheNewestFewAndThePinnedStepsAmongThem) {
  BackupStore store;
  for (std::int64_t s = 1; s <= 5; ++s) store.keep(state(s));
  EXPECT_EQ(steps(store, true), (std::vector<std::int64_t>{3, 4, 5}));
  // The coordinator keeps step 3 (held twice) and ships step 5: the copies that come after
  // never push them out, so one newer copy stays beside them.
  store.pin("j", 3, 5);
  EXPECT_TRUE(store.mustShip("j", 5));
  EXPECT_FALSE(store.mustShip("j", 4));
  EXPECT_FALSE(store.mustShip("other", 5));
  ASSERT_TRUE(store.own("j", 5));
  EXPECT_EQ(store.own("j", 5)->step(), 5);
  EXPECT_FALSE(store.own("j", 2));
  for (std::int64_t s = 6; s <= 9; ++s) {
    store.keep(state(s));
    store.hold(state(s - 4), "w1");  // the neighbour's copies lag four steps
  }
  EXPECT_EQ(steps(store, true), (std::vector<std::int64_t>{3, 5, 9}));
  EXPECT_EQ(steps(store, false), (std::vector<std::int64_t>{3, 4, 5}));
  store.hold(state(6), "w1");
  EXPECT_EQ(steps(store, false), (std::vector<std::int64_t>{3, 5, 6}));
  ASSERT_TRUE(store.find(store.list("j").back()));

  // Step 5 arrived everywhere: it is kept now, and nothing is on its way.
  store.pin("j", 5, 0);
  store.keep(state(10));
  store.hold(state(7), "w1");
  EXPECT_EQ(steps(store, true), (std::vector<std::int64_t>{5, 9, 10}));
  EXPECT_EQ(steps(store, false), (std::vector<std::int64_t>{5, 6, 7}));
  store.keep(state(11));
  store.hold(state(8), "w1");
  EXPECT_EQ(steps(store, true), (std::vector<std::int64_t>{5, 10, 11}));
  EXPECT_EQ(steps(store, false), (std::vector<std::int64_t>{5, 7, 8}));
  // A pin of another job protects nothing of this one.
  store.pin("other", 10, 11);
  store.keep(state(12));
  EXPECT_EQ(steps(store, true), (std::vector<std::int64_t>{10, 11, 12}));
}

TEST(TelemetryHub, ASubscriberThatFallsBehindLosesReportsCountedButNeverAnErrorOrTheEnd) {
  TelemetryHub hub("w0");
  auto subscription = hub.subscribe();
  hub.error("j", "stage failed");  // queued first, so the oldest
  const std::size_t reports = TelemetryHub::kMaxQueued + 10;
  for (std::size_t i = 1; i <= reports; ++i) {
    v1::TelemetryEvent e;
    e.set_job("j");
    e.mutable_iteration()->set_step(static_cast<std::int64_t>(i));
    hub.publish(std::move(e));
  }
  v1::TelemetryEvent done;
  done.set_finished(true);
  hub.publish(done);

  std::vector<v1::TelemetryEvent> got;
  while (auto e = subscription->next(std::chrono::milliseconds(0))) got.push_back(std::move(*e));
  ASSERT_EQ(got.size(), TelemetryHub::kMaxQueued);
  EXPECT_EQ(got.front().error(), "stage failed");
  EXPECT_TRUE(got.back().finished());
  // The oldest reports went: 11 beyond the room the error left, one more for `finished`.
  EXPECT_EQ(got[1].iteration().step(), 13);
  for (const auto& e : got) {
    EXPECT_EQ(e.dropped(), 12) << "every event delivered says how many were lost";
    EXPECT_EQ(e.worker(), "w0");
  }
}

}  // namespace
}  // namespace stagecraft::worker
