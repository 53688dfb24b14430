#include "op_stretch.h"

#include <algorithm>
#include <ctime>
#include <thread>
#include <vector>

namespace stagecraft::worker {
namespace {

double threadCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

}  // namespace

OpStart opStart() { return {std::chrono::steady_clock::now(), threadCpuMs()}; }

double OpStretcher::reference(StretchedOp kind, double own_ms) {
  std::deque<double>& recent = recent_[static_cast<size_t>(kind)];
  recent.push_back(own_ms);
  if (recent.size() > kHistory) recent.pop_front();
  // The tenth percentile: an op that ran while nothing else did, not one lucky outlier.
  std::vector<double> sorted(recent.begin(), recent.end());
  const size_t k = sorted.size() / 10;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  return std::min(own_ms, sorted[k]);
}

void OpStretcher::stretch(const OpStart& start, StretchedOp kind, bool one_thread) {
  if (!(slowdown_ > 1)) return;
  double own_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start.wall).count();
  if (one_thread) own_ms = std::min(own_ms, threadCpuMs() - start.thread_cpu_ms);
  const double sleep_ms = reference(kind, std::max(0.0, own_ms)) * (slowdown_ - 1);
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(sleep_ms));
}

}  // namespace stagecraft::worker
