#pragma once

#include <string>

namespace stagecraft::worker {

/// Which BLAS LibTorch's matrix products end up in. Debian's LibTorch calls the generic
/// libblas.so.3, which the alternatives system points at the reference BLAS on a fresh
/// install (~6 GFLOP/s on a 2048-wide matmul) or at an optimized one such as OpenBLAS
/// (~185 GFLOP/s on the same core), so the same worker trains 10-30x faster or slower
/// depending on a package it does not depend on.
struct BlasInfo {
  enum class Kind { OpenBlas, Blis, Mkl, Reference, Unknown };
  Kind kind = Kind::Unknown;
  std::string library;  ///< file the dgemm_ symbol resolves to, when known
  std::string detail;   ///< e.g. OpenBLAS's build configuration
  int threads = 0;      ///< the BLAS's own thread count; 0 = not known

  /// One line for logs and Describe, e.g. "OpenBLAS 0.3.21 ... (1 thread)".
  std::string summary() const;
  /// openblas | blis | mkl | reference | unknown, as in WorkerInfo.blas_kind.
  const char* kindName() const;
  bool optimized() const { return kind == Kind::OpenBlas || kind == Kind::Blis || kind == Kind::Mkl; }
};

/// Looks at the symbols loaded into this process; cheap, callable any time.
BlasInfo detectBlas();

/// Sets the BLAS's own thread pool (OpenBLAS, BLIS, MKL) to `threads`, so that it does not
/// start one thread per core under a worker held to a fraction of a core. Returns false when
/// the loaded BLAS has no such control (the reference BLAS is single-threaded anyway).
bool setBlasThreads(int threads);

/// The advice printed when the reference BLAS is loaded; empty otherwise.
std::string blasWarning(const BlasInfo& info);

}  // namespace stagecraft::worker
