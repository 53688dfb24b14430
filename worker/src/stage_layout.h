#pragma once
// What a StageAssignment means for this worker, checked before anything is built:
// its layers, its samples of every micro-batch, the overlaps it exchanges with the
// neighbouring groups, its op order and its memory. Torch-free.

#include <cstdint>
#include <string>
#include <vector>

#include "peer_inbox.h"
#include "plan/plan.h"
#include "sim/simulator.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::worker {

/// The samples of one micro-batch this worker exchanges with one member of a neighbour
/// group: activations forward, the matching gradients back.
struct PeerSlice {
  std::string peer;      ///< the member's name
  std::string address;   ///< its host:port
  int sample_begin = 0;  ///< within the micro-batch
  int samples = 0;
};

struct StageLayout {
  std::string job;
  int stage = 0;
  int stages = 0;
  int layer_begin = 0;
  int layer_end = 0;
  int rank = 0;
  int group_size = 0;
  int batch_size = 0;
  int microbatches = 0;
  int micro_batch_size = 0;
  int sample_begin = 0;  ///< this member's samples of every micro-batch: [begin, begin + samples)
  int samples = 0;
  int in_flight = 0;     ///< micro-batches whose activations are held at once
  Schedule schedule = Schedule::Invalid;
  Optimizer optimizer = Optimizer::Invalid;
  std::vector<ScheduledOp> ops;      ///< empty for a member with no samples
  std::vector<PeerSlice> previous;   ///< inputs come from, input gradients go to these
  std::vector<PeerSlice> next;       ///< outputs go to, output gradients come from these
  double parameters = 0;
  double memory_bytes = 0;           ///< weights, gradients, optimizer state, activations

  bool first() const { return stage == 0; }
  bool last() const { return stage + 1 == stages; }
  /// Global index of this member's first sample of micro-batch `m` in step `step`.
  std::int64_t firstSample(std::int64_t step, int m) const {
    return step * batch_size + static_cast<std::int64_t>(m) * micro_batch_size + sample_begin;
  }
};

/// Checks `assignment` and derives the layout. Throws WorkerError(InvalidArgument) with
/// one precise sentence for the first problem: a layer range outside the model, a rank
/// outside the group, shares that do not sum to batch / microbatches, an indivisible
/// batch, an unknown schedule or optimizer, a missing neighbour or store address.
StageLayout layoutStage(const v1::StageAssignment& assignment);

/// What this member's peers may push it under `layout` of `model`: activations shaped as
/// layer layout.layer_begin's input from the previous group's members, gradients shaped as
/// layer layout.layer_end's input from the next group's, each for the samples they share;
/// at most three steps' worth held (and 64 MiB at least).
InboxRules inboxRules(const StageLayout& layout, const v1::Model& model);

/// Throws WorkerError(ResourceExhausted) naming what the stage needs and the limit when
/// `layout.memory_bytes` exceeds `limit_mb`; `limit_flag` says where the limit comes from.
void checkMemory(const StageLayout& layout, double limit_mb, const std::string& limit_flag);

}  // namespace stagecraft::worker
