#pragma once
// The TorchScript files a worker holds, by SHA-256, in its --cache-dir: the coordinator
// ships a model once (PutModelFile) and every later Profile and Deploy of it reads the
// copy. Torch-free.

#include <cstdint>
#include <memory>
#include <string>

namespace stagecraft::worker {

/// The largest model file a worker takes (GPT-2 small as TorchScript is ~0.5 GB).
constexpr std::int64_t kMaxModelFileBytes = 4LL << 30;

/// The hex SHA-256 of a file's bytes; throws stagecraft::Error when it cannot be read.
std::string sha256OfFile(const std::string& path);

/// Whether `text` is a SHA-256 as hex (64 lowercase hex digits).
bool isSha256Hex(const std::string& text);

class ModelCache {
 public:
  /// `dir` is created on first use; empty: the worker takes no model files.
  explicit ModelCache(std::string dir);

  /// The cached file for `sha256` of `size` bytes, or "" when not held.
  std::string find(const std::string& sha256, std::int64_t size) const;

  /// One file arriving in chunks: written to a private temporary file, hashed as it
  /// comes, and kept under its hash only when size and hash match.
  class Upload {
   public:
    Upload(Upload&&) noexcept;
    Upload& operator=(Upload&&) noexcept;
    ~Upload();
    /// Throws WorkerError InvalidArgument past the announced size.
    void write(const std::string& data);
    /// Checks and keeps the file; returns its path. Throws WorkerError InvalidArgument for
    /// a size or hash that does not match what was announced.
    std::string finish();

   private:
    friend class ModelCache;
    Upload();
    struct State;
    std::unique_ptr<State> state_;
  };
  /// Throws WorkerError: FailedPrecondition without a cache folder, InvalidArgument for a
  /// malformed hash or a size out of range (0 < size <= kMaxModelFileBytes), Unavailable
  /// when the folder cannot be written.
  Upload begin(const std::string& sha256, std::int64_t size);

  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace stagecraft::worker
