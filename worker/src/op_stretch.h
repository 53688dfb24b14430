#pragma once

#include <chrono>

namespace stagecraft::worker {

/// When a compute op began: the clock, and the CPU time of the thread that runs it.
struct OpStart {
  std::chrono::steady_clock::time_point wall;
  double thread_cpu_ms = 0;
};

OpStart opStart();

/// `--slowdown`: stretches a compute op that started at `start` by sleeping (slowdown - 1) x
/// the op's own work after it, so the op takes about slowdown x its time on an idle machine.
/// With `one_thread` (the op ran on this thread alone) its own work is this thread's CPU
/// time: what the op waited for a CPU while other processes on this machine ran is added
/// once, as a slower device would wait as long, not slowdown times (beside a busy loop on
/// its CPU a step at --slowdown 4 took 2.1x its time alone when the wait was multiplied,
/// 1.2-1.3x so; worker.RuntimeService.SlowdownStretchesTheOpsOwnWorkNotItsWaitsForTheCpu).
/// Otherwise the work spreads over threads this one does not see, and the op's wall-clock
/// time is taken. Nothing happens at a slowdown of 1 or less.
void stretchOp(const OpStart& start, double slowdown, bool one_thread);

}  // namespace stagecraft::worker
