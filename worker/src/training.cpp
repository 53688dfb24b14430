// Loss, optimizer, per-layer profiling, the matmul speed probe and the single-process
// reference trainer.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <exception>
#include <string_view>
#include <thread>

#include "io/error.h"
#include "model/model_spec.h"
#include "stage_group.h"
#include "stage_runtime.h"
#include "torch_stage.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

constexpr double kBytesPerMb = 1024.0 * 1024.0;

std::string shapeText(c10::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Wall-clock and process CPU time since construction.
class Stopwatch {
 public:
  Stopwatch() : wall_(std::chrono::steady_clock::now()), cpu_(processCpuMs()) {}
  double wallMs() const {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_).count();
  }
  double cpuMs() const { return processCpuMs() - cpu_; }

 private:
  static double processCpuMs() {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
  }
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// Profiling times at least this much over all micro-batch sizes, shared equally: ten
/// periods of the default CFS bandwidth period (100 ms), so the wall-clock time per CPU
/// time, taken over the whole profile, averages a quota's stalls out. At most kMaxPasses
/// passes per size.
constexpr double kMinTimedMs = 1000;
constexpr int kMaxPasses = 200;
/// The most activations the profile holds at once (layers run forward, then backward, in
/// groups of at most this much; a single layer may hold more).
constexpr double kGroupActivationBytes = 256.0 * (1 << 20);
/// Floats of the buffer written before each timed optimizer step (64 MiB): more than the
/// last-level caches of the CPUs this runs on, so the step starts from memory as in training.
constexpr std::int64_t kEvictFloats = 16 << 20;

/// A random batch of `n` model inputs: token ids below the vocabulary, or normal floats.
torch::Tensor randomInput(const v1::Model& model, int n) {
  std::vector<std::int64_t> shape{n};
  shape.insert(shape.end(), model.input_shape().begin(), model.input_shape().end());
  if (model.input_dtype() == "int64") {
    std::int64_t vocab = model.num_classes();
    if (model.layers_size() > 0 && model.layers(0).vocab_size() > 0) vocab = model.layers(0).vocab_size();
    return torch::randint(0, std::max<std::int64_t>(vocab, 1), shape, torch::kInt64);
  }
  return torch::randn(shape);
}

/// CPU milliseconds per MiB that one member of a two-member Gloo group spends summing a
/// buffer with the other over loopback: both members run in this process and meet at a
/// store of its own, so its CPU time covers both ends of every transfer (the kernel's
/// copies, Gloo's reduction), and half of it is one member's. Throws when the pair cannot
/// form.
double timePairAllReduce(int repeats) {
  constexpr std::int64_t kFloats = 4 << 20;  // 16 MiB
  constexpr double kMb = 16.0;
  const auto timeout = std::chrono::seconds(30);
  const std::string prefix = "stagecraft/profile/" + std::to_string(::getpid());
  const GroupRendezvous here{makeGroupStoreHost(timeout), "", "", "", 0};
  StageGroup first(here, "127.0.0.1", 0, 2, prefix, timeout);
  StageGroup second(here, "127.0.0.1", 1, 2, prefix, timeout);
  const std::atomic<bool> stop{false};
  torch::Tensor a = torch::randn({kFloats}), b = torch::randn({kFloats});
  auto sum_once = [&] {
    std::exception_ptr failed;
    std::thread other([&] {
      try {
        second.allReduceSum(b, stop);
      } catch (...) {
        failed = std::current_exception();
      }
    });
    try {
      first.allReduceSum(a, stop);
    } catch (...) {
      other.join();
      throw;
    }
    other.join();
    if (failed) std::rethrow_exception(failed);
  };
  sum_once();  // forms the pair and touches every buffer: not timed
  std::vector<double> cpu;
  for (int r = 0; r < std::max(repeats, 3); ++r) {
    const Stopwatch both;
    sum_once();
    cpu.push_back(both.cpuMs() / 2.0 / kMb);
  }
  return median(cpu);
}

/// timePairAllReduce, or 0 (not timed) when the pair does not form.
double allReduceCpuMsPerMb(int repeats) {
  try {
    return timePairAllReduce(repeats);
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

torch::Tensor lossSum(const torch::Tensor& output, const torch::Tensor& labels, const v1::Model& model) {
  if (output.dim() < 2 || labels.dim() != output.dim() - 1 || !labels.sizes().equals(output.sizes().slice(0, labels.dim()))) {
    throw Error("loss: output " + shapeText(output.sizes()) + " and labels " + shapeText(labels.sizes()) +
                " do not match (expected output [n, ..., classes] and labels [n, ...])");
  }
  if (output.size(-1) != model.num_classes()) {
    throw Error("loss: output has " + std::to_string(output.size(-1)) + " classes, model '" + model.name() +
                "' has " + std::to_string(model.num_classes()));
  }
  const auto targets = labels.to(torch::kInt64);
  if (labels.dim() == 1) {
    return torch::nn::functional::cross_entropy(
        output, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum));
  }
  // Sequences: each sample's loss is the mean over its tokens.
  const auto n = output.size(0);
  const auto per_token = torch::nn::functional::cross_entropy(
      output.reshape({-1, output.size(-1)}), targets.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  return per_token.view({n, -1}).mean(1).sum();
}

std::unique_ptr<torch::optim::Optimizer> makeOptimizer(std::vector<torch::Tensor> parameters,
                                                       const v1::OptimizerConfig& config) {
  if (!(config.lr() > 0)) throw Error("optimizer: lr must be positive, got " + std::to_string(config.lr()));
  if (config.weight_decay() < 0) throw Error("optimizer: weight_decay must not be negative");
  const std::string& kind = config.kind();
  if (kind == "sgd" || kind.empty()) {
    const double momentum = config.momentum() == 0 ? 0.9 : config.momentum();
    if (momentum < 0 || momentum >= 1) throw Error("optimizer: momentum must be in [0, 1)");
    return std::make_unique<torch::optim::SGD>(
        std::move(parameters),
        torch::optim::SGDOptions(config.lr()).momentum(momentum).weight_decay(config.weight_decay()));
  }
  if (kind == "adam") {
    const double beta1 = config.beta1() == 0 ? 0.9 : config.beta1();
    const double beta2 = config.beta2() == 0 ? 0.999 : config.beta2();
    const double eps = config.eps() == 0 ? 1e-8 : config.eps();
    if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1) throw Error("optimizer: Adam betas must be in [0, 1)");
    if (eps < 0) throw Error("optimizer: eps must not be negative");
    return std::make_unique<torch::optim::Adam>(std::move(parameters), torch::optim::AdamOptions(config.lr())
                                                                           .betas({beta1, beta2})
                                                                           .eps(eps)
                                                                           .weight_decay(config.weight_decay()));
  }
  throw Error("optimizer: kind '" + kind + "' is unknown (sgd or adam)");
}

v1::DeviceProfile profileLayers(const v1::Model& model, std::span<const int> micro_batches, int repeats,
                                double slowdown) {
  const ModelSpec spec = ModelSpec::fromProto(model);
  if (micro_batches.empty()) throw Error("profile: no micro-batch sizes given");
  for (int b : micro_batches) {
    if (b <= 0) throw Error("profile: micro-batch size " + std::to_string(b) + " is not positive");
  }
  if (repeats <= 0) repeats = 3;
  if (!(slowdown > 0)) slowdown = 1;
  const int layers = spec.layerCount();
  StageModule module(spec.proto(), 0, layers, 0);

  // Every op is timed by the process's CPU time, which a CPU quota's stalls (a cgroup's
  // cpu.cfs_quota_us lets a process run at full speed, then stops it for the rest of the
  // period) and other processes' turns leave out, so identical layers time alike whatever
  // the period did. The wall-clock time the whole profile took per CPU millisecond then
  // says how fast this worker really gets through its work (a ¼-core quota: about 4 ms;
  // with several threads, less than 1 ms), and every median is scaled by it.
  Stopwatch total;
  std::vector<std::vector<std::vector<double>>> fwd_cpu, bwd_cpu;  // per size, per layer, per pass
  for (int b : micro_batches) {
    std::vector<std::vector<double>> fwd(layers), bwd(layers);
    double timed_ms = 0;
    // Pass 0 warms up (allocator, kernels' first-call costs) and is not recorded. Timed
    // passes go on until they span this size's share of kMinTimedMs, so the wall-clock ratio
    // sees many periods.
    const double min_timed_ms = kMinTimedMs / static_cast<double>(micro_batches.size());
    for (int pass = 0; pass <= repeats || (timed_ms < min_timed_ms && pass <= kMaxPasses); ++pass) {
      const Stopwatch pass_time;
      torch::Tensor x = randomInput(spec.proto(), b);
      const auto failed = [&](int i, const c10::Error& e) {
        // E.g. BatchNorm on a single value per channel: the layer cannot train at this size.
        return Error("profile: layer " + std::to_string(i) + " '" + spec.layer(i).name() + "' at micro-batch " +
                     std::to_string(b) + ": " + e.what_without_backtrace());
      };
      // Layers forward, then backward from the last, as a stage trains: a layer's backward
      // finds its weights no longer in cache. In groups whose activations stay within
      // kGroupActivationBytes, so a small device profiling the whole model at its batch
      // holds no more than that at once.
      for (int begin = 0; begin < layers;) {
        int end = begin;
        double held = 0;
        do {
          held += b * (spec.cost(end).saved_bytes + spec.cost(end).output_bytes);
          ++end;
        } while (end < layers &&
                 held + b * (spec.cost(end).saved_bytes + spec.cost(end).output_bytes) <= kGroupActivationBytes);
        std::vector<torch::Tensor> outputs(end - begin);
        for (int i = begin; i < end; ++i) {
          // Layer 0 always opens the first stage, whose input is the data: training
          // computes no gradient for it, so neither does its timed backward (a Linear first
          // layer's backward is then about one forward's cost lighter). Later layers' inputs
          // need one in any stage but the first.
          torch::Tensor input = x.detach();
          if (i > 0 && input.is_floating_point()) input.requires_grad_(true);
          try {
            const Stopwatch op;
            outputs[i - begin] = module->forwardLayer(i, input);
            if (pass > 0) fwd[i].push_back(op.cpuMs());
          } catch (const c10::Error& e) {
            throw failed(i, e);
          }
          x = outputs[i - begin].detach();
        }
        for (int i = end - 1; i >= begin; --i) {
          torch::Tensor& y = outputs[i - begin];
          try {
            const auto grad = torch::ones_like(y);
            const Stopwatch op;
            if (y.requires_grad()) y.backward(grad);
            if (pass > 0) bwd[i].push_back(op.cpuMs());
          } catch (const c10::Error& e) {
            throw failed(i, e);
          }
          y = torch::Tensor();
        }
        begin = end;
      }
      // Zeroed in place, not freed: training's backward passes add into gradients that
      // exist (a read and a write of every weight's gradient per micro-batch, whatever its
      // size: at one sample that is most of a wide layer's backward), and so do these.
      module->zero_grad(false);
      if (pass > 0) timed_ms += pass_time.wallMs();
    }
    fwd_cpu.push_back(std::move(fwd));
    bwd_cpu.push_back(std::move(bwd));
  }
  // One optimizer step per layer and kind, with gradients present as in training, and the
  // gradients zeroed after it as training does. Training's step finds a layer's weights,
  // gradients and optimizer state out of cache (the backward passes of every micro-batch
  // came between); timed back to back, a wide layer's step found part of its 48 MB still
  // in a 32 MB L3 and came out at 0.6-0.8 of training's. A write over a buffer larger than
  // common last-level caches comes before each timed step.
  auto scratch = torch::empty({kEvictFloats});
  std::vector<double> sgd_ms(layers, 0), adam_ms(layers, 0);
  for (int i = 0; i < layers; ++i) {
    auto parameters = module->layerParameters(i);
    if (parameters.empty()) continue;
    for (auto& p : parameters) p.mutable_grad() = torch::randn_like(p);
    for (const char* kind : {"sgd", "adam"}) {
      v1::OptimizerConfig config;
      config.set_kind(kind);
      config.set_lr(1e-6);
      auto optimizer = makeOptimizer(parameters, config);
      optimizer->step();  // creates the state (momentum, moments): not timed
      std::vector<double> cpu;
      for (int pass = 0; pass < std::max(repeats, 3); ++pass) {
        scratch.fill_(static_cast<float>(pass));
        const Stopwatch op;
        optimizer->step();
        for (auto& p : parameters) p.mutable_grad().zero_();  // training's update does too
        cpu.push_back(op.cpuMs());
      }
      (std::string_view(kind) == "sgd" ? sgd_ms : adam_ms)[i] = median(cpu);
    }
  }
  // Memory copies of 16 MiB, the unit the cost model prices an all-reduce's CPU work in.
  std::vector<double> copy_cpu;
  {
    constexpr std::int64_t kCopyFloats = 4 << 20;
    const auto from = torch::randn({kCopyFloats});
    auto to = torch::empty({kCopyFloats});
    to.copy_(from);  // touches the pages: not timed
    for (int pass = 0; pass < std::max(repeats, 5); ++pass) {
      const Stopwatch op;
      to.copy_(from);
      copy_cpu.push_back(op.cpuMs() / 16.0);
    }
  }
  const double allreduce_cpu = allReduceCpuMsPerMb(repeats);
  const double total_cpu = total.cpuMs();
  const double wall_per_cpu = total_cpu > 0 ? total.wallMs() / total_cpu : 1.0;
  const double scale = wall_per_cpu * slowdown;

  v1::DeviceProfile profile;
  profile.set_model(model.name());
  for (size_t k = 0; k < micro_batches.size(); ++k) {
    const int b = micro_batches[k];
    auto* batch = profile.add_batches();
    batch->set_micro_batch(b);
    for (int i = 0; i < layers; ++i) {
      const LayerCost& cost = spec.cost(i);
      auto* t = batch->add_layers();
      t->set_layer(i);
      t->set_forward_ms(std::max(median(fwd_cpu[k][i]), 1e-6) * scale);
      t->set_backward_ms(std::max(median(bwd_cpu[k][i]), 1e-6) * scale);
      // Weights, gradients and up to two optimizer states, plus one micro-batch's saved
      // activations and output.
      t->set_peak_memory_mb((4.0 * 4.0 * cost.parameters + b * (cost.saved_bytes + cost.output_bytes)) /
                            kBytesPerMb);
    }
  }
  // The all-reduce is not stretched by --slowdown (it emulates slower compute only).
  profile.set_copy_ms_per_mb(median(copy_cpu) * wall_per_cpu);
  profile.set_allreduce_ms_per_mb(allreduce_cpu * wall_per_cpu);
  // The profile ran alone on its machine (co-hosted workers are profiled one after another):
  // its CPU time over wall-clock time is what this worker's compute asks of the machine's
  // CPUs, less while --slowdown's sleeps stretch it.
  profile.set_cpu_demand(1.0 / scale);
  profile.set_machine_cpus(static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN))));
  for (int i = 0; i < layers; ++i) {
    profile.add_sgd_update_ms(sgd_ms[i] * scale);
    profile.add_adam_update_ms(adam_ms[i] * scale);
  }
  return profile;
}

ReferenceTrainer::ReferenceTrainer(const v1::Model& model, const v1::OptimizerConfig& optimizer,
                                   const v1::DataConfig& data, std::uint64_t seed, int batch_size)
    : model_(ModelSpec::fromProto(model).proto()),
      module_(model_, 0, model_.layers_size(), seed),
      data_(DataSource::create(data, model_)),
      optimizer_(makeOptimizer(module_->parameters(), optimizer)),
      batch_size_(batch_size) {
  if (batch_size <= 0) throw Error("batch size must be positive, got " + std::to_string(batch_size));
}

double ReferenceTrainer::step() {
  const Samples batch = data_->get(step_ * batch_size_, batch_size_);
  optimizer_->zero_grad();
  const torch::Tensor loss = lossSum(module_->forward(batch.inputs), batch.labels, model_) / batch_size_;
  loss.backward();
  optimizer_->step();
  ++step_;
  return loss.item<double>();
}

void configureTorchThreads(int threads) {
  if (threads > 0) {
    torch::set_num_threads(threads);
    torch::set_num_interop_threads(threads);
  }
}

double measureMatmulGflops() {
  torch::NoGradGuard no_grad;
  constexpr int kN = 256;
  const auto a = torch::rand({kN, kN});
  const auto b = torch::rand({kN, kN});
  torch::Tensor c = torch::matmul(a, b);  // warm-up
  // Each product timed on its own for 150 ms. One that another process's turn on the CPU
  // interrupted takes longer, never shorter (workers started together on one machine all
  // measure at once), so the fastest tenth is the speed these threads have when they have
  // their CPUs; what a CPU quota takes of it is the caller's to apply (CpuAllowance).
  std::vector<double> run_ms;
  const auto start = std::chrono::steady_clock::now();
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(150) || run_ms.size() < 10) {
    const auto run_start = std::chrono::steady_clock::now();
    c = torch::matmul(a, b);
    run_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - run_start).count());
  }
  const auto tenth = run_ms.begin() + static_cast<std::ptrdiff_t>(run_ms.size() / 10);
  std::nth_element(run_ms.begin(), tenth, run_ms.end());
  return 2.0 * kN * kN * kN / (std::max(*tenth, 1e-6) / 1000.0) / 1e9;
}

v1::DeviceProfile profileModel(const v1::ProfileRequest& request, double slowdown) {
  const auto& asked = request.micro_batches();
  const std::vector<int> sizes = asked.empty() ? std::vector<int>{1} : std::vector<int>(asked.begin(), asked.end());
  for (int size : sizes) {
    if (size <= 0) throw WorkerError(ErrorCode::InvalidArgument, "micro-batch size " + std::to_string(size) + " is not positive");
  }
  const int repeats = request.repeats() > 0 ? request.repeats() : 3;
  return profileLayers(request.model(), sizes, repeats, slowdown);
}

}  // namespace stagecraft::worker
