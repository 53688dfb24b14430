// What a worker checks in the messages it is sent, before LibTorch sees them: tensors
// (tensor_wire.h).

#include <gtest/gtest.h>

#include <string>

#include "io/error.h"
#include "tensor_wire.h"
#include "torch_stage.h"

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

}  // namespace
}  // namespace stagecraft::worker
