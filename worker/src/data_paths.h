#pragma once
// Where a worker may read training data: only regular files inside its --data-dir.
#include <string>

#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::worker {

/// The largest data file a worker reads (MNIST's training images are 47 MB, a CIFAR-10
/// batch 30 MB).
constexpr long long kMaxDataFileBytes = 1LL << 30;

/// Rewrites `data`'s file paths (path, labels_path) to their real paths inside `data_dir`:
/// a relative path is taken from `data_dir`. Throws WorkerError PermissionDenied when the
/// worker has no data folder or a path (or the file a symbolic link leads to) is outside
/// it, without looking at anything outside; InvalidArgument for a file that is missing
/// inside it, not a regular file (a FIFO, a device) or larger than kMaxDataFileBytes.
/// Data without files (synthetic) passes untouched.
void confineDataPaths(v1::DataConfig& data, const std::string& data_dir);

}  // namespace stagecraft::worker
