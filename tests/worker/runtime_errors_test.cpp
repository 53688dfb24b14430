// Bad input and broken peers: precise status codes, error events within seconds, no hangs.
#include "captured_run.h"
#include "model/zoo.h"
#include "peer_test_support.h"
#include "runtime_test_driver.h"

namespace stagecraft::worker::testing {
namespace {

v1::StageAssignment wholeModel(const std::string& model_name, WorkerProcess& w) {
  v1::StageAssignment a;
  a.set_job("errors");
  *a.mutable_model() = zooModel(model_name);
  a.set_stage(0);
  a.set_stages(1);
  a.set_layer_begin(0);
  a.set_layer_end(a.model().layers_size());
  *a.add_group() = member(w.name(), w.address(), 4);
  a.set_batch_size(8);
  a.set_microbatches(2);
  a.set_schedule("1f1b");
  a.mutable_optimizer()->set_kind("sgd");
  a.mutable_optimizer()->set_lr(0.01);
  a.mutable_data()->set_kind("synthetic");
  return a;
}

/// Stage `stage` of a two-stage mlp whose other stage is `other` (maybe not running).
v1::StageAssignment twoStageMlp(WorkerProcess& self, int stage, const v1::Member& other) {
  v1::StageAssignment a = wholeModel("mlp", self);
  a.set_job("two-stage");
  a.set_stage(stage);
  a.set_stages(2);
  a.set_layer_begin(stage == 0 ? 0 : 4);
  a.set_layer_end(stage == 0 ? 4 : 8);
  if (stage == 0) {
    *a.add_next() = other;
  } else {
    *a.add_previous() = other;
  }
  return a;
}

grpc::Status deploy(WorkerProcess& w, const v1::StageAssignment& a) {
  v1::DeployReply reply;
  return w.call(&v1::Worker::Stub::Deploy, a, &reply);
}

grpc::Status start(WorkerProcess& w, const std::string& job, int iterations) {
  v1::StartRequest request;
  request.set_job(job);
  request.set_iterations(iterations);
  v1::StartReply reply;
  return w.call(&v1::Worker::Stub::Start, request, &reply);
}

std::string heartbeatState(WorkerProcess& w) {
  v1::HeartbeatReply reply;
  EXPECT_TRUE(w.call(&v1::Worker::Stub::Heartbeat, v1::HeartbeatRequest(), &reply).ok());
  return reply.state();
}

class RuntimeErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { worker_ = new WorkerProcess("small", {"--memory-mb", "64", "--slowdown", "2"}); }
  static void TearDownTestSuite() {
    delete worker_;
    worker_ = nullptr;
  }
  static WorkerProcess* worker_;
};
WorkerProcess* RuntimeErrors::worker_ = nullptr;

TEST_F(RuntimeErrors, DescribeReportsIdentityEmulationAndSpeed) {
  v1::WorkerInfo info;
  ASSERT_TRUE(worker_->call(&v1::Worker::Stub::Describe, v1::DescribeRequest(), &info).ok());
  EXPECT_EQ(info.name(), "small");
  EXPECT_EQ(info.tier(), "edge");
  EXPECT_EQ(info.address(), worker_->address());
  EXPECT_EQ(info.cores(), 1);
  EXPECT_DOUBLE_EQ(info.memory_mb(), 64);
  EXPECT_GT(info.measured_gflops(), 0);
  EXPECT_DOUBLE_EQ(info.emulation().slowdown(), 2);
  EXPECT_DOUBLE_EQ(info.emulation().memory_mb(), 64);
  EXPECT_FALSE(info.version().empty());
  // The BLAS LibTorch calls, with its own pool held to --threads 1.
  EXPECT_NE(info.blas_kind(), "");
  EXPECT_NE(info.blas_kind(), "unknown") << info.blas();
  if (info.blas_kind() == "openblas") EXPECT_NE(info.blas().find("(1 thread)"), std::string::npos) << info.blas();
}

TEST_F(RuntimeErrors, CallsBeforeDeployAreFailedPrecondition) {
  WorkerProcess fresh("fresh");
  EXPECT_EQ(start(fresh, "errors", 1).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  v1::StageWeights weights;
  EXPECT_EQ(fresh.call(&v1::Worker::Stub::GetWeights, v1::GetWeightsRequest(), &weights).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  v1::SetWeightsReply set_reply;
  EXPECT_EQ(fresh.call(&v1::Worker::Stub::SetWeights, weights, &set_reply).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(heartbeatState(fresh), "idle");
}

TEST_F(RuntimeErrors, WorkWithoutBoundsAndImpossibleStepsAreRefusedAtOnce) {
  WorkerProcess w("bounds");
  const auto profile = [&](int repeats, std::vector<int> sizes) {
    v1::ProfileRequest request;
    *request.mutable_model() = smallMlp();
    request.set_repeats(repeats);
    for (int s : sizes) request.add_micro_batches(s);
    v1::DeviceProfile reply;
    const auto began = Clock::now();
    const grpc::Status status = w.call(&v1::Worker::Stub::Profile, request, &reply, 20s);
    EXPECT_LT(Clock::now() - began, 10s);
    return status;
  };
  const grpc::Status forever = profile(2147483647, {1});
  EXPECT_EQ(forever.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(forever.error_message().find("repeats 2147483647 is out of range"), std::string::npos)
      << forever.error_message();
  EXPECT_EQ(profile(1, {0}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(profile(1, {1 << 20}).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(profile(1, std::vector<int>(17, 1)).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(profile(1, {1, 2}).ok());

  // SetWeights at a step before the first.
  v1::StageAssignment small = wholeModel("mlp", w);
  *small.mutable_model() = smallMlp();
  ASSERT_TRUE(deploy(w, small).ok());
  v1::StageWeights weights;
  ASSERT_TRUE(w.call(&v1::Worker::Stub::GetWeights, v1::GetWeightsRequest(), &weights).ok());
  weights.set_step(-5);
  v1::SetWeightsReply reply;
  const grpc::Status back = w.call(&v1::Worker::Stub::SetWeights, weights, &reply);
  EXPECT_EQ(back.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(back.error_message().find("step -5 is negative"), std::string::npos) << back.error_message();
}

TEST_F(RuntimeErrors, LayerRangeOutOfBoundsIsInvalidArgument) {
  auto a = wholeModel("mlp", *worker_);
  a.set_layer_end(12);
  const auto status = deploy(*worker_, a);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("layer range [0, 12)"), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find("8 layers"), std::string::npos) << status.error_message();
}

TEST_F(RuntimeErrors, BadAssignmentsAreInvalidArgumentWithTheReason) {
  struct Case {
    std::function<void(v1::StageAssignment&)> change;
    std::string says;
  };
  const std::vector<Case> cases = {
      {[](auto& a) { a.set_rank(3); }, "rank 3 is outside the group of 1"},
      {[](auto& a) { a.mutable_group(0)->set_samples(3); }, "sum to 3 samples, not the micro-batch of 4"},
      {[](auto& a) { a.set_microbatches(3); }, "batch 8 is not divisible into 3 micro-batches"},
      {[](auto& a) { a.set_schedule("zigzag"); }, "schedule 'zigzag'"},
      {[](auto& a) { a.mutable_optimizer()->set_kind("lion"); }, "optimizer 'lion'"},
      {[](auto& a) { a.set_stage(2); }, "stage 2 is outside"},
      {[](auto& a) { a.set_job(""); }, "job is empty"},
  };
  for (const auto& c : cases) {
    auto a = wholeModel("mlp", *worker_);
    c.change(a);
    const auto status = deploy(*worker_, a);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.says;
    EXPECT_NE(status.error_message().find(c.says), std::string::npos) << status.error_message();
  }
}

TEST_F(RuntimeErrors, StageOverMemoryLimitIsResourceExhaustedWithNeedAndLimit) {
  const auto status = deploy(*worker_, wholeModel("vgg11", *worker_));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("needs"), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find("--memory-mb is 64.0 MB"), std::string::npos) << status.error_message();
  EXPECT_EQ(heartbeatState(*worker_), "idle");
}

TEST_F(RuntimeErrors, SenderWithAPeerThatIsNotRunningReportsAnErrorEvent) {
  WorkerProcess w("sender", {"--peer-timeout-s", "20"});
  TelemetryLog log(w.stub());
  const auto dead = member("ghost", "127.0.0.1:" + std::to_string(unusedPort()), 4);
  ASSERT_TRUE(deploy(w, twoStageMlp(w, 0, dead)).ok());
  const auto began = Clock::now();
  ASSERT_TRUE(start(w, "two-stage", 2).ok());
  const std::string error = log.waitFinished(15s);
  EXPECT_LT(Clock::now() - began, 10s);
  EXPECT_NE(error.find("UNAVAILABLE"), std::string::npos) << error;
  EXPECT_NE(error.find("ghost"), std::string::npos) << error;
  // Back to deployed, ready for another Start.
  for (int i = 0; i < 100 && heartbeatState(w) != "deployed"; ++i) std::this_thread::sleep_for(20ms);
  EXPECT_EQ(heartbeatState(w), "deployed");
}

TEST_F(RuntimeErrors, ReceiverWaitingForAPeerThatIsNotRunningTimesOut) {
  WorkerProcess w("receiver", {"--peer-timeout-s", "2"});
  TelemetryLog log(w.stub());
  const auto dead = member("ghost", "127.0.0.1:" + std::to_string(unusedPort()), 4);
  ASSERT_TRUE(deploy(w, twoStageMlp(w, 1, dead)).ok());
  const auto began = Clock::now();
  ASSERT_TRUE(start(w, "two-stage", 1).ok());
  const std::string error = log.waitFinished(15s);
  EXPECT_LT(Clock::now() - began, 6s);
  EXPECT_NE(error.find("DEADLINE_EXCEEDED"), std::string::npos) << error;
  EXPECT_NE(error.find("activations"), std::string::npos) << error;
}

TEST_F(RuntimeErrors, StopAbortsABlockedStageQuickly) {
  WorkerProcess w("blocked");  // waits 30 s for its peer by default
  TelemetryLog log(w.stub());
  const auto dead = member("ghost", "127.0.0.1:" + std::to_string(unusedPort()), 4);
  ASSERT_TRUE(deploy(w, twoStageMlp(w, 1, dead)).ok());
  ASSERT_TRUE(start(w, "two-stage", 0).ok());
  EXPECT_EQ(start(w, "two-stage", 1).error_code(), grpc::StatusCode::FAILED_PRECONDITION);  // already training
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(heartbeatState(w), "training");
  const auto began = Clock::now();
  v1::StopRequest stop;
  stop.set_job("two-stage");
  v1::StopReply reply;
  ASSERT_TRUE(w.call(&v1::Worker::Stub::Stop, stop, &reply).ok());
  EXPECT_LT(Clock::now() - began, 2s);
  EXPECT_EQ(reply.step(), 0);
  EXPECT_EQ(heartbeatState(w), "deployed");
  EXPECT_TRUE(log.waitFor([](const auto& e) { return e.has_log() && e.log().find("stopped") != std::string::npos; }, 5s));
}

std::string describedState(WorkerProcess& w) {
  v1::WorkerInfo info;
  EXPECT_TRUE(w.call(&v1::Worker::Stub::Describe, v1::DescribeRequest(), &info).ok());
  return info.state();
}

TEST_F(RuntimeErrors, AJobWhoseCoordinatorIsGoneIsStoppedWhenItsLeaseRunsOut) {
  WorkerProcess w("orphan", {"--lease-s", "1"});
  ASSERT_TRUE(deploy(w, wholeModel("mlp", w)).ok());
  Clock::time_point gone;
  {
    TelemetryLog watching(w.stub());
    ASSERT_TRUE(start(w, "errors", 0).ok());  // until stopped
    // Watched, the job trains on past the lease. (Describe, unlike the coordinator's
    // calls, does not renew the lease: a console listing devices is not a coordinator.)
    std::this_thread::sleep_for(1500ms);
    EXPECT_EQ(describedState(w), "training");
    gone = Clock::now();
  }  // the coordinator vanishes: its telemetry stream ends
  const auto deadline = gone + 10s;
  std::string state = describedState(w);
  while (state == "training" && Clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    state = describedState(w);
  }
  EXPECT_EQ(state, "deployed");
  EXPECT_GE(Clock::now() - gone, 900ms);  // not before the lease ran out
  EXPECT_LT(Clock::now() - gone, 5s);
  // Free for the next coordinator without a restart: a new Deploy and Start are taken.
  v1::StageAssignment next = wholeModel("mlp", w);
  next.set_job("next");
  ASSERT_TRUE(deploy(w, next).ok());
  TelemetryLog log(w.stub());
  ASSERT_TRUE(start(w, "next", 1).ok());
  EXPECT_TRUE(log.waitFor([](const auto& e) { return e.has_finished(); }, 30s));
}

TEST_F(RuntimeErrors, PushForAnotherJobIsRefused) {
  WorkerProcess w("inbox");
  const auto dead = member("ghost", "127.0.0.1:" + std::to_string(unusedPort()), 4);
  ASSERT_TRUE(deploy(w, twoStageMlp(w, 1, dead)).ok());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  v1::PushReply reply;
  auto writer = w.stub().Push(&context, &reply);
  v1::PeerTensor t;
  t.set_job("someone-else");
  t.set_samples(1);
  writer->Write(t);
  writer->WritesDone();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
}

TEST(RuntimeCommandLine, BadFlagsExitNonZeroWithOneLine) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--listen", "127.0.0.1:0", "--name", "x", "--tier", "moon"},
           {"--listen", "nowhere", "--name", "x", "--tier", "edge"},
           {"--name", "x", "--tier", "edge"},
           {"--listen", "127.0.0.1:0", "--name", "x", "--tier", "edge", "--slowdown", "fast"},
           {"--listen", "127.0.0.1:0", "--name", "x", "--tier", "edge", "--beacon-to", "lan"},
           {"--listen", "127.0.0.1:0", "--name", "x", "--tier", "edge", "--beacon-port", "70000"},
           {"--listen", "127.0.0.1:0", "--name", "x", "--tier", "edge", "--beacon-interval-ms", "0"},
           {"--listen", "127.0.0.1:0", "--name", "x", "--tier", "edge", "--tensor-channel-port", "70000"},
           {"--listen", "127.0.0.1:0", "--name", "x", "--tier", "edge", "--tensor-channel-port", "1.5"},
           {"--bogus"}}) {
    std::vector<std::string> argv{STAGECRAFT_WORKER};
    argv.insert(argv.end(), args.begin(), args.end());
    ChildProcess p(argv);
    EXPECT_EQ(p.readLine(5s), "");  // nothing on stdout
    EXPECT_EQ(p.wait(10s), 2) << args.back();
  }
  ChildProcess help({STAGECRAFT_WORKER, "--help"});
  EXPECT_EQ(help.readLine(5s).rfind("usage: stagecraft-worker", 0), 0u);
  EXPECT_EQ(help.wait(10s), 0);
}

TEST(RuntimeCommandLine, SigtermShutsDownGracefully) {
  WorkerProcess w("graceful");
  TelemetryLog log(w.stub());  // an open stream must not hold the shutdown up
  w.process().signal(SIGTERM);
  EXPECT_EQ(w.process().wait(10s), 0);
}

TEST(RuntimeCommandLine, AWriteToAClosedConnectionDoesNotEndTheWorker) {
  // Gloo writes to a group partner with writev: once the partner is SIGKILLed the kernel
  // answers the next write with SIGPIPE, whose default ends the process. The worker must
  // take it as the failed write it is and go on serving.
  WorkerProcess w("survivor");
  w.process().signal(SIGPIPE);
  v1::WorkerInfo info;
  EXPECT_TRUE(w.call(&v1::Worker::Stub::Describe, v1::DescribeRequest(), &info).ok());
  EXPECT_EQ(info.name(), "survivor");
  w.process().signal(SIGTERM);
  EXPECT_EQ(w.process().wait(10s), 0);
}

TEST(RuntimeCommandLine, WithParentPidTheWorkerEndsWhenThatProcessDoes) {
  // A shell starts the worker in the background, says its pid and stays (as `sleep`, the
  // same process) until the test ends it, as a killed `run --local` would end.
  ChildProcess parent({"/bin/sh", "-c", "\"$@\" --parent-pid $$ & echo \"worker pid $!\"; exec sleep 600", "sh",
                       STAGECRAFT_WORKER, "--listen", "127.0.0.1:0", "--name", "child", "--tier", "edge", "--threads",
                       "1", "--beacon-port", "0", "--insecure"});
  int worker = 0;
  bool listening = false;
  while (worker == 0 || !listening) {
    const std::string line = parent.readLine(60s);
    ASSERT_FALSE(line.empty()) << "the shell said no worker pid, or the worker never listened";
    if (line.starts_with("worker pid ")) worker = std::stoi(line.substr(11));
    if (line.starts_with("listening on ")) listening = true;
  }
  parent.kill();
  const bool ended = test_support::waitUntilEnded(worker, 10s);
  if (!ended) ::kill(worker, SIGKILL);
  EXPECT_TRUE(ended) << "the worker outlived the process that started it";
}

TEST(RuntimeCommandLine, AParentPidThatIsNotItsParentIsRefusedAtOnce) {
  // The process that started it is already gone (or the number is wrong): nothing to serve.
  WorkerProcess w("stray", {"--parent-pid", "1"}, /*wait=*/false);
  EXPECT_EQ(w.process().wait(30s), 2);
}

TEST(RuntimeCommandLine, ATensorChannelPortAskedForByNameMustBeHad) {
  // The port the test holds (bound and listening): a worker told to take it does not start
  // without it, where with port 0 it would have pushed over gRPC.
  const HeldPort held(true);
  WorkerProcess w("fixed", {"--tensor-channel-port", std::to_string(held.port())}, /*wait=*/false);
  EXPECT_EQ(w.process().readLine(30s), "");  // never "listening on"
  EXPECT_EQ(w.process().wait(30s), 1);
}

}  // namespace
}  // namespace stagecraft::worker::testing
