#pragma once
// A stage's state as workers send it (StageWeights): tensors named "<global layer>.<name>",
// optimizer state after a "#". Plain protobuf, no worker or gRPC: the worker restoring a
// stage from backups and the coordinator joining stages share it.

#include <optional>
#include <span>
#include <string_view>

#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::control {

/// The global layer index a worker tensor name starts with ("12.weight" -> 12); nullopt
/// when the name does not start with digits and a dot.
std::optional<int> tensorLayer(std::string_view name);

/// The tensors of layers [begin, end) taken from `pieces` (states of one step, of layer
/// ranges that may be wider than [begin, end)), in layer order. Throws Error when a piece
/// is of another step or a layer of the range is in no piece.
v1::StageWeights joinLayers(std::span<const v1::StageWeights* const> pieces, int begin, int end);

}  // namespace stagecraft::control
