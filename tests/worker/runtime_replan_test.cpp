// Re-planning a running job with real workers: plan A trains three steps, the coordinator
// collects the whole model's weights and optimizer state (or, through TrainingRun, every
// member keeps its state where it is and the new members fetch only the layers that change
// device), plan B (other cuts, other devices, a two-member group) continues for three more.
// Step numbers run on without a gap or a repeat, and the losses equal six uninterrupted
// steps in one process.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "control/coordinator.h"
#include "control/training_run.h"
#include "model/zoo.h"
#include "runtime_test_driver.h"
#include "torch_stage.h"

namespace stagecraft::worker::testing {
namespace {

constexpr double kLr = 0.05;
constexpr double kMomentum = 0.9;
constexpr std::uint64_t kSeed = 7;


Cluster clusterOf(const std::vector<std::unique_ptr<WorkerProcess>>& workers) {
  return Cluster::fromProto(clusterProtoOf(workers, "replan"));
}

Plan planOf(std::vector<Stage> stages) {
  Plan p;
  p.model = "mlp-128";
  p.cluster = "replan";
  p.batch_size = 8;
  p.microbatches = 2;
  p.schedule = Schedule::OneFOneB;
  p.optimizer = Optimizer::Sgd;
  p.stages = std::move(stages);
  return p;
}

std::vector<double> referenceLosses(int steps) {
  v1::OptimizerConfig optimizer;
  optimizer.set_kind("sgd");
  optimizer.set_lr(kLr);
  optimizer.set_momentum(kMomentum);
  v1::DataConfig data;
  data.set_kind("synthetic");
  data.set_seed(kSeed);
  ReferenceTrainer reference(smallMlp(), optimizer, data, kSeed, 8);
  std::vector<double> losses;
  for (int i = 0; i < steps; ++i) losses.push_back(reference.step());
  return losses;
}

TEST(RuntimeReplan, SecondPlanContinuesAtTheSameStepWithTheSameLosses) {
  // w0..w4; plan A uses w0, w1, w2; plan B uses w1, w2, w3, w4 with other cuts.
  auto workers = startWorkers({"w0", "w1", "w2", "w3", "w4"});
  control::CoordinatorOptions options;
  options.call_timeout = std::chrono::seconds(20);
  options.deploy_timeout = std::chrono::seconds(60);
  control::Coordinator coordinator(clusterOf(workers), options);
  const ModelSpec model = ModelSpec::fromProto(smallMlp());  // fc1..fc8
  control::TrainingOptions training;
  training.lr = kLr;
  training.momentum = kMomentum;
  training.seed = kSeed;

  std::vector<control::StepResult> steps;
  std::map<int, std::vector<std::int64_t>> reported;  // member -> steps of its IterationReports
  control::TrainingCallbacks callbacks;
  callbacks.on_step = [&](const control::StepResult& s) { steps.push_back(s); };
  callbacks.on_iteration = [&](int member, const v1::IterationReport& r) { reported[member].push_back(r.step()); };

  // Plan A: [0, 3) on w0; [3, 8) on w1 + w2 sharing each micro-batch of 4 as 3 + 1.
  const Plan a = planOf({Stage{0, 3, {{0, 4}}}, Stage{3, 8, {{1, 3}, {2, 1}}}});
  coordinator.deploy(a, model, training);
  ASSERT_EQ(coordinator.memberCount(), 3);
  EXPECT_EQ(coordinator.memberDevice(2), 2);
  const auto first = coordinator.train(3, callbacks);
  ASSERT_EQ(first.steps.size(), 3u);
  EXPECT_EQ(reported.size(), 3u);
  for (const auto& [member, list] : reported) EXPECT_EQ(list, (std::vector<std::int64_t>{1, 2, 3})) << member;

  const control::ModelWeights weights = coordinator.collectWeights();
  EXPECT_EQ(weights.step, 3);
  EXPECT_TRUE(weights.hasOptimizerState());  // SGD momentum buffers travel too
  std::set<int> layers;
  for (const auto& [layer, tensors] : weights.layers) layers.insert(layer);
  EXPECT_EQ(layers.size(), 8u);  // every Linear layer of the mlp

  // Plan B: [0, 2) on w3; [2, 5) on w1 + w4 (1 + 3); [5, 8) on w2.
  reported.clear();
  const Plan b = planOf({Stage{0, 2, {{3, 4}}}, Stage{2, 5, {{1, 1}, {4, 3}}}, Stage{5, 8, {{2, 4}}}});
  coordinator.deploy(b, model, training, weights);
  ASSERT_EQ(coordinator.memberCount(), 4);
  for (const auto& assignment : coordinator.assignments()) {
    EXPECT_EQ(assignment.start_step(), 3);
    EXPECT_EQ(assignment.weights().layer_begin(), assignment.layer_begin());
  }
  EXPECT_EQ(coordinator.memberDevice(2), 4);
  const auto second = coordinator.train(3, callbacks);
  ASSERT_EQ(second.steps.size(), 3u);
  for (const auto& [member, list] : reported) EXPECT_EQ(list, (std::vector<std::int64_t>{4, 5, 6})) << member;

  // Steps 1..6, none lost or repeated, with the losses of six uninterrupted steps.
  ASSERT_EQ(steps.size(), 6u);
  const auto expected = referenceLosses(6);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(steps[i].step, i + 1);
    EXPECT_EQ(steps[i].loss_samples, 8);
    EXPECT_NEAR(steps[i].loss, expected[i], 1e-4 * std::abs(expected[i])) << "loss of step " << i + 1;
  }
  // The losses move: a stand-in for "the test would notice restarted weights".
  EXPECT_GT(std::abs(expected[5] - expected[0]), 1e-3);
}

TEST(RuntimeReplan, WeightsWithoutOptimizerStateRestartTheMomentum) {
  // Without the momentum buffers step 4 is computed from a fresh optimizer, and the
  // continuation differs from the uninterrupted run: the state is what makes it exact.
  auto workers = startWorkers({"v0", "v1"});
  control::Coordinator coordinator(clusterOf(workers));
  const ModelSpec model = ModelSpec::fromProto(smallMlp());
  control::TrainingOptions training;
  training.lr = kLr;
  training.momentum = kMomentum;
  training.seed = kSeed;
  coordinator.deploy(planOf({Stage{0, 4, {{0, 4}}}, Stage{4, 8, {{1, 4}}}}), model, training);
  coordinator.train(3);
  const control::ModelWeights weights = coordinator.collectWeights(false);
  EXPECT_FALSE(weights.hasOptimizerState());
  coordinator.deploy(planOf({Stage{0, 5, {{1, 4}}}, Stage{5, 8, {{0, 4}}}}), model, training, weights);
  const auto result = coordinator.train(2);
  ASSERT_EQ(result.steps.size(), 2u);
  EXPECT_EQ(result.steps[0].step, 4);
  const auto expected = referenceLosses(5);
  EXPECT_NEAR(result.steps[0].loss, expected[3], 1e-4 * std::abs(expected[3]));  // same weights at step 3
  EXPECT_GT(std::abs(result.steps[1].loss - expected[4]), 1e-4 * std::abs(expected[4]));
}

TEST(RuntimeReplan, ATrainingRunReplanRestoresTheStateWhereItIsWithTheSameLosses) {
  auto workers = startWorkers({"r0", "r1", "r2", "r3"});
  control::CoordinatorOptions options;
  options.call_timeout = std::chrono::seconds(20);
  options.deploy_timeout = std::chrono::seconds(60);
  control::TrainingOptions training;
  training.lr = kLr;
  training.momentum = kMomentum;
  training.seed = kSeed;
  control::TrainingRun run(clusterOf(workers), ModelSpec::fromProto(smallMlp()), Optimizer::Sgd, training, options);
  // Plan A: [0, 3) on r0; [3, 8) on r1 + r2 (3 + 1).
  run.deploy(planOf({Stage{0, 3, {{0, 4}}}, Stage{3, 8, {{1, 3}, {2, 1}}}}));
  // Plan B: [0, 2) on r3 (new: fetches from r0); [2, 5) on r1 + r0 (1 + 3: r0 holds [2, 3),
  // fetches [3, 5) from r1 or r2); [5, 8) on r2 (its own copy of the old stage).
  const Plan b = planOf({Stage{0, 2, {{3, 4}}}, Stage{2, 5, {{1, 1}, {0, 3}}}, Stage{5, 8, {{2, 4}}}});
  const control::RunResult first = run.train(3);
  const control::Recovery r = run.replanNow(control::ReplanRequest{b, std::nullopt});
  const control::RunResult second = run.train(6);
  EXPECT_EQ(r.step, 3);
  EXPECT_EQ(r.replayed_steps, 0);
  EXPECT_NE(r.backup, "the coordinator's copy");
  EXPECT_EQ(run.plan().stageCount(), 3);
  std::printf("re-planned at step %lld from %s: state %.0f ms, deploy %.0f ms\n", static_cast<long long>(r.step),
              r.backup.c_str(), r.state_ms, r.deploy_ms);
  std::vector<control::StepResult> steps = first.steps;
  steps.insert(steps.end(), second.steps.begin(), second.steps.end());
  const auto expected = referenceLosses(6);
  ASSERT_EQ(steps.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(steps[i].step, i + 1);
    EXPECT_NEAR(steps[i].loss, expected[i], 1e-4 * std::abs(expected[i])) << "loss of step " << i + 1;
  }
  EXPECT_GT(std::abs(expected[5] - expected[3]), 1e-4);  // the steps after the re-plan move
}

}  // namespace
}  // namespace stagecraft::worker::testing
