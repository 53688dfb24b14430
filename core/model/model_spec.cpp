#include "model/model_spec.h"

#include <numeric>

#include "io/error.h"

namespace stagecraft {
namespace {

std::string shapeText(const std::vector<int>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

ModelSpec ModelSpec::fromProto(v1::Model model) {
  const std::string label = model.name().empty() ? std::string("model") : "model '" + model.name() + "'";
  if (model.layers().empty()) throw Error(label + ": has no layers");
  if (model.num_classes() <= 0) throw Error(label + ": num_classes must be positive");
  if (model.input_dtype() != "float32" && model.input_dtype() != "int64") {
    throw Error(label + ": input_dtype must be float32 or int64, got '" + model.input_dtype() + "'");
  }
  ModelSpec spec;
  std::vector<int> expected(model.input_shape().begin(), model.input_shape().end());
  spec.fwd_.push_back(0);
  spec.bwd_.push_back(0);
  spec.params_.push_back(0);
  spec.saved_.push_back(0);
  for (int i = 0; i < model.layers_size(); ++i) {
    auto* layer = model.mutable_layers(i);
    if (layer->name().empty()) layer->set_name("layer" + std::to_string(i));
    const std::vector<int> given(layer->input_shape().begin(), layer->input_shape().end());
    if (given.empty()) {
      layer->mutable_input_shape()->Assign(expected.begin(), expected.end());
    } else if (given != expected) {
      throw Error(label + ": layer " + std::to_string(i) + " '" + layer->name() +
                  "' expects input " + shapeText(given) + " but receives " + shapeText(expected));
    }
    LayerCost cost = computeLayerCost(*layer);
    expected = cost.output_shape;
    spec.fwd_.push_back(spec.fwd_.back() + cost.forward_flops);
    spec.bwd_.push_back(spec.bwd_.back() + cost.backward_flops);
    spec.params_.push_back(spec.params_.back() + cost.parameters);
    spec.saved_.push_back(spec.saved_.back() + cost.saved_bytes);
    spec.costs_.push_back(std::move(cost));
  }
  spec.proto_ = std::move(model);
  return spec;
}

double ModelSpec::inputBytes() const {
  const double elements = std::accumulate(proto_.input_shape().begin(), proto_.input_shape().end(),
                                          1.0, std::multiplies<>());
  return elements * (proto_.input_dtype() == "int64" ? 8.0 : 4.0);
}

}  // namespace stagecraft
