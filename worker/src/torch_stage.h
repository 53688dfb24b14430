#pragma once
// The LibTorch side of a worker: a model's layer range as a module, the data it reads,
// the loss, the optimizer, tensors on the wire, and a single-process reference trainer.
// Only the .cpp files behind this header include Torch's big headers' implementations;
// everything here is Qt-free.

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "stagecraft/v1/cluster.pb.h"
#include "stagecraft/v1/model.pb.h"
#include "stagecraft/v1/worker.pb.h"
#include "tensor_wire.h"

namespace stagecraft::worker {

/// Layers [begin, end) of `model` as one module. Every layer's initial weights depend only
/// on (seed, layer index), so any split of a model into stages starts from the same weights
/// as the whole model in one process. Throws stagecraft::Error for a bad range or layer.
class StageModuleImpl : public torch::nn::Module {
 public:
  /// `initialise` false: the layers keep LibTorch's own initialisation, for a stage whose
  /// every tensor is set right after (setWeights), which then skips a pass of the random
  /// generator over every weight.
  StageModuleImpl(const v1::Model& model, int begin, int end, std::uint64_t seed, bool initialise = true);
  torch::Tensor forward(torch::Tensor x);
  /// Runs only local layer `i` (0-based within the stage); for profiling.
  torch::Tensor forwardLayer(int i, torch::Tensor x);
  /// The trainable parameters of local layer `i` (BatchNorm's running stats are buffers).
  std::vector<torch::Tensor> layerParameters(int i) const;
  int layerBegin() const { return begin_; }
  int layerEnd() const { return end_; }
  int layerCount() const { return end_ - begin_; }

 private:
  int begin_, end_;
  std::vector<std::shared_ptr<torch::nn::Module>> layers_;
  std::vector<std::function<torch::Tensor(torch::Tensor)>> run_;
};
TORCH_MODULE(StageModule);

/// Inputs and labels of consecutive samples.
struct Samples {
  torch::Tensor inputs;  ///< [n, input_shape...], float32 or int64 token ids
  torch::Tensor labels;  ///< [n] class ids, or [n, seq] next-token ids for language models
};

/// Where training samples come from. Sample `g` (a global index: step * batch + position
/// in the batch) is the same on every worker, so the first stage reads inputs and the last
/// stage reads labels of the same samples without sending labels through the pipeline.
class DataSource {
 public:
  virtual ~DataSource() = default;
  /// Samples [first, first + count) of the endless, deterministic stream.
  virtual Samples get(std::int64_t first, int count) = 0;
  /// Only the labels of those samples (what the last stage reads): no image is decoded.
  virtual torch::Tensor labels(std::int64_t first, int count) { return get(first, count).labels; }

  /// synthetic (a learnable task generated from the seed), mnist (IDX images + labels),
  /// cifar10 (a binary batch file, or the folder of data_batch_1.bin ... data_batch_5.bin)
  /// or imagefolder (a folder of one sub-folder of PNG/JPEG images per class; class ids are
  /// the sub-folders' names sorted bytewise; decoded as read, with a bounded cache). The
  /// file-backed kinds visit every sample once per epoch of N samples, in an order that is a
  /// permutation of the N drawn from (seed, epoch). Pixels become float32 in [0, 1]; MNIST
  /// and CIFAR-10 are reshaped to the model's input shape when the element counts match; an
  /// image folder's images must be the model's CxHxW (C 1 or 3: grey is replicated into RGB,
  /// alpha dropped; no resizing). Throws stagecraft::Error naming the file or the mismatch.
  /// The training split, or the held-out evaluation split: for file data the
  /// config's `holdout` share (kept out of training, in a fixed order; an Error when it is
  /// 0), for synthetic data samples from kSyntheticEvalOffset on.
  enum class Split { Train, Eval };
  static std::unique_ptr<DataSource> create(const v1::DataConfig& config, const v1::Model& model,
                                            Split split = Split::Train);
};

/// Where the synthetic evaluation samples start: no run trains this far.
constexpr std::int64_t kSyntheticEvalOffset = std::int64_t{1} << 40;

/// Sum over the samples of the per-sample loss (cross-entropy; for language models the
/// mean over tokens of each sample). Divide by the global batch for the batch mean.
torch::Tensor lossSum(const torch::Tensor& output, const torch::Tensor& labels, const v1::Model& model);

/// SGD with momentum or Adam over `parameters`; throws stagecraft::Error for a bad config.
std::unique_ptr<torch::optim::Optimizer> makeOptimizer(std::vector<torch::Tensor> parameters,
                                                       const v1::OptimizerConfig& config);

v1::Tensor toProto(const torch::Tensor& tensor, const std::string& name = {});
/// `tensor` for PeerOutbox::send without a copy: the message without its bytes, and the
/// bytes of a contiguous CPU float32/int64 view that holds the tensor's storage. The tensor
/// must not be written while the send is queued (a stage sends outputs its backward keeps
/// and its inputs' gradients, and flushes before the optimizer writes).
std::pair<v1::Tensor, WirePayload> toWire(const torch::Tensor& tensor, const std::string& name = {});
/// Throws stagecraft::Error for a malformed tensor (size does not match shape and dtype).
torch::Tensor fromProto(const v1::Tensor& tensor);
/// fromProto that takes the message's bytes instead of copying them (`tensor`'s data is
/// left empty).
torch::Tensor fromProto(v1::Tensor&& tensor);

/// Parameters and buffers of a stage, in module order.
v1::StageWeights getWeights(StageModule& module);
/// Throws stagecraft::Error when names, shapes or the layer range do not match.
void setWeights(StageModule& module, const v1::StageWeights& weights);
/// The same from `tensors` of layers [layer_begin, layer_end) (pointers into a message the
/// caller keeps), so a caller that sorts a message's tensors copies none of them.
void setWeights(StageModule& module, int layer_begin, int layer_end, std::span<const v1::Tensor* const> tensors);

/// Whether a StageWeights tensor name is optimizer state ("<parameter>#<state>").
bool isOptimizerStateName(const std::string& name);
/// The optimizer's per-parameter state as tensors named "<parameter>#<state>": SGD's
/// "#momentum_buffer", Adam's "#step" (int64 scalar), "#exp_avg" and "#exp_avg_sq".
/// Parameters without state yet (no step taken) have none.
std::vector<v1::Tensor> optimizerState(torch::optim::Optimizer& optimizer, StageModule& module);
/// The same state as the optimizer's own tensors (not copies), with those names: what only
/// the optimizer's step changes.
std::vector<std::pair<std::string, torch::Tensor>> optimizerStateTensors(torch::optim::Optimizer& optimizer,
                                                                         StageModule& module);
/// Replaces the optimizer's whole state by `tensors` (as optimizerState names them;
/// parameters not named start afresh). Throws stagecraft::Error, changing nothing, for a
/// parameter the stage lacks, a state of the other optimizer kind or a wrong shape.
void setOptimizerState(torch::optim::Optimizer& optimizer, StageModule& module,
                       const std::vector<const v1::Tensor*>& tensors);

/// Times every layer's forward and backward at each micro-batch size on this machine, and
/// one SGD-with-momentum and one Adam step over each layer's parameters (after a warm-up):
/// the median CPU time of each, scaled by the wall-clock time per CPU time of the whole
/// profile (so a CPU quota's stalls count at their mean, not wherever they fell) and by
/// `slowdown`; peak memory from the activation sizes.
v1::DeviceProfile profileLayers(const v1::Model& model, std::span<const int> micro_batches, int repeats,
                                double slowdown);

/// The whole model in one process, trained on the same data with the same optimizer and
/// global batch: the yardstick the pipeline's results must equal.
class ReferenceTrainer {
 public:
  ReferenceTrainer(const v1::Model& model, const v1::OptimizerConfig& optimizer, const v1::DataConfig& data,
                   std::uint64_t seed, int batch_size);
  /// One iteration; returns the batch's mean loss (before the update).
  double step();
  StageModule& module() { return module_; }
  std::int64_t steps() const { return step_; }

 private:
  v1::Model model_;
  StageModule module_;
  std::unique_ptr<DataSource> data_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  int batch_size_;
  std::int64_t step_ = 0;
};

}  // namespace stagecraft::worker
