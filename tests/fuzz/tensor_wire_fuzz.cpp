// The worker's tensor decoder (worker/src/stage_module.cpp fromProto) without LibTorch: the
// bytes of a v1::Tensor, and of the v1::PeerTensor that carries activations and gradients
// between workers, through protobuf's parser and checkTensorWire.

#include <limits>

#include "fuzz_support.h"
#include "stagecraft/v1/worker.pb.h"
#include "tensor_wire.h"

using namespace stagecraft;

namespace {

void check(const v1::Tensor& tensor) {
  fuzz::refusingBadInput([&] {
    const worker::TensorWireLayout layout = worker::checkTensorWire(tensor);
    fuzz::require(layout.element_bytes == 4 || layout.element_bytes == 8, "a known element size");
    fuzz::require(layout.shape.size() <= static_cast<size_t>(worker::kMaxTensorRank), "a bounded rank");
    // What LibTorch computes for torch::empty(shape): numel and the contiguous strides, in int64.
    std::int64_t stride = 1;
    std::uint64_t elements = 1;
    for (auto it = layout.shape.rbegin(); it != layout.shape.rend(); ++it) {
      fuzz::require(*it >= 0, "no negative dimension");
      const std::int64_t size = *it > 0 ? *it : 1;
      fuzz::require(stride <= std::numeric_limits<std::int64_t>::max() / size, "strides fit in int64");
      stride *= size;
      elements *= static_cast<std::uint64_t>(*it);
    }
    fuzz::require(elements == layout.elements, "the element count is the shape's product");
    fuzz::require(layout.elements * layout.element_bytes == tensor.data().size(), "the data is exactly the tensor");
  });
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > static_cast<size_t>(std::numeric_limits<int>::max())) return 0;
  v1::Tensor tensor;
  if (tensor.ParseFromArray(data, static_cast<int>(size))) check(tensor);
  v1::PeerTensor peer;
  if (peer.ParseFromArray(data, static_cast<int>(size))) check(peer.tensor());
  return 0;
}
