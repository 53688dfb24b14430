#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "io/error.h"
#include "model/model_spec.h"
#include "model/zoo.h"
#include "torch_stage.h"

namespace stagecraft::worker {
namespace {

std::int64_t parameterCount(StageModule& module) {
  std::int64_t n = 0;
  for (const auto& p : module->parameters()) n += p.numel();
  return n;
}

/// A batch of `n` inputs of `shape` in the model's input dtype.
torch::Tensor inputFor(const std::vector<int>& shape, bool tokens, int n, std::int64_t vocab = 16) {
  std::vector<std::int64_t> sizes{n};
  sizes.insert(sizes.end(), shape.begin(), shape.end());
  if (tokens) return torch::randint(0, vocab, sizes, torch::kInt64);
  return torch::randn(sizes);
}


/// A small image classifier touching every convolutional kind: conv+BN, basic blocks with
/// and without projection, inverted residuals with and without expansion and residual,
/// max-pooling, grouped conv, global pooling and linear layers.
v1::Model smallConvModel() {
  v1::Model m;
  m.set_name("small-conv");
  m.set_task("classification");
  m.set_input_dtype("float32");
  for (int d : {3, 16, 16}) m.add_input_shape(d);
  m.set_num_classes(5);
  auto add = [&](const std::string& name, const std::string& kind) {
    auto* l = m.add_layers();
    l->set_name(name);
    l->set_kind(kind);
    return l;
  };
  auto* stem = add("stem", "conv2d");
  stem->set_out_channels(8);
  stem->set_kernel_size(3);
  stem->set_padding(1);
  stem->set_batch_norm(true);
  stem->set_no_bias(true);
  stem->set_activation("relu");
  auto* b1 = add("block1", "basic_block");
  b1->set_out_channels(8);
  b1->set_stride(1);
  auto* b2 = add("block2", "basic_block");
  b2->set_out_channels(16);
  b2->set_stride(2);
  auto* ir1 = add("ir1", "inverted_residual");
  ir1->set_out_channels(16);
  ir1->set_stride(1);
  ir1->set_expand_ratio(2);
  auto* ir2 = add("ir2", "inverted_residual");
  ir2->set_out_channels(12);
  ir2->set_stride(2);
  ir2->set_expand_ratio(1);
  auto* pool = add("pool", "maxpool2d");
  pool->set_kernel_size(2);
  auto* grouped = add("grouped", "conv2d");
  grouped->set_out_channels(8);
  grouped->set_kernel_size(1);
  grouped->set_groups(4);
  grouped->set_activation("relu6");
  add("avgpool", "global_avgpool");
  auto* fc1 = add("fc1", "linear");
  fc1->set_out_features(10);
  fc1->set_activation("gelu");
  auto* fc2 = add("fc2", "linear");
  fc2->set_out_features(5);
  fc2->set_no_bias(true);
  return ModelSpec::fromProto(m).proto();
}

/// A tiny GPT: embedding, two blocks, head.
v1::Model tinyGptModel() {
  v1::Model m;
  m.set_name("tiny-gpt");
  m.set_task("language_model");
  m.set_input_dtype("int64");
  m.add_input_shape(8);
  m.set_num_classes(32);
  auto* e = m.add_layers();
  e->set_name("embed");
  e->set_kind("embedding");
  e->set_vocab_size(32);
  e->set_embed_dim(16);
  for (int i = 0; i < 2; ++i) {
    auto* b = m.add_layers();
    b->set_name("block" + std::to_string(i));
    b->set_kind("transformer_block");
    b->set_num_heads(2);
    b->set_ff_dim(32);
  }
  auto* h = m.add_layers();
  h->set_name("head");
  h->set_kind("lm_head");
  h->set_vocab_size(32);
  return ModelSpec::fromProto(m).proto();
}

/// A two-layer classifier of flat 28x28 images into `classes`.
v1::Model flatImageModel(int classes) {
  v1::Model m;
  m.set_name("flat-image");
  m.set_task("classification");
  m.set_input_dtype("float32");
  m.add_input_shape(784);
  m.set_num_classes(classes);
  auto* fc1 = m.add_layers();
  fc1->set_name("fc1");
  fc1->set_kind("linear");
  fc1->set_out_features(32);
  fc1->set_activation("relu");
  auto* fc2 = m.add_layers();
  fc2->set_name("fc2");
  fc2->set_kind("linear");
  fc2->set_out_features(classes);
  return ModelSpec::fromProto(m).proto();
}

v1::DataConfig syntheticData(std::uint64_t seed) {
  v1::DataConfig data;
  data.set_kind("synthetic");
  data.set_seed(seed);
  return data;
}

v1::OptimizerConfig sgd(double lr) {
  v1::OptimizerConfig o;
  o.set_kind("sgd");
  o.set_lr(lr);
  return o;
}

std::map<std::string, torch::Tensor> gradients(StageModule& module) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : module->named_parameters()) out[p.key()] = p.value().grad().clone();
  return out;
}

void expectSplitMatchesWhole(const v1::Model& model, int batch) {
  const int layers = model.layers_size();
  auto data = DataSource::create(syntheticData(5), model);
  const Samples samples = data->get(0, batch);

  StageModule whole(model, 0, layers, 42);
  const auto whole_out = whole(samples.inputs);
  (lossSum(whole_out, samples.labels, model) / batch).backward();
  const auto whole_grads = gradients(whole);

  for (int cut = 1; cut < layers; ++cut) {
    StageModule first(model, 0, cut, 42), second(model, cut, layers, 42);
    const auto boundary = first(samples.inputs);
    const auto received = boundary.detach().requires_grad_(true);
    const auto out = second(received);
    ASSERT_TRUE(torch::allclose(out, whole_out, 1e-5, 1e-6)) << model.name() << " cut " << cut;
    (lossSum(out, samples.labels, model) / batch).backward();
    boundary.backward(received.grad());
    auto grads = gradients(first);
    grads.merge(gradients(second));
    ASSERT_EQ(grads.size(), whole_grads.size()) << model.name() << " cut " << cut;
    for (const auto& [name, grad] : whole_grads) {
      ASSERT_TRUE(grads.count(name)) << name;
      EXPECT_TRUE(torch::allclose(grads[name], grad, 1e-4, 1e-6)) << model.name() << " cut " << cut << " " << name;
    }
  }
}

std::string tempPath(const std::string& name) { return ::testing::TempDir() + "stagecraft_torch_stage_" + name; }

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

void putBigEndian32(std::string& out, std::uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

struct MnistFiles {
  std::string images, labels;
};

/// `n` 28x28 images whose label (0..3) is the quadrant that is bright; pixel 0 holds the
/// image's index so a test can tell which image it was given.
MnistFiles writeMnist(const std::string& name, int n) {
  std::string images, labels;
  putBigEndian32(images, 2051);
  putBigEndian32(images, n);
  putBigEndian32(images, 28);
  putBigEndian32(images, 28);
  putBigEndian32(labels, 2049);
  putBigEndian32(labels, n);
  std::uint32_t state = 12345;
  auto next = [&] { return (state = state * 1664525u + 1013904223u) >> 24; };
  for (int i = 0; i < n; ++i) {
    const int quadrant = static_cast<int>(next() % 4);
    for (int r = 0; r < 28; ++r) {
      for (int c = 0; c < 28; ++c) {
        const int q = (r >= 14 ? 2 : 0) + (c >= 14 ? 1 : 0);
        int v = q == quadrant ? 150 + static_cast<int>(next() % 106) : static_cast<int>(next() % 60);
        if (r == 0 && c == 0) v = i;
        images.push_back(static_cast<char>(v));
      }
    }
    labels.push_back(static_cast<char>(quadrant));
  }
  MnistFiles files{tempPath(name + "-images.idx3-ubyte"), tempPath(name + "-labels.idx1-ubyte")};
  writeFile(files.images, images);
  writeFile(files.labels, labels);
  return files;
}

v1::DataConfig mnistData(const MnistFiles& files, std::uint64_t seed) {
  v1::DataConfig data;
  data.set_kind("mnist");
  data.set_path(files.images);
  data.set_labels_path(files.labels);
  data.set_seed(seed);
  return data;
}

/// `n` CIFAR-10 records: label i % 10, first pixel i, the rest a pattern.
std::string cifarBytes(int n) {
  std::string bytes;
  for (int i = 0; i < n; ++i) {
    bytes.push_back(static_cast<char>(i % 10));
    for (int p = 0; p < 3072; ++p) bytes.push_back(static_cast<char>(p == 0 ? i : (p * 7 + i) % 256));
  }
  return bytes;
}

template <typename F>
void expectErrorMentioning(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no Error thrown; expected one mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(StageModule, EveryZooLayerHasCoresParameterCountAndOutputShape) {
  torch::NoGradGuard no_grad;
  for (const auto& name : zooModelNames()) {
    const ModelSpec spec = ModelSpec::fromProto(zooModel(name));
    for (int i = 0; i < spec.layerCount(); ++i) {
      StageModule layer(spec.proto(), i, i + 1, 7);
      EXPECT_EQ(parameterCount(layer), static_cast<std::int64_t>(spec.parameters(i, i + 1)))
          << name << " layer " << i << " " << spec.layer(i).name();
      const std::vector<int> in(spec.layer(i).input_shape().begin(), spec.layer(i).input_shape().end());
      const bool tokens = spec.layer(i).kind() == "embedding";
      const auto out = layer(inputFor(in, tokens, 2, spec.layer(i).vocab_size()));
      std::vector<std::int64_t> expected{2};
      for (int d : spec.cost(i).output_shape) expected.push_back(d);
      EXPECT_EQ(out.sizes().vec(), expected) << name << " layer " << i << " " << spec.layer(i).name();
    }
  }
}

TEST(StageModule, RejectsARangeOutsideTheModel) {
  const auto model = zooModel("mlp");
  EXPECT_THROW(StageModule(model, 3, 3, 1), Error);
  EXPECT_THROW(StageModule(model, 0, 9, 1), Error);
  EXPECT_THROW(StageModule(model, -1, 2, 1), Error);
  auto unknown = model;
  unknown.mutable_layers(2)->set_kind("lstm");
  expectErrorMentioning([&] { StageModule(unknown, 0, 1, 1); }, "lstm");
}

TEST(StageModule, SplitStagesComposeToTheWholeModelsOutputAndGradients) {
  expectSplitMatchesWhole(smallConvModel(), 6);
  expectSplitMatchesWhole(tinyGptModel(), 3);
}

TEST(StageModule, SameSeedSameWeightsOtherSeedOtherWeights) {
  const auto model = smallConvModel();
  StageModule a(model, 2, 6, 9), b(model, 2, 6, 9), c(model, 2, 6, 10);
  const auto wa = getWeights(a), wb = getWeights(b), wc = getWeights(c);
  ASSERT_EQ(wa.tensors_size(), wb.tensors_size());
  bool any_differs = false;
  for (int i = 0; i < wa.tensors_size(); ++i) {
    EXPECT_EQ(wa.tensors(i).data(), wb.tensors(i).data()) << wa.tensors(i).name();
    any_differs = any_differs || wa.tensors(i).data() != wc.tensors(i).data();
  }
  EXPECT_TRUE(any_differs);
}

TEST(StageWeights, RoundTripMakesTwoStagesComputeTheSame) {
  const auto model = smallConvModel();
  StageModule a(model, 0, 4, 1), b(model, 0, 4, 2);
  const auto x = torch::randn({4, 3, 16, 16});
  EXPECT_FALSE(torch::allclose(a(x), b(x)));
  const auto weights = getWeights(a);
  EXPECT_EQ(weights.layer_begin(), 0);
  EXPECT_EQ(weights.layer_end(), 4);
  // Parameters and the BatchNorm buffers (running mean/var, batch count).
  EXPECT_EQ(weights.tensors_size(), a->named_parameters().size() + a->named_buffers().size());
  setWeights(b, weights);
  EXPECT_TRUE(torch::equal(a(x), b(x)));
  const auto back = getWeights(b);
  ASSERT_EQ(back.tensors_size(), weights.tensors_size());
  for (int i = 0; i < back.tensors_size(); ++i) {
    EXPECT_EQ(back.tensors(i).name(), weights.tensors(i).name());
  }
}

TEST(StageWeights, MismatchesAreErrorsNamingTheTensor) {
  const auto model = smallConvModel();
  StageModule a(model, 0, 4, 1), other_range(model, 0, 3, 1);
  const auto weights = getWeights(a);
  expectErrorMentioning([&] { setWeights(other_range, weights); }, "[0, 4)");

  auto bad_shape = weights;
  auto* t = bad_shape.mutable_tensors(3);
  const std::string name = t->name();
  t->clear_shape();
  t->add_shape(static_cast<std::int64_t>(t->data().size() / 4));
  expectErrorMentioning([&] { setWeights(a, bad_shape); }, name);

  auto missing = weights;
  missing.mutable_tensors()->DeleteSubrange(5, 1);
  expectErrorMentioning([&] { setWeights(a, missing); }, weights.tensors(5).name());

  auto truncated = weights;
  truncated.mutable_tensors(2)->mutable_data()->resize(3);
  expectErrorMentioning([&] { setWeights(a, truncated); }, weights.tensors(2).name());
}

TEST(TensorProto, RoundTripsFloatAndInt64AsLittleEndianBytes) {
  const auto f = torch::tensor({1.0f, -2.5f, 3.25f, 0.0f, 7.0f, 1e-3f}).view({2, 3});
  const auto pf = toProto(f, "f");
  EXPECT_EQ(pf.name(), "f");
  EXPECT_EQ(pf.dtype(), "float32");
  EXPECT_EQ(std::vector<std::int64_t>(pf.shape().begin(), pf.shape().end()), (std::vector<std::int64_t>{2, 3}));
  ASSERT_EQ(pf.data().size(), 24u);
  EXPECT_EQ(pf.data().substr(0, 4), std::string("\x00\x00\x80\x3f", 4));  // 1.0f
  EXPECT_TRUE(torch::equal(fromProto(pf), f));

  const auto i = torch::tensor({std::int64_t{1}, std::int64_t{-1}, std::int64_t{1} << 40});
  const auto pi = toProto(i);
  EXPECT_EQ(pi.dtype(), "int64");
  EXPECT_EQ(pi.data().substr(0, 8), std::string("\x01\x00\x00\x00\x00\x00\x00\x00", 8));
  EXPECT_TRUE(torch::equal(fromProto(pi), i));

  // Non-contiguous views and gradients travel as plain values.
  const auto t = torch::randn({3, 4}, torch::requires_grad()).t();
  EXPECT_TRUE(torch::equal(fromProto(toProto(t)), t.detach()));
  EXPECT_EQ(fromProto(toProto(torch::empty({0, 5}))).sizes().vec(), (std::vector<std::int64_t>{0, 5}));
}

TEST(TensorProto, MalformedTensorsAreErrors) {
  auto p = toProto(torch::ones({2, 3}), "activations");
  auto short_data = p;
  short_data.mutable_data()->resize(20);
  expectErrorMentioning([&] { fromProto(short_data); }, "activations");
  auto bad_dtype = p;
  bad_dtype.set_dtype("float16");
  expectErrorMentioning([&] { fromProto(bad_dtype); }, "float16");
  auto negative = p;
  negative.set_shape(0, -2);
  EXPECT_THROW(fromProto(negative), Error);
  auto huge = p;
  huge.set_shape(0, std::int64_t{1} << 62);
  EXPECT_THROW(fromProto(huge), Error);
}

TEST(SyntheticData, SampleGIsTheSameWhoeverAsks) {
  const auto model = zooModel("mlp");
  auto a = DataSource::create(syntheticData(3), model);
  auto b = DataSource::create(syntheticData(3), model);
  const auto wide = a->get(8, 8);
  const auto narrow = b->get(10, 4);
  EXPECT_EQ(wide.inputs.sizes().vec(), (std::vector<std::int64_t>{8, 1024}));
  EXPECT_TRUE(torch::equal(wide.inputs.slice(0, 2, 6), narrow.inputs));
  EXPECT_TRUE(torch::equal(wide.labels.slice(0, 2, 6), narrow.labels));
  EXPECT_TRUE(torch::equal(a->get(10, 4).inputs, narrow.inputs));
  const auto many = a->get(0, 200).labels;
  EXPECT_GE(many.min().item<std::int64_t>(), 0);
  EXPECT_LT(many.max().item<std::int64_t>(), 10);
  EXPECT_EQ(std::get<0>(at::_unique(many)).numel(), 10);
  // The last stage asks for labels alone: the same ones, without drawing the inputs.
  EXPECT_TRUE(torch::equal(b->labels(0, 200), many));
  EXPECT_TRUE(torch::equal(a->labels(10, 4), narrow.labels));
  auto other = DataSource::create(syntheticData(4), model);
  EXPECT_FALSE(torch::equal(other->get(10, 4).inputs, narrow.inputs));
}

TEST(SyntheticData, LanguageModelLabelsAreTheNextTokens) {
  const auto model = zooModel("gpt-mini");
  auto a = DataSource::create(syntheticData(3), model);
  const auto s = a->get(5, 4);
  EXPECT_EQ(s.inputs.sizes().vec(), (std::vector<std::int64_t>{4, 128}));
  EXPECT_EQ(s.labels.sizes().vec(), (std::vector<std::int64_t>{4, 128}));
  EXPECT_EQ(s.inputs.scalar_type(), torch::kInt64);
  EXPECT_TRUE(torch::equal(s.labels.slice(1, 0, 127), s.inputs.slice(1, 1, 128)));
  EXPECT_GE(s.inputs.min().item<std::int64_t>(), 0);
  EXPECT_LT(s.labels.max().item<std::int64_t>(), 4096);
  EXPECT_TRUE(torch::equal(DataSource::create(syntheticData(3), model)->get(6, 1).inputs, s.inputs.slice(0, 1, 2)));
}

TEST(ReferenceTrainer, LearnsTheSyntheticTaskOnTheMlp) {
  ReferenceTrainer trainer(zooModel("mlp"), sgd(0.05), syntheticData(1), 11, 16);
  const double initial = trainer.step();
  double loss = initial;
  for (int i = 0; i < 15; ++i) loss = trainer.step();
  EXPECT_EQ(trainer.steps(), 16);
  EXPECT_LT(loss, 0.7 * initial) << "initial " << initial;
}

TEST(ReferenceTrainer, IsDeterministicAndLearnsTheLanguageRule) {
  v1::OptimizerConfig adam;
  adam.set_kind("adam");
  adam.set_lr(0.01);
  ReferenceTrainer a(tinyGptModel(), adam, syntheticData(2), 3, 8), b(tinyGptModel(), adam, syntheticData(2), 3, 8);
  const double initial = a.step();
  EXPECT_EQ(initial, b.step());
  double loss = initial;
  for (int i = 0; i < 30; ++i) {
    loss = a.step();
    EXPECT_EQ(loss, b.step());
  }
  EXPECT_LT(loss, 0.7 * initial) << "initial " << initial;
}

TEST(Loss, IsTheSumOfPerSampleMeans) {
  const auto classes = zooModel("mlp");
  EXPECT_NEAR(lossSum(torch::zeros({4, 10}), torch::zeros({4}, torch::kInt64), classes).item<double>(),
              4 * std::log(10.0), 1e-4);
  const auto lm = tinyGptModel();
  EXPECT_NEAR(lossSum(torch::zeros({3, 8, 32}), torch::zeros({3, 8}, torch::kInt64), lm).item<double>(),
              3 * std::log(32.0), 1e-4);
  EXPECT_THROW(lossSum(torch::zeros({3, 8, 32}), torch::zeros({3}, torch::kInt64), lm), Error);
  EXPECT_THROW(lossSum(torch::zeros({4, 9}), torch::zeros({4}, torch::kInt64), classes), Error);
}

TEST(Optimizer, ChecksItsConfig) {
  auto p = torch::zeros({2}, torch::requires_grad());
  EXPECT_THROW(makeOptimizer({p}, sgd(0)), Error);
  auto unknown = sgd(0.1);
  unknown.set_kind("lamb");
  expectErrorMentioning([&] { makeOptimizer({p}, unknown); }, "lamb");
  auto s = makeOptimizer({p}, sgd(0.1));
  auto& sgd_options = static_cast<torch::optim::SGDOptions&>(s->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(sgd_options.momentum(), 0.9);
  v1::OptimizerConfig adam;
  adam.set_kind("adam");
  adam.set_lr(1e-3);
  auto a = makeOptimizer({p}, adam);
  auto& adam_options = static_cast<torch::optim::AdamOptions&>(a->param_groups()[0].options());
  EXPECT_DOUBLE_EQ(std::get<0>(adam_options.betas()), 0.9);
  EXPECT_DOUBLE_EQ(std::get<1>(adam_options.betas()), 0.999);
  EXPECT_DOUBLE_EQ(adam_options.eps(), 1e-8);
}

TEST(MnistData, ReadsEveryImageOncePerEpochInASeededOrder) {
  const auto files = writeMnist("order", 64);
  auto data = DataSource::create(mnistData(files, 7), flatImageModel(4));
  const auto epoch0 = data->get(0, 64), epoch1 = data->get(64, 64);
  EXPECT_EQ(epoch0.inputs.sizes().vec(), (std::vector<std::int64_t>{64, 784}));
  EXPECT_GE(epoch0.inputs.min().item<float>(), 0.0f);
  EXPECT_LE(epoch0.inputs.max().item<float>(), 1.0f);
  const auto ids0 = (epoch0.inputs.select(1, 0) * 255).round().to(torch::kInt64);
  const auto ids1 = (epoch1.inputs.select(1, 0) * 255).round().to(torch::kInt64);
  EXPECT_TRUE(torch::equal(std::get<0>(ids0.sort()), torch::arange(64)));
  EXPECT_TRUE(torch::equal(std::get<0>(ids1.sort()), torch::arange(64)));
  EXPECT_FALSE(torch::equal(ids0, ids1));
  EXPECT_FALSE(torch::equal(ids0, torch::arange(64)));
  // The same order for a second reader, and across a batch that straddles two epochs.
  auto again = DataSource::create(mnistData(files, 7), flatImageModel(4));
  EXPECT_TRUE(torch::equal(again->get(60, 8).inputs, torch::cat({epoch0.inputs.slice(0, 60), epoch1.inputs.slice(0, 0, 4)})));
  // Images reshape to a CxHxW input of the same size.
  auto image_model = flatImageModel(4);
  image_model.clear_input_shape();
  for (int d : {1, 28, 28}) image_model.add_input_shape(d);
  EXPECT_EQ(DataSource::create(mnistData(files, 7), image_model)->get(0, 2).inputs.sizes().vec(),
            (std::vector<std::int64_t>{2, 1, 28, 28}));
}

TEST(MnistData, ASmallModelLearnsTheBrightQuadrant) {
  const auto files = writeMnist("learn", 64);
  ReferenceTrainer trainer(flatImageModel(4), sgd(0.05), mnistData(files, 1), 5, 16);
  double first = 0, last = 0;
  for (int i = 0; i < 24; ++i) {
    const double loss = trainer.step();
    if (i < 4) first += loss / 4;
    if (i >= 20) last += loss / 4;
  }
  EXPECT_LT(last, 0.7 * first);
}

TEST(MnistData, BadFilesAreErrorsNamingThem) {
  const auto files = writeMnist("bad", 8);
  auto missing = mnistData(files, 1);
  missing.set_path(tempPath("does-not-exist"));
  expectErrorMentioning([&] { DataSource::create(missing, flatImageModel(4)); }, missing.path());
  auto swapped = mnistData(files, 1);
  swapped.set_path(files.labels);
  swapped.set_labels_path(files.images);
  expectErrorMentioning([&] { DataSource::create(swapped, flatImageModel(4)); }, files.labels);
  const auto other = writeMnist("bad-count", 9);
  auto mismatched = mnistData(files, 1);
  mismatched.set_labels_path(other.labels);
  expectErrorMentioning([&] { DataSource::create(mismatched, flatImageModel(4)); }, other.labels);
  expectErrorMentioning([&] { DataSource::create(mnistData(files, 1), zooModel("vgg11")); }, files.images);
  expectErrorMentioning([&] { DataSource::create(mnistData(files, 1), flatImageModel(2)); }, files.labels);
}

TEST(CifarData, ReadsRecordsAsThreeChannelImages) {
  const std::string path = tempPath("cifar.bin");
  writeFile(path, cifarBytes(64));
  v1::DataConfig config;
  config.set_kind("cifar10");
  config.set_path(path);
  config.set_seed(3);
  auto data = DataSource::create(config, zooModel("resnet18"));
  const auto s = data->get(0, 64);
  EXPECT_EQ(s.inputs.sizes().vec(), (std::vector<std::int64_t>{64, 3, 32, 32}));
  const auto ids = (s.inputs.index({torch::indexing::Slice(), 0, 0, 0}) * 255).round().to(torch::kInt64);
  EXPECT_TRUE(torch::equal(std::get<0>(ids.sort()), torch::arange(64)));
  EXPECT_TRUE(torch::equal(s.labels, ids % 10));
  // Pixel p of record i is (7p + i) mod 256; channel 1 starts at p = 1024.
  const auto first = ids[0].item<std::int64_t>();
  EXPECT_FLOAT_EQ(s.inputs[0][1][0][1].item<float>(), static_cast<float>((7 * 1025 + first) % 256) / 255.0f);

  const std::string truncated = tempPath("cifar-truncated.bin");
  auto bytes = cifarBytes(4);
  bytes.resize(bytes.size() - 5);
  writeFile(truncated, bytes);
  config.set_path(truncated);
  expectErrorMentioning([&] { DataSource::create(config, zooModel("resnet18")); }, truncated);
  config.set_path(path);
  expectErrorMentioning([&] { DataSource::create(config, zooModel("mlp")); }, path);
  config.set_kind("imagenet");
  expectErrorMentioning([&] { DataSource::create(config, zooModel("resnet18")); }, "imagenet");
}

TEST(Profile, TimesEveryLayerAtEveryMicroBatchSize) {
  for (const auto& model : {smallConvModel(), tinyGptModel()}) {
    const std::vector<int> sizes{1, 3};
    const auto profile = profileLayers(model, sizes, 2, 2.0);
    EXPECT_EQ(profile.model(), model.name());
    ASSERT_EQ(profile.batches_size(), 2);
    for (int b = 0; b < 2; ++b) {
      EXPECT_EQ(profile.batches(b).micro_batch(), sizes[b]);
      ASSERT_EQ(profile.batches(b).layers_size(), model.layers_size());
      for (int l = 0; l < model.layers_size(); ++l) {
        const auto& t = profile.batches(b).layers(l);
        EXPECT_EQ(t.layer(), l);
        EXPECT_GT(t.forward_ms(), 0) << model.name() << " " << l;
        EXPECT_GT(t.backward_ms(), 0) << model.name() << " " << l;
        EXPECT_GT(t.peak_memory_mb(), 0) << model.name() << " " << l;
      }
    }
  }
  EXPECT_THROW(profileLayers(tinyGptModel(), std::vector<int>{0}, 1, 1.0), Error);
}

TEST(Profile, ALayerThatCannotTrainAtASizeIsAnErrorNamingIt) {
  v1::Model m;
  m.set_name("pointwise");
  m.set_task("classification");
  m.set_input_dtype("float32");
  for (int d : {2, 1, 1}) m.add_input_shape(d);
  m.set_num_classes(4);
  auto* conv = m.add_layers();
  conv->set_name("pointwise_bn");
  conv->set_kind("conv2d");
  conv->set_out_channels(4);
  conv->set_kernel_size(1);
  conv->set_batch_norm(true);
  // BatchNorm in training mode needs more than one value per channel.
  expectErrorMentioning([&] { profileLayers(m, std::vector<int>{1}, 1, 1.0); }, "pointwise_bn");
  EXPECT_EQ(profileLayers(m, std::vector<int>{2}, 1, 1.0).batches_size(), 1);
}

}  // namespace
}  // namespace stagecraft::worker
