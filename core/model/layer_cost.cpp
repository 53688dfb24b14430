#include "model/layer_cost.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>

#include "io/error.h"
#include "stagecraft/v1/model.pb.h"

namespace stagecraft {
namespace {

constexpr double kFloatBytes = 4.0;

double product(const std::vector<int>& shape) {
  return std::accumulate(shape.begin(), shape.end(), 1.0, std::multiplies<>());
}

[[noreturn]] void fail(const v1::Layer& layer, const std::string& why) {
  throw Error("layer '" + layer.name() + "' (" + layer.kind() + "): " + why);
}

void requirePositive(const v1::Layer& layer, int value, const char* field) {
  if (value <= 0) fail(layer, std::string(field) + " must be positive");
}

void requireRank(const v1::Layer& layer, const std::vector<int>& in, size_t rank,
                 const char* what) {
  if (in.size() != rank) {
    fail(layer, "input_shape must be " + std::string(what) + " (" + std::to_string(rank) +
                    " dimensions), got " + std::to_string(in.size()));
  }
}

int convOut(const v1::Layer& layer, int size, int kernel, int stride, int padding) {
  if (padding < 0) fail(layer, "padding must not be negative");
  // In 64 bits: 2 * padding alone may not fit an int.
  const std::int64_t padded = std::int64_t{size} + 2 * std::int64_t{padding};
  // Checked before dividing: (padded - kernel) / stride truncates towards zero, so a kernel
  // one wider than the input would otherwise give one output.
  if (padded < kernel) {
    fail(layer, "kernel " + std::to_string(kernel) + " does not fit input size " + std::to_string(size));
  }
  const std::int64_t out = (padded - kernel) / stride + 1;
  if (out > std::numeric_limits<int>::max()) fail(layer, "padding " + std::to_string(padding) + " is too large");
  return static_cast<int>(out);
}

bool hasActivation(const v1::Layer& layer) {
  const auto& a = layer.activation();
  if (a.empty()) return false;
  if (a != "relu" && a != "relu6" && a != "gelu") {
    fail(layer, "unknown activation '" + a + "' (relu, relu6, gelu or empty)");
  }
  return true;
}

LayerCost linear(const v1::Layer& layer, const std::vector<int>& in) {
  requirePositive(layer, layer.out_features(), "out_features");
  if (in.empty()) fail(layer, "input_shape is empty");
  std::vector<int> shape = in;
  if (layer.flatten()) {
    if (product(in) > std::numeric_limits<int>::max()) fail(layer, "flattened input is too large");
    shape = {static_cast<int>(product(in))};
  }
  const double features = shape.back();
  const double tokens = product(shape) / features;
  LayerCost c;
  c.output_shape = shape;
  c.output_shape.back() = layer.out_features();
  const double out = product(c.output_shape);
  c.forward_flops = 2.0 * tokens * features * layer.out_features() + (layer.no_bias() ? 0 : out);
  c.parameters = features * layer.out_features() + (layer.no_bias() ? 0 : layer.out_features());
  c.saved_bytes = kFloatBytes * (product(shape) + (hasActivation(layer) ? out : 0));
  return c;
}

LayerCost conv2d(const v1::Layer& layer, const std::vector<int>& in) {
  requireRank(layer, in, 3, "C x H x W");
  requirePositive(layer, layer.out_channels(), "out_channels");
  requirePositive(layer, layer.kernel_size(), "kernel_size");
  const int stride = layer.stride() > 0 ? layer.stride() : 1;
  const int groups = layer.groups() > 0 ? layer.groups() : 1;
  if (in[0] % groups != 0 || layer.out_channels() % groups != 0) {
    fail(layer, "groups " + std::to_string(groups) + " must divide in and out channels");
  }
  const int h = convOut(layer, in[1], layer.kernel_size(), stride, layer.padding());
  const int w = convOut(layer, in[2], layer.kernel_size(), stride, layer.padding());
  LayerCost c;
  c.output_shape = {layer.out_channels(), h, w};
  const double out = product(c.output_shape);
  const double k2 = double(layer.kernel_size()) * layer.kernel_size();
  c.forward_flops = 2.0 * (in[0] / groups) * k2 * out;
  c.parameters = double(layer.out_channels()) * (in[0] / groups) * k2;
  if (layer.batch_norm()) {
    c.parameters += 2.0 * layer.out_channels();
    c.forward_flops += 4.0 * out;
  } else if (!layer.no_bias()) {
    c.parameters += layer.out_channels();
    c.forward_flops += out;
  }
  const double act = hasActivation(layer) ? 1 : 0;
  c.saved_bytes = kFloatBytes * (product(in) + out * (1 + (layer.batch_norm() ? 1 : 0) + act));
  return c;
}

LayerCost maxpool2d(const v1::Layer& layer, const std::vector<int>& in) {
  requireRank(layer, in, 3, "C x H x W");
  requirePositive(layer, layer.kernel_size(), "kernel_size");
  const int stride = layer.stride() > 0 ? layer.stride() : layer.kernel_size();
  LayerCost c;
  c.output_shape = {in[0], convOut(layer, in[1], layer.kernel_size(), stride, layer.padding()),
                    convOut(layer, in[2], layer.kernel_size(), stride, layer.padding())};
  c.forward_flops = product(c.output_shape) * layer.kernel_size() * layer.kernel_size();
  c.saved_bytes = kFloatBytes * (product(in) + product(c.output_shape));
  return c;
}

LayerCost basicBlock(const v1::Layer& layer, const std::vector<int>& in) {
  requireRank(layer, in, 3, "C x H x W");
  requirePositive(layer, layer.out_channels(), "out_channels");
  const int stride = layer.stride() > 0 ? layer.stride() : 1;
  const double cin = in[0];
  const double cout = layer.out_channels();
  const int h = convOut(layer, in[1], 3, stride, 1);
  const int w = convOut(layer, in[2], 3, stride, 1);
  const double hw = double(h) * w;
  const bool projection = stride != 1 || in[0] != layer.out_channels();
  LayerCost c;
  c.output_shape = {layer.out_channels(), h, w};
  c.forward_flops = 2.0 * 9 * cin * cout * hw + 2.0 * 9 * cout * cout * hw + 12.0 * cout * hw;
  c.parameters = 9 * cin * cout + 9 * cout * cout + 4 * cout;
  double saved = product(in) + 6.0 * cout * hw;
  if (projection) {
    c.forward_flops += 2.0 * cin * cout * hw + 4.0 * cout * hw;
    c.parameters += cin * cout + 2 * cout;
    saved += 2.0 * cout * hw;
  }
  c.saved_bytes = kFloatBytes * saved;
  return c;
}

LayerCost invertedResidual(const v1::Layer& layer, const std::vector<int>& in) {
  requireRank(layer, in, 3, "C x H x W");
  requirePositive(layer, layer.out_channels(), "out_channels");
  requirePositive(layer, layer.expand_ratio(), "expand_ratio");
  const int stride = layer.stride() > 0 ? layer.stride() : 1;
  const double cin = in[0];
  const double hidden = cin * layer.expand_ratio();
  const double cout = layer.out_channels();
  const double hw_in = double(in[1]) * in[2];
  const int h = convOut(layer, in[1], 3, stride, 1);
  const int w = convOut(layer, in[2], 3, stride, 1);
  const double hw = double(h) * w;
  LayerCost c;
  c.output_shape = {layer.out_channels(), h, w};
  double saved = product(in);
  if (layer.expand_ratio() != 1) {
    c.forward_flops += 2.0 * cin * hidden * hw_in + 5.0 * hidden * hw_in;
    c.parameters += cin * hidden + 2 * hidden;
    saved += 3.0 * hidden * hw_in;
  }
  c.forward_flops += 2.0 * 9 * hidden * hw + 5.0 * hidden * hw;  // depthwise + BN + ReLU6
  c.parameters += 9 * hidden + 2 * hidden;
  c.forward_flops += 2.0 * hidden * cout * hw + 4.0 * cout * hw;  // projection + BN
  c.parameters += hidden * cout + 2 * cout;
  saved += 3.0 * hidden * hw + 2.0 * cout * hw;
  if (stride == 1 && in[0] == layer.out_channels()) c.forward_flops += cout * hw;
  c.saved_bytes = kFloatBytes * saved;
  return c;
}

LayerCost globalAvgPool(const v1::Layer& layer, const std::vector<int>& in) {
  requireRank(layer, in, 3, "C x H x W");
  LayerCost c;
  c.output_shape = {in[0]};
  c.forward_flops = product(in);
  return c;
}

LayerCost embedding(const v1::Layer& layer, const std::vector<int>& in) {
  requireRank(layer, in, 1, "the sequence length");
  requirePositive(layer, layer.vocab_size(), "vocab_size");
  requirePositive(layer, layer.embed_dim(), "embed_dim");
  const double seq = in[0];
  const double d = layer.embed_dim();
  LayerCost c;
  c.output_shape = {in[0], layer.embed_dim()};
  c.forward_flops = seq * d;
  c.parameters = double(layer.vocab_size()) * d + seq * d;
  c.saved_bytes = 8.0 * seq;  // the token ids
  return c;
}

LayerCost transformerBlock(const v1::Layer& layer, const std::vector<int>& in) {
  requireRank(layer, in, 2, "sequence x embedding");
  requirePositive(layer, layer.num_heads(), "num_heads");
  requirePositive(layer, layer.ff_dim(), "ff_dim");
  if (in[1] % layer.num_heads() != 0) {
    fail(layer, "num_heads " + std::to_string(layer.num_heads()) +
                    " must divide the embedding size " + std::to_string(in[1]));
  }
  const double seq = in[0];
  const double d = in[1];
  const double ff = layer.ff_dim();
  const double heads = layer.num_heads();
  LayerCost c;
  c.output_shape = in;
  c.forward_flops = seq * (2 * d * 3 * d + 2 * d * d + 4 * d * ff) + 4 * seq * seq * d +
                    5 * heads * seq * seq + 20 * seq * d;
  c.parameters = 4 * d * d + 4 * d + 2 * d * ff + ff + d + 4 * d;
  c.saved_bytes = kFloatBytes * (seq * (11 * d + 2 * ff) + 2 * heads * seq * seq);
  return c;
}

LayerCost lmHead(const v1::Layer& layer, const std::vector<int>& in) {
  requireRank(layer, in, 2, "sequence x embedding");
  requirePositive(layer, layer.vocab_size(), "vocab_size");
  const double seq = in[0];
  const double d = in[1];
  const double vocab = layer.vocab_size();
  LayerCost c;
  c.output_shape = {in[0], layer.vocab_size()};
  c.forward_flops = 2 * seq * d * vocab + seq * vocab + 8 * seq * d;
  c.parameters = d * vocab + vocab + 2 * d;
  c.saved_bytes = kFloatBytes * (2 * seq * d + seq * vocab);
  return c;
}

/// One child of a user's TorchScript nn.Sequential: the worker's shape probe measured what
/// the formulas above derive (output shape, parameters, FLOPs, what backward keeps).
LayerCost torchscript(const v1::Layer& layer, const std::vector<int>&) {
  if (layer.module_path().empty()) fail(layer, "module_path is empty (which child of the file this is)");
  if (layer.output_shape().empty()) fail(layer, "output_shape is empty");
  LayerCost c;
  for (int d : layer.output_shape()) {
    if (d <= 0) fail(layer, "output_shape has a non-positive dimension");
    c.output_shape.push_back(d);
  }
  const auto finiteNonNegative = [&](double v, const char* field) {
    if (!std::isfinite(v) || v < 0) fail(layer, std::string(field) + " must be finite and not negative");
    return v;
  };
  if (layer.parameter_count() < 0) fail(layer, "parameter_count must not be negative");
  c.parameters = static_cast<double>(layer.parameter_count());
  c.forward_flops = finiteNonNegative(layer.forward_flops(), "forward_flops");
  c.saved_bytes = finiteNonNegative(layer.saved_bytes(), "saved_bytes");
  return c;
}

using CostFn = LayerCost (*)(const v1::Layer&, const std::vector<int>&);

struct KindEntry {
  const char* name;
  CostFn cost;
};

constexpr KindEntry kKinds[] = {
    {"linear", linear},
    {"conv2d", conv2d},
    {"maxpool2d", maxpool2d},
    {"basic_block", basicBlock},
    {"inverted_residual", invertedResidual},
    {"global_avgpool", globalAvgPool},
    {"embedding", embedding},
    {"transformer_block", transformerBlock},
    {"lm_head", lmHead},
    {"torchscript", torchscript},
};

}  // namespace

const std::vector<std::string>& layerKinds() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& k : kKinds) out.emplace_back(k.name);
    return out;
  }();
  return names;
}

LayerCost computeLayerCost(const v1::Layer& layer) {
  const std::vector<int> in(layer.input_shape().begin(), layer.input_shape().end());
  for (int d : in) {
    if (d <= 0) fail(layer, "input_shape has a non-positive dimension");
  }
  for (const auto& k : kKinds) {
    if (layer.kind() == k.name) {
      LayerCost c = k.cost(layer, in);
      c.output_bytes = kFloatBytes * product(c.output_shape);
      c.backward_flops = (c.parameters > 0 ? 2.0 : 1.0) * c.forward_flops;
      return c;
    }
  }
  std::string known;
  for (const auto& k : kKinds) known += (known.empty() ? "" : ", ") + std::string(k.name);
  fail(layer, "unknown kind (known: " + known + ")");
}

}  // namespace stagecraft
