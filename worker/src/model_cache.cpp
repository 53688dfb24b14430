#include "model_cache.h"

#include <openssl/evp.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/error.h"
#include "worker_error.h"

namespace stagecraft::worker {
namespace {

namespace fs = std::filesystem;

/// Incremental SHA-256 over OpenSSL's EVP.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 unavailable");
  }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const char* data, std::size_t size) { EVP_DigestUpdate(ctx_, data, size); }
  std::string hex() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    EVP_DigestFinal_ex(ctx_, digest.data(), &length);
    static const char* kDigits = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
      out += kDigits[digest[i] >> 4];
      out += kDigits[digest[i] & 15];
    }
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

}  // namespace

std::string sha256OfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot be read");
  Sha256 sha;
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    sha.update(buffer.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw Error(path + ": read error");
  return sha.hex();
}

bool isSha256Hex(const std::string& text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

struct ModelCache::Upload::State {
  std::string sha256;
  std::int64_t size = 0;
  std::int64_t received = 0;
  std::string final_path;
  std::string temp_path;
  std::ofstream out;
  Sha256 hash;
  bool kept = false;
};

ModelCache::ModelCache(std::string dir) : dir_(std::move(dir)) {}

std::string ModelCache::find(const std::string& sha256, std::int64_t size) const {
  if (dir_.empty() || !isSha256Hex(sha256)) return {};
  const fs::path file = fs::path(dir_) / (sha256 + ".pt");
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return {};
  const auto actual = fs::file_size(file, ec);
  if (ec || static_cast<std::int64_t>(actual) != size) return {};
  return file.string();
}

ModelCache::Upload ModelCache::begin(const std::string& sha256, std::int64_t size) {
  if (dir_.empty()) {
    throw WorkerError(ErrorCode::FailedPrecondition, "this worker has no --cache-dir: it takes no model files");
  }
  if (!isSha256Hex(sha256)) throw WorkerError(ErrorCode::InvalidArgument, "model file: sha256 is not 64 hex digits");
  if (size <= 0 || size > kMaxModelFileBytes) {
    throw WorkerError(ErrorCode::InvalidArgument, "model file: size " + std::to_string(size) + " is out of range (1 to " +
                                                      std::to_string(kMaxModelFileBytes) + " bytes)");
  }
  std::error_code ec;
  fs::create_directories(dir_, ec);
  Upload upload;
  upload.state_ = std::make_unique<Upload::State>();
  auto& s = *upload.state_;
  s.sha256 = sha256;
  s.size = size;
  s.final_path = (fs::path(dir_) / (sha256 + ".pt")).string();
  // Unique per upload: two coordinators may send the same file at once.
  static std::atomic<unsigned> counter{0};
  s.temp_path = (fs::path(dir_) / (".upload-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))).string();
  s.out.open(s.temp_path, std::ios::binary | std::ios::trunc);
  if (!s.out) {
    throw WorkerError(ErrorCode::Unavailable, "model cache " + dir_ + ": cannot write: " + std::strerror(errno));
  }
  return upload;
}

ModelCache::Upload::Upload() = default;
ModelCache::Upload::Upload(Upload&&) noexcept = default;
ModelCache::Upload& ModelCache::Upload::operator=(Upload&&) noexcept = default;

ModelCache::Upload::~Upload() {
  if (state_ && !state_->kept) {
    state_->out.close();
    std::remove(state_->temp_path.c_str());
  }
}

void ModelCache::Upload::write(const std::string& data) {
  auto& s = *state_;
  if (s.received + static_cast<std::int64_t>(data.size()) > s.size) {
    throw WorkerError(ErrorCode::InvalidArgument, "model file: more than the announced " + std::to_string(s.size) + " bytes");
  }
  s.out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!s.out) throw WorkerError(ErrorCode::Unavailable, "model cache: write failed (disk full?)");
  s.hash.update(data.data(), data.size());
  s.received += static_cast<std::int64_t>(data.size());
}

std::string ModelCache::Upload::finish() {
  auto& s = *state_;
  if (s.received != s.size) {
    throw WorkerError(ErrorCode::InvalidArgument, "model file: " + std::to_string(s.received) + " bytes arrived, " +
                                                      std::to_string(s.size) + " announced");
  }
  if (s.hash.hex() != s.sha256) {
    throw WorkerError(ErrorCode::InvalidArgument, "model file: its bytes do not have the announced SHA-256");
  }
  s.out.close();
  if (!s.out || std::rename(s.temp_path.c_str(), s.final_path.c_str()) != 0) {
    throw WorkerError(ErrorCode::Unavailable, "model cache: cannot keep " + s.final_path + ": " + std::strerror(errno));
  }
  s.kept = true;
  return s.final_path;
}

}  // namespace stagecraft::worker
