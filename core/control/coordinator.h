#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.h"
#include "control/assignments.h"
#include "control/backup_schedule.h"
#include "control/backups.h"
#include "control/replan.h"
#include "control/telemetry.h"
#include "control/worker_client.h"
#include "model/model_spec.h"
#include "plan/plan.h"
#include "stagecraft/v1/cluster.pb.h"
#include "stagecraft/v1/worker.pb.h"

namespace grpc {
class ClientContext;
}

namespace stagecraft::control {

/// Deadlines and limits. Nothing the coordinator does waits without one.
struct CoordinatorOptions {
  std::chrono::milliseconds call_timeout{10'000};      ///< Describe, Start, Stop, Heartbeat
  std::chrono::milliseconds profile_timeout{600'000};  ///< one worker timing a whole model
  std::chrono::milliseconds deploy_timeout{300'000};   ///< building and initialising a stage
  std::chrono::milliseconds subscribe_timeout{2'000};  ///< telemetry streams opening before Start
  std::chrono::milliseconds probe_after{5'000};        ///< a member silent this long gets a Heartbeat
  /// A member silent this long aborts the run, even one that still answers Heartbeat on its
  /// job (a worker wedged inside a step). One that stops answering is given up at once.
  std::chrono::milliseconds silence_limit{120'000};
  int max_message_bytes = kMaxWorkerMessageBytes;
  std::string token;  ///< the cluster token every call carries; empty: none (--insecure workers)
};

/// A device's worker as Describe found it, or why it could not.
struct WorkerProbe {
  WorkerEndpoint endpoint;
  bool reachable = false;
  bool timed_out = false;  ///< not reachable because it did not answer in time (a stalled process)
  v1::WorkerInfo info;
  std::string error;  ///< one line naming the worker, when not reachable
};

/// Called on the thread that runs wait() / train().
struct TrainingCallbacks {
  std::function<void(const StepResult&)> on_step;
  std::function<void(const std::string& worker, const std::string& text)> on_log;
  /// Every member's IterationReport as it arrives (before the step it completes, if any,
  /// reaches on_step). `member` indexes assignments(); memberDevice() maps it to the cluster.
  std::function<void(int member, const v1::IterationReport& report)> on_iteration;
  /// Polled with the cancel flag: true stops the workers mid-step and ends wait() as a
  /// cancel does (the caller knows why).
  std::function<bool()> halt;
};

struct TrainingResult {
  std::vector<StepResult> steps;  ///< in step order
  bool cancelled = false;         ///< the cancel flag ended the run; the workers were stopped
  double wall_seconds = 0;        ///< from Start to the end
  /// Iteration reports and log lines the workers dropped because this side fell behind
  /// reading them (each worker queues a bounded number per stream).
  std::int64_t telemetry_dropped = 0;
};

/// The coordinator's side of a training job: gRPC clients to the workers of a cluster
/// (Device::address), and the sequence describe -> profile -> deploy -> start ->
/// telemetry -> stop. Calls on all workers run in parallel; a failure of any worker is a
/// WorkerError whose message names it (see describeStatus).
///
/// Telemetry: one stream per deployed member, each read on its own thread into one
/// queue; wait() folds the queue into pipeline steps (TelemetryAggregator), probes a
/// silent member with Heartbeat, gives up on it when it does not answer (or no longer runs
/// the job) and, when it answers, after silence_limit. An error from any
/// worker stops all of them and ends the run with that worker's message.
/// What `Coordinator::stopJobs` found and did on one device's worker.
struct StopOutcome {
  std::string device;
  bool reachable = false;
  std::string error;         ///< why the worker did not answer (or refused the Stop)
  std::string job;           ///< the job it held, "" for none
  bool stopped = false;      ///< it was training that job and now is not
  std::int64_t step = 0;     ///< the step it stopped at
};

/// Device indices grouped by the machine their worker runs on (WorkerInfo.host_id, or the
/// address's host for a worker that does not say; every loopback address is one machine),
/// in order of first appearance.
std::vector<std::vector<int>> workersByMachine(const std::vector<v1::WorkerInfo>& infos);

class Coordinator {
 public:
  explicit Coordinator(Cluster cluster, CoordinatorOptions options = {});
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  const Cluster& cluster() const { return cluster_; }
  const CoordinatorOptions& options() const { return options_; }

  /// Describe on every device's worker; in cluster order. Throws WorkerError for the first
  /// device, in cluster order, whose worker fails, and Error for a device with no address.
  std::vector<v1::WorkerInfo> describe();
  /// Describe on every device's worker without throwing for one that fails, each within
  /// `deadline` (call_timeout when zero).
  std::vector<WorkerProbe> probe(std::chrono::milliseconds deadline = std::chrono::milliseconds(0));
  /// For the next wait(): a member silent for probe_after gets a Heartbeat (and is given up
  /// when it does not answer within about as long), and one silent for stall_limit that
  /// still answers on its job is named in a log line (on_log) once per silence: slow, not
  /// lost. A run that knows its step time probes after a few steps instead of the first
  /// limits; silence_limit stays the limit for a member that answers.
  void setSilenceLimits(std::chrono::milliseconds probe_after, std::chrono::milliseconds stall_limit);
  /// Stops whatever job every device's worker is training (only `job` when not empty), as a
  /// coordinator that crashed would have: a worker's state says whether it trains. Never
  /// throws for one worker; in cluster order.
  std::vector<StopOutcome> stopJobs(const std::string& job = {});

  /// Every device's worker times every layer of `model` at each micro-batch size. The
  /// answer names devices as the cluster does, ready for CostModel::setProfiles. Workers on
  /// different machines are timed at once, workers that share a machine (WorkerInfo.host_id)
  /// one after another.
  /// `on_profiled(device, done, total)`, when given, is called (from a coordinator thread)
  /// as each worker's profile arrives.
  using ProfileProgress = std::function<void(const std::string& device, int done, int total)>;
  v1::ProfileSet profile(const ModelSpec& model, std::span<const int> micro_batches, int repeats = 3,
                         const ProfileProgress& on_profiled = {});

  /// Sends each member of `plan` its StageAssignment (see buildAssignments) and returns
  /// the replies in the same order. Each stage group's c10d store gets a port that was
  /// free on this machine. When one member fails, the others are stopped again.
  std::vector<v1::DeployReply> deploy(const Plan& plan, const ModelSpec& model, const TrainingOptions& options);
  /// deploy() starting from `weights` (see collectWeights) instead of the seed: each member
  /// gets the tensors of its layer range, and the run continues at step weights.step, so
  /// step numbers go on where the last deployment stopped. options.start_step is ignored.
  std::vector<v1::DeployReply> deploy(const Plan& plan, const ModelSpec& model, const TrainingOptions& options,
                                      const ModelWeights& weights);
  /// deploy() starting from the backups of `choice` (see attachRestore; `holders` is the
  /// cluster its device indices are of): the members take them from their own stores or
  /// from the workers holding them, and the run continues at step choice.step.
  std::vector<v1::DeployReply> deploy(const Plan& plan, const ModelSpec& model, const TrainingOptions& options,
                                      const BackupChoice& choice, const Cluster& holders);
  /// The deployed model's weights (and, with `optimizer_state`, its optimizer's state) from
  /// the rank-0 member of each stage, for a deploy() of another plan. Call after a run has
  /// finished or been stopped. Throws WorkerError naming a worker that fails, Error when
  /// nothing is deployed or the stages stopped at different steps.
  ModelWeights collectWeights(bool optimizer_state = true);
  /// Has every member keep a copy of its stage's state at the step reached among its own
  /// backups (StopRequest.keep_state), for a deploy() from where the state is (listBackups,
  /// chooseBackups) at this step boundary. Call after a run has finished or been stopped.
  /// Returns the step. Throws WorkerError naming a worker that fails, Error when the stages
  /// stopped at different steps.
  std::int64_t keepStates();
  const std::vector<v1::StageAssignment>& assignments() const { return assignments_; }
  /// Deployed members (one per assignment).
  int memberCount() const { return static_cast<int>(member_device_.size()); }
  /// The cluster device (index into cluster()) that member `member` runs on.
  int memberDevice(int member) const { return member_device_.at(member); }
  const std::string& job() const { return job_; }
  /// The client of device `device`'s worker; throws Error for a device without an address.
  WorkerClient& workerClient(int device) { return client(device); }

  /// Opens the members' telemetry streams (waiting up to subscribe_timeout for them), then
  /// starts `iterations` steps on every member.
  void start(std::int64_t iterations);
  /// Runs until every member finished, `cancel` becomes true (the workers are stopped) or a
  /// worker fails (they are stopped too, and the WorkerError is thrown).
  TrainingResult wait(const TrainingCallbacks& callbacks = {}, const std::atomic<bool>* cancel = nullptr);
  /// The backup steps sent with every Start from now on (TrainingRun::pinBackups): one
  /// every stage is known to hold twice, and one the stages ship unskipped (0: none).
  void setBackupSteps(std::int64_t keep, std::int64_t ship) {
    keep_backup_step_ = keep;
    ship_backup_step_ = ship;
  }
  std::int64_t keepBackupStep() const { return keep_backup_step_; }
  std::int64_t shipBackupStep() const { return ship_backup_step_; }
  /// The backup steps sent with every Start from now on (every 0: as deployed).
  void setBackupSchedule(BackupSchedule schedule) { backup_schedule_ = schedule; }
  /// start() then wait().
  TrainingResult train(std::int64_t iterations, const TrainingCallbacks& callbacks = {},
                       const std::atomic<bool>* cancel = nullptr);
  /// Stop on every member, in parallel; closes the telemetry streams. Throws the first
  /// failure after trying all.
  void stop();

  /// What an evaluation pass measured (the last stage's members summed).
  struct Evaluation {
    std::int64_t step = 0;     ///< the weights after this many steps
    std::int64_t samples = 0;  ///< scored (tokens for a language model)
    std::int64_t correct = 0;
    double loss_sum = 0;
    double accuracy() const { return samples > 0 ? static_cast<double>(correct) / samples : 0; }
    double loss() const { return samples > 0 ? loss_sum / samples : 0; }
  };
  /// A forward-only pass over `micro_batches` micro-batches (of the deployed plan's size)
  /// of held-out samples on every member at once, between training runs. When a member
  /// fails, the others are stopped (released from waiting on it) and its WorkerError is
  /// thrown; the job stays deployed.
  Evaluation evaluate(int micro_batches);

 private:
  struct StreamItem {
    enum class Kind { Invalid = 0, Event, Closed };
    Kind kind = Kind::Invalid;
    int member = -1;
    v1::TelemetryEvent event;
    int status_code = 0;
    std::string status_message;
  };
  struct Stream {
    std::unique_ptr<grpc::ClientContext> context;
    std::thread thread;
  };

  WorkerClient& client(int device);
  std::vector<v1::DeployReply> deployAssignments(const Plan& plan, std::vector<v1::StageAssignment> assignments,
                                                 const std::string& job);
  WorkerClient& memberClient(int member) { return client(member_device_[member]); }
  void openStreams();
  void readTelemetry(int member);
  void closeStreams();
  /// Stop on every member but those on device `skip` (one that just failed to answer in
  /// time: waiting for it again would only delay the others).
  void stopQuietly(const std::string& skip = {});
  [[noreturn]] void abortRun(const WorkerError& error);

  Cluster cluster_;
  CoordinatorOptions options_;
  std::chrono::milliseconds stall_limit_;  ///< see setSilenceLimits
  std::vector<std::unique_ptr<WorkerClient>> clients_;  // per device; null without an address

  // The deployment.
  std::string job_;
  int batch_size_ = 0;
  std::vector<v1::StageAssignment> assignments_;
  std::vector<int> member_device_;
  std::vector<bool> member_last_stage_;

  // Telemetry: filled by the stream threads, drained by wait().
  std::vector<Stream> streams_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<StreamItem> queue_;
  std::vector<bool> subscribed_;
  std::chrono::steady_clock::time_point started_at_;
  std::int64_t keep_backup_step_ = 0, ship_backup_step_ = 0;
  BackupSchedule backup_schedule_;
};

}  // namespace stagecraft::control
