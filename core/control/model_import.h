#pragma once
// Models the user brings as TorchScript files. The CLI and the console hold no LibTorch,
// so the shape probe and the export run in stagecraft-worker (its inspect-model and
// export-model commands), started here as a child process.

#include <string>

#include "model/model_spec.h"
#include "stagecraft/v1/model.pb.h"

namespace stagecraft::control {

/// Whether `path` names a TorchScript file (".pt", ".pth" or ".ts").
bool isTorchScriptPath(const std::string& path);

/// The shape probe of the TorchScript nn.Sequential in `path` for samples of
/// `input_shape` ("3,32,32", "784", or "64" tokens), run by `worker_binary`. Throws Error
/// with the probe's reason (invalid input: not TorchScript, not a Sequential, a shape
/// that does not fit) or, when the worker cannot be started, an environment error.
v1::Model importTorchScript(const std::string& path, const std::string& input_shape, const std::string& worker_binary);

/// A zoo name or model JSON as loadModel() reads it, or a TorchScript file imported with
/// importTorchScript(); `input_shape` is required for (and only allowed with) the latter.
/// `worker_binary` is resolved with findWorkerBinary() when empty.
ModelSpec loadModelOrScript(const std::string& name_or_path, const std::string& input_shape,
                            const std::string& worker_binary = {});

/// Writes the trained TorchScript model of the checkpoint in `checkpoint_dir` (a run's
/// --checkpoint-dir) to `out`, with the user's parameter names. Throws Error when the
/// checkpoint's model is not a TorchScript one, or with the worker's reason.
void exportTorchScript(const std::string& checkpoint_dir, const std::string& out, const std::string& worker_binary);

/// This process's executable, for findWorkerBinary(); "" when /proc cannot tell.
std::string currentExecutable();

}  // namespace stagecraft::control
