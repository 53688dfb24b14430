#include "tensor_wire.h"

#include "io/error.h"

namespace stagecraft::worker {

std::string tensorLabel(const std::string& name) {
  return name.empty() ? std::string("tensor") : "tensor '" + name + "'";
}

std::string shapeText(std::span<const std::int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

TensorWireLayout checkTensorWire(const v1::Tensor& tensor) {
  const std::string label = tensorLabel(tensor.name());
  TensorWireLayout layout;
  if (tensor.dtype() == "float32" || tensor.dtype().empty()) {
    layout.dtype = WireDtype::Float32;
    layout.element_bytes = 4;
  } else if (tensor.dtype() == "int64") {
    layout.dtype = WireDtype::Int64;
    layout.element_bytes = 8;
  } else {
    throw protocolError(label + ": dtype must be float32 or int64, got '" + tensor.dtype() + "'");
  }
  if (tensor.shape_size() > kMaxTensorRank) {
    throw protocolError(label + ": " + std::to_string(tensor.shape_size()) + " dimensions, more than " +
                std::to_string(kMaxTensorRank));
  }
  layout.shape.assign(tensor.shape().begin(), tensor.shape().end());
  // `extent` counts a zero dimension as one: a [0, 2^40, 2^40] tensor holds nothing, but
  // LibTorch still multiplies its strides out in int64.
  std::uint64_t count = 1;
  std::uint64_t extent = 1;
  for (const std::int64_t d : layout.shape) {
    if (d < 0) throw protocolError(label + ": negative dimension in shape " + shapeText(layout.shape));
    const std::uint64_t size = d > 0 ? static_cast<std::uint64_t>(d) : 1;
    if (extent > kMaxTensorExtent / size) throw protocolError(label + ": shape " + shapeText(layout.shape) + " is too large");
    extent *= size;
    count *= static_cast<std::uint64_t>(d);  // <= extent: cannot overflow
  }
  layout.elements = count;
  const std::uint64_t need = count * layout.element_bytes;  // < 2^61
  if (need != tensor.data().size()) {
    throw protocolError(label + ": " + std::to_string(tensor.data().size()) + " bytes of data, but shape " +
                shapeText(layout.shape) + " of " + (tensor.dtype().empty() ? "float32" : tensor.dtype()) +
                " needs " + std::to_string(need));
  }
  return layout;
}

}  // namespace stagecraft::worker
