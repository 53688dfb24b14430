#pragma once

namespace stagecraft::worker {

/// Training allocates and frees the same large tensors every micro-batch (a 2048 x 2048
/// layer's weight gradient is 16 MiB; Adam's step makes temporaries of every parameter), and
/// a stage receives each activation and gradient into a new buffer. glibc hands blocks that
/// large back to the kernel on free, so each allocation faults fresh pages in again: on this
/// project's 2-vCPU VM 16 MiB of fresh pages cost 60 ms against 1.4 ms to rewrite reused
/// ones, and a ¼-core stage spent most of its time there. One heap (no per-thread arenas,
/// which map their own), no mmap'd blocks and no trimming keep freed memory in the process
/// for the next micro-batch; the resident size stays at its peak instead.
/// Call first thing in main(), before any thread starts; a no-op off glibc.
void keepFreedMemory();

}  // namespace stagecraft::worker
