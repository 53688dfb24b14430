#pragma once
// stagecraft-worker's model commands, run instead of the daemon: the shape probe of a
// TorchScript file (what `--model FILE.pt` runs in the CLI and the console, which hold no
// LibTorch) and the export of a trained checkpoint back into TorchScript. Torch-free.
#include <string>
#include <vector>

namespace stagecraft::worker {

/// Whether argv[1] names a model command ("inspect-model", "export-model").
bool isModelCommand(const std::string& first_argument);

/// Runs the command `args` (argv without argv[0]): prints a v1::Model as JSON on stdout
/// (inspect-model) or writes the exported file (export-model). Returns the exit status;
/// errors go to stderr as one line.
int runModelCommand(const std::vector<std::string>& args);

}  // namespace stagecraft::worker
