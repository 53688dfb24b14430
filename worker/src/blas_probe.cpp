#include "blas_probe.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace stagecraft::worker {
namespace {

template <typename F>
F symbol(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

std::string libraryOf(const char* name) {
  void* address = dlsym(RTLD_DEFAULT, name);
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return {};
  return info.dli_fname;
}

bool mentions(const std::string& path, const char* part) { return path.find(part) != std::string::npos; }

}  // namespace

BlasInfo detectBlas() {
  BlasInfo info;
  info.library = libraryOf("dgemm_");
  if (info.library.empty()) info.library = libraryOf("sgemm_");
  // libblas.so.3 is a symlink the alternatives system points at one implementation; what
  // it resolves to decides. Another BLAS may be loaded beside it (liblapack.so.3 can pull
  // in OpenBLAS while libblas.so.3 is still the reference one), so its symbols alone do not.
  std::error_code ec;
  const std::string real = info.library.empty() ? std::string() : std::filesystem::canonical(info.library, ec).string();
  if (!real.empty() && !ec) info.library = real;
  const bool served_by_reference = mentions(info.library, "/blas/libblas.so");
  if (served_by_reference) {
    info.kind = BlasInfo::Kind::Reference;
    info.threads = 1;
  } else if (auto config = symbol<char* (*)()>("openblas_get_config"); config && !mentions(info.library, "blis")) {
    info.kind = BlasInfo::Kind::OpenBlas;
    if (const char* text = config()) info.detail = text;
    if (auto get = symbol<int (*)()>("openblas_get_num_threads")) info.threads = get();
  } else if (auto version = symbol<const char* (*)()>("bli_info_get_version_str")) {
    info.kind = BlasInfo::Kind::Blis;
    if (const char* text = version()) info.detail = std::string("BLIS ") + text;
    if (auto get = symbol<long (*)()>("bli_thread_get_num_threads")) info.threads = static_cast<int>(get());
  } else if (symbol<void*>("mkl_get_max_threads") != nullptr) {
    info.kind = BlasInfo::Kind::Mkl;
    info.detail = "Intel MKL";
    if (auto get = symbol<int (*)()>("mkl_get_max_threads")) info.threads = get();
  }
  return info;
}

bool setBlasThreads(int threads) {
  threads = std::max(threads, 1);
  if (auto set = symbol<void (*)(int)>("openblas_set_num_threads")) {
    set(threads);
    return true;
  }
  if (auto set = symbol<void (*)(long)>("bli_thread_set_num_threads")) {
    set(threads);
    return true;
  }
  if (auto set = symbol<void (*)(int)>("mkl_set_num_threads")) {
    set(threads);
    return true;
  }
  return false;
}

std::string BlasInfo::summary() const {
  std::string name;
  switch (kind) {
    case Kind::OpenBlas: name = detail.empty() ? "OpenBLAS" : detail; break;
    case Kind::Blis: name = detail.empty() ? "BLIS" : detail; break;
    case Kind::Mkl: name = detail; break;
    case Kind::Reference: name = "reference BLAS"; break;
    case Kind::Unknown: name = "unknown BLAS"; break;
  }
  // OpenBLAS's configuration string ends in a space; keep the line tidy.
  while (!name.empty() && name.back() == ' ') name.pop_back();
  if (threads > 0) name += " (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
  if (!library.empty()) name += ", " + library;
  return name;
}

const char* BlasInfo::kindName() const {
  switch (kind) {
    case Kind::OpenBlas: return "openblas";
    case Kind::Blis: return "blis";
    case Kind::Mkl: return "mkl";
    case Kind::Reference: return "reference";
    case Kind::Unknown: break;
  }
  return "unknown";
}

std::string blasWarning(const BlasInfo& info) {
  if (info.kind != BlasInfo::Kind::Reference) return {};
  return "LibTorch is using the reference BLAS (" + info.library +
         "): matrix products run 10-30x slower than this machine allows; install an optimized one "
         "(Debian: apt-get install libopenblas0-pthread) and restart the worker";
}

}  // namespace stagecraft::worker
