#include <gtest/gtest.h>

#include "io/error.h"
#include "io/json_io.h"
#include "model/zoo.h"

namespace stagecraft {
namespace {

TEST(Zoo, ListsTheFiveBuiltInModels) {
  const auto names = zooModelNames();
  for (const char* n : {"mlp", "vgg11", "resnet18", "mobilenetv2", "gpt-mini"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(Zoo, EveryModelChainsAndHasPositiveCosts) {
  for (const auto& name : zooModelNames()) {
    const ModelSpec m = ModelSpec::fromProto(zooModel(name));
    ASSERT_GT(m.layerCount(), 0) << name;
    EXPECT_GT(m.forwardFlops(0, m.layerCount()), 0) << name;
    EXPECT_GT(m.parameters(0, m.layerCount()), 0) << name;
    for (int l = 0; l < m.layerCount(); ++l) EXPECT_GT(m.outputBytes(l), 0) << name << " " << l;
  }
}

TEST(Zoo, MlpIsEightLinearLayers) {
  const ModelSpec m = ModelSpec::fromProto(zooModel("mlp"));
  ASSERT_EQ(m.layerCount(), 8);
  for (int l = 0; l < 8; ++l) EXPECT_EQ(m.layer(l).kind(), "linear");
  // 1024*2048 + 6*2048*2048 + 2048*10 weights plus biases.
  EXPECT_DOUBLE_EQ(m.parameters(0, 8), 1024.0 * 2048 + 2048 + 6 * (2048.0 * 2048 + 2048) + 2048 * 10 + 10);
  EXPECT_DOUBLE_EQ(m.cost(0).forward_flops, 2.0 * 1024 * 2048 + 2048);
}

TEST(Zoo, ParameterCountsMatchTheReferenceArchitectures) {
  // Reference counts of the CIFAR variants, as torchvision-style modules would report.
  EXPECT_NEAR(ModelSpec::fromProto(zooModel("resnet18")).parameters(0, 11), 11173962, 1);
  const ModelSpec vgg = ModelSpec::fromProto(zooModel("vgg11"));
  EXPECT_NEAR(vgg.parameters(0, vgg.layerCount()), 9220480 + 512 * 4096 + 4096 + 4096 * 4096 + 4096 + 40970, 1);
  const ModelSpec mnv2 = ModelSpec::fromProto(zooModel("mobilenetv2"));
  EXPECT_NEAR(mnv2.parameters(0, mnv2.layerCount()), 2236682, 1);
}

TEST(Zoo, ConvOutputShapesFollowStrides) {
  const ModelSpec m = ModelSpec::fromProto(zooModel("resnet18"));
  EXPECT_EQ(m.cost(0).output_shape, (std::vector<int>{64, 32, 32}));
  EXPECT_EQ(m.cost(8).output_shape, (std::vector<int>{512, 4, 4}));
  EXPECT_EQ(m.cost(9).output_shape, (std::vector<int>{512}));
  EXPECT_EQ(m.cost(10).output_shape, (std::vector<int>{10}));
}

TEST(Zoo, UnknownNameListsTheKnownOnes) {
  try {
    zooModel("alexnet");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("resnet18"), std::string::npos);
  }
}

TEST(ModelSpec, RejectsABrokenChainNamingTheLayer) {
  v1::Model m = zooModel("mlp");
  m.mutable_layers(3)->mutable_input_shape()->Set(0, 100);
  try {
    ModelSpec::fromProto(m);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fc4"), std::string::npos) << e.what();
  }
}

TEST(ModelSpec, RejectsUnknownKindAndBadHyperParameters) {
  v1::Model m = zooModel("mlp");
  m.mutable_layers(0)->set_kind("conv3d");
  EXPECT_THROW(ModelSpec::fromProto(m), Error);
  m = zooModel("mlp");
  m.mutable_layers(0)->set_out_features(0);
  EXPECT_THROW(ModelSpec::fromProto(m), Error);
}

/// A model of one layer `layer` (JSON) over samples of `input_shape`.
v1::Model oneLayer(const std::string& input_shape, const std::string& layer) {
  v1::Model m;
  io::parseJson(R"({"input_dtype": "float32", "num_classes": 2, "input_shape": )" + input_shape +
                    R"(, "layers": [)" + layer + "]}",
                m, "test model");
  return m;
}

void expectRefused(const v1::Model& m, const std::string& mention) {
  try {
    ModelSpec::fromProto(m);
    FAIL() << "accepted; expected an error mentioning " << mention;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
  }
}

// Found running tests/fuzz/model_json_fuzz.cpp under UBSan: these overflowed an int.
TEST(ModelSpec, RefusesSizesBeyondAnIntInsteadOfOverflowing) {
  expectRefused(oneLayer("[3, 8, 8]", R"({"kind": "conv2d", "out_channels": 4, "kernel_size": 3,
                                         "padding": 2147483647})"),
                "padding 2147483647 is too large");
  expectRefused(oneLayer("[3, 8, 8]", R"({"kind": "maxpool2d", "kernel_size": 1, "padding": 1200000000})"),
                "too large");
  expectRefused(oneLayer("[65536, 65536]", R"({"kind": "linear", "out_features": 4, "flatten": true})"),
                "flattened input is too large");
  // 65536 x 65536 weights do not fit an int, but they are a count, not a size: priced in double.
  const ModelSpec wide = ModelSpec::fromProto(oneLayer("[65536, 2, 2]", R"({"kind": "conv2d",
                                                       "out_channels": 65536, "kernel_size": 1})"));
  EXPECT_DOUBLE_EQ(wide.parameters(0, 1), 65536.0 * 65536 + 65536);
}

TEST(ModelSpec, RefusesAKernelWiderThanItsPaddedInputAtAnyStride) {
  // (2 - 3) / 2 + 1 truncates to one output: the kernel still does not fit.
  expectRefused(oneLayer("[1, 2, 2]", R"({"kind": "conv2d", "out_channels": 1, "kernel_size": 3, "stride": 2})"),
                "does not fit input size 2");
  expectRefused(oneLayer("[1, 2, 2]", R"({"kind": "maxpool2d", "kernel_size": 3, "stride": 3})"),
                "does not fit input size 2");
  expectRefused(oneLayer("[1, 8, 8]", R"({"kind": "conv2d", "out_channels": 1, "kernel_size": 3, "padding": -1})"),
                "padding must not be negative");
  // Padding makes room: 2 + 2 * 1 >= 3.
  const ModelSpec padded = ModelSpec::fromProto(
      oneLayer("[1, 2, 2]", R"({"kind": "conv2d", "out_channels": 1, "kernel_size": 3, "stride": 2, "padding": 1})"));
  EXPECT_EQ(padded.cost(0).output_shape, (std::vector<int>{1, 1, 1}));
}

TEST(ModelSpec, JsonRoundTripKeepsEveryField) {
  for (const auto& name : zooModelNames()) {
    const v1::Model original = zooModel(name);
    v1::Model back;
    io::parseJson(io::toJson(original), back, "round trip");
    EXPECT_EQ(back.SerializeAsString(), original.SerializeAsString()) << name;
  }
}

TEST(ModelSpec, AcceptsCamelCaseAndSnakeCaseFieldNames) {
  v1::Model a, b;
  io::parseJson(R"({"name":"x","numClasses":3,"inputDtype":"float32","inputShape":[4],
                    "layers":[{"kind":"linear","outFeatures":3}]})", a, "camel");
  io::parseJson(R"({"name":"x","num_classes":3,"input_dtype":"float32","input_shape":[4],
                    "layers":[{"kind":"linear","out_features":3}]})", b, "snake");
  EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
  EXPECT_EQ(ModelSpec::fromProto(a).cost(0).forward_flops, 2.0 * 4 * 3 + 3);
}

}  // namespace
}  // namespace stagecraft
