// Training on an MNIST-format file through real worker processes: IDX images and labels
// written to a temp dir, a small 1x28x28 convolutional model (no zoo model takes MNIST's
// shape) cut into two stages, the first a two-member group.
#include <sys/stat.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "model/model_spec.h"
#include "runtime_test_driver.h"

namespace stagecraft::worker::testing {
namespace {

constexpr int kClasses = 10;

void putBigEndian32(std::string& out, std::uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void writeFile(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

struct MnistFiles {
  std::string images, labels;
};

/// `n` 28x28 images in IDX format: each class lights its own random half of a 7x7 grid
/// of 4x4 blocks; every pixel carries uniform noise, so no two images are alike.
MnistFiles writeMnist(const std::filesystem::path& dir, int n) {
  std::uint32_t state = 2024;
  auto next = [&] { return (state = state * 1664525u + 1013904223u) >> 8; };
  std::vector<std::array<bool, 49>> patterns(kClasses);
  for (auto& p : patterns) {
    for (auto& block : p) block = next() % 2 == 0;
  }
  std::string images, labels;
  putBigEndian32(images, 2051);
  putBigEndian32(images, static_cast<std::uint32_t>(n));
  putBigEndian32(images, 28);
  putBigEndian32(images, 28);
  putBigEndian32(labels, 2049);
  putBigEndian32(labels, static_cast<std::uint32_t>(n));
  for (int i = 0; i < n; ++i) {
    const int label = static_cast<int>(next() % kClasses);
    for (int r = 0; r < 28; ++r) {
      for (int c = 0; c < 28; ++c) {
        const bool lit = patterns[label][(r / 4) * 7 + c / 4];
        const int v = lit ? 120 + static_cast<int>(next() % 136) : static_cast<int>(next() % 100);
        images.push_back(static_cast<char>(v));
      }
    }
    labels.push_back(static_cast<char>(label));
  }
  MnistFiles files{(dir / "train-images-idx3-ubyte").string(), (dir / "train-labels-idx1-ubyte").string()};
  writeFile(files.images, images);
  writeFile(files.labels, labels);
  return files;
}

/// conv(8, 3x3) + ReLU, 2x2 max-pool, flatten -> 64 + ReLU, -> 10: four layers.
v1::Model smallConvNet() {
  v1::Model m;
  m.set_name("mnist-convnet");
  m.set_task("classification");
  m.set_input_dtype("float32");
  for (int d : {1, 28, 28}) m.add_input_shape(d);
  m.set_num_classes(kClasses);
  auto* conv = m.add_layers();
  conv->set_name("conv1");
  conv->set_kind("conv2d");
  conv->set_out_channels(8);
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
  fc1->set_out_features(64);
  fc1->set_activation("relu");
  fc1->set_flatten(true);
  auto* fc2 = m.add_layers();
  fc2->set_name("fc2");
  fc2->set_kind("linear");
  fc2->set_out_features(kClasses);
  return ModelSpec::fromProto(m).proto();  // fills every layer's input shape
}

class RuntimeMnist : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("stagecraft_runtime_mnist_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  v1::StageAssignment common(const MnistFiles& files, const std::string& job) const {
    v1::StageAssignment a;
    a.set_job(job);
    *a.mutable_model() = smallConvNet();
    a.set_batch_size(32);
    a.set_microbatches(2);
    a.set_schedule("1f1b");
    a.mutable_optimizer()->set_kind("sgd");
    a.mutable_optimizer()->set_lr(0.05);
    a.mutable_optimizer()->set_momentum(0.9);
    a.mutable_data()->set_kind("mnist");
    a.mutable_data()->set_path(files.images);
    a.mutable_data()->set_labels_path(files.labels);
    a.mutable_data()->set_seed(3);
    a.set_seed(7);
    return a;
  }

  std::filesystem::path dir_;
};

TEST_F(RuntimeMnist, LossFallsOnAnIdxFileAcrossAGroupAndAPipeline) {
  const MnistFiles files = writeMnist(dir_, 400);
  auto workers = startWorkers({"s0m0", "s0m1", "s1m0"}, {"--data-dir", dir_.string()});
  std::vector<WorkerProcess*> raw;
  std::vector<std::unique_ptr<TelemetryLog>> logs;
  for (auto& w : workers) {
    raw.push_back(w.get());
    logs.push_back(std::make_unique<TelemetryLog>(w->stub()));
  }
  // Stage 0 (conv, pool) splits each micro-batch of 16 as 12 + 4; stage 1 (fc1, fc2) is one worker.
  const auto assignments = assignPipeline(common(files, "mnist"), {{0, 2, {12, 4}}, {2, 4, {16}}}, raw);
  for (size_t i = 0; i < raw.size(); ++i) {
    v1::DeployReply reply;
    const auto status = raw[i]->call(&v1::Worker::Stub::Deploy, assignments[i], &reply);
    ASSERT_TRUE(status.ok()) << raw[i]->name() << ": " << status.error_message();
  }
  constexpr int kSteps = 40;  // 1280 samples: a bit over three epochs of the file
  v1::StartRequest start;
  start.set_job("mnist");
  start.set_iterations(kSteps);
  for (auto* w : raw) {
    v1::StartReply reply;
    const auto status = w->call(&v1::Worker::Stub::Start, start, &reply);
    ASSERT_TRUE(status.ok()) << w->name() << ": " << status.error_message();
  }
  for (size_t i = 0; i < raw.size(); ++i) ASSERT_EQ(logs[i]->waitFinished(60s), "") << raw[i]->name();

  // The last stage reports the loss of every step.
  std::vector<double> losses(kSteps, -1.0);
  for (const auto& report : logs[2]->iterations()) {
    ASSERT_GE(report.step(), 1);
    ASSERT_LE(report.step(), kSteps);
    losses[report.step() - 1] = report.loss();
  }
  for (int s = 0; s < kSteps; ++s) ASSERT_GE(losses[s], 0.0) << "no loss for step " << s + 1;
  double first = 0, last = 0;
  for (int s = 0; s < 5; ++s) {
    first += losses[s] / 5;
    last += losses[kSteps - 5 + s] / 5;
  }
  // Ten classes start near ln 10 = 2.3; chance cannot bring five batches of 32 to a fifth of it.
  EXPECT_GT(first, 1.5) << "the first steps already know the task";
  EXPECT_LT(last, 0.2 * first) << "first five steps " << first << ", last five " << last;
}

TEST_F(RuntimeMnist, WrongLabelsPathFailsDeployNamingTheFile) {
  const MnistFiles files = writeMnist(dir_, 16);
  WorkerProcess w("labels", {"--data-dir", dir_.string()});
  auto a = common(files, "bad-labels");
  a.set_stage(0);
  a.set_stages(1);
  a.set_layer_begin(0);
  a.set_layer_end(a.model().layers_size());
  *a.add_group() = member(w.name(), w.address(), 16);

  auto missing = a;
  missing.mutable_data()->set_labels_path((dir_ / "no-such-labels").string());
  auto images_as_labels = a;
  images_as_labels.mutable_data()->set_labels_path(files.images);
  for (const auto* bad : {&missing, &images_as_labels}) {
    const auto began = Clock::now();
    v1::DeployReply reply;
    const auto status = w.call(&v1::Worker::Stub::Deploy, *bad, &reply, 20s);
    EXPECT_LT(Clock::now() - began, 10s);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_NE(status.error_message().find("labels"), std::string::npos) << status.error_message();
    EXPECT_NE(status.error_message().find("'" + bad->data().labels_path() + "'"), std::string::npos)
        << status.error_message();
    v1::HeartbeatReply heartbeat;
    ASSERT_TRUE(w.call(&v1::Worker::Stub::Heartbeat, v1::HeartbeatRequest(), &heartbeat).ok());
    EXPECT_EQ(heartbeat.state(), "idle");
  }
  // The same assignment with the right file deploys.
  v1::DeployReply reply;
  const auto status = w.call(&v1::Worker::Stub::Deploy, a, &reply);
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(RuntimeMnist, DataFilesComeOnlyFromTheDataFolderAndARefusedDeployKeepsTheJob) {
  std::filesystem::create_directories(dir_ / "mnist");
  const MnistFiles files = writeMnist(dir_ / "mnist", 16);
  WorkerProcess w("confined", {"--data-dir", (dir_ / "mnist").string()});
  auto a = common(files, "kept");
  a.set_stage(0);
  a.set_stages(1);
  a.set_layer_begin(0);
  a.set_layer_end(a.model().layers_size());
  *a.add_group() = member(w.name(), w.address(), 16);
  // A path relative to the data folder deploys.
  a.mutable_data()->set_path(std::filesystem::path(files.images).filename().string());
  v1::DeployReply reply;
  ASSERT_TRUE(w.call(&v1::Worker::Stub::Deploy, a, &reply).ok());

  std::filesystem::create_symlink("/etc/passwd", dir_ / "mnist" / "escape");
  ASSERT_EQ(::mkfifo((dir_ / "mnist" / "fifo").c_str(), 0600), 0);
  const std::string sibling = (dir_ / "secret").string();
  std::ofstream(sibling) << "not for the worker";
  struct Case {
    std::string path;
    grpc::StatusCode code;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"/etc/shadow", grpc::StatusCode::PERMISSION_DENIED, "outside this worker's data folder"},
           {sibling, grpc::StatusCode::PERMISSION_DENIED, "outside this worker's data folder"},
           {"../secret", grpc::StatusCode::PERMISSION_DENIED, "outside this worker's data folder"},
           {"escape", grpc::StatusCode::PERMISSION_DENIED, "outside this worker's data folder"},
           {"fifo", grpc::StatusCode::INVALID_ARGUMENT, "not a regular file"},
           {"/dev/zero", grpc::StatusCode::PERMISSION_DENIED, "--data-dir"},
           {"missing", grpc::StatusCode::INVALID_ARGUMENT, "no such file"}}) {
    auto bad = a;
    bad.set_job("intruder");
    bad.mutable_data()->set_path(c.path);
    const auto began = Clock::now();
    const auto status = w.call(&v1::Worker::Stub::Deploy, bad, &reply, 20s);
    EXPECT_LT(Clock::now() - began, 10s) << c.path;
    EXPECT_EQ(status.error_code(), c.code) << c.path << ": " << status.error_message();
    EXPECT_NE(status.error_message().find(c.says), std::string::npos) << status.error_message();
    EXPECT_EQ(status.error_message().find("bytes"), std::string::npos) << status.error_message();  // no sizes
    // The job deployed before is still there.
    v1::HeartbeatReply heartbeat;
    ASSERT_TRUE(w.call(&v1::Worker::Stub::Heartbeat, v1::HeartbeatRequest(), &heartbeat).ok());
    EXPECT_EQ(heartbeat.state(), "deployed") << c.path;
    EXPECT_EQ(heartbeat.job(), "kept") << c.path;
  }

  // A worker without a data folder reads no files at all.
  WorkerProcess bare("bare");
  auto elsewhere = a;
  elsewhere.clear_group();
  *elsewhere.add_group() = member(bare.name(), bare.address(), 16);
  elsewhere.mutable_data()->set_path(files.images);
  const auto status = bare.call(&v1::Worker::Stub::Deploy, elsewhere, &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << status.error_message();
  EXPECT_NE(status.error_message().find("start it with --data-dir DIR"), std::string::npos) << status.error_message();
}

}  // namespace
}  // namespace stagecraft::worker::testing
