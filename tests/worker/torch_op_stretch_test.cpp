// What `--slowdown` stretches an op by: the op's own work, but never more than its kind
// costs unhindered on this machine (a low quantile of its recent ops), so what co-hosted
// workers cost an op is added once, not slowdown times.
#include <gtest/gtest.h>

#include "op_stretch.h"

namespace stagecraft::worker {
namespace {

TEST(OpStretch, AnOpSlowedByItsNeighboursIsStretchedByWhatItsKindCostsUnhindered) {
  OpStretcher s(4);
  for (int i = 0; i < 20; ++i) ASSERT_DOUBLE_EQ(s.reference(StretchedOp::Forward, 10), 10);
  // Its caches evicted by another worker: twice the CPU time, the sleep as before.
  EXPECT_DOUBLE_EQ(s.reference(StretchedOp::Forward, 20), 10);
  // An op that took less than that is stretched by its own work.
  EXPECT_DOUBLE_EQ(s.reference(StretchedOp::Forward, 8), 8);
}

TEST(OpStretch, OneLuckyOpDoesNotSetTheReference) {
  OpStretcher s(4);
  for (int i = 0; i < 15; ++i) s.reference(StretchedOp::Backward, 10);
  s.reference(StretchedOp::Backward, 1);
  for (int i = 0; i < 4; ++i) s.reference(StretchedOp::Backward, 10);
  EXPECT_DOUBLE_EQ(s.reference(StretchedOp::Backward, 12), 10);
}

TEST(OpStretch, TheReferenceFollowsAnOpThatCostsMoreForGood) {
  OpStretcher s(4);
  for (int i = 0; i < 20; ++i) s.reference(StretchedOp::Update, 10);
  double last = 0;
  for (size_t i = 0; i < OpStretcher::kHistory; ++i) last = s.reference(StretchedOp::Update, 30);
  EXPECT_DOUBLE_EQ(last, 30);  // the last kHistory ops all cost 30
}

TEST(OpStretch, EachKindHasItsOwnHistory) {
  OpStretcher s(4);
  for (int i = 0; i < 20; ++i) s.reference(StretchedOp::Forward, 2);
  EXPECT_DOUBLE_EQ(s.reference(StretchedOp::Backward, 5), 5);
  EXPECT_DOUBLE_EQ(s.reference(StretchedOp::LastBackward, 7), 7);
  EXPECT_DOUBLE_EQ(s.reference(StretchedOp::Update, 9), 9);
}

}  // namespace
}  // namespace stagecraft::worker
