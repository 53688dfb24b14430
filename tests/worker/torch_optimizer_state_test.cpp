// The optimizer's state as named tensors: taken from one stage, put into another, the
// next update is the same; state of the wrong kind or shape is refused.
#include <gtest/gtest.h>

#include "io/error.h"
#include "model/zoo.h"
#include "torch_stage.h"

namespace stagecraft::worker {
namespace {

v1::Model smallMlp() {
  v1::Model m = zooModel("mlp");
  for (int i = 0; i < m.layers_size(); ++i) {
    auto* layer = m.mutable_layers(i);
    if (i + 1 < m.layers_size()) layer->set_out_features(16);
    if (i > 0) {
      layer->clear_input_shape();
      layer->add_input_shape(16);
    }
  }
  return m;
}

v1::OptimizerConfig config(const std::string& kind) {
  v1::OptimizerConfig c;
  c.set_kind(kind);
  c.set_lr(0.01);
  c.set_momentum(0.9);
  return c;
}

void trainStep(StageModule& module, torch::optim::Optimizer& optimizer, int seed) {
  torch::manual_seed(seed);
  const torch::Tensor x = torch::randn({4, 1024});
  optimizer.zero_grad();
  module->forward(x).pow(2).sum().backward();
  optimizer.step();
}

std::vector<const v1::Tensor*> pointers(const std::vector<v1::Tensor>& tensors) {
  std::vector<const v1::Tensor*> out;
  for (const auto& t : tensors) out.push_back(&t);
  return out;
}

class OptimizerStateTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OptimizerStateTest, MovedStateGivesTheSameNextUpdate) {
  const v1::Model model = smallMlp();
  StageModule a(model, 0, 3, 5);
  auto opt_a = makeOptimizer(a->parameters(), config(GetParam()));
  trainStep(a, *opt_a, 1);
  trainStep(a, *opt_a, 2);
  const auto state = optimizerState(*opt_a, a);
  ASSERT_FALSE(state.empty());
  for (const auto& t : state) EXPECT_TRUE(isOptimizerStateName(t.name())) << t.name();

  // b: a's weights and state in a fresh module and optimizer.
  StageModule b(model, 0, 3, 99);
  setWeights(b, getWeights(a));
  auto opt_b = makeOptimizer(b->parameters(), config(GetParam()));
  setOptimizerState(*opt_b, b, pointers(state));
  // c: a's weights, no state.
  StageModule c(model, 0, 3, 99);
  setWeights(c, getWeights(a));
  auto opt_c = makeOptimizer(c->parameters(), config(GetParam()));

  trainStep(a, *opt_a, 3);
  trainStep(b, *opt_b, 3);
  trainStep(c, *opt_c, 3);
  const auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
  double differs_without_state = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
    differs_without_state = std::max(differs_without_state, (pa[i] - pc[i]).abs().max().item<double>());
  }
  EXPECT_GT(differs_without_state, 0);
}

INSTANTIATE_TEST_SUITE_P(SgdAndAdam, OptimizerStateTest, ::testing::Values("sgd", "adam"));

TEST(OptimizerState, StateOfTheOtherKindOrShapeIsRefused) {
  const v1::Model model = smallMlp();
  StageModule a(model, 0, 2, 5);
  auto sgd = makeOptimizer(a->parameters(), config("sgd"));
  trainStep(a, *sgd, 1);
  const auto state = optimizerState(*sgd, a);
  ASSERT_FALSE(state.empty());

  auto adam = makeOptimizer(a->parameters(), config("adam"));
  EXPECT_THROW(setOptimizerState(*adam, a, pointers(state)), Error);

  std::vector<v1::Tensor> wrong = state;
  wrong[0] = toProto(torch::zeros({3}), wrong[0].name());
  EXPECT_THROW(setOptimizerState(*sgd, a, pointers(wrong)), Error);
  wrong = state;
  wrong[0].set_name("7.weight#momentum_buffer");  // layer 7 is not in this stage
  EXPECT_THROW(setOptimizerState(*sgd, a, pointers(wrong)), Error);
}

}  // namespace
}  // namespace stagecraft::worker
