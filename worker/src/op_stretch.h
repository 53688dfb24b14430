#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <deque>

namespace stagecraft::worker {

/// When a compute op began: the clock, and the CPU time of the thread that runs it.
struct OpStart {
  std::chrono::steady_clock::time_point wall;
  double thread_cpu_ms = 0;
};

OpStart opStart();

/// The compute ops of a stage's step that `--slowdown` stretches, each with its own history.
enum class StretchedOp { Forward, Backward, LastBackward, Update };
inline constexpr size_t kStretchedOpKinds = static_cast<size_t>(StretchedOp::Update) + 1;

/// `--slowdown F`: stretches each compute op by sleeping (F - 1) x the op's own work after
/// it, so the op takes about F x its time on an idle machine, as a device F times slower
/// would.
///
/// The op's own work: with `one_thread` (the op ran on this thread alone) the thread's CPU
/// time, so what the op waited for a CPU while other processes on this machine ran is
/// added once, as a slower device would wait as long, not F times (beside a busy loop on
/// its CPU a step at --slowdown 4 took 2.1x its time alone when the wait was multiplied,
/// 1.2-1.3x so; worker.RuntimeService.SlowdownStretchesTheOpsOwnWorkNotItsWaitsForTheCpu).
/// Otherwise the work spreads over threads this one does not see, and the op's wall-clock
/// time is taken.
///
/// Nor is CPU time that co-hosted workers cost the op (its caches evicted, the memory bus
/// shared) multiplied: the sleep is (F - 1) x the smaller of the op's work and a low
/// quantile of the last kHistory ops of its kind, what it costs on this machine unhindered.
/// A real device F times slower has its own caches; emulated beside six others, an op whose
/// CPU time the neighbours doubled used to be stretched to 2F its time.
class OpStretcher {
 public:
  explicit OpStretcher(double slowdown) : slowdown_(slowdown) {}

  /// Sleeps after the op `kind` that began at `start`. Nothing at a slowdown of 1 or less.
  void stretch(const OpStart& start, StretchedOp kind, bool one_thread);

  /// The work an op of `kind` is stretched by when its own work was `own_ms`; records it.
  double reference(StretchedOp kind, double own_ms);

  static constexpr size_t kHistory = 32;

 private:
  double slowdown_;
  std::array<std::deque<double>, kStretchedOpKinds> recent_;
};

}  // namespace stagecraft::worker
