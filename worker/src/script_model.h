#pragma once
// Models the user brings as TorchScript files: a top-level nn.Sequential whose children
// (nested Sequentials flattened) are the layers the planner cuts between. The shape probe
// turns a file into a v1::Model of "torchscript" layers; a stage runs its children with
// their own tensors; export writes trained weights back into the file's module.

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stagecraft/v1/checkpoint.pb.h"
#include "stagecraft/v1/model.pb.h"

namespace stagecraft::worker {

/// One child of the file's Sequential, as a stage runs it. `module` mirrors the child's
/// submodule tree with the child's own parameter and buffer tensors (the same storage),
/// so the optimizer, the weights on the wire and the script's forward see one set.
struct ScriptedLayer {
  std::shared_ptr<torch::nn::Module> module;
  std::function<torch::Tensor(torch::Tensor)> run;
};

/// Loads `file` once and returns the children `module_paths` name, in that order, in
/// training mode. Throws stagecraft::Error for a file that is not TorchScript or a path
/// that names no child.
std::vector<ScriptedLayer> loadScriptedLayers(const std::string& file, const std::vector<std::string>& module_paths);

/// The shape probe: loads `file`, checks that its top level is an nn.Sequential, flattens
/// nested Sequentials, and runs a two-sample batch of `input_shape` (C,H,W, D, or T token
/// ids when the first child is an nn.Embedding) through the children one by one to
/// measure each one's output shape, parameters, FLOPs (per-kind formulas for linear,
/// convolution, pooling, norm and elementwise layers; otherwise the child's timed forward
/// at this machine's matmul rate) and saved activations. The model is a classifier when a
/// sample's output is [classes], a language model when it is [T, vocab] for token input.
/// Throws stagecraft::Error saying what is supported.
v1::Model inspectScriptedModel(const std::string& file, const std::vector<int>& input_shape);

/// Writes `file`'s module to `out` with the trained parameters and buffers of
/// `checkpoint` (its layers are `checkpoint.model()`'s torchscript layers), under the
/// user's own names, loadable with torch.jit.load. Throws stagecraft::Error for a
/// checkpoint of another model or a tensor whose shape does not match the file's.
void exportScriptedModel(const v1::Checkpoint& checkpoint, const std::string& file, const std::string& out);

}  // namespace stagecraft::worker
