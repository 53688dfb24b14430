#pragma once

// A stand-in for stagecraft-worker that speaks the Worker protocol without LibTorch:
// it records what the coordinator sends and streams scripted telemetry, so the
// coordinator and the CLI can be tested on loopback in milliseconds.

#include <grpcpp/server.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "control/backup_schedule.h"
#include "stagecraft/v1/worker.grpc.pb.h"

namespace stagecraft::testing {

struct FakeWorkerScript {
  std::string name = "fake";
  std::string tier = "edge";
  double slowdown = 1;
  double bandwidth_mbps = 0;
  double memory_mb = 1024;
  /// Reported as each step's iteration time; the fake also waits this long per step.
  double iteration_ms = 2;
  /// Telemetry for `step`; the default reports an iteration whose loss (last stage only)
  /// falls with the step and covers this member's samples.
  std::function<std::vector<v1::TelemetryEvent>(std::int64_t step, const v1::StageAssignment&)> events;
  std::int64_t error_at_step = -1;     ///< sends an error event instead of this step
  std::int64_t silent_from_step = -1;  ///< sends nothing from this step on (a hung worker)
  std::int64_t close_at_step = -1;     ///< ends its telemetry stream at this step
  std::int64_t die_at_step = -1;       ///< the process ends at once at this step (a SIGKILLed worker)
  std::chrono::milliseconds describe_delay{0};
  std::string host_id;                 ///< WorkerInfo.host_id (empty: not reported)
  std::function<void()> on_profile;    ///< runs inside each Profile call, before it answers
  std::string token;                   ///< every call must carry this cluster token (empty: none)
  bool refuse_restore = false;         ///< a Deploy naming restore sources fails (they are gone)
};

/// The default telemetry of `step`: one IterationReport.
v1::TelemetryEvent defaultIteration(std::int64_t step, const v1::StageAssignment& assignment, double iteration_ms);

class FakeWorker final : public v1::Worker::Service {
 public:
  explicit FakeWorker(FakeWorkerScript script);
  ~FakeWorker() override;

  grpc::Status Describe(grpc::ServerContext*, const v1::DescribeRequest*, v1::WorkerInfo*) override;
  grpc::Status Profile(grpc::ServerContext*, const v1::ProfileRequest*, v1::DeviceProfile*) override;
  grpc::Status Deploy(grpc::ServerContext*, const v1::StageAssignment*, v1::DeployReply*) override;
  grpc::Status Start(grpc::ServerContext*, const v1::StartRequest*, v1::StartReply*) override;
  grpc::Status Stop(grpc::ServerContext*, const v1::StopRequest*, v1::StopReply*) override;
  grpc::Status Telemetry(grpc::ServerContext*, const v1::TelemetryRequest*,
                         grpc::ServerWriter<v1::TelemetryEvent>*) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest*, v1::HeartbeatReply*) override;
  /// One float per layer of its stage, "<layer>.weight" = 1000 * step + layer (plus
  /// "<layer>.weight#momentum_buffer" with the optimizer's state), at the step it reached.
  grpc::Status GetWeights(grpc::ServerContext*, const v1::GetWeightsRequest*, v1::StageWeights*) override;
  grpc::Status SetWeights(grpc::ServerContext*, const v1::StageWeights*, v1::SetWeightsReply*) override;
  /// Backups as a worker keeps them, only more (see backUp): rank 0 keeps its last 8 states
  /// (the weights GetWeights would give at that step) and sends each to backup_to; up to 8
  /// of a neighbour's are held. Deploy forgets them.
  grpc::Status StoreBackup(grpc::ServerContext*, const v1::StageWeights*, v1::StoreBackupReply*) override;
  grpc::Status ListBackups(grpc::ServerContext*, const v1::ListBackupsRequest*, v1::BackupList*) override;
  grpc::Status GetBackup(grpc::ServerContext*, const v1::BackupRef*, v1::StageWeights*) override;
  /// The last stage's members score their share of every micro-batch asked for: right
  /// for the first `step` samples of each pass (capped at all), so accuracy grows with
  /// training; the loss is 1 / (1 + step).
  grpc::Status Evaluate(grpc::ServerContext*, const v1::EvaluateRequest*, v1::EvaluateReply*) override;

  void setAddress(std::string address) { address_ = std::move(address); }
  /// OK, or UNAUTHENTICATED without script.token.
  grpc::Status authorize(const grpc::ServerContext* context) const;
  /// Ends every Telemetry call, for a server shutting down.
  void shutdown();

  std::optional<v1::StageAssignment> assignment() const;
  /// The steps rank 0 backs up after: the deployment's, as the last Start changed them.
  control::BackupSchedule backupSchedule() const;
  int starts() const;
  /// The keep_backup_step of every Start taken, in order.
  std::vector<std::int64_t> keptBackupSteps() const;
  int stops() const;
  /// Stops that kept the state at the step reached (StopRequest.keep_state).
  int statesKept() const;
  int profiles() const;
  int weightRequests() const;
  /// States held for neighbours (StoreBackup calls taken).
  int backupsHeld() const;
  std::int64_t step() const { return step_; }

 private:
  void train(std::int64_t first, std::int64_t last);
  void publish(const v1::TelemetryEvent& event);
  void finishTraining();
  /// The fake's weights of its stage at `step`; the caller holds mutex_.
  v1::StageWeights weightsAt(std::int64_t step, bool optimizer_state) const;
  void backUp(std::int64_t step, const v1::StageAssignment& assignment);
  /// Whether `ref` is held here (own, or a neighbour's copy); the caller holds mutex_.
  bool holdsOwn(const v1::BackupRef& ref) const;
  const v1::StageWeights* heldCopy(const v1::BackupRef& ref) const;
  bool holds(const v1::BackupRef& ref) const;

  FakeWorkerScript script_;
  std::string address_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::optional<v1::StageAssignment> assignment_;
  control::BackupSchedule backup_;  // the steps rank 0 backs up after
  std::vector<std::deque<v1::TelemetryEvent>*> subscribers_;
  int writing_ = 0;  // telemetry events taken from a queue and not yet written
  std::thread trainer_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> training_{false};  ///< between Start and the run's end (finished or failed)
  std::atomic<std::int64_t> step_{0};
  bool shutdown_ = false;
  bool close_streams_ = false;
  int starts_ = 0;
  std::vector<std::int64_t> kept_backup_steps_;
  int stops_ = 0;
  int states_kept_ = 0;
  int profiles_ = 0;
  int weight_requests_ = 0;
  int evaluations_ = 0;
  std::deque<std::int64_t> own_backups_;      // steps, oldest first
  std::deque<v1::StageWeights> held_backups_;  // a neighbour's, oldest first
  int backups_held_ = 0;
  std::unique_ptr<v1::Worker::Stub> backup_stub_;
};

/// A FakeWorker served on 127.0.0.1:`port` (0: a free one).
class FakeWorkerServer {
 public:
  explicit FakeWorkerServer(FakeWorkerScript script, int port = 0);
  ~FakeWorkerServer();
  std::string address() const { return address_; }
  FakeWorker& worker() { return *worker_; }
  void shutdown();
  void wait() { server_->Wait(); }

 private:
  std::unique_ptr<FakeWorker> worker_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  bool down_ = false;
};

}  // namespace stagecraft::testing
