// What a worker is told to run (Worker.Deploy): protobuf bytes -> v1::StageAssignment ->
// the worker's StageLayout (worker/src/stage_layout.cpp, Torch-free), checked before
// anything is built.

#include "fuzz_support.h"
#include "stage_layout.h"
#include "worker_error.h"

using namespace stagecraft;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietProtobuf();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  v1::StageAssignment assignment;
  if (size > (1u << 20) || !assignment.ParseFromArray(data, static_cast<int>(size))) return 0;
  try {
    fuzz::refusingBadInput([&] {
      const worker::StageLayout layout = worker::layoutStage(assignment);
      fuzz::require(layout.sample_begin >= 0 && layout.samples >= 0 &&
                        layout.sample_begin + layout.samples <= layout.micro_batch_size,
                    "this member's samples lie within the micro-batch");
      // Slices count samples within the micro-batch, as PeerTensor.sample_begin does.
      for (const auto* peers : {&layout.previous, &layout.next}) {
        int at = layout.sample_begin;
        for (const auto& p : *peers) {
          fuzz::require(p.sample_begin == at && p.samples > 0, "peer slices tile this member's samples");
          at += p.samples;
        }
        fuzz::require(peers->empty() || at == layout.sample_begin + layout.samples,
                      "peer slices cover this member's samples");
      }
      worker::checkMemory(layout, 1024, "--memory-mb");
    });
  } catch (const worker::WorkerError&) {
    // InvalidArgument or ResourceExhausted: the refusals Deploy answers with.
  }
  return 0;
}
