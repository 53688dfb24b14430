#include <gtest/gtest.h>

#include <climits>

#include "cost/cost_model.h"
#include "io/error.h"
#include "io/json_io.h"
#include "model/zoo.h"
#include "plan/plan_io.h"
#include "plan/validation.h"
#include "test_fixtures.h"

namespace stagecraft {
namespace {

using testing::makeCluster;
using testing::uniformLinearModel;

class PlanValidation : public ::testing::Test {
 protected:
  ModelSpec model_ = uniformLinearModel(6, 64);
  Cluster cluster_ = makeCluster({10, 20, 30, 40});
  CostModel cost_{model_, cluster_};

  Plan good() const {
    Plan p;
    p.batch_size = 16;
    p.microbatches = 4;
    p.stages = {{0, 2, {{0, 2}, {1, 2}}}, {2, 6, {{2, 4}}}};
    return p;
  }

  /// The single problem validatePlan reports, which must mention `fragment`.
  void expectProblem(const Plan& p, const std::string& fragment) {
    const auto errors = validatePlan(p, cost_);
    ASSERT_FALSE(errors.empty()) << "expected a problem mentioning " << fragment;
    bool found = false;
    for (const auto& e : errors) found = found || e.find(fragment) != std::string::npos;
    EXPECT_TRUE(found) << errors.front();
  }
};

TEST_F(PlanValidation, AcceptsAGoodPlan) { EXPECT_TRUE(validatePlan(good(), cost_).empty()); }

TEST_F(PlanValidation, NamesMissingLayers) {
  Plan p = good();
  p.stages[1].layer_begin = 3;
  expectProblem(p, "layer 2 'fc2' in no stage");
  p = good();
  p.stages[1].layer_end = 5;
  expectProblem(p, "layer 5 'fc5' in no stage");
}

TEST_F(PlanValidation, NamesLayersCoveredTwice) {
  Plan p = good();
  p.stages[1].layer_begin = 1;
  expectProblem(p, "layer 1 'fc1' covered twice");
}

TEST_F(PlanValidation, NamesLayerRangesOutOfBounds) {
  Plan p = good();
  p.stages[1].layer_end = 9;
  expectProblem(p, "not within the model's 6 layers");
}

TEST_F(PlanValidation, NamesDevicesUsedTwiceOrUnknown) {
  Plan p = good();
  p.stages[1].members[0].device = 0;
  expectProblem(p, "device 'd0' used twice");
  p = good();
  p.stages[1].members[0].device = 7;
  expectProblem(p, "unknown device");
}

TEST_F(PlanValidation, NamesSharesThatDoNotSum) {
  Plan p = good();
  p.stages[0].members[1].samples = 1;
  expectProblem(p, "shares sum to 3 samples, not the micro-batch size 4");
}

// Found running tests/fuzz/plan_validation_fuzz.cpp under UBSan: the sum overflowed an int.
TEST_F(PlanValidation, NamesSharesWhoseSumOverflowsAnInt) {
  Plan p = good();
  p.stages = {{0, 6, {{0, INT_MAX}, {1, INT_MAX}, {2, 4}}}};
  expectProblem(p, "shares sum to 4294967298 samples");
}

TEST_F(PlanValidation, NamesBatchNotDivisible) {
  Plan p = good();
  p.batch_size = 18;
  expectProblem(p, "batch 18 is not divisible into 4 micro-batches");
}

TEST(PlanMemory, SaysByHowMuchADeviceIsOver) {
  const ModelSpec model = ModelSpec::fromProto(zooModel("vgg11"));
  const Cluster cluster = makeCluster({100, 100}, 100);  // 100 MB each: vgg11 needs more
  const CostModel cost(model, cluster);
  Plan p;
  p.batch_size = 8;
  p.microbatches = 1;
  p.stages = {{0, model.layerCount(), {{0, 4}, {1, 4}}}};
  const auto errors = validatePlan(p, cost);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_NE(errors[0].find("device 'd0' needs"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("but has 100.0 MB (over by"), std::string::npos) << errors[0];
}

TEST(PlanIo, JsonRoundTripKeepsEverything) {
  const ModelSpec model = uniformLinearModel(4, 32);
  const Cluster cluster = makeCluster({1, 2, 3});
  Plan p;
  p.model = "uniform";
  p.batch_size = 12;
  p.microbatches = 3;
  p.schedule = Schedule::GPipe;
  p.optimizer = Optimizer::Adam;
  p.stages = {{0, 1, {{2, 4}}}, {1, 4, {{0, 1}, {1, 3}}}};
  const v1::Plan proto = planToProto(p, model, cluster);
  EXPECT_TRUE(proto.has_model_spec());  // not a zoo model: the spec travels with the plan
  v1::Plan parsed;
  io::parseJson(io::toJson(proto), parsed, "round trip");
  const Plan back = planFromProto(parsed, cluster);
  EXPECT_EQ(back.stages, p.stages);
  EXPECT_EQ(back.schedule, Schedule::GPipe);
  EXPECT_EQ(back.optimizer, Optimizer::Adam);
  EXPECT_EQ(back.batch_size, 12);
  EXPECT_EQ(modelOfPlan(parsed).layerCount(), 4);
}

TEST(PlanIo, ZooModelsAreReferencedByName) {
  const ModelSpec model = ModelSpec::fromProto(zooModel("mlp"));
  const Cluster cluster = makeCluster({1});
  Plan p;
  p.batch_size = 1;
  p.microbatches = 1;
  p.stages = {{0, 8, {{0, 1}}}};
  const v1::Plan proto = planToProto(p, model, cluster);
  EXPECT_FALSE(proto.has_model_spec());
  EXPECT_EQ(modelOfPlan(proto).name(), "mlp");
}

TEST(PlanIo, UnknownDeviceIsAnErrorNamingIt) {
  v1::Plan proto;
  io::parseJson(R"({"model":"mlp","batchSize":8,"microbatches":2,
                    "stages":[{"layer_begin":0,"layerEnd":8,"devices":[{"device":"ghost","samples":4}]}]})",
                proto, "plan");
  try {
    planFromProto(proto, makeCluster({1}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'ghost'"), std::string::npos);
  }
}

}  // namespace
}  // namespace stagecraft
