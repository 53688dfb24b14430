#pragma once
// A deployed stage and its training loop. The header stays Torch-free (the module,
// optimizer and group live behind Impl) so the gRPC side compiles without Torch.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "group_store.h"
#include "stage_layout.h"
#include "stagecraft/v1/cluster.pb.h"
#include "stagecraft/v1/worker.pb.h"

namespace stagecraft::worker {

class BackupSender;
class BackupStore;
class LinkPacer;
class PeerInbox;
class TelemetryHub;

/// What a stage needs from the worker around it.
struct RuntimeEnv {
  std::string worker;                    ///< this worker's name (the sender of its tensors)
  std::string own_host;                  ///< the host Gloo binds to
  double slowdown = 1;                   ///< compute ops sleep (slowdown - 1) x their own work after them
  bool allreduce_overlap = true;         ///< a group's buckets go beside the last backward
  bool tensor_channel = true;            ///< peers' tensor channels where they grant one (PeerOutbox)
  LinkPacer* link = nullptr;             ///< paces outgoing peer traffic; null = unpaced
  std::string token;                     ///< the cluster token peers ask for; empty: none
  std::chrono::milliseconds peer_timeout{30000};
  PeerInbox* inbox = nullptr;            ///< where peers' slices for this stage arrive
  TelemetryHub* telemetry = nullptr;     ///< where iteration reports go
  BackupStore* backups = nullptr;        ///< where a rank-0 member keeps its stage's states
  BackupSender* backup_sender = nullptr; ///< ships them to the assignment's backup_to
  /// A rank-0 member's store for its group (group_store.h), which its worker serves.
  std::shared_ptr<GroupStoreHost> group_store;
};

class StageRuntime {
 public:
  /// Builds the stage's module (from the seed, or the assignment's weights), optimizer and
  /// data source, and starts forming its group. Throws WorkerError / stagecraft::Error.
  StageRuntime(const v1::StageAssignment& assignment, StageLayout layout, RuntimeEnv env);
  ~StageRuntime();

  const StageLayout& layout() const;
  /// Iterations completed (the global step the next iteration runs).
  std::int64_t step() const;

  /// Clears a previous stop request; call before handing run() to a thread.
  void arm();
  /// Trains `iterations` steps (0: until stopped) on the calling thread, publishing an
  /// IterationReport per step. Throws WorkerError on failure (Aborted once stopped).
  void run(std::int64_t iterations);
  /// One forward-only pass over `micro_batches` micro-batches of held-out samples (the
  /// data's evaluation split) on the calling thread, between training steps; the last
  /// stage's reply scores them. Throws WorkerError (Aborted once stopped) or Error (no
  /// held-out samples).
  v1::EvaluateReply evaluate(int micro_batches);
  /// Makes run() and evaluate() return soon with Aborted: wakes their waits, cancels their sends.
  void requestStop();
  bool stopRequested() const;

  /// Parameters and buffers (named "<layer>.<name>"), then with `optimizer_state` the
  /// optimizer's state (see optimizerState()).
  v1::StageWeights weights(bool optimizer_state = false);
  /// Replaces parameters and buffers, restarts the optimizer from the weights' optimizer
  /// state tensors (afresh without any), and moves to the weights' step. Throws
  /// stagecraft::Error, changing nothing, when they do not match the stage.
  void setWeights(const v1::StageWeights& weights);
  /// Where this member ships its stage's backups (the assignment's backup_to); empty when
  /// it takes none (not rank 0, or backup_every 0).
  std::string backupAddress() const;
  /// From the next run() on, back up after steps after + every, after + 2 x every, ...
  /// instead (every > 0), if this member backs up at all. Not while run() runs.
  void setBackupSchedule(std::int64_t every, std::int64_t after);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Sets LibTorch's thread count (0: leave the default).
void configureTorchThreads(int threads);
/// A short float32 matmul benchmark on this machine, GFLOP/s: the speed of this process's
/// threads while they run (the fastest tenth of 150 ms of products), before any CPU quota.
double measureMatmulGflops();
/// Times every layer of `request.model()` (profileLayers), `slowdown` applied.
v1::DeviceProfile profileModel(const v1::ProfileRequest& request, double slowdown);

}  // namespace stagecraft::worker
