// The pipeline equals single-process training: real workers on loopback, three stages,
// one of them a two-member group with unequal shares, against ReferenceTrainer.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "model/zoo.h"
#include "runtime_test_driver.h"
#include "stagecraft/v1/group_store.grpc.pb.h"
#include "torch_stage.h"

namespace stagecraft::worker::testing {
namespace {

struct PipelineCase {
  std::string model;
  std::vector<TestStage> stages;
  int batch_size = 8;
  int microbatches = 2;
  std::string schedule = "1f1b";
  int iterations = 5;
  double lr = 0.05;
  std::vector<int> starts;  ///< iterations per Start call; one Start of all when empty
};

/// A rate at which training is smooth: where the loss jumps, rounding differences between
/// cutting a batch into micro-batches or not grow chaotically (in one process, vgg11 at
/// lr 0.02 drifts 4% from full-batch training within five steps).
v1::OptimizerConfig sgdMomentum(double lr) {
  v1::OptimizerConfig o;
  o.set_kind("sgd");
  o.set_lr(lr);
  o.set_momentum(0.9);
  return o;
}

v1::DataConfig synthetic() {
  v1::DataConfig d;
  d.set_kind("synthetic");
  d.set_seed(11);
  return d;
}

/// Deploys and trains `c` on fresh workers; the telemetry of each and its final weights.
struct PipelineRun {
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  std::vector<std::unique_ptr<TelemetryLog>> logs;
  std::vector<v1::StageAssignment> assignments;
  std::vector<v1::StageWeights> weights;
};

void runPipeline(const PipelineCase& c, PipelineRun& run) {
  std::vector<std::string> names;
  for (size_t s = 0; s < c.stages.size(); ++s) {
    for (size_t r = 0; r < c.stages[s].shares.size(); ++r) names.push_back("s" + std::to_string(s) + "m" + std::to_string(r));
  }
  run.workers = startWorkers(names);
  std::vector<WorkerProcess*> workers;
  for (auto& w : run.workers) {
    workers.push_back(w.get());
    run.logs.push_back(std::make_unique<TelemetryLog>(w->stub()));
  }
  v1::StageAssignment common;
  common.set_job("equivalence-" + c.model + "-" + c.schedule);
  *common.mutable_model() = zooModel(c.model);
  common.set_batch_size(c.batch_size);
  common.set_microbatches(c.microbatches);
  common.set_schedule(c.schedule);
  *common.mutable_optimizer() = sgdMomentum(c.lr);
  *common.mutable_data() = synthetic();
  common.set_seed(5);
  run.assignments = assignPipeline(common, c.stages, workers);
  for (size_t i = 0; i < workers.size(); ++i) {
    v1::DeployReply reply;
    const auto status = workers[i]->call(&v1::Worker::Stub::Deploy, run.assignments[i], &reply);
    ASSERT_TRUE(status.ok()) << workers[i]->name() << ": " << status.error_message();
    EXPECT_GT(reply.parameters(), 0);
    EXPECT_GT(reply.memory_mb(), 0);
  }
  std::vector<int> starts = c.starts;
  if (starts.empty()) starts.push_back(c.iterations);
  for (size_t round = 0; round < starts.size(); ++round) {
    v1::StartRequest start;
    start.set_job(common.job());
    start.set_iterations(starts[round]);
    for (auto* w : workers) {
      v1::StartReply reply;
      const auto status = w->call(&v1::Worker::Stub::Start, start, &reply);
      ASSERT_TRUE(status.ok()) << w->name() << ": " << status.error_message();
    }
    for (size_t i = 0; i < workers.size(); ++i) {
      const std::string error = run.logs[i]->waitFinished(120s, static_cast<int>(round) + 1);
      ASSERT_EQ(error, "") << workers[i]->name();
    }
  }
  for (auto* w : workers) {
    v1::StageWeights weights;
    const auto status = w->call(&v1::Worker::Stub::GetWeights, v1::GetWeightsRequest(), &weights);
    ASSERT_TRUE(status.ok()) << w->name() << ": " << status.error_message();
    EXPECT_EQ(weights.step(), c.iterations);
    run.weights.push_back(std::move(weights));
  }
}

/// Per step, the sample-weighted mean of the last stage's members' losses.
std::vector<double> pipelineLosses(PipelineRun& run, int iterations) {
  std::vector<double> sum(iterations, 0.0), samples(iterations, 0.0);
  for (size_t i = 0; i < run.workers.size(); ++i) {
    const auto& a = run.assignments[i];
    if (a.stage() + 1 != a.stages()) continue;
    for (const auto& report : run.logs[i]->iterations()) {
      const auto step = report.step() - 1;
      if (step < 0 || step >= iterations) continue;
      sum[step] += report.loss() * report.loss_samples();
      samples[step] += report.loss_samples();
    }
  }
  std::vector<double> out;
  for (int s = 0; s < iterations; ++s) out.push_back(samples[s] > 0 ? sum[s] / samples[s] : NAN);
  return out;
}

void expectEquivalent(const PipelineCase& c) {
  PipelineRun run;
  ASSERT_NO_FATAL_FAILURE(runPipeline(c, run));

  const v1::Model model = zooModel(c.model);
  ReferenceTrainer reference(model, sgdMomentum(c.lr), synthetic(), 5, c.batch_size);
  std::vector<double> expected;
  for (int i = 0; i < c.iterations; ++i) expected.push_back(reference.step());

  // A group's all-reduce starts inside its member's last backward: its buckets go on the
  // ring as the backward writes them.
  for (size_t i = 0; i < run.workers.size(); ++i) {
    const auto& a = run.assignments[i];
    if (a.group_size() < 2) continue;  // the repeated field: the stage's members
    const bool computes = a.group(a.rank()).samples() > 0;
    for (const auto& report : run.logs[i]->iterations()) {
      double backward_end = -1, allreduce_start = -1;
      for (const auto& e : report.timeline()) {
        if (e.kind() == "backward") backward_end = std::max(backward_end, e.end_ms());
        if (e.kind() == "allreduce") allreduce_start = e.start_ms();
      }
      ASSERT_GE(allreduce_start, 0) << run.workers[i]->name() << " step " << report.step();
      if (computes) {
        EXPECT_LT(allreduce_start, backward_end) << run.workers[i]->name() << " step " << report.step();
      }
    }
  }

  const auto losses = pipelineLosses(run, c.iterations);
  for (int s = 0; s < c.iterations; ++s) {
    EXPECT_NEAR(losses[s], expected[s], 1e-4 * std::abs(expected[s])) << "loss of step " << s;
  }

  std::map<std::string, torch::Tensor> want;
  const v1::StageWeights reference_weights = getWeights(reference.module());
  for (const auto& t : reference_weights.tensors()) want[t.name()] = fromProto(t);
  std::map<int, const v1::StageWeights*> first_of_stage;
  for (size_t i = 0; i < run.weights.size(); ++i) {
    const auto& got = run.weights[i];
    const auto& a = run.assignments[i];
    EXPECT_EQ(got.layer_begin(), a.layer_begin());
    EXPECT_EQ(got.layer_end(), a.layer_end());
    ASSERT_GT(got.tensors_size(), 0);
    for (const auto& t : got.tensors()) {
      ASSERT_TRUE(want.count(t.name())) << t.name();
      const torch::Tensor value = fromProto(t);
      const torch::Tensor& ref = want[t.name()];
      ASSERT_EQ(value.sizes(), ref.sizes()) << t.name();
      // Element by element to 1e-4 relative, or 1e-5 absolute (1e-4 of a typical weight):
      // a bias starts at 0 and its gradient is a sum with heavy cancellation, so cutting
      // the batch into micro-batches moves it by rounding alone (~1e-7 absolute, up to
      // 0.4% of a 3e-5 bias in vgg11).
      const double excess = ((value - ref).abs() - 1e-4 * ref.abs()).max().item<double>();
      EXPECT_LE(excess, 1e-5) << run.workers[i]->name() << " " << t.name() << ": largest difference "
                              << (value - ref).abs().max().item<double>();
    }
    auto [it, first] = first_of_stage.emplace(a.stage(), &got);
    if (!first) {
      // Members of one group apply the same all-reduced update.
      ASSERT_EQ(it->second->tensors_size(), got.tensors_size());
      for (int k = 0; k < got.tensors_size(); ++k) {
        const double diff = (fromProto(it->second->tensors(k)) - fromProto(got.tensors(k))).abs().max().item<double>();
        EXPECT_LE(diff, 1e-6) << "members of stage " << a.stage() << " differ in " << got.tensors(k).name();
      }
    }
  }
}

// mlp: fc1..fc8. Stage 1 is a group splitting each micro-batch of 4 as 3 + 1; stage 2
// splits it 1 + 3, so slices cross between members at different offsets.
TEST(RuntimeEquivalence, MlpOneFOneBMatchesReferenceTrainer) {
  expectEquivalent({"mlp", {{0, 3, {4}}, {3, 6, {3, 1}}, {6, 8, {1, 3}}}, 8, 2, "1f1b", 5});
}

// Trained in two Starts (2 + 3 iterations): a second Start continues where the first ended.
// The last stage has a member with no samples: it computes nothing but joins the all-reduce.
TEST(RuntimeEquivalence, MlpGPipeInTwoStartsMatchesReferenceTrainer) {
  expectEquivalent({"mlp", {{0, 2, {4}}, {2, 5, {3, 1}}, {5, 8, {4, 0}}}, 8, 2, "gpipe", 5, 0.05, {2, 3}});
}

// vgg11: 16 layers (no BatchNorm, so splitting micro-batches changes nothing).
TEST(RuntimeEquivalence, Vgg11OneFOneBMatchesReferenceTrainer) {
  expectEquivalent({"vgg11", {{0, 5, {4}}, {5, 13, {3, 1}}, {13, 16, {4}}}, 8, 2, "1f1b", 5, 0.002});
}

/// The local addresses (hex "ADDR:PORT" as /proc/net/tcp writes them) of the TCP sockets
/// process `pid` listens on.
std::vector<std::string> listeningAddresses(pid_t pid) {
  std::set<std::string> inodes;
  const std::filesystem::path fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& fd : std::filesystem::directory_iterator(fds)) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<std::string> out;
  for (const char* table : {"tcp", "tcp6"}) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/net/" + table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state == "0A" && inodes.count(inode)) out.push_back(local);
    }
  }
  return out;
}

// A stage group meets at its rank-0 member's worker, through the token-checked GroupStore
// service: nothing of the group listens on all interfaces (c10d's TCPStore would), and a
// caller without the token cannot reach the store.
TEST(RuntimeTraining, AGroupMeetsAtItsRankZeroWorkerAndNothingListensOnAllInterfaces) {
  PipelineCase c{"mlp", {{0, 4, {3, 1}}, {4, 8, {4}}}, 8, 2, "1f1b", 2, 0.03};
  PipelineRun run;
  ASSERT_NO_FATAL_FAILURE(runPipeline(c, run));
  for (const auto& w : run.workers) {
    const auto listening = listeningAddresses(w->process().pid());
    EXPECT_FALSE(listening.empty()) << w->name() << " serves gRPC";
    for (const auto& local : listening) {
      // 127.0.0.1 is 0100007F in tcp, ::ffff:127.0.0.1 or ::1 in tcp6; 0.0.0.0 and :: are zeros.
      const std::string host = local.substr(0, local.find(':'));
      const bool loopback = host == "0100007F" || host == "0000000000000000FFFF00000100007F" ||
                            host == "00000000000000000000000001000000";
      EXPECT_TRUE(loopback) << w->name() << " listens on " << local;
    }
  }
  auto channel = grpc::CreateChannel(run.workers[0]->address(), grpc::InsecureChannelCredentials());
  auto store = v1::GroupStore::NewStub(channel);
  v1::GroupStoreRequest request;
  request.set_job(run.assignments[0].job());
  request.set_op(v1::GroupStoreRequest::GET);
  request.add_keys("anything");
  const auto ask = [&](const std::string& token, const v1::GroupStoreRequest& r) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    if (!token.empty()) context.AddMetadata(control::kTokenMetadataKey, token);
    v1::GroupStoreReply reply;
    return store->Call(&context, r, &reply).error_code();
  };
  // These workers are --insecure (the driver's default), so only the job decides: the
  // group of stage 0 meets at s0m0; another job's does not.
  request.set_timeout_ms(100);
  EXPECT_EQ(ask("", request), grpc::StatusCode::DEADLINE_EXCEEDED) << "no such key within 0.1 s";
  v1::GroupStoreRequest other = request;
  other.set_job("intruder");
  EXPECT_EQ(ask("", other), grpc::StatusCode::FAILED_PRECONDITION);
  v1::GroupStoreRequest empty = request;
  empty.clear_keys();
  EXPECT_EQ(ask("", empty), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(RuntimeTraining, LossFallsOnTheSyntheticTask) {
  PipelineCase c{"mlp", {{0, 4, {3, 1}}, {4, 8, {4}}}, 8, 2, "1f1b", 24, 0.03};
  PipelineRun run;
  ASSERT_NO_FATAL_FAILURE(runPipeline(c, run));
  const auto losses = pipelineLosses(run, c.iterations);
  // Batches of 8 are noisy: compare the means of the first and the last four steps.
  const double first = (losses[0] + losses[1] + losses[2] + losses[3]) / 4;
  const double last = (losses[20] + losses[21] + losses[22] + losses[23]) / 4;
  EXPECT_LT(last, 0.5 * first) << "first " << first << ", last " << last;
  // Telemetry carries a timeline for every step on every worker.
  for (auto& log : run.logs) {
    const auto reports = log->iterations();
    ASSERT_EQ(reports.size(), 24u);
    const auto& r = reports.back();
    EXPECT_GT(r.iteration_ms(), 0);
    EXPECT_GT(r.samples_per_second(), 0);
    EXPECT_GT(r.busy_fraction(), 0);
    EXPECT_LE(r.busy_fraction(), 1.0 + 1e-9);
    EXPECT_GT(r.memory_mb(), 0);
    int forwards = 0, backwards = 0;
    for (const auto& e : r.timeline()) {
      forwards += e.kind() == "forward";
      backwards += e.kind() == "backward";
      EXPECT_LE(e.start_ms(), e.end_ms());
    }
    EXPECT_EQ(forwards, 2);
    EXPECT_EQ(backwards, 2);
  }
}

}  // namespace
}  // namespace stagecraft::worker::testing
