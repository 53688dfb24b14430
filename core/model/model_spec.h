#pragma once

#include <string>
#include <vector>

#include "model/layer_cost.h"
#include "stagecraft/v1/model.pb.h"

namespace stagecraft {

/// A model as the planner sees it: the layer chain of a v1::Model plus each layer's
/// derived cost, with prefix sums so any contiguous layer range costs O(1) to query.
class ModelSpec {
 public:
  /// Checks the chain (each layer's input_shape equals the previous layer's output) and
  /// derives every layer's cost. Throws Error naming the first layer that is wrong.
  static ModelSpec fromProto(v1::Model model);

  const v1::Model& proto() const { return proto_; }
  const std::string& name() const { return proto_.name(); }
  int layerCount() const { return static_cast<int>(costs_.size()); }
  const v1::Layer& layer(int i) const { return proto_.layers(i); }
  const LayerCost& cost(int i) const { return costs_[i]; }

  // Per-sample sums over the layers [begin, end).
  double forwardFlops(int begin, int end) const { return fwd_[end] - fwd_[begin]; }
  double backwardFlops(int begin, int end) const { return bwd_[end] - bwd_[begin]; }
  double parameters(int begin, int end) const { return params_[end] - params_[begin]; }
  double savedBytes(int begin, int end) const { return saved_[end] - saved_[begin]; }

  /// Bytes per sample of the activation layer `i` hands to layer i + 1 (and of the
  /// gradient that comes back), i.e. what crosses a cut placed after layer i.
  double outputBytes(int i) const { return costs_[i].output_bytes; }
  /// Bytes per sample of the model's input.
  double inputBytes() const;

 private:
  v1::Model proto_;
  std::vector<LayerCost> costs_;
  std::vector<double> fwd_, bwd_, params_, saved_;
};

}  // namespace stagecraft
