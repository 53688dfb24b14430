// A user's own model: TorchScript files written by PyTorch (tests/worker/data/
// torchscript_models.py) are probed by stagecraft-worker, shipped to workers that have
// nothing but the worker, trained through a pipeline with a data-parallel group, and
// exported; the result equals the same file trained in one process by LibTorch.
#include <torch/script.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "captured_run.h"
#include "control/model_import.h"
#include "io/error.h"
#include "io/json_io.h"
#include "plan/plan_io.h"
#include "runtime_test_driver.h"
#include "stagecraft/v1/report.pb.h"
#include "torch_stage.h"

namespace stagecraft::worker::testing {
namespace {

namespace fs = std::filesystem;

class RuntimeTorchScript : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    models_ = new fs::path(fs::temp_directory_path() / ("stagecraft-ts-models-" + std::to_string(::getpid())));
    fs::create_directories(*models_);
    const std::string command = std::string(STAGECRAFT_PYTHON) + " " + STAGECRAFT_TORCHSCRIPT_MODELS + " " +
                                models_->string();
    ASSERT_EQ(std::system(command.c_str()), 0) << command << " (python3-torch is installed by packaging/bootstrap)";
  }
  static void TearDownTestSuite() {
    fs::remove_all(*models_);
    delete models_;
  }
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stagecraft-ts-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string model(const std::string& file) { return (*models_ / file).string(); }

  static fs::path* models_;
  fs::path dir_;
};

fs::path* RuntimeTorchScript::models_ = nullptr;

std::vector<std::string> paths(const v1::Model& m) {
  std::vector<std::string> out;
  for (const auto& l : m.layers()) out.push_back(l.module_path());
  return out;
}

TEST_F(RuntimeTorchScript, TheShapeProbeFlattensNestedSequentialsAndMeasuresEachChild) {
  const v1::Model mlp = control::importTorchScript(model("mlp.pt"), "16", STAGECRAFT_WORKER);
  EXPECT_EQ(paths(mlp), (std::vector<std::string>{"0", "1", "2.0", "2.1", "3"}));
  EXPECT_EQ(mlp.task(), "classification");
  EXPECT_EQ(mlp.num_classes(), 4);
  EXPECT_EQ(mlp.input_dtype(), "float32");
  ASSERT_EQ(mlp.layers_size(), 5);
  EXPECT_EQ(mlp.layers(0).module_type(), "Linear");
  EXPECT_EQ(mlp.layers(0).parameter_count(), 16 * 32 + 32);
  EXPECT_DOUBLE_EQ(mlp.layers(0).forward_flops(), 2.0 * 16 * 32);
  EXPECT_EQ(mlp.layers(0).flops_source(), "formula");
  EXPECT_EQ(mlp.layers(3).module_type(), "Tanh");
  EXPECT_EQ(mlp.layers(3).parameter_count(), 0);
  EXPECT_EQ(std::vector<int>(mlp.layers(4).output_shape().begin(), mlp.layers(4).output_shape().end()),
            std::vector<int>{4});
  EXPECT_EQ(mlp.script().size(), static_cast<std::int64_t>(fs::file_size(model("mlp.pt"))));
  EXPECT_EQ(mlp.script().sha256().size(), 64u);
  // The planner's view: the chain checks and every layer has a cost.
  const ModelSpec spec = ModelSpec::fromProto(mlp);
  EXPECT_DOUBLE_EQ(spec.parameters(0, spec.layerCount()), 16 * 32 + 32 + 32 * 32 + 32 + 32 * 4 + 4);

  const v1::Model cnn = control::importTorchScript(model("cnn.pt"), "3,8,8", STAGECRAFT_WORKER);
  EXPECT_EQ(paths(cnn), (std::vector<std::string>{"0", "1", "2", "3", "4", "5", "6"}));
  EXPECT_EQ(std::vector<int>(cnn.layers(2).output_shape().begin(), cnn.layers(2).output_shape().end()),
            (std::vector<int>{8, 4, 4}));
  // A 3x3 convolution from 3 to 8 channels over 8x8 outputs.
  EXPECT_DOUBLE_EQ(cnn.layers(0).forward_flops(), 2.0 * 3 * 3 * 3 * 8 * 8 * 8);
  EXPECT_EQ(cnn.num_classes(), 10);
}

TEST_F(RuntimeTorchScript, WhatIsNotASequentialOrNotTorchScriptIsRefusedWithWhatIsSupported) {
  auto refusal = [](const std::string& file, const std::string& shape) {
    try {
      control::importTorchScript(file, shape, STAGECRAFT_WORKER);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(refusal(model("not_sequential.pt"), "16").find("nn.Sequential"), std::string::npos);
  const std::string garbage = (dir_ / "garbage.pt").string();
  std::ofstream(garbage) << "not a model";
  EXPECT_NE(refusal(garbage, "16").find("not a TorchScript file"), std::string::npos);
  EXPECT_NE(refusal(model("mlp.pt"), "3,9,9").find("--input-shape"), std::string::npos);
  EXPECT_NE(refusal(model("mlp.pt"), "").find("--input-shape"), std::string::npos);
  EXPECT_NE(refusal(model("mlp.pt"), "16,x").find("--input-shape"), std::string::npos);
  EXPECT_NE(refusal((dir_ / "missing.pt").string(), "16").find("no such file"), std::string::npos);
}

/// The file trained in one process by LibTorch, with no Stagecraft code but the data and
/// the loss: per-step losses and the module with its final weights.
struct OneProcess {
  std::vector<double> losses;
  torch::jit::Module module;
};

OneProcess trainInOneProcess(const std::string& file, const v1::Model& model, int batch, int steps, double lr,
                             std::uint64_t seed) {
  OneProcess out{{}, torch::jit::load(file)};
  out.module.train(true);
  std::vector<torch::Tensor> params;
  for (const auto& p : out.module.parameters()) params.push_back(p);
  v1::OptimizerConfig sgd;
  sgd.set_kind("sgd");
  sgd.set_lr(lr);
  sgd.set_momentum(0.9);
  auto optimizer = makeOptimizer(params, sgd);
  v1::DataConfig data;
  data.set_kind("synthetic");
  data.set_seed(seed);
  auto source = DataSource::create(data, model);
  for (int step = 0; step < steps; ++step) {
    const Samples s = source->get(static_cast<std::int64_t>(step) * batch, batch);
    optimizer->zero_grad();
    const torch::Tensor loss = lossSum(out.module.forward({s.inputs}).toTensor(), s.labels, model) / batch;
    loss.backward();
    optimizer->step();
    out.losses.push_back(loss.item<double>());
  }
  return out;
}

void expectSameAsOneProcess(const std::string& file, const std::string& input_shape, int cut, const fs::path& dir) {
  const fs::path cache = dir / "cache";
  auto workers = startWorkers({"g0", "g1", "p0"}, {"--cache-dir", cache.string()});
  const v1::Cluster c = clusterProtoOf(workers, "ts");
  const std::string cluster = (dir / "ts.json").string();
  std::ofstream(cluster) << io::toJson(c);

  // Stage 0 on a two-member group (3 and 1 samples of each micro-batch), stage 1 alone.
  const v1::Model model = control::importTorchScript(file, input_shape, STAGECRAFT_WORKER);
  constexpr int kBatch = 8, kSteps = 5;
  v1::Plan plan;
  plan.set_model(model.name());
  *plan.mutable_model_spec() = model;
  plan.set_cluster("ts");
  plan.set_planner("manual");
  plan.set_batch_size(kBatch);
  plan.set_microbatches(2);
  plan.set_schedule("1f1b");
  plan.set_optimizer("sgd");
  auto* first = plan.add_stages();
  first->set_layer_begin(0);
  first->set_layer_end(cut);
  auto* share = first->add_devices();
  share->set_device("g0");
  share->set_samples(3);
  share = first->add_devices();
  share->set_device("g1");
  share->set_samples(1);
  auto* second = plan.add_stages();
  second->set_layer_begin(cut);
  second->set_layer_end(model.layers_size());
  share = second->add_devices();
  share->set_device("p0");
  share->set_samples(4);
  const std::string plan_file = (dir / "plan.json").string();
  std::ofstream(plan_file) << io::toJson(plan);

  const std::string exported = (dir / "trained.pt").string();
  const test_support::CapturedRun r = test_support::runCaptured(
      STAGECRAFT_CLI,
      {"run", "--cluster", cluster, "--plan", plan_file, "--steps", std::to_string(kSteps), "--lr", "0.05", "--seed",
       "11", "--no-profile", "--calibrate-after", "0", "--export", exported, "--eval-every", "3", "--json"},
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::RunReport report;
  io::parseJson(r.out, report, "run --json");
  EXPECT_EQ(report.exported(), exported);

  // Shipped: every worker holds the file under its hash, nothing else was installed.
  EXPECT_TRUE(fs::is_regular_file(cache / (model.script().sha256() + ".pt")));

  const OneProcess reference = trainInOneProcess(file, model, kBatch, kSteps, 0.05, 11);
  ASSERT_EQ(report.losses_size(), kSteps);
  for (int i = 0; i < kSteps; ++i) {
    EXPECT_NEAR(report.losses(i), reference.losses[i], 1e-4 * std::max(1.0, std::abs(reference.losses[i])))
        << "step " << i + 1;
  }
  EXPECT_NE(reference.losses.front(), reference.losses.back()) << "the model did not train";

  // The export holds the user's names and the trained weights.
  torch::jit::Module trained = torch::jit::load(exported);
  std::map<std::string, torch::Tensor> want;
  for (const auto& p : reference.module.named_parameters()) want.emplace(p.name, p.value);
  int compared = 0;
  for (const auto& p : trained.named_parameters()) {
    ASSERT_TRUE(want.count(p.name)) << p.name;
    const torch::Tensor& w = want.at(p.name);
    const double scale = std::max(1.0, w.abs().max().item<double>());
    EXPECT_LE((p.value - w).abs().max().item<double>(), 1e-4 * scale) << p.name;
    ++compared;
  }
  EXPECT_EQ(compared, static_cast<int>(want.size()));

  // Held-out accuracy after steps 3 and 5 (the end): the pipeline's pass scores what the
  // trained module scores in one process on the same samples (one global batch of them).
  ASSERT_EQ(report.evals_size(), 2) << r.err;
  EXPECT_EQ(report.evals(0).step(), 3);
  const v1::RunEval& last = report.evals(1);
  EXPECT_EQ(last.step(), kSteps);
  EXPECT_EQ(last.samples(), kBatch);
  v1::DataConfig data;
  data.set_kind("synthetic");
  data.set_seed(11);
  const Samples held_out = DataSource::create(data, model, DataSource::Split::Eval)->get(0, kBatch);
  torch::jit::Module evaluated = reference.module.clone();
  evaluated.eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor out = evaluated.forward({held_out.inputs}).toTensor();
  const double loss = lossSum(out, held_out.labels, model).item<double>() / kBatch;
  const double accuracy = out.argmax(-1).eq(held_out.labels).sum().item<double>() / kBatch;
  EXPECT_NEAR(last.loss(), loss, 1e-4 * std::max(1.0, loss));
  EXPECT_DOUBLE_EQ(last.accuracy(), accuracy);
  const torch::jit::Module untrained = torch::jit::load(file);
  double moved = 0;
  for (const auto& p : untrained.named_parameters()) {
    for (const auto& q : trained.named_parameters()) {
      if (q.name == p.name) moved = std::max(moved, (q.value - p.value).abs().max().item<double>());
    }
  }
  EXPECT_GT(moved, 0.0) << "the export holds the untrained weights";
}

TEST_F(RuntimeTorchScript, AnMlpTrainsThroughAGroupAndAPipelineLikeOneProcessAndExports) {
  expectSameAsOneProcess(model("mlp.pt"), "16", 3, dir_);
}

TEST_F(RuntimeTorchScript, ACnnTrainsThroughAGroupAndAPipelineLikeOneProcessAndExports) {
  expectSameAsOneProcess(model("cnn.pt"), "3,8,8", 4, dir_);
}

TEST_F(RuntimeTorchScript, ExportIsRefusedForAZooModel) {
  const test_support::CapturedRun r = test_support::runCaptured(
      STAGECRAFT_CLI, {"run", "--cluster", "jetson-edge", "--model", "mlp", "--steps", "1", "--export", (dir_ / "x.pt").string()}, dir_);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--export writes TorchScript models"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace stagecraft::worker::testing

namespace stagecraft::worker::testing {
namespace {

TEST_F(RuntimeTorchScript, AStagesEvalModeReachesTheScriptsDropout) {
  const v1::Model imported = control::importTorchScript(model("dropout.pt"), "16", STAGECRAFT_WORKER);
  StageModule stage(imported, 0, imported.layers_size(), 1);
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::ones({8, 16});
  stage->eval();  // an evaluation pass: dropout off, the same output every time
  EXPECT_TRUE(torch::equal(stage->forward(x), stage->forward(x)));
  stage->train();  // training: dropout draws a new mask each time
  EXPECT_FALSE(torch::equal(stage->forward(x), stage->forward(x)));
}

}  // namespace
}  // namespace stagecraft::worker::testing
