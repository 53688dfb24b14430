#include "model/zoo.h"

#include "io/error.h"
#include "io/json_io.h"

namespace stagecraft {
namespace {

/// Appends layers to a model, filling each layer's input_shape from the previous output.
class ModelBuilder {
 public:
  ModelBuilder(std::string name, std::string description, std::string task,
               std::string dtype, std::vector<int> input, int classes) : shape_(std::move(input)) {
    model_.set_name(std::move(name));
    model_.set_description(std::move(description));
    model_.set_task(std::move(task));
    model_.set_input_dtype(std::move(dtype));
    model_.mutable_input_shape()->Assign(shape_.begin(), shape_.end());
    model_.set_num_classes(classes);
  }

  v1::Layer& add(const std::string& name, const std::string& kind) {
    pending_ = model_.add_layers();
    pending_->set_name(name);
    pending_->set_kind(kind);
    pending_->mutable_input_shape()->Assign(shape_.begin(), shape_.end());
    return *pending_;
  }

  ModelBuilder& linear(const std::string& name, int out, const std::string& act = "", bool flatten = false) {
    auto& l = add(name, "linear");
    l.set_out_features(out);
    l.set_activation(act);
    l.set_flatten(flatten);
    return commit();
  }
  ModelBuilder& conv(const std::string& name, int out, int kernel, int stride, int padding,
                     bool bn, const std::string& act) {
    auto& l = add(name, "conv2d");
    l.set_out_channels(out);
    l.set_kernel_size(kernel);
    l.set_stride(stride);
    l.set_padding(padding);
    l.set_batch_norm(bn);
    l.set_no_bias(bn);
    l.set_activation(act);
    return commit();
  }
  ModelBuilder& maxpool(const std::string& name) {
    auto& l = add(name, "maxpool2d");
    l.set_kernel_size(2);
    l.set_stride(2);
    return commit();
  }
  ModelBuilder& basicBlock(const std::string& name, int out, int stride) {
    auto& l = add(name, "basic_block");
    l.set_out_channels(out);
    l.set_stride(stride);
    return commit();
  }
  ModelBuilder& invertedResidual(const std::string& name, int out, int stride, int expand) {
    auto& l = add(name, "inverted_residual");
    l.set_out_channels(out);
    l.set_stride(stride);
    l.set_expand_ratio(expand);
    return commit();
  }
  ModelBuilder& kind(const std::string& name, const std::string& kind) {
    add(name, kind);
    return commit();
  }
  ModelBuilder& commit() {
    shape_ = computeLayerCost(*pending_).output_shape;
    return *this;
  }
  v1::Model take() { return std::move(model_); }

 private:
  v1::Model model_;
  v1::Layer* pending_ = nullptr;
  std::vector<int> shape_;
};

v1::Model mlp() {
  ModelBuilder b("mlp", "8 wide Linear layers (1024 -> 7 x 2048 -> 10) with ReLU",
                 "classification", "float32", {1024}, 10);
  for (int i = 0; i < 7; ++i) b.linear("fc" + std::to_string(i + 1), 2048, "relu");
  b.linear("fc8", 10);
  return b.take();
}

v1::Model vgg11() {
  ModelBuilder b("vgg11", "VGG-11 for 3x32x32 images, 4096-wide classifier",
                 "classification", "float32", {3, 32, 32}, 10);
  b.conv("conv1", 64, 3, 1, 1, false, "relu").maxpool("pool1");
  b.conv("conv2", 128, 3, 1, 1, false, "relu").maxpool("pool2");
  b.conv("conv3", 256, 3, 1, 1, false, "relu").conv("conv4", 256, 3, 1, 1, false, "relu");
  b.maxpool("pool3");
  b.conv("conv5", 512, 3, 1, 1, false, "relu").conv("conv6", 512, 3, 1, 1, false, "relu");
  b.maxpool("pool4");
  b.conv("conv7", 512, 3, 1, 1, false, "relu").conv("conv8", 512, 3, 1, 1, false, "relu");
  b.maxpool("pool5");
  b.linear("fc1", 4096, "relu", true).linear("fc2", 4096, "relu").linear("fc3", 10);
  return b.take();
}

v1::Model resnet18() {
  ModelBuilder b("resnet18", "ResNet-18 for 3x32x32 images, basic blocks as layers",
                 "classification", "float32", {3, 32, 32}, 10);
  b.conv("stem", 64, 3, 1, 1, true, "relu");
  const int widths[] = {64, 128, 256, 512};
  for (int s = 0; s < 4; ++s) {
    b.basicBlock("layer" + std::to_string(s + 1) + ".0", widths[s], s == 0 ? 1 : 2);
    b.basicBlock("layer" + std::to_string(s + 1) + ".1", widths[s], 1);
  }
  b.kind("avgpool", "global_avgpool").linear("fc", 10);
  return b.take();
}

v1::Model mobilenetv2() {
  ModelBuilder b("mobilenetv2", "MobileNetV2 (width 1.0) for 3x32x32 images",
                 "classification", "float32", {3, 32, 32}, 10);
  b.conv("stem", 32, 3, 1, 1, true, "relu6");
  // (expansion t, channels c, repeats n, first stride s), CIFAR strides.
  const int table[][4] = {{1, 16, 1, 1}, {6, 24, 2, 1}, {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int block = 0;
  for (const auto& row : table) {
    for (int i = 0; i < row[2]; ++i) {
      b.invertedResidual("block" + std::to_string(block++), row[1], i == 0 ? row[3] : 1, row[0]);
    }
  }
  b.conv("head", 1280, 1, 1, 0, true, "relu6");
  b.kind("avgpool", "global_avgpool").linear("classifier", 10);
  return b.take();
}

v1::Model gptMini() {
  constexpr int kVocab = 4096, kSeq = 128, kDim = 256, kHeads = 4, kBlocks = 6;
  ModelBuilder b("gpt-mini", "GPT-style decoder: 6 blocks, d=256, 4 heads, 128 tokens, vocab 4096",
                 "language_model", "int64", {kSeq}, kVocab);
  auto& emb = b.add("embed", "embedding");
  emb.set_vocab_size(kVocab);
  emb.set_embed_dim(kDim);
  b.commit();
  for (int i = 0; i < kBlocks; ++i) {
    auto& blk = b.add("block" + std::to_string(i), "transformer_block");
    blk.set_num_heads(kHeads);
    blk.set_ff_dim(4 * kDim);
    b.commit();
  }
  auto& head = b.add("head", "lm_head");
  head.set_vocab_size(kVocab);
  b.commit();
  return b.take();
}

struct ZooEntry {
  const char* name;
  v1::Model (*make)();
};

constexpr ZooEntry kZoo[] = {
    {"mlp", mlp}, {"vgg11", vgg11}, {"resnet18", resnet18},
    {"mobilenetv2", mobilenetv2}, {"gpt-mini", gptMini},
};

}  // namespace

std::vector<std::string> zooModelNames() {
  std::vector<std::string> names;
  for (const auto& z : kZoo) names.emplace_back(z.name);
  return names;
}

bool isZooModel(const std::string& name) {
  for (const auto& z : kZoo) {
    if (name == z.name) return true;
  }
  return false;
}

v1::Model zooModel(const std::string& name) {
  for (const auto& z : kZoo) {
    if (name == z.name) return z.make();
  }
  std::string known;
  for (const auto& z : kZoo) known += (known.empty() ? "" : ", ") + std::string(z.name);
  throw Error("unknown model '" + name + "' (built-in: " + known + "; or a path to a model .json)");
}

ModelSpec loadModel(const std::string& name_or_path) {
  if (isZooModel(name_or_path)) return ModelSpec::fromProto(zooModel(name_or_path));
  if (name_or_path.find('/') == std::string::npos &&
      name_or_path.find(".json") == std::string::npos) {
    zooModel(name_or_path);  // throws with the list of built-in names
  }
  v1::Model model;
  io::readJsonFile(name_or_path, model);
  try {
    return ModelSpec::fromProto(std::move(model));
  } catch (const Error& e) {
    throw Error(name_or_path + ": " + e.what());
  }
}

}  // namespace stagecraft
