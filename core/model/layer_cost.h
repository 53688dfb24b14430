#pragma once

#include <string>
#include <vector>

namespace stagecraft::v1 {
class Layer;
}

namespace stagecraft {

/// What one layer costs, per sample. FLOPs count a multiply-add as two.
struct LayerCost {
  std::vector<int> output_shape;  ///< per sample, no batch dimension
  double forward_flops = 0;
  double backward_flops = 0;      ///< input and weight gradients
  double parameters = 0;          ///< trainable float32 values
  double output_bytes = 0;        ///< activation handed to the next layer
  double saved_bytes = 0;         ///< activations kept from forward until backward
};

/// The layer kinds a model may use, as spelled in model files.
const std::vector<std::string>& layerKinds();

/// Derives the cost and output shape of `layer` from its kind, hyper-parameters and
/// input shape. Throws Error naming the layer when they do not make sense.
LayerCost computeLayerCost(const v1::Layer& layer);

}  // namespace stagecraft
