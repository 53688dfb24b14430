// Profile, weights in and out, the emulation knobs and server reflection, on real workers.
#include <grpcpp/generic/generic_stub.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "model/zoo.h"
#include "runtime_test_driver.h"
#include "torch_stage.h"

namespace stagecraft::worker::testing {
namespace {

v1::StageAssignment singleStage(WorkerProcess& w, const std::string& job) {
  v1::StageAssignment a;
  a.set_job(job);
  *a.mutable_model() = zooModel("mlp");
  a.set_stage(0);
  a.set_stages(1);
  a.set_layer_begin(0);
  a.set_layer_end(8);
  *a.add_group() = member(w.name(), w.address(), 4);
  a.set_batch_size(8);
  a.set_microbatches(2);
  a.mutable_optimizer()->set_kind("sgd");
  a.mutable_optimizer()->set_lr(0.01);
  a.set_seed(3);
  return a;
}

TEST(RuntimeService, ProfileTimesEveryLayerAtEverySize) {
  WorkerProcess w("profiler");
  v1::ProfileRequest request;
  *request.mutable_model() = zooModel("mlp");
  request.add_micro_batches(1);
  request.add_micro_batches(2);
  request.set_repeats(1);
  v1::DeviceProfile profile;
  const auto status = w.call(&v1::Worker::Stub::Profile, request, &profile);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(profile.device(), "profiler");
  ASSERT_EQ(profile.batches_size(), 2);
  for (const auto& b : profile.batches()) {
    ASSERT_EQ(b.layers_size(), 8);
    for (const auto& l : b.layers()) {
      EXPECT_GT(l.forward_ms(), 0);
      EXPECT_GT(l.backward_ms(), 0);
    }
  }
  // Every mlp layer has weights: each gets an optimizer step of either kind.
  ASSERT_EQ(profile.sgd_update_ms_size(), 8);
  ASSERT_EQ(profile.adam_update_ms_size(), 8);
  for (int l = 0; l < 8; ++l) {
    EXPECT_GT(profile.sgd_update_ms(l), 0) << l;
    EXPECT_GT(profile.adam_update_ms(l), 0) << l;
  }
  // The 2048 x 2048 layer has 200x the classifier's (2048 x 10) parameters.
  EXPECT_GT(profile.sgd_update_ms(3), profile.sgd_update_ms(7));
  EXPECT_GT(profile.copy_ms_per_mb(), 0);
  EXPECT_GT(profile.allreduce_ms_per_mb(), 0);
}

TEST(RuntimeService, TheFirstLayersBackwardIsTimedWithoutAGradientForTheData) {
  // Training's first stage computes no gradient for its input, so its first layer's
  // backward is the weights' gradient alone: about its forward's cost for a Linear layer,
  // against twice it for any later one (the input's gradient too). The mlp's layer 0 is
  // 1024 -> 2048 and its layer 1 2048 -> 2048; their ratios of backward to forward time
  // compare whatever the machine's speed. Timed with the input's gradient, layer 0's ratio
  // is as large as layer 1's.
  WorkerProcess w("first-layer");
  v1::ProfileRequest request;
  *request.mutable_model() = zooModel("mlp");
  request.add_micro_batches(64);
  request.set_repeats(5);
  v1::DeviceProfile profile;
  const auto status = w.call(&v1::Worker::Stub::Profile, request, &profile);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(profile.batches_size(), 1);
  const auto& layers = profile.batches(0).layers();
  ASSERT_EQ(layers.size(), 8);
  const double first = layers[0].backward_ms() / layers[0].forward_ms();
  const double second = layers[1].backward_ms() / layers[1].forward_ms();
  EXPECT_LT(first, 0.8 * second) << "layer 0 backward/forward " << first << ", layer 1 " << second;
}

TEST(RuntimeService, TheProfileSaysWhatItsComputeAsksOfTheMachinesCpus) {
  // One thread emulating a device 4x slower keeps a quarter of a CPU busy (less when other
  // processes take turns on this machine, never more); co-hosted devices share the CPUs
  // the machine has by these figures (the simulator).
  WorkerProcess w("quarter", {"--slowdown", "4"});
  v1::ProfileRequest request;
  *request.mutable_model() = zooModel("mlp");
  request.add_micro_batches(8);
  request.set_repeats(1);
  v1::DeviceProfile profile;
  const auto status = w.call(&v1::Worker::Stub::Profile, request, &profile);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(profile.cpu_demand(), 0.05);
  EXPECT_LE(profile.cpu_demand(), 0.3);
  EXPECT_EQ(profile.machine_cpus(), ::sysconf(_SC_NPROCESSORS_ONLN));
}

/// A cgroup-v1 CPU group limited to `cores` (needs root); removed when destroyed.
class CpuQuota {
 public:
  CpuQuota(const std::string& name, double cores) : path_(std::string(kRoot) + "/" + name) {
    std::error_code error;
    if (::geteuid() != 0 || !std::filesystem::exists(std::string(kRoot) + "/cpu.cfs_quota_us")) return;
    std::filesystem::create_directory(path_, error);
    ok_ = !error && write("cpu.cfs_period_us", 100000) && write("cpu.cfs_quota_us", std::lround(cores * 100000)) &&
          write("cpu.shares", 262144);  // other work on the machine cannot take this CPU
  }
  ~CpuQuota() {
    std::error_code error;
    std::filesystem::remove(path_, error);
  }
  bool ok() const { return ok_; }
  /// Joins the group, then execs the worker.
  std::vector<std::string> launcher() const {
    return {"/bin/sh", "-c", "echo $$ > " + path_ + "/tasks && exec \"$@\"", "sh"};
  }

 private:
  static constexpr const char* kRoot = "/sys/fs/cgroup/cpu";
  bool write(const std::string& file, long value) const {
    std::ofstream out(path_ + "/" + file);
    out << value;
    out.flush();
    return out.good();
  }
  std::string path_;
  bool ok_ = false;
};

v1::DeviceProfile profileMlp(WorkerProcess& w, int micro_batch) {
  v1::ProfileRequest request;
  *request.mutable_model() = zooModel("mlp");
  request.add_micro_batches(micro_batch);
  request.set_repeats(3);
  v1::DeviceProfile profile;
  const auto status = w.call(&v1::Worker::Stub::Profile, request, &profile);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return profile;
}

double totalMs(const v1::DeviceProfile& profile) {
  double ms = 0;
  for (const auto& l : profile.batches(0).layers()) ms += l.forward_ms() + l.backward_ms();
  return ms;
}

// A quarter-core quota lets a short layer run at full speed, then stalls the process for
// 75 ms: the profile must report the speed the worker sustains, not its bursts, and
// identical layers' forwards must time alike wherever the stalls fell.
TEST(RuntimeService, ProfileUnderACpuQuotaReportsTheSustainedSpeed) {
  const std::string tag = "stagecraft-test-" + std::to_string(::getpid());
  CpuQuota whole(tag + "-whole", 1.0), quarter(tag + "-quarter", 0.25);
  if (!whole.ok() || !quarter.ok()) GTEST_SKIP() << "needs root and a cgroup-v1 cpu controller";
  v1::DeviceProfile fast, slow;
  {
    // One thread each: a pool of threads sharing one quota stalls in turn (and OpenBLAS's
    // spin on each other), which put the quarter core anywhere from 6x to 13x the whole one
    // on this 2-core machine; the quota's own effect is what this measures.
    WorkerProcess fast_worker("whole-core", {"--threads", "1"}, true, whole.launcher());
    WorkerProcess slow_worker("quarter-core", {"--threads", "1"}, true, quarter.launcher());
    fast = profileMlp(fast_worker, 4);
    slow = profileMlp(slow_worker, 4);
  }
  const double fast_ms = totalMs(fast), slow_ms = totalMs(slow);
  // 4x when the whole-core worker gets its core; less when other tests share the machine.
  // Burst timings, the bug this pins, came out at or below 1x. More than 4x too: the
  // profile scales CPU times by its wall time over CPU time, which a 100 ms quota period
  // quantises, the more so the shorter the profile (6.9x in a clean-clone run on a host
  // where the whole-core profile took 28 ms); a thread pool sharing the quota gave 6-13x.
  EXPECT_GT(slow_ms, 1.5 * fast_ms) << "quarter core " << slow_ms << " ms, whole core " << fast_ms << " ms";
  EXPECT_LT(slow_ms, 8.0 * fast_ms) << "quarter core " << slow_ms << " ms, whole core " << fast_ms << " ms";
  // mlp's layers 1..6 are the same 2048 x 2048 Linear. Wall-clock medians of the
  // quarter-core worker's forwards differed up to 5x between them (stalled or not); CPU
  // times stay within 1.4x here. (Backward passes, bound by memory traffic, still varied
  // 2-4x from layer to layer next to other busy processes, so they are not compared.)
  const auto& layers = slow.batches(0).layers();
  for (int l = 2; l <= 6; ++l) {
    const double a = layers[1].forward_ms(), b = layers[l].forward_ms();
    EXPECT_LT(std::max(a, b), 2.0 * std::min(a, b)) << "layer 1: " << a << " ms, layer " << l << ": " << b << " ms";
  }
}

double describedGflops(WorkerProcess& w) {
  v1::WorkerInfo info;
  EXPECT_TRUE(w.call(&v1::Worker::Stub::Describe, v1::DescribeRequest(), &info).ok());
  return info.measured_gflops();
}

// The speed Describe reports is the one the worker sustains: under a quarter-core quota
// the start-up benchmark's products run at full speed between stalls, and the worker must
// not report those bursts.
TEST(RuntimeService, TheSpeedAWorkerReportsUnderACpuQuotaIsTheOneItSustains) {
  const std::string tag = "stagecraft-test-" + std::to_string(::getpid());
  CpuQuota whole(tag + "-whole-speed", 1.0), quarter(tag + "-quarter-speed", 0.25);
  if (!whole.ok() || !quarter.ok()) GTEST_SKIP() << "needs root and a cgroup-v1 cpu controller";
  double fast = 0, slow = 0;
  {
    WorkerProcess fast_worker("whole-core", {"--threads", "1"}, true, whole.launcher());
    fast = describedGflops(fast_worker);
  }
  {
    WorkerProcess slow_worker("quarter-core", {"--threads", "1"}, true, quarter.launcher());
    slow = describedGflops(slow_worker);
  }
  // 0.25x, give or take this VM's swings from one worker's start to the next.
  EXPECT_GT(slow, 0.1 * fast) << "quarter core " << slow << " GFLOP/s, whole core " << fast;
  EXPECT_LT(slow, 0.45 * fast) << "quarter core " << slow << " GFLOP/s, whole core " << fast;
}

// Workers that start together on one machine measure their speed at once. Each must report
// its own speed, not the share of a CPU it got while another process wanted the same CPU
// (seven local workers starting at once reported 2.5 to 19.4 GFLOP/s for speeds of 1 to 8).
TEST(RuntimeService, TheSpeedAWorkerReportsIsItsOwnWhileAnotherProcessWantsItsCpu) {
  const std::vector<std::string> cpu0 = {"/usr/bin/taskset", "-c", "0"};
  const auto alone = [&](const char* name) {
    WorkerProcess w(name, {"--threads", "1"}, true, cpu0);
    return describedGflops(w);
  };
  const double before = alone("alone-before");
  double beside = 0;
  {
    ChildProcess busy({"/usr/bin/taskset", "-c", "0", "/bin/sh", "-c", "while :; do :; done"});
    WorkerProcess w("beside-a-busy-loop", {"--threads", "1"}, true, cpu0);
    beside = describedGflops(w);
  }
  const double after = alone("alone-after");
  // Sharing the CPU half and half, a benchmark timed by the clock reported about 0.5x.
  EXPECT_GT(beside, 0.65 * (before + after) / 2) << "beside a busy loop " << beside << " GFLOP/s, alone " << before
                                                 << " and " << after;
}

TEST(RuntimeService, WeightsGoOutAndComeBackInAndDeployLoadsGivenWeights) {
  WorkerProcess a("a");
  WorkerProcess b("b");
  v1::DeployReply deployed;
  ASSERT_TRUE(a.call(&v1::Worker::Stub::Deploy, singleStage(a, "weights"), &deployed).ok());
  v1::StageWeights weights;
  ASSERT_TRUE(a.call(&v1::Worker::Stub::GetWeights, v1::GetWeightsRequest(), &weights).ok());
  EXPECT_EQ(weights.layer_begin(), 0);
  EXPECT_EQ(weights.layer_end(), 8);
  EXPECT_EQ(weights.tensors_size(), 16);  // weight and bias of 8 Linear layers
  EXPECT_EQ(weights.step(), 0);

  // Back in, at step 7: the worker continues from there.
  weights.set_step(7);
  v1::SetWeightsReply set;
  ASSERT_TRUE(a.call(&v1::Worker::Stub::SetWeights, weights, &set).ok());
  v1::HeartbeatReply beat;
  ASSERT_TRUE(a.call(&v1::Worker::Stub::Heartbeat, v1::HeartbeatRequest(), &beat).ok());
  EXPECT_EQ(beat.step(), 7);
  EXPECT_EQ(beat.state(), "deployed");

  // Weights of other layers, or with a tensor missing, are refused whole.
  v1::StageWeights wrong = weights;
  wrong.set_layer_end(7);
  EXPECT_EQ(a.call(&v1::Worker::Stub::SetWeights, wrong, &set).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  wrong = weights;
  wrong.mutable_tensors()->RemoveLast();
  EXPECT_EQ(a.call(&v1::Worker::Stub::SetWeights, wrong, &set).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Deploy with weights: b starts from a's weights with the first tensor zeroed.
  v1::StageAssignment given = singleStage(b, "weights");
  *given.mutable_weights() = weights;
  *given.mutable_weights()->mutable_tensors(0) =
      toProto(torch::zeros_like(fromProto(weights.tensors(0))), weights.tensors(0).name());
  ASSERT_TRUE(b.call(&v1::Worker::Stub::Deploy, given, &deployed).ok());
  v1::StageWeights loaded;
  ASSERT_TRUE(b.call(&v1::Worker::Stub::GetWeights, v1::GetWeightsRequest(), &loaded).ok());
  EXPECT_EQ(fromProto(loaded.tensors(0)).abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(torch::equal(fromProto(loaded.tensors(1)), fromProto(weights.tensors(1))));
}

double meanMs(const v1::IterationReport& r, const std::string& kind) {
  double total = 0;
  int n = 0;
  for (const auto& e : r.timeline()) {
    if (e.kind() == kind) {
      total += e.end_ms() - e.start_ms();
      ++n;
    }
  }
  return n > 0 ? total / n : 0;
}

/// The shortest pass of a kind in the steps after the first.
double shortestMs(const std::vector<v1::IterationReport>& steps, const std::string& kind) {
  double shortest = 0;
  for (std::size_t i = 1; i < steps.size(); ++i) {
    for (const auto& e : steps[i].timeline()) {
      const double ms = e.end_ms() - e.start_ms();
      if (e.kind() == kind && (shortest == 0 || ms < shortest)) shortest = ms;
    }
  }
  return shortest;
}

TEST(RuntimeService, BandwidthPacesSendsAndSlowdownStretchesCompute) {
  WorkerProcess slow("slow", {"--bandwidth-mbps", "20", "--slowdown", "5"});
  WorkerProcess fast("fast");
  TelemetryLog slow_log(slow.stub());
  TelemetryLog fast_log(fast.stub());
  v1::StageAssignment first = singleStage(slow, "emulated");
  first.set_stages(2);
  first.set_layer_end(4);
  *first.add_next() = member("fast", fast.address(), 4);
  v1::StageAssignment second = singleStage(fast, "emulated");
  second.set_stage(1);
  second.set_stages(2);
  second.set_layer_begin(4);
  *second.add_previous() = member("slow", slow.address(), 4);
  v1::DeployReply deployed;
  ASSERT_TRUE(slow.call(&v1::Worker::Stub::Deploy, first, &deployed).ok());
  ASSERT_TRUE(fast.call(&v1::Worker::Stub::Deploy, second, &deployed).ok());
  v1::StartRequest start;
  start.set_job("emulated");
  start.set_iterations(4);
  v1::StartReply started;
  ASSERT_TRUE(slow.call(&v1::Worker::Stub::Start, start, &started).ok());
  ASSERT_TRUE(fast.call(&v1::Worker::Stub::Start, start, &started).ok());
  ASSERT_EQ(slow_log.waitFinished(60s), "");
  ASSERT_EQ(fast_log.waitFinished(60s), "");
  const auto slow_steps = slow_log.iterations();
  const auto fast_steps = fast_log.iterations();
  ASSERT_EQ(slow_steps.size(), 4u);
  ASSERT_EQ(fast_steps.size(), 4u);
  const auto& slow_report = slow_steps.back();
  const auto& fast_report = fast_steps.back();
  // 4 samples x 2048 floats = 32 KiB per activation: >= 13 ms on a 20 Mbit/s link.
  EXPECT_GE(meanMs(slow_report, "send"), 13.0);
  // Slowed 5x on about the last stage's work: well over twice as long. The shortest pass
  // after the first step is compared: the other tests that CI runs beside this one take the
  // CPUs now and then, and a pass that waited for one says nothing about the slowdown.
  for (const char* kind : {"forward", "backward"}) {
    const double slowed = shortestMs(slow_steps, kind);
    const double not_slowed = shortestMs(fast_steps, kind);
    std::cout << "[shortest " << kind << "] slowed 5x " << slowed << " ms, not slowed " << not_slowed << " ms\n";
    EXPECT_GT(slowed, 2 * not_slowed) << kind;
  }
  EXPECT_GT(slow_report.busy_fraction(), fast_report.busy_fraction());
}

/// The mean time of one training step's passes and update (steps after the first) of a
/// worker pinned to CPU 0 training the mlp alone at batch 32.
double stepComputeMs(const char* name, const std::vector<std::string>& flags) {
  WorkerProcess w(name, flags, true, {"/usr/bin/taskset", "-c", "0"});
  TelemetryLog log(w.stub());
  v1::StageAssignment a = singleStage(w, "stretched");
  a.set_batch_size(32);
  a.set_microbatches(1);
  a.mutable_group(0)->set_samples(32);
  v1::DeployReply deployed;
  EXPECT_TRUE(w.call(&v1::Worker::Stub::Deploy, a, &deployed).ok());
  v1::StartRequest start;
  start.set_job("stretched");
  start.set_iterations(4);
  v1::StartReply started;
  EXPECT_TRUE(w.call(&v1::Worker::Stub::Start, start, &started).ok());
  EXPECT_EQ(log.waitFinished(120s), "");
  const auto steps = log.iterations();
  double total = 0;
  int n = 0;
  for (std::size_t i = 1; i < steps.size(); ++i, ++n) {
    for (const char* kind : {"forward", "backward", "update"}) total += meanMs(steps[i], kind);
  }
  return n > 0 ? total / n : 0;
}

// --slowdown F stretches an op by (F - 1) x its own work. A wait for the CPU while another
// process ran is the machine's, not the op's: a slower device would wait as long, not F
// times longer (seven co-hosted emulated workers' passes took 1.3-2.3x their profile when
// every such wait was multiplied).
TEST(RuntimeService, SlowdownStretchesTheOpsOwnWorkNotItsWaitsForTheCpu) {
  const std::vector<std::string> flags = {"--threads", "1", "--slowdown", "4"};
  const double before = stepComputeMs("stretched-alone-before", flags);
  double beside = 0;
  {
    ChildProcess busy({"/usr/bin/taskset", "-c", "0", "/bin/sh", "-c", "while :; do :; done"});
    beside = stepComputeMs("stretched-beside-a-busy-loop", flags);
  }
  const double after = stepComputeMs("stretched-alone-after", flags);
  const double alone = (before + after) / 2;
  ASSERT_GT(alone, 0);
  std::cout << "[--slowdown 4 beside a busy loop] " << beside << " ms a step against " << alone << " alone ("
            << beside / alone << "x)\n";
  // Sharing CPU 0 half and half doubles the ops' own time at most: about (2 + 3) / 4 of the
  // step alone. Multiplying that wait by 4 made it about 2x.
  EXPECT_LT(beside / alone, 1.7) << "beside a busy loop " << beside << " ms a step, alone " << before << " and "
                                 << after;
}

// A reflection client generated from reflection.proto cannot share a binary with
// libgrpc++_reflection (BUILD-NOTES), so this one speaks the protocol as raw bytes.
TEST(RuntimeService, ServerReflectionListsTheWorkerService) {
  WorkerProcess w("reflected");
  grpc::GenericStub stub(makeChannel(w.address()));
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 10s);
  auto call = stub.PrepareCall(&context, "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag = nullptr;
  bool ok = false;
  auto step = [&](int expected) {
    ASSERT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(tag, reinterpret_cast<void*>(expected));
  };
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_NO_FATAL_FAILURE(step(1));
  ASSERT_TRUE(ok);
  const char request[] = {0x3a, 0x00};  // ServerReflectionRequest { list_services: "" }
  grpc::Slice slice(request, sizeof request);
  call->Write(grpc::ByteBuffer(&slice, 1), reinterpret_cast<void*>(2));
  ASSERT_NO_FATAL_FAILURE(step(2));
  grpc::ByteBuffer reply;
  call->Read(&reply, reinterpret_cast<void*>(3));
  ASSERT_NO_FATAL_FAILURE(step(3));
  ASSERT_TRUE(ok);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(reply.Dump(&slices).ok());
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  EXPECT_NE(bytes.find("stagecraft.v1.Worker"), std::string::npos);
  context.TryCancel();
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(4));
  ASSERT_NO_FATAL_FAILURE(step(4));
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
}

}  // namespace
}  // namespace stagecraft::worker::testing
