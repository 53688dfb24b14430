#pragma once
// The worker as a domain object: its identity, its deployed stage, the training thread,
// telemetry and the inbox peers push into. The gRPC service is a thin shell over this.
// Torch-free header.

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "backup_store.h"
#include "blas_probe.h"
#include "group_store.h"
#include "model_cache.h"
#include "peer_inbox.h"
#include "peer_outbox.h"
#include "stagecraft/v1/worker.pb.h"
#include "telemetry_hub.h"
#include "worker_options.h"

namespace stagecraft::worker {

class StageRuntime;

/// What one Profile call may ask for: beyond these it is refused (INVALID_ARGUMENT), so no
/// caller can keep a worker timing for days.
constexpr int kMaxProfileRepeats = 100;
constexpr int kMaxProfileSizes = 16;
constexpr int kMaxProfileMicroBatch = 65536;

class WorkerNode {
 public:
  /// Runs the start-up benchmark (measured_gflops).
  explicit WorkerNode(WorkerOptions options);
  ~WorkerNode();

  /// The address peers and coordinators reach this worker at (after binding).
  void setAddress(const std::string& address);

  v1::WorkerInfo describe() const;
  const BlasInfo& blas() const { return blas_; }
  v1::HeartbeatReply heartbeat() const;
  /// Throws WorkerError(FailedPrecondition) while training.
  v1::DeviceProfile profile(const v1::ProfileRequest& request);
  /// Checks, sizes and builds the stage. Throws WorkerError: InvalidArgument,
  /// ResourceExhausted, FailedPrecondition while training.
  v1::DeployReply deploy(const v1::StageAssignment& assignment);
  /// Starts the training thread. Throws FailedPrecondition before Deploy, while
  /// training, or for another job.
  void start(const v1::StartRequest& request);
  /// The evaluation pass (StageRuntime::evaluate) on the calling thread, between training
  /// steps. Throws WorkerError: FailedPrecondition before Deploy, while training or for
  /// another job; InvalidArgument for a pass out of range.
  v1::EvaluateReply evaluate(const v1::EvaluateRequest& request);
  /// Stops training (if any) and waits for the thread; returns the step reached. With
  /// keep_state, the stage's state at that step joins this worker's own backups.
  v1::StopReply stop(const v1::StopRequest& request);
  /// Parameters and buffers, and with `optimizer_state` the optimizer's state too.
  v1::StageWeights weights(bool optimizer_state = false);
  void setWeights(const v1::StageWeights& weights);
  /// A peer's slice (Push); `finite` as PeerInbox::put takes it.
  void receive(v1::PeerTensor tensor, std::optional<bool> finite = std::nullopt);
  /// A neighbour's stage state (StoreBackup). Throws FailedPrecondition for a job other
  /// than the one deployed here.
  void holdBackup(v1::StageWeights state, const std::string& sender);
  std::vector<v1::BackupRef> backups(const std::string& job) const { return backups_.list(job); }
  /// A state held here, sent at the pace of the emulated NIC (--bandwidth-mbps). Throws
  /// NotFound when it is not held.
  v1::StageWeights backup(const v1::BackupRef& ref);
  /// An operation on the store of the group this worker is rank 0 of (GroupStore). Throws
  /// FailedPrecondition when no such group meets here (yet), or what the store throws.
  v1::GroupStoreReply groupStore(const v1::GroupStoreRequest& request);

  /// Whether the TorchScript file `ref` names is held here.
  v1::ModelFileStatus hasModelFile(const v1::ModelFileRef& ref) const;
  /// Where an arriving model file goes (PutModelFile).
  ModelCache& modelFiles() { return model_files_; }

  TelemetryHub& telemetry() { return hub_; }
  /// A coordinator called (Start, Stop, Deploy, Heartbeat, weights, a Telemetry stream
  /// opening or closing): the lease on a training job starts again.
  void touch();
  /// Stops training and ends every telemetry stream (server shutdown).
  void shutdown();

 private:
  enum class State { Invalid = 0, Idle, Deployed, Training };
  static const char* stateName(State state);
  std::shared_ptr<StageRuntime> deployed() const;
  void train(std::shared_ptr<StageRuntime> runtime, std::int64_t iterations);
  void joinTrainer();
  /// Stops a training job that no Telemetry stream watches and no coordinator called for
  /// --lease-s: its coordinator is gone (killed, or its machine or link down), and the job
  /// would otherwise train on unwatched and refuse every new run.
  void watchLease();
  /// Points a TorchScript model at this worker's copy of its file. Throws
  /// FailedPrecondition when the file is not held.
  void useCachedScript(v1::Model& model) const;

  WorkerOptions options_;
  BlasInfo blas_;
  std::string host_id_;
  double gflops_ = 0;
  double memory_limit_mb_ = 0;
  TelemetryHub hub_;
  PeerInbox inbox_;
  LinkPacer link_;  // the emulated NIC every outgoing message shares
  BackupStore backups_;
  BackupSender backup_sender_;
  ModelCache model_files_;

  std::mutex control_mutex_;  // serialises Deploy / Start / Stop / SetWeights
  mutable std::mutex mutex_;  // guards the fields below
  std::string address_;
  State state_ = State::Idle;
  std::string job_;
  std::shared_ptr<StageRuntime> runtime_;
  std::shared_ptr<GroupStoreHost> group_store_;  // when rank 0 of a group: its store
  std::string group_store_job_;
  int group_store_stage_ = -1;
  std::thread trainer_;
  std::chrono::steady_clock::time_point last_contact_ = std::chrono::steady_clock::now();

  std::mutex lease_mutex_;
  std::condition_variable lease_changed_;
  bool lease_closing_ = false;
  std::thread lease_thread_;
};

}  // namespace stagecraft::worker
