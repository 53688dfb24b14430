#pragma once
// Where a worker may read training data: only regular files (and, for image folders and
// CIFAR-10's folder, folders of them) inside its --data-dir.
#include <string>

#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::worker {

/// The largest data file a worker reads (MNIST's training images are 47 MB, a CIFAR-10
/// batch 30 MB).
constexpr long long kMaxDataFileBytes = 1LL << 30;

/// CIFAR-10's training batches in its folder: data_batch_1.bin ... data_batch_5.bin.
constexpr int kCifarTrainingBatches = 5;

/// Rewrites `data`'s paths (path, labels_path) to their real paths inside `data_dir`: a
/// relative path is taken from `data_dir`. Throws WorkerError PermissionDenied when the
/// worker has no data folder or a path (or the file a symbolic link leads to) is outside
/// it, without looking at anything outside; InvalidArgument for a file that is missing
/// inside it, not a regular file (a FIFO, a device) or larger than kMaxDataFileBytes.
/// An imagefolder's path must be a folder: each of its class folders and images must lie
/// inside `data_dir` too (PermissionDenied for a link leading out), see listImageFolder for
/// what else it refuses. A cifar10 path may be a folder: its five training batches are then
/// checked as files. Data without files (synthetic) passes untouched.
void confineDataPaths(v1::DataConfig& data, const std::string& data_dir);

}  // namespace stagecraft::worker
