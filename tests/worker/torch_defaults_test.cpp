// The learning rates training starts with (control::defaultLearningRate) train every zoo
// model 200 steps with either optimizer without tripping the divergence guard: the loss
// stays finite and near its running level. In one process, as the workers compute it.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>

#include "control/assignments.h"
#include "control/divergence.h"
#include "model/zoo.h"
#include "torch_stage.h"

namespace stagecraft::worker {
namespace {

constexpr int kSteps = 200;
constexpr int kBatch = 4;

struct Case {
  std::string model;
  Optimizer optimizer;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << (c.optimizer == Optimizer::Adam ? " adam" : " sgd"); }

class DefaultLearningRate : public ::testing::TestWithParam<Case> {};

TEST_P(DefaultLearningRate, TrainsTwoHundredStepsWithoutDiverging) {
  const Case& c = GetParam();
  control::TrainingOptions options;
  options.lr = control::defaultLearningRate(c.model, c.optimizer);
  v1::DataConfig data;
  data.set_kind("synthetic");
  data.set_seed(1);
  ReferenceTrainer trainer(zooModel(c.model), control::optimizerConfig(options, c.optimizer), data, 1, kBatch);
  control::DivergenceWatch guard;
  double first = 0, last = 0;
  for (int step = 1; step <= kSteps; ++step) {
    const double loss = trainer.step();
    if (step == 1) first = loss;
    last = loss;
    ASSERT_TRUE(std::isfinite(loss)) << c.model << " at lr " << options.lr << ": step " << step;
    const auto diverged = guard.observe(step, loss);
    ASSERT_FALSE(diverged) << c.model << " at lr " << options.lr << ": step " << step << " loss " << loss
                           << " against a running level of " << guard.level();
  }
  RecordProperty("first_loss", std::to_string(first));
  RecordProperty("last_loss", std::to_string(last));
  std::printf("%s %s lr %g: loss %.4f -> %.4f\n", c.model.c_str(), c.optimizer == Optimizer::Adam ? "adam" : "sgd",
              options.lr, first, last);
}

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.model + (info.param.optimizer == Optimizer::Adam ? "_adam" : "_sgd");
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(ZooModels, DefaultLearningRate,
                         ::testing::Values(Case{"mlp", Optimizer::Sgd}, Case{"mlp", Optimizer::Adam},
                                           Case{"vgg11", Optimizer::Sgd}, Case{"vgg11", Optimizer::Adam},
                                           Case{"resnet18", Optimizer::Sgd}, Case{"resnet18", Optimizer::Adam},
                                           Case{"mobilenetv2", Optimizer::Sgd}, Case{"mobilenetv2", Optimizer::Adam},
                                           Case{"gpt-mini", Optimizer::Sgd}, Case{"gpt-mini", Optimizer::Adam}),
                         caseName);

}  // namespace
}  // namespace stagecraft::worker
