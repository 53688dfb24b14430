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

/// The heap that memory is kept in still grows when a stage takes more layers (a recovery
/// merging a lost stage into the device holding its copy), and each fresh 4 KiB page costs
/// a fault: on this project's VM (build/bench/bench_fresh_pages) 16 MiB of fresh pages take
/// 50 ms to fill, 2 ms in 2 MiB huge pages; a recovery's stage of 160 MiB spent 590 ms there.
/// glibc (2.35 on) asks for transparent huge pages on the heap it grows only when
/// GLIBC_TUNABLES says so at start-up, so when it does not and the kernel offers them (on
/// request or always), this starts the program again in place (execv, same pid) with
/// glibc.malloc.hugetlb=1 added. Returns when that is not needed, not possible, or
/// STAGECRAFT_NO_HUGE_PAGES is set. Call first thing in main(), with main's argv.
void useHugePagesForTheHeap(char** argv);

}  // namespace stagecraft::worker
