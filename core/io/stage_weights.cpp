#include "io/stage_weights.h"

#include <algorithm>
#include <string>

#include "io/error.h"

namespace stagecraft::control {

std::optional<int> tensorLayer(std::string_view name) {
  const auto dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 9) return std::nullopt;
  int layer = 0;
  for (char c : name.substr(0, dot)) {
    if (c < '0' || c > '9') return std::nullopt;
    layer = layer * 10 + (c - '0');
  }
  return layer;
}

v1::StageWeights joinLayers(std::span<const v1::StageWeights* const> pieces, int begin, int end) {
  if (pieces.empty()) throw Error("no state to take layers from");
  v1::StageWeights out;
  out.set_layer_begin(begin);
  out.set_layer_end(end);
  out.set_step(pieces.front()->step());
  out.set_job(pieces.front()->job());
  for (int layer = begin; layer < end; ++layer) {
    const auto holds = [layer](const v1::StageWeights* p) { return p->layer_begin() <= layer && layer < p->layer_end(); };
    const auto piece = std::find_if(pieces.begin(), pieces.end(), holds);
    if (piece == pieces.end()) throw Error("no state holds layer " + std::to_string(layer));
    if ((*piece)->step() != out.step()) {
      throw Error("the states to join are of steps " + std::to_string(out.step()) + " and " +
                  std::to_string((*piece)->step()));
    }
    for (const v1::Tensor& t : (*piece)->tensors()) {
      if (tensorLayer(t.name()) == layer) *out.add_tensors() = t;
    }
  }
  return out;
}

}  // namespace stagecraft::control
