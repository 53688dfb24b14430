// What a worker keeps for others, bounded (in process): the stage states it backs up and
// holds for a neighbour, with the step the coordinator pins.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "backup_store.h"

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

}  // namespace
}  // namespace stagecraft::worker
