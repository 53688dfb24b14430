#include "data_paths.h"

#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <filesystem>

#include "image_decode.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

namespace fs = std::filesystem;

/// Whether `path` (lexically normal, absolute) is `dir` or below it.
bool inside(const fs::path& path, const fs::path& dir) {
  auto p = path.begin();
  for (auto d = dir.begin(); d != dir.end(); ++d, ++p) {
    if (d->empty()) continue;  // a trailing separator
    if (p == path.end() || *p != *d) return false;
  }
  return true;
}

enum class Allow { File, Folder, FileOrFolder };

/// `given`'s real path inside `root`, and whether it is a folder.
std::pair<std::string, bool> confine(const std::string& given, const std::string& what, const fs::path& root,
                                     Allow allow) {
  const fs::path wanted = (fs::path(given).is_absolute() ? fs::path(given) : root / given).lexically_normal();
  const std::string outside = what + " '" + given + "' is outside this worker's data folder '" + root.string() +
                              "' (its --data-dir)";
  // Nothing outside the folder is looked at: no existence or size of other files leaks.
  if (!inside(wanted, root)) throw WorkerError(ErrorCode::PermissionDenied, outside);
  char resolved[PATH_MAX];
  if (!::realpath(wanted.c_str(), resolved)) {
    throw WorkerError(ErrorCode::InvalidArgument, what + " '" + given + "': no such file in the data folder");
  }
  if (!inside(fs::path(resolved), root)) throw WorkerError(ErrorCode::PermissionDenied, outside);
  struct stat st {};
  const bool ok = ::stat(resolved, &st) == 0;
  if (ok && S_ISDIR(st.st_mode) && allow != Allow::File) return {resolved, true};
  if (allow == Allow::Folder) {
    throw WorkerError(ErrorCode::InvalidArgument, what + " '" + given + "' is not a folder");
  }
  if (!ok || !S_ISREG(st.st_mode)) {
    throw WorkerError(ErrorCode::InvalidArgument, what + " '" + given + "' is not a regular file");
  }
  if (st.st_size > kMaxDataFileBytes) {
    throw WorkerError(ErrorCode::InvalidArgument, what + " '" + given + "' is larger than 1 GiB");
  }
  return {resolved, false};
}

}  // namespace

void confineDataPaths(v1::DataConfig& data, const std::string& data_dir) {
  if (data.path().empty() && data.labels_path().empty()) return;
  if (data_dir.empty()) {
    throw WorkerError(ErrorCode::PermissionDenied,
                      "this worker reads no data files: start it with --data-dir DIR and put the data there");
  }
  char root[PATH_MAX];
  if (!::realpath(data_dir.c_str(), root)) {
    throw WorkerError(ErrorCode::FailedPrecondition, "the data folder '" + data_dir + "' is gone");
  }
  if (!data.path().empty()) {
    if (data.kind() == "imagefolder") {
      const std::string folder = confine(data.path(), "image folder", fs::path(root), Allow::Folder).first;
      // Every class folder and image checked too: none may lead outside through a link.
      listImageFolder(folder, root);
      data.set_path(folder);
    } else if (data.kind() == "cifar10") {
      const auto [path, is_folder] = confine(data.path(), "data file", fs::path(root), Allow::FileOrFolder);
      if (is_folder) {
        for (int b = 1; b <= kCifarTrainingBatches; ++b) {
          const std::string name = "data_batch_" + std::to_string(b) + ".bin";
          confine((fs::path(path) / name).string(), "CIFAR-10 batch", fs::path(root), Allow::File);
        }
      }
      data.set_path(path);
    } else {
      data.set_path(confine(data.path(), "data file", fs::path(root), Allow::File).first);
    }
  }
  if (!data.labels_path().empty()) {
    data.set_labels_path(confine(data.labels_path(), "labels file", fs::path(root), Allow::File).first);
  }
}

}  // namespace stagecraft::worker
