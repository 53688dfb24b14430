// Training on a folder of PNG and JPEG images through real worker processes equals training
// on it in one process (ReferenceTrainer): through the test driver (losses and weights), and
// through `stagecraft-cli run --local --data imagefolder` (losses), whose workers get a data
// folder that holds the images.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "captured_run.h"
#include "control/net.h"
#include "image_files.h"
#include "io/json_io.h"
#include "model/model_spec.h"
#include "runtime_test_driver.h"
#include "stagecraft/v1/report.pb.h"
#include "torch_stage.h"

namespace stagecraft::worker::testing {
namespace {

namespace fs = std::filesystem;

constexpr int kClasses = 4;

/// 3x8x8 images, 6 per class in class folders named out of order: each class brightens
/// its own quadrant; PNG (RGB, grey, RGBA) and JPEG mixed.
void writeImageFolder(const fs::path& dir) {
  const char* names[kClasses] = {"zebra", "ant", "moth", "cat"};
  std::uint32_t state = 99;
  auto next = [&] { return (state = state * 1664525u + 1013904223u) >> 8; };
  for (int cls = 0; cls < kClasses; ++cls) {
    fs::create_directories(dir / names[cls]);
    for (int i = 0; i < 6; ++i) {
      const int channels = i % 3 == 0 ? 1 : (i % 3 == 1 ? 3 : 4);
      TestImage image{8, 8, channels, {}};
      for (int r = 0; r < 8; ++r) {
        for (int c = 0; c < 8; ++c) {
          const bool lit = (r >= 4 ? 2 : 0) + (c >= 4 ? 1 : 0) == cls;
          for (int k = 0; k < channels; ++k) {
            const int v = k == 3 ? 255 : (lit ? 150 + static_cast<int>(next() % 100) : static_cast<int>(next() % 80));
            image.pixels.push_back(static_cast<std::uint8_t>(v));
          }
        }
      }
      const std::string stem = (dir / names[cls] / ("img" + std::to_string(i))).string();
      if (i == 4) {
        TestImage rgb{8, 8, 3, {}};
        for (size_t p = 0; p < image.pixels.size(); p += 4) rgb.pixels.insert(rgb.pixels.end(), &image.pixels[p], &image.pixels[p + 3]);
        writeJpeg(stem + ".jpg", rgb, 90);
      } else {
        writePng(stem + ".png", image);
      }
    }
  }
}

/// conv(6, 3x3) + ReLU, 2x2 max-pool, flatten -> 32 + ReLU, -> 4.
v1::Model smallImageNet() {
  v1::Model m;
  m.set_name("image-convnet");
  m.set_task("classification");
  m.set_input_dtype("float32");
  for (int d : {3, 8, 8}) m.add_input_shape(d);
  m.set_num_classes(kClasses);
  auto* conv = m.add_layers();
  conv->set_name("conv1");
  conv->set_kind("conv2d");
  conv->set_out_channels(6);
  conv->set_kernel_size(3);
  conv->set_stride(1);
  conv->set_padding(1);
  conv->set_activation("relu");
  auto* pool = m.add_layers();
  pool->set_name("pool1");
  pool->set_kind("maxpool2d");
  pool->set_kernel_size(2);
  pool->set_stride(2);
  auto* fc1 = m.add_layers();
  fc1->set_name("fc1");
  fc1->set_kind("linear");
  fc1->set_out_features(32);
  fc1->set_activation("relu");
  fc1->set_flatten(true);
  auto* fc2 = m.add_layers();
  fc2->set_name("fc2");
  fc2->set_kind("linear");
  fc2->set_out_features(kClasses);
  return ModelSpec::fromProto(m).proto();
}

v1::OptimizerConfig sgd(double lr) {
  v1::OptimizerConfig o;
  o.set_kind("sgd");
  o.set_lr(lr);
  o.set_momentum(0.9);
  return o;
}

class RuntimeImageFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    writeImageFolder(dir_ / "images");
    images_ = (dir_ / "images").string();
  }

  v1::DataConfig data() const {
    v1::DataConfig d;
    d.set_kind("imagefolder");
    d.set_path(images_);
    d.set_seed(3);
    return d;
  }

  TempFolder dir_{"runtime_image_folder"};
  std::string images_;
};

TEST_F(RuntimeImageFolder, APipelineWithAGroupTrainsAsOneProcessDoes) {
  auto workers = startWorkers({"s0m0", "s0m1", "s1m0"}, {"--data-dir", dir_.path().string()});
  std::vector<WorkerProcess*> raw;
  std::vector<std::unique_ptr<TelemetryLog>> logs;
  for (auto& w : workers) {
    raw.push_back(w.get());
    logs.push_back(std::make_unique<TelemetryLog>(w->stub()));
  }
  v1::StageAssignment common;
  common.set_job("images");
  *common.mutable_model() = smallImageNet();
  common.set_batch_size(8);
  common.set_microbatches(2);
  common.set_schedule("1f1b");
  *common.mutable_optimizer() = sgd(0.05);
  *common.mutable_data() = data();
  common.mutable_data()->set_path("images");  // relative to the data folder
  common.set_seed(7);
  // Stage 0 (conv, pool) splits each micro-batch of 4 as 3 + 1; stage 1 (fc1, fc2) is one worker.
  const auto assignments = assignPipeline(common, {{0, 2, {3, 1}}, {2, 4, {4}}}, raw);
  for (size_t i = 0; i < raw.size(); ++i) {
    v1::DeployReply reply;
    const auto status = raw[i]->call(&v1::Worker::Stub::Deploy, assignments[i], &reply);
    ASSERT_TRUE(status.ok()) << raw[i]->name() << ": " << status.error_message();
  }
  constexpr int kSteps = 7;  // 56 samples: over two epochs of the 24 images
  v1::StartRequest start;
  start.set_job("images");
  start.set_iterations(kSteps);
  for (auto* w : raw) {
    v1::StartReply reply;
    const auto status = w->call(&v1::Worker::Stub::Start, start, &reply);
    ASSERT_TRUE(status.ok()) << w->name() << ": " << status.error_message();
  }
  for (size_t i = 0; i < raw.size(); ++i) ASSERT_EQ(logs[i]->waitFinished(60s), "") << raw[i]->name();

  ReferenceTrainer reference(smallImageNet(), sgd(0.05), data(), 7, 8);
  std::vector<double> expected;
  for (int s = 0; s < kSteps; ++s) expected.push_back(reference.step());
  std::vector<double> losses(kSteps, -1.0);
  for (const auto& report : logs[2]->iterations()) {
    ASSERT_GE(report.step(), 1);
    ASSERT_LE(report.step(), kSteps);
    losses[report.step() - 1] = report.loss();
  }
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_NEAR(losses[s], expected[s], 1e-4 * std::abs(expected[s])) << "loss of step " << s + 1;
  }
  EXPECT_LT(expected.back(), expected.front()) << "the reference learns something";

  std::map<std::string, torch::Tensor> want;
  const v1::StageWeights reference_weights = getWeights(reference.module());
  for (const auto& t : reference_weights.tensors()) want[t.name()] = fromProto(t);
  for (auto* w : raw) {
    v1::StageWeights weights;
    const auto status = w->call(&v1::Worker::Stub::GetWeights, v1::GetWeightsRequest(), &weights);
    ASSERT_TRUE(status.ok()) << w->name() << ": " << status.error_message();
    ASSERT_GT(weights.tensors_size(), 0);
    for (const auto& t : weights.tensors()) {
      ASSERT_TRUE(want.count(t.name())) << t.name();
      const torch::Tensor value = fromProto(t), &ref = want[t.name()];
      const double excess = ((value - ref).abs() - 1e-4 * ref.abs()).max().item<double>();
      EXPECT_LE(excess, 1e-5) << w->name() << " " << t.name();
    }
  }
}

TEST_F(RuntimeImageFolder, ADeployOfAFolderWithAnImageOfTheWrongSizeIsRefusedNamingIt) {
  WorkerProcess w("sizes", {"--data-dir", dir_.path().string()});
  v1::StageAssignment a;
  a.set_job("sizes");
  *a.mutable_model() = smallImageNet();
  a.set_batch_size(4);
  a.set_microbatches(1);
  a.set_schedule("1f1b");
  *a.mutable_optimizer() = sgd(0.05);
  *a.mutable_data() = data();
  a.set_seed(7);
  a.set_stage(0);
  a.set_stages(1);
  a.set_layer_begin(0);
  a.set_layer_end(a.model().layers_size());
  *a.add_group() = member(w.name(), w.address(), 4);
  // The first image of the first class (ant/img0.png) is 16x8: found at Deploy.
  writePng(dir_ / "images" / "ant" / "img0.png", patternImage(16, 8, 3, 0));
  v1::DeployReply reply;
  const auto status = w.call(&v1::Worker::Stub::Deploy, a, &reply, 20s);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_NE(status.error_message().find("img0.png' is 16x8"), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find("the model takes 8x8"), std::string::npos) << status.error_message();
}

#ifdef STAGECRAFT_CLI
TEST_F(RuntimeImageFolder, RunLocalTrainsOnTheFolderAsOneProcessDoes) {
  // Two local workers on free loopback ports; the CLI keeps its state and token under dir_.
  v1::Cluster c;
  c.set_name("images-duo");
  const auto ports = control::freeLoopbackPorts(2);
  for (int i = 0; i < 2; ++i) {
    auto* d = c.add_devices();
    d->set_name(i == 0 ? "a" : "b");
    d->set_tier("edge");
    d->set_gflops(10);
    d->set_memory_mb(4096);
    d->set_bandwidth_mbps(1000);
    d->set_address("127.0.0.1:" + std::to_string(ports[i]));
  }
  const std::string cluster = (dir_ / "duo.json").string(), model = (dir_ / "net.json").string();
  std::ofstream(cluster) << io::toJson(c);
  std::ofstream(model) << io::toJson(smallImageNet());
  ::setenv("XDG_RUNTIME_DIR", (dir_ / "runtime").c_str(), 1);
  ::unsetenv("STAGECRAFT_TOKEN_FILE");
  fs::create_directories(dir_ / "runtime");
  constexpr int kSteps = 4;
  // A relative --data-path, as a user types it (from dir_, where the CLI starts).
  const fs::path cwd = fs::current_path();
  fs::current_path(dir_.path());
  const test_support::CapturedRun r = test_support::runCaptured(
      STAGECRAFT_CLI,
      {"run", "--cluster", cluster, "--model", model, "--steps", std::to_string(kSteps), "--planner", "gpipe",
       "--batch", "8", "--microbatches", "2", "--lr", "0.05", "--seed", "3", "--data", "imagefolder", "--data-path",
       "images", "--no-profile", "--calibrate-after", "0", "--local", "--worker-binary", STAGECRAFT_WORKER, "--json"},
      dir_.path());
  fs::current_path(cwd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  v1::RunReport report;
  io::parseJson(r.out, report, "run --json");
  ASSERT_EQ(report.losses_size(), kSteps) << r.out;

  v1::DataConfig d = data();
  ReferenceTrainer reference(smallImageNet(), sgd(0.05), d, 3, 8);
  for (int s = 0; s < kSteps; ++s) {
    const double expected = reference.step();
    EXPECT_NEAR(report.losses(s), expected, 1e-4 * std::abs(expected)) << "step " << s + 1;
  }
}
#endif

}  // namespace
}  // namespace stagecraft::worker::testing
