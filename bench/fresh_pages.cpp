// What a freed-and-allocated-again 16 MiB buffer costs when the allocator hands it back to
// the kernel (munmap, then fresh zeroed pages on the next touch) against keeping it: the
// reason stagecraft-worker sets glibc's allocator to keep freed memory (worker/src/main.cpp).
// Fresh pages asked for as transparent huge pages (MADV_HUGEPAGE, what glibc.malloc.hugetlb=1
// does to the heap it grows) are timed too: the heap still grows when a stage takes more
// layers (worker/src/allocator_settings.h).
//
//   build/bench/bench_fresh_pages [--mib 16] [--rounds 50]
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

double wallMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

int flagValue(int argc, char** argv, const std::string& flag, int fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == flag) return std::max(1, std::atoi(argv[i + 1]));
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = static_cast<size_t>(flagValue(argc, argv, "--mib", 16)) << 20;
  const int rounds = flagValue(argc, argv, "--rounds", 50);

  double wall = wallMs(), cpu = cpuMs();
  for (int r = 0; r < rounds; ++r) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("mmap");
      return 1;
    }
    std::memset(p, r, bytes);
    munmap(p, bytes);
  }
  const double fresh_wall = (wallMs() - wall) / rounds, fresh_cpu = (cpuMs() - cpu) / rounds;

  // The same in 2 MiB-aligned huge pages, where the kernel offers them on request.
  constexpr size_t kHuge = 2u << 20;
  wall = wallMs();
  cpu = cpuMs();
  for (int r = 0; r < rounds; ++r) {
    void* p = mmap(nullptr, bytes + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      std::perror("mmap");
      return 1;
    }
    auto* aligned = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1));
    madvise(aligned, bytes, MADV_HUGEPAGE);
    std::memset(aligned, r, bytes);
    munmap(p, bytes + kHuge);
  }
  const double huge_wall = (wallMs() - wall) / rounds, huge_cpu = (cpuMs() - cpu) / rounds;

  auto* kept = static_cast<char*>(std::malloc(bytes));
  std::memset(kept, 0, bytes);
  wall = wallMs();
  cpu = cpuMs();
  for (int r = 0; r < rounds; ++r) std::memset(kept, r, bytes);
  const double kept_wall = (wallMs() - wall) / rounds, kept_cpu = (cpuMs() - cpu) / rounds;
  const volatile char sink = kept[bytes / 2];
  (void)sink;
  std::free(kept);

  std::printf("| %zu MiB buffer, %d rounds | wall ms | CPU ms |\n|---|---:|---:|\n", bytes >> 20, rounds);
  std::printf("| fresh pages: mmap, write, munmap | %.2f | %.2f |\n", fresh_wall, fresh_cpu);
  std::printf("| fresh huge pages: mmap, madvise(MADV_HUGEPAGE), write, munmap | %.2f | %.2f |\n", huge_wall, huge_cpu);
  std::printf("| kept buffer: write again | %.2f | %.2f |\n", kept_wall, kept_cpu);
  std::printf("\nfresh / kept = %.1fx, fresh / fresh huge = %.1fx\n", fresh_wall / kept_wall, fresh_wall / huge_wall);
  return 0;
}
