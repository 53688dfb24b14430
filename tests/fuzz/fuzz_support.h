#pragma once
// What every fuzz target shares. A loader's promise is that bad input throws
// stagecraft::Error and nothing else: any other exception escapes LLVMFuzzerTestOneInput,
// aborts, and libFuzzer keeps the input as a crash (so do ASan and UBSan reports).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string_view>

#include <google/protobuf/stubs/logging.h>

#include "io/error.h"

namespace stagecraft::fuzz {

inline std::string_view textOf(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Runs `f`, ignoring the Error a bad input is allowed to raise.
template <class F>
void refusingBadInput(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

/// Protobuf logs every string field that is not UTF-8 when parsing bytes: quiet, so the
/// runs are not spent writing logs.
inline void quietProtobuf() { google::protobuf::SetLogHandler(nullptr); }

/// An invariant the code under test promises; a broken one is a crash.
inline void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz: broken invariant: %s\n", what);
    std::abort();
  }
}

}  // namespace stagecraft::fuzz
