#include "allocator_settings.h"

#include <climits>  // also defines __GLIBC__ where it applies

#ifdef __GLIBC__
#include <gnu/libc-version.h>
#include <malloc.h>
#endif
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace stagecraft::worker {

void keepFreedMemory() {
#ifdef __GLIBC__
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

void useHugePagesForTheHeap(char** argv) {
#ifdef __GLIBC__
  if (std::getenv("STAGECRAFT_NO_HUGE_PAGES")) return;
  constexpr const char* kTunable = "glibc.malloc.hugetlb";
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string given = tunables ? tunables : "";
  if (given.find(kTunable) != std::string::npos) return;  // said already (this is the second start)
  int major = 0, minor = 0;
  if (std::sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor) != 2 || major < 2 || (major == 2 && minor < 35)) return;
  std::string mode;
  std::getline(std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled"), mode);
  if (mode.find("[madvise]") == std::string::npos && mode.find("[always]") == std::string::npos) return;
  const std::string value = (given.empty() ? "" : given + ":") + kTunable + "=1";
  if (::setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  ::execv("/proc/self/exe", argv);
  // Could not start again: go on with small pages, as before.
  if (tunables) {
    ::setenv("GLIBC_TUNABLES", tunables, 1);
  } else {
    ::unsetenv("GLIBC_TUNABLES");
  }
#else
  (void)argv;
#endif
}

}  // namespace stagecraft::worker
