#pragma once
// What a v1::Tensor from the wire must be before it becomes a torch::Tensor: a known dtype,
// a shape of a sane rank with no negative dimension, no element count and no contiguous
// stride that overflows, and exactly the bytes shape and dtype need. Torch-free, so the
// decoder's checks can be tested and fuzzed without LibTorch (tests/fuzz/tensor_wire_fuzz.cpp).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::worker {

enum class WireDtype { Invalid = 0, Float32, Int64 };

/// A tensor message that passed checkTensorWire(): what the decoder allocates and copies.
struct TensorWireLayout {
  WireDtype dtype = WireDtype::Invalid;
  std::vector<std::int64_t> shape;
  std::uint64_t elements = 0;     ///< product of the shape
  std::size_t element_bytes = 0;  ///< 4 or 8; elements * element_bytes == data().size()
};

/// More dimensions than any stage's activations, weights or optimizer state have; a longer
/// shape is a broken message, not a tensor.
constexpr int kMaxTensorRank = 16;
/// The product of the shape's dimensions, zeros counted as one (the largest contiguous
/// stride LibTorch computes, in int64), must stay below this; so must the element count.
constexpr std::uint64_t kMaxTensorExtent = std::uint64_t{1} << 58;

/// Tensor bytes sent from where they lie instead of through the message (PeerOutbox::send):
/// they go on the wire as the PeerTensor's tensor.data, after the rest of the message, with
/// no copy on the sending side. `owner` keeps the memory alive until gRPC is done with it.
struct WirePayload {
  const char* data = nullptr;
  std::size_t size = 0;
  std::shared_ptr<const void> owner;
};

/// The layout of `tensor`. Throws stagecraft::Error (of kind Protocol) naming the tensor for an unknown dtype,
/// a rank over kMaxTensorRank, a negative dimension, a shape over kMaxTensorExtent or data
/// whose size does not match shape and dtype. An empty dtype is float32.
TensorWireLayout checkTensorWire(const v1::Tensor& tensor);

/// "tensor 'name'", or "tensor" for an unnamed one.
std::string tensorLabel(const std::string& name);
/// "[2,3]".
std::string shapeText(std::span<const std::int64_t> shape);

}  // namespace stagecraft::worker
