// The layer kinds of core/model/layer_cost.cpp as LibTorch modules, a stage built from
// them, and a stage's weights and tensors on the wire.

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "io/error.h"
#include "model/model_spec.h"
#include "script_model.h"
#include "tensor_wire.h"
#include "torch_stage.h"

namespace stagecraft::worker {
namespace {

namespace nn = torch::nn;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The seed of global layer `index`: independent of the stage the layer is built in.
std::uint64_t layerSeed(std::uint64_t seed, int index) {
  return splitmix64(splitmix64(seed) ^ (0x5851f42d4c957f2dULL * (static_cast<std::uint64_t>(index) + 1)));
}

[[noreturn]] void fail(const v1::Layer& layer, const std::string& why) {
  throw Error("layer '" + layer.name() + "' (" + layer.kind() + "): " + why);
}

torch::Tensor activate(const std::string& activation, torch::Tensor x) {
  if (activation.empty()) return x;
  if (activation == "relu") return torch::relu(x);
  if (activation == "relu6") return torch::hardtanh(x, 0.0, 6.0);
  return torch::gelu(x);  // layer_cost validated the name
}

// ---- initialisation -----------------------------------------------------------------
// Weights come from a generator private to the layer, seeded from (seed, layer index), so
// the same layer starts from the same values in any stage, in any thread.

enum class InitStyle {
  Invalid = 0,
  LeCun,  ///< weights U(+-sqrt(3 / fan_in)) (unit variance gain), biases 0
  Gpt,    ///< weights and embeddings N(0, 0.02), biases 0
};

/// Re-initialises every Linear, Conv2d and Embedding inside `module`, in module order.
/// Norm layers keep their deterministic defaults (weight 1, bias 0). LeCun's gain rather
/// than He's keeps wide plain stacks such as the zoo's mlp stable under SGD at lr 0.05.
void initModule(nn::Module& module, at::Generator& gen, InitStyle style) {
  torch::NoGradGuard no_grad;
  auto init = [&](torch::Tensor& w) {
    if (style == InitStyle::Gpt) {
      w.normal_(0.0, 0.02, gen);
    } else {
      const double fan_in = static_cast<double>(w.numel()) / static_cast<double>(w.size(0));
      const double bound = std::sqrt(3.0 / fan_in);
      w.uniform_(-bound, bound, gen);
    }
  };
  for (const auto& m : module.modules()) {
    if (auto* linear = m->as<nn::Linear>()) {
      init(linear->weight);
      if (linear->bias.defined()) linear->bias.zero_();
    } else if (auto* conv = m->as<nn::Conv2d>()) {
      init(conv->weight);
      if (conv->bias.defined()) conv->bias.zero_();
    } else if (auto* embedding = m->as<nn::Embedding>()) {
      embedding->weight.normal_(0.0, 0.02, gen);
    }
  }
}

// ---- layers --------------------------------------------------------------------------

class LinearLayerImpl : public nn::Module {
 public:
  LinearLayerImpl(const v1::Layer& layer, const std::vector<int>& in)
      : flatten_(layer.flatten()), activation_(layer.activation()) {
    std::int64_t features = in.back();
    if (flatten_) {
      features = 1;
      for (int d : in) features *= d;
    }
    linear_ = register_module(
        "linear", nn::Linear(nn::LinearOptions(features, layer.out_features()).bias(!layer.no_bias())));
  }
  torch::Tensor forward(torch::Tensor x) {
    if (flatten_) x = x.flatten(1);
    return activate(activation_, linear_(x));
  }

 private:
  bool flatten_;
  std::string activation_;
  nn::Linear linear_{nullptr};
};
TORCH_MODULE(LinearLayer);

class Conv2dLayerImpl : public nn::Module {
 public:
  Conv2dLayerImpl(const v1::Layer& layer, const std::vector<int>& in) : activation_(layer.activation()) {
    const int stride = layer.stride() > 0 ? layer.stride() : 1;
    const int groups = layer.groups() > 0 ? layer.groups() : 1;
    // With BatchNorm the conv has no bias (BN's shift replaces it), as layer_cost counts.
    conv_ = register_module("conv", nn::Conv2d(nn::Conv2dOptions(in[0], layer.out_channels(), layer.kernel_size())
                                                   .stride(stride)
                                                   .padding(layer.padding())
                                                   .groups(groups)
                                                   .bias(!layer.batch_norm() && !layer.no_bias())));
    if (layer.batch_norm()) bn_ = register_module("bn", nn::BatchNorm2d(layer.out_channels()));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = conv_(x);
    if (bn_) x = bn_(x);
    return activate(activation_, x);
  }

 private:
  std::string activation_;
  nn::Conv2d conv_{nullptr};
  nn::BatchNorm2d bn_{nullptr};
};
TORCH_MODULE(Conv2dLayer);

class MaxPool2dLayerImpl : public nn::Module {
 public:
  explicit MaxPool2dLayerImpl(const v1::Layer& layer) {
    const int stride = layer.stride() > 0 ? layer.stride() : layer.kernel_size();
    pool_ = register_module(
        "pool", nn::MaxPool2d(nn::MaxPool2dOptions(layer.kernel_size()).stride(stride).padding(layer.padding())));
  }
  torch::Tensor forward(torch::Tensor x) { return pool_(x); }

 private:
  nn::MaxPool2d pool_{nullptr};
};
TORCH_MODULE(MaxPool2dLayer);

nn::Conv2d convNoBias(std::int64_t in, std::int64_t out, int kernel, int stride, int padding, int groups = 1) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).groups(groups).bias(false));
}

/// ResNet basic block: conv3x3-BN-ReLU, conv3x3-BN, plus the identity or a 1x1 conv+BN
/// projection when the stride or the channel count changes; ReLU after the sum.
class BasicBlockImpl : public nn::Module {
 public:
  BasicBlockImpl(const v1::Layer& layer, const std::vector<int>& in) {
    const int stride = layer.stride() > 0 ? layer.stride() : 1;
    const int out = layer.out_channels();
    conv1_ = register_module("conv1", convNoBias(in[0], out, 3, stride, 1));
    bn1_ = register_module("bn1", nn::BatchNorm2d(out));
    conv2_ = register_module("conv2", convNoBias(out, out, 3, 1, 1));
    bn2_ = register_module("bn2", nn::BatchNorm2d(out));
    if (stride != 1 || in[0] != out) {
      shortcut_conv_ = register_module("shortcut_conv", convNoBias(in[0], out, 1, stride, 0));
      shortcut_bn_ = register_module("shortcut_bn", nn::BatchNorm2d(out));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    auto y = torch::relu(bn1_(conv1_(x)));
    y = bn2_(conv2_(y));
    auto shortcut = shortcut_conv_ ? shortcut_bn_(shortcut_conv_(x)) : x;
    return torch::relu(y + shortcut);
  }

 private:
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, shortcut_conv_{nullptr};
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, shortcut_bn_{nullptr};
};
TORCH_MODULE(BasicBlock);

/// MobileNetV2 block: [1x1 expand-BN-ReLU6], 3x3 depthwise-BN-ReLU6, 1x1 project-BN,
/// residual when the shape is kept.
class InvertedResidualImpl : public nn::Module {
 public:
  InvertedResidualImpl(const v1::Layer& layer, const std::vector<int>& in) {
    const int stride = layer.stride() > 0 ? layer.stride() : 1;
    const std::int64_t hidden = static_cast<std::int64_t>(in[0]) * layer.expand_ratio();
    residual_ = stride == 1 && in[0] == layer.out_channels();
    if (layer.expand_ratio() != 1) {
      expand_ = register_module("expand", convNoBias(in[0], hidden, 1, 1, 0));
      expand_bn_ = register_module("expand_bn", nn::BatchNorm2d(hidden));
    }
    depthwise_ = register_module("depthwise", convNoBias(hidden, hidden, 3, stride, 1, static_cast<int>(hidden)));
    depthwise_bn_ = register_module("depthwise_bn", nn::BatchNorm2d(hidden));
    project_ = register_module("project", convNoBias(hidden, layer.out_channels(), 1, 1, 0));
    project_bn_ = register_module("project_bn", nn::BatchNorm2d(layer.out_channels()));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto y = x;
    if (expand_) y = torch::hardtanh(expand_bn_(expand_(y)), 0.0, 6.0);
    y = torch::hardtanh(depthwise_bn_(depthwise_(y)), 0.0, 6.0);
    y = project_bn_(project_(y));
    return residual_ ? x + y : y;
  }

 private:
  bool residual_;
  nn::Conv2d expand_{nullptr}, depthwise_{nullptr}, project_{nullptr};
  nn::BatchNorm2d expand_bn_{nullptr}, depthwise_bn_{nullptr}, project_bn_{nullptr};
};
TORCH_MODULE(InvertedResidual);

class GlobalAvgPoolImpl : public nn::Module {
 public:
  torch::Tensor forward(torch::Tensor x) { return x.mean({2, 3}); }
};
TORCH_MODULE(GlobalAvgPool);

/// Token embedding plus a learned position embedding; input [N, seq] int64 token ids.
class EmbeddingLayerImpl : public nn::Module {
 public:
  EmbeddingLayerImpl(const v1::Layer& layer, const std::vector<int>& in) : vocab_(layer.vocab_size()) {
    tokens_ = register_module("tokens", nn::Embedding(layer.vocab_size(), layer.embed_dim()));
    positions_ = register_parameter("positions", torch::zeros({in[0], layer.embed_dim()}));
  }
  void initPositions(at::Generator& gen) {
    torch::NoGradGuard no_grad;
    positions_.normal_(0.0, 0.02, gen);
  }
  torch::Tensor forward(torch::Tensor x) {
    if (x.scalar_type() != torch::kInt64) x = x.to(torch::kInt64);
    TORCH_CHECK(x.dim() == 2 && x.size(1) == positions_.size(0), "embedding expects token ids [N, ",
                positions_.size(0), "], got ", x.sizes());
    TORCH_CHECK(x.numel() == 0 || (x.min().item<std::int64_t>() >= 0 && x.max().item<std::int64_t>() < vocab_),
                "token id out of range [0, ", vocab_, ")");
    return tokens_(x) + positions_;
  }

 private:
  std::int64_t vocab_;
  nn::Embedding tokens_{nullptr};
  torch::Tensor positions_;
};
TORCH_MODULE(EmbeddingLayer);

/// Pre-LN decoder block: x + attn(LN(x)) with a causal mask, then x + MLP(LN(x)) with GELU.
class TransformerBlockImpl : public nn::Module {
 public:
  TransformerBlockImpl(const v1::Layer& layer, const std::vector<int>& in)
      : heads_(layer.num_heads()), dim_(in[1]) {
    ln1_ = register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({dim_})));
    qkv_ = register_module("qkv", nn::Linear(dim_, 3 * dim_));
    out_ = register_module("out", nn::Linear(dim_, dim_));
    ln2_ = register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({dim_})));
    fc1_ = register_module("fc1", nn::Linear(dim_, layer.ff_dim()));
    fc2_ = register_module("fc2", nn::Linear(layer.ff_dim(), dim_));
  }
  torch::Tensor forward(torch::Tensor x) {
    const auto n = x.size(0), seq = x.size(1), head_dim = dim_ / heads_;
    // [N, S, 3, H, hd] -> [3, N, H, S, hd]
    auto qkv = qkv_(ln1_(x)).view({n, seq, 3, heads_, head_dim}).permute({2, 0, 3, 1, 4});
    auto q = qkv[0], k = qkv[1], v = qkv[2];
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim));
    auto future = torch::ones({seq, seq}, torch::TensorOptions().dtype(torch::kBool).device(x.device())).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    auto attended = torch::matmul(torch::softmax(scores, -1), v).transpose(1, 2).reshape({n, seq, dim_});
    x = x + out_(attended);
    return x + fc2_(torch::gelu(fc1_(ln2_(x))));
  }

 private:
  std::int64_t heads_, dim_;
  nn::LayerNorm ln1_{nullptr}, ln2_{nullptr};
  nn::Linear qkv_{nullptr}, out_{nullptr}, fc1_{nullptr}, fc2_{nullptr};
};
TORCH_MODULE(TransformerBlock);

class LmHeadImpl : public nn::Module {
 public:
  LmHeadImpl(const v1::Layer& layer, const std::vector<int>& in) {
    norm_ = register_module("norm", nn::LayerNorm(nn::LayerNormOptions({in[1]})));
    linear_ = register_module("linear", nn::Linear(in[1], layer.vocab_size()));
  }
  torch::Tensor forward(torch::Tensor x) { return linear_(norm_(x)); }

 private:
  nn::LayerNorm norm_{nullptr};
  nn::Linear linear_{nullptr};
};
TORCH_MODULE(LmHead);

struct BuiltLayer {
  std::shared_ptr<nn::Module> module;
  std::function<torch::Tensor(torch::Tensor)> run;
};

template <typename Holder>
BuiltLayer wrap(Holder holder) {
  auto impl = holder.ptr();
  return {impl, [impl](torch::Tensor x) { return impl->forward(std::move(x)); }};
}

BuiltLayer buildLayer(const v1::Layer& layer, std::uint64_t seed, bool initialise) {
  const std::vector<int> in(layer.input_shape().begin(), layer.input_shape().end());
  const auto& kind = layer.kind();
  auto gen = at::detail::createCPUGenerator(seed);
  BuiltLayer built;
  InitStyle style = InitStyle::LeCun;
  if (kind == "linear") {
    built = wrap(LinearLayer(layer, in));
  } else if (kind == "conv2d") {
    built = wrap(Conv2dLayer(layer, in));
  } else if (kind == "maxpool2d") {
    built = wrap(MaxPool2dLayer(layer));
  } else if (kind == "basic_block") {
    built = wrap(BasicBlock(layer, in));
  } else if (kind == "inverted_residual") {
    built = wrap(InvertedResidual(layer, in));
  } else if (kind == "global_avgpool") {
    built = wrap(GlobalAvgPool());
  } else if (kind == "embedding") {
    EmbeddingLayer embedding(layer, in);
    if (initialise) {
      initModule(*embedding, gen, InitStyle::Gpt);
      embedding->initPositions(gen);
    }
    return wrap(embedding);
  } else if (kind == "transformer_block" || kind == "lm_head") {
    built = kind == "lm_head" ? wrap(LmHead(layer, in)) : wrap(TransformerBlock(layer, in));
    style = InitStyle::Gpt;
  } else {
    fail(layer, "no LibTorch module for this kind");
  }
  if (initialise) initModule(*built.module, gen, style);
  return built;
}

// ---- tensors on the wire -------------------------------------------------------------

template <typename T>
void byteSwapInPlace(char* data, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    std::reverse(data + i * sizeof(T), data + (i + 1) * sizeof(T));
  }
}

std::string shapeText(c10::IntArrayRef shape) {
  return worker::shapeText(std::span<const std::int64_t>(shape.data(), shape.size()));
}

/// Parameters, then buffers, each with its name, in module order.
std::vector<std::pair<std::string, torch::Tensor>> stateOf(StageModule& module) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& p : module->named_parameters()) state.emplace_back(p.key(), p.value());
  for (const auto& b : module->named_buffers()) state.emplace_back(b.key(), b.value());
  return state;
}

}  // namespace

// ---- StageModule ---------------------------------------------------------------------

StageModuleImpl::StageModuleImpl(const v1::Model& model, int begin, int end, std::uint64_t seed, bool initialise)
    : begin_(begin), end_(end) {
  // Validates the whole chain and fills in omitted input shapes.
  const ModelSpec spec = ModelSpec::fromProto(model);
  if (begin < 0 || end > spec.layerCount() || begin >= end) {
    throw Error("model '" + model.name() + "': layer range [" + std::to_string(begin) + ", " +
                std::to_string(end) + ") is not within its " + std::to_string(spec.layerCount()) + " layers");
  }
  // A TorchScript model's children come from its file, with the file's weights.
  std::vector<std::string> script_paths;
  for (int i = begin; i < end; ++i) {
    if (spec.layer(i).kind() == "torchscript") script_paths.push_back(spec.layer(i).module_path());
  }
  std::vector<ScriptedLayer> scripted;
  if (!script_paths.empty()) {
    if (model.script().path().empty()) throw Error("model '" + model.name() + "': its TorchScript file is not here");
    scripted = loadScriptedLayers(model.script().path(), script_paths);
  }
  auto next_scripted = scripted.begin();
  for (int i = begin; i < end; ++i) {
    BuiltLayer built;
    if (spec.layer(i).kind() == "torchscript") {
      built = {next_scripted->module, std::move(next_scripted->run)};
      ++next_scripted;
    } else {
      built = buildLayer(spec.layer(i), layerSeed(seed, i), initialise);
    }
    // Named by the global index, so a tensor has the same name in every split.
    register_module(std::to_string(i), built.module);
    layers_.push_back(std::move(built.module));
    run_.push_back(std::move(built.run));
  }
}

torch::Tensor StageModuleImpl::forward(torch::Tensor x) {
  for (auto& run : run_) x = run(std::move(x));
  return x;
}

torch::Tensor StageModuleImpl::forwardLayer(int i, torch::Tensor x) {
  TORCH_CHECK(i >= 0 && i < layerCount(), "local layer ", i, " out of range [0, ", layerCount(), ")");
  return run_[i](std::move(x));
}

std::vector<torch::Tensor> StageModuleImpl::layerParameters(int i) const {
  TORCH_CHECK(i >= 0 && i < layerCount(), "local layer ", i, " out of range [0, ", layerCount(), ")");
  return layers_[i]->parameters();
}

// ---- tensors -------------------------------------------------------------------------

namespace {

/// `tensor` as the wire carries it: on the CPU, float32 or int64, contiguous (a view when it
/// already is); `header` gets its name, dtype and shape.
torch::Tensor wireTensor(const torch::Tensor& tensor, const std::string& name, v1::Tensor& header) {
  torch::Tensor t = tensor.detach().to(torch::kCPU);
  if (t.scalar_type() != torch::kFloat32 && t.scalar_type() != torch::kInt64) {
    t = t.to(at::isFloatingType(t.scalar_type()) ? torch::kFloat32 : torch::kInt64);
  }
  t = t.contiguous();
  header.set_name(name);
  header.set_dtype(t.scalar_type() == torch::kInt64 ? "int64" : "float32");
  for (auto d : t.sizes()) header.add_shape(d);
  return t;
}

}  // namespace

v1::Tensor toProto(const torch::Tensor& tensor, const std::string& name) {
  v1::Tensor out;
  const torch::Tensor t = wireTensor(tensor, name, out);
  std::string* data = out.mutable_data();
  data->assign(static_cast<const char*>(t.data_ptr()), t.nbytes());  // one pass, no zero-fill first
  if constexpr (std::endian::native == std::endian::big) {
    if (t.scalar_type() == torch::kInt64) {
      byteSwapInPlace<std::int64_t>(data->data(), t.numel());
    } else {
      byteSwapInPlace<float>(data->data(), t.numel());
    }
  }
  return out;
}

std::pair<v1::Tensor, WirePayload> toWire(const torch::Tensor& tensor, const std::string& name) {
  if constexpr (std::endian::native == std::endian::big) {
    return {toProto(tensor, name), {}};  // the bytes are swapped into a copy there
  }
  v1::Tensor header;
  torch::Tensor t = wireTensor(tensor, name, header);
  WirePayload payload;
  payload.size = t.nbytes();
  if (payload.size > 0) {
    payload.data = static_cast<const char*>(t.data_ptr());
    payload.owner = std::make_shared<torch::Tensor>(std::move(t));
  }
  return {std::move(header), std::move(payload)};
}

torch::Tensor fromProto(v1::Tensor&& tensor) {
  const TensorWireLayout layout = checkTensorWire(tensor);  // throws a protocol Error for a malformed message
  // A short tensor is copied as ever; a long one's storage becomes the string's buffer
  // (operator new's alignment suits float32 and int64).
  constexpr std::size_t kTakeFrom = 4096;
  if (std::endian::native == std::endian::big || tensor.data().size() < kTakeFrom) return fromProto(tensor);
  const auto type = layout.dtype == WireDtype::Int64 ? torch::kInt64 : torch::kFloat32;
  auto* bytes = new std::string(std::move(*tensor.mutable_data()));
  tensor.clear_data();
  return torch::from_blob(
      bytes->data(), layout.shape, [bytes](void*) { delete bytes; }, torch::TensorOptions().dtype(type));
}

torch::Tensor fromProto(const v1::Tensor& tensor) {
  const TensorWireLayout layout = checkTensorWire(tensor);  // throws a protocol Error for a malformed message
  const auto type = layout.dtype == WireDtype::Int64 ? torch::kInt64 : torch::kFloat32;
  torch::Tensor t = torch::empty(layout.shape, torch::TensorOptions().dtype(type));
  if (layout.elements > 0) std::memcpy(t.data_ptr(), tensor.data().data(), tensor.data().size());
  if constexpr (std::endian::native == std::endian::big) {
    if (type == torch::kInt64) {
      byteSwapInPlace<std::int64_t>(static_cast<char*>(t.data_ptr()), layout.elements);
    } else {
      byteSwapInPlace<float>(static_cast<char*>(t.data_ptr()), layout.elements);
    }
  }
  return t;
}

// ---- weights -------------------------------------------------------------------------

v1::StageWeights getWeights(StageModule& module) {
  v1::StageWeights weights;
  weights.set_layer_begin(module->layerBegin());
  weights.set_layer_end(module->layerEnd());
  for (const auto& [name, tensor] : stateOf(module)) *weights.add_tensors() = toProto(tensor, name);
  return weights;
}

void setWeights(StageModule& module, const v1::StageWeights& weights) {
  std::vector<const v1::Tensor*> tensors;
  for (const auto& t : weights.tensors()) tensors.push_back(&t);
  setWeights(module, weights.layer_begin(), weights.layer_end(), tensors);
}

void setWeights(StageModule& module, int layer_begin, int layer_end, std::span<const v1::Tensor* const> tensors) {
  if (layer_begin != module->layerBegin() || layer_end != module->layerEnd()) {
    throw Error("weights are for layers [" + std::to_string(layer_begin) + ", " + std::to_string(layer_end) +
                "), the stage holds [" + std::to_string(module->layerBegin()) + ", " +
                std::to_string(module->layerEnd()) + ")");
  }
  std::map<std::string, const v1::Tensor*> given;
  for (const v1::Tensor* t : tensors) {
    if (!given.emplace(t->name(), t).second) throw Error("weights hold " + tensorLabel(t->name()) + " twice");
  }
  const auto state = stateOf(module);
  // Check everything before changing anything, so a bad message leaves the stage intact.
  std::vector<torch::Tensor> values;
  for (const auto& [name, target] : state) {
    auto it = given.find(name);
    if (it == given.end()) throw Error("weights lack " + tensorLabel(name));
    torch::Tensor value = fromProto(*it->second);
    if (value.sizes() != target.sizes()) {
      throw Error(tensorLabel(name) + ": shape " + shapeText(value.sizes()) + " does not match the stage's " +
                  shapeText(target.sizes()));
    }
    if (at::isFloatingType(value.scalar_type()) != at::isFloatingType(target.scalar_type())) {
      throw Error(tensorLabel(name) + ": dtype " + it->second->dtype() + " does not match the stage's");
    }
    values.push_back(std::move(value));
    given.erase(it);
  }
  if (!given.empty()) throw Error("weights hold " + tensorLabel(given.begin()->first) + ", which the stage lacks");
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < state.size(); ++i) {
    torch::Tensor target = state[i].second;
    target.copy_(values[i]);
  }
}

}  // namespace stagecraft::worker
