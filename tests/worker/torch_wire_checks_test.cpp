// What a worker checks in the messages it is sent, before LibTorch sees them: tensors
// (tensor_wire.h), stage assignments (stage_layout.h) and peer slices (peer_inbox.h): cases
// found while writing the fuzz targets of tests/fuzz.

#include <gtest/gtest.h>

#include <climits>
#include <string>

#include "io/error.h"
#include "model/zoo.h"
#include "peer_inbox.h"
#include "stage_layout.h"
#include "tensor_wire.h"
#include "torch_stage.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

template <class E, class F>
void expectRefused(F&& f, const std::string& mention) {
  try {
    f();
    FAIL() << "accepted; expected an error mentioning " << mention;
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

TEST(TensorProto, EmptyTensorsWhoseStridesOverflowAreErrors) {
  // No elements and no data, but LibTorch's contiguous strides would be 2^80 (in int64).
  v1::Tensor empty_but_huge;
  for (std::int64_t d : {std::int64_t{0}, std::int64_t{1} << 40, std::int64_t{1} << 40}) empty_but_huge.add_shape(d);
  expectRefused<Error>([&] { fromProto(empty_but_huge); }, "too large");
  // Zeros count as one towards the bound, so a wide empty tensor that fits still decodes.
  v1::Tensor empty_and_wide;
  for (std::int64_t d : {std::int64_t{0}, std::int64_t{1} << 20, std::int64_t{1} << 20}) empty_and_wide.add_shape(d);
  EXPECT_EQ(fromProto(empty_and_wide).sizes().vec(),
            (std::vector<std::int64_t>{0, std::int64_t{1} << 20, std::int64_t{1} << 20}));
}

TEST(TensorProto, ShapesDeeperThanAnyStageTensorAreErrors) {
  v1::Tensor deep;
  for (int i = 0; i <= kMaxTensorRank; ++i) deep.add_shape(1);
  deep.set_data(std::string(4, '\0'));
  expectRefused<Error>([&] { fromProto(deep); }, "17 dimensions");
  deep.mutable_shape()->RemoveLast();
  EXPECT_EQ(fromProto(deep).dim(), kMaxTensorRank);
}

/// One stage of zoo `mlp` over `shares`, this worker first of them.
v1::StageAssignment oneStage(std::initializer_list<int> shares, int batch) {
  v1::StageAssignment a;
  a.set_job("job");
  *a.mutable_model() = zooModel("mlp");
  a.set_stages(1);
  a.set_layer_end(8);
  int i = 0;
  for (int samples : shares) {
    auto* m = a.add_group();
    m->set_name("w" + std::to_string(i));
    m->set_address("127.0.0.1:" + std::to_string(50051 + i++));  // rank 0's is where the group meets
    m->set_samples(samples);
  }
  a.set_batch_size(batch);
  a.set_microbatches(1);
  a.set_store_address("127.0.0.1:50051");
  a.mutable_optimizer()->set_lr(0.1);
  return a;
}

TEST(StageLayout, SharesWhoseSumOverflowsAnIntAreRefused) {
  EXPECT_EQ(layoutStage(oneStage({2, 2}, 4)).samples, 2);
  // INT_MAX + INT_MAX + 2 wrapped to 0 in an int (undefined behaviour): it must not pass for
  // a micro-batch of 0 or any other.
  expectRefused<WorkerError>([] { layoutStage(oneStage({INT_MAX, INT_MAX, 2}, 4)); },
                             "shares sum to 4294967296 samples");
}

TEST(PeerInbox, RefusesASampleRangeWhoseEndOverflowsAnInt) {
  PeerInbox inbox;
  InboxRules rules;
  rules.microbatches = 1;
  rules.max_bytes = 1 << 20;
  inbox.open("job", rules);
  v1::PeerTensor slice;
  slice.set_job("job");
  slice.set_sender("peer");
  slice.set_sample_begin(5);
  slice.set_samples(INT_MAX);
  expectRefused<WorkerError>([&] { inbox.put(slice); }, "bad step, micro-batch or sample range");
  EXPECT_EQ(inbox.size(), 0u);
  // Ending at INT_MAX exactly passes the range check; the plan then decides (no such peer).
  slice.set_samples(INT_MAX - 5);
  EXPECT_EQ(inboxRefusal(slice, rules), "activations from 'peer': not a neighbour that sends this stage activations");
}

}  // namespace
}  // namespace stagecraft::worker
