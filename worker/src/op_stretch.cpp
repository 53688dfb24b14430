#include "op_stretch.h"

#include <algorithm>
#include <ctime>
#include <thread>

namespace stagecraft::worker {
namespace {

double threadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

}  // namespace

OpStart opStart() { return {std::chrono::steady_clock::now(), threadCpuMs()}; }

void stretchOp(const OpStart& start, double slowdown, bool one_thread) {
  if (!(slowdown > 1)) return;
  double own_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start.wall).count();
  if (one_thread) own_ms = std::min(own_ms, threadCpuMs() - start.thread_cpu_ms);
  const double sleep_ms = std::max(0.0, own_ms) * (slowdown - 1);
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(sleep_ms));
}

}  // namespace stagecraft::worker
