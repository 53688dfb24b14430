// Loss, optimizer, per-layer profiling and the single-process reference trainer.

#include <algorithm>
#include <chrono>

#include "io/error.h"
#include "model/model_spec.h"
#include "torch_stage.h"

namespace stagecraft::worker {
namespace {

constexpr double kBytesPerMb = 1024.0 * 1024.0;

std::string shapeText(c10::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

double msSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// Profiling times at least this much per micro-batch size: ten periods of the default CFS
/// bandwidth period (100 ms), so a quota's stalls average out. At most kMaxPasses passes.
constexpr double kMinTimedMs = 1000;
constexpr int kMaxPasses = 200;

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

  v1::DeviceProfile profile;
  profile.set_model(model.name());
  for (int b : micro_batches) {
    std::vector<std::vector<double>> fwd(layers), bwd(layers);
    double timed_ms = 0;
    // Pass 0 warms up (allocator, kernels' first-call costs) and is not recorded. Timed
    // passes go on until they span kMinTimedMs, so a CPU quota's stalls show up in them.
    for (int pass = 0; pass <= repeats || (timed_ms < kMinTimedMs && pass <= kMaxPasses); ++pass) {
      torch::Tensor x = randomInput(spec.proto(), b);
      for (int i = 0; i < layers; ++i) {
        torch::Tensor input = x.detach();
        if (input.is_floating_point()) input.requires_grad_(true);
        torch::Tensor y;
        double forward_ms = 0, backward_ms = 0;
        try {
          auto start = std::chrono::steady_clock::now();
          y = module->forwardLayer(i, input);
          forward_ms = msSince(start);
          const auto grad = torch::ones_like(y);
          start = std::chrono::steady_clock::now();
          if (y.requires_grad()) y.backward(grad);
          backward_ms = msSince(start);
        } catch (const c10::Error& e) {
          // E.g. BatchNorm on a single value per channel: the layer cannot train at this size.
          throw Error("profile: layer " + std::to_string(i) + " '" + spec.layer(i).name() + "' at micro-batch " +
                      std::to_string(b) + ": " + e.what_without_backtrace());
        }
        module->zero_grad(true);
        if (pass > 0) {
          fwd[i].push_back(forward_ms);
          bwd[i].push_back(backward_ms);
          timed_ms += forward_ms + backward_ms;
        }
        x = y.detach();
      }
    }
    // Each layer's median is its cost at full speed; a process under a CPU quota (a
    // cgroup's cpu.cfs_quota_us) runs short bursts at full speed and then stalls for the
    // rest of the period, so medians alone describe a faster device than it sustains. The
    // stalls land in the timings in proportion to the CPU time spent, so the sum of the
    // means over passes spanning many periods is the sustained cost: scale the medians to it.
    double median_sum = 0;
    for (int i = 0; i < layers; ++i) median_sum += median(fwd[i]) + median(bwd[i]);
    const double passes = static_cast<double>(fwd.empty() ? 1 : fwd[0].size());
    const double sustained = median_sum > 0 ? std::max(1.0, timed_ms / passes / median_sum) : 1.0;
    auto* batch = profile.add_batches();
    batch->set_micro_batch(b);
    for (int i = 0; i < layers; ++i) {
      const LayerCost& cost = spec.cost(i);
      auto* t = batch->add_layers();
      t->set_layer(i);
      t->set_forward_ms(std::max(median(fwd[i]), 1e-6) * sustained * slowdown);
      t->set_backward_ms(std::max(median(bwd[i]), 1e-6) * sustained * slowdown);
      // Weights, gradients and up to two optimizer states, plus one micro-batch's saved
      // activations and output.
      t->set_peak_memory_mb((4.0 * 4.0 * cost.parameters + b * (cost.saved_bytes + cost.output_bytes)) /
                            kBytesPerMb);
    }
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

}  // namespace stagecraft::worker
