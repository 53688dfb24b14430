#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cost/cost_basis.h"
#include "cluster/cluster.h"
#include "control/assignments.h"
#include "control/coordinator.h"
#include "control/local_cluster.h"
#include "control/training_run.h"
#include "model/model_spec.h"
#include "plan/plan.h"
#include "planner/planner.h"
#include "sim/simulator.h"

namespace stagecraft::gui {

/// Where the console's one training job stands.
enum class TrainingState {
  Idle = 0,         ///< nothing deployed
  StartingCluster,  ///< starting local workers
  StoppingCluster,  ///< stopping them
  Profiling,        ///< workers timing the model before deploying
  Deploying,        ///< sending stage assignments
  Deployed,         ///< every member holds its stage; not trained yet
  Training,
  Stopping,         ///< stop() asked; the run ends at the next step boundary
  Stopped,          ///< the run ended (stopped or all steps done); start() continues it
  Replanning,       ///< collecting weights and deploying a new plan
};

/// The console's one way to drive training: the blocking core calls (LocalCluster,
/// Coordinator) run on the controller's own thread, results come back as signals on the
/// thread that owns the controller. Commands are refused (false, and failed()) in a state
/// that does not allow them.
///
/// The run itself is a control::TrainingRun, the same one `stagecraft-cli run` drives: it
/// trains in short segments (about half a second each), so stop() and applyReplan() take
/// effect at a step boundary with every stage at the same step, and it recovers by itself
/// from a lost device (deviceLost(), then replanApplied() with the plan over the survivors).
class TrainingController : public QObject {
  Q_OBJECT

 public:
  explicit TrainingController(QObject* parent = nullptr);
  /// Cancels a run (the workers are stopped), stops the local workers this controller
  /// started and waits for its thread.
  ~TrainingController() override;

  TrainingState state() const { return state_; }
  /// The state as a user reads it ("Training"...).
  static QString stateText(TrainingState state);
  /// A line a worker logged, in the console's language when it is one workers send.
  static QString workerLine(const QString& text);
  /// The last step every member completed (the start step of a re-planned deployment).
  qint64 currentStep() const { return current_step_; }
  /// The step the run in progress (or the last one) trains to.
  qint64 targetStep() const { return target_step_; }
  /// The deployed plan, its cluster (with worker addresses) and its model; nullopt while
  /// nothing is deployed.
  std::optional<Plan> deployedPlan() const { return plan_; }
  std::optional<Cluster> deployedCluster() const { return cluster_; }
  /// Predicted samples/s of the deployed plan (simulated under the cost model it was
  /// deployed with, profiles included).
  double predictedSamplesPerSecond() const { return predicted_sps_; }
  /// What the deployed run prices plans with (its profiles, the speeds calibrated from
  /// training so far): the editor, the charts and the re-plan dialog use it too, so every
  /// prediction of one plan is one number. Specs until a deployment.
  const CostBasis& costBasis() const { return cost_basis_; }
  /// The local workers' cluster (addresses of the local workers), when they run.
  std::optional<Cluster> localCluster() const { return local_cluster_; }

  /// Deadlines for every coordinator call; takes effect at the next deploy().
  void setCoordinatorOptions(const control::CoordinatorOptions& options);
  /// The cluster token every call to a worker carries (the user's --token-file); empty: the
  /// one of the local workers when they run, else none. Takes effect at the next deploy().
  void setToken(const std::string& token);
  /// What calls to workers carry now: the user's token, else the local workers'.
  std::string workerToken() const;
  /// The stagecraft-worker startLocalCluster() runs; empty (default): $STAGECRAFT_WORKER,
  /// next to the application, or the PATH (control::findWorkerBinary).
  void setWorkerBinary(const QString& path);
  /// Profile the model on every member before deploying, at these micro-batch sizes (the
  /// plan's own is added), so the predicted samples/s use measured times. Off by default.
  void setProfileBeforeDeploy(bool enabled, const std::vector<int>& micro_batches = {1, 4, 16});
  /// From the next deployment: every `every_steps` steps (0: never) a forward pass over
  /// `samples` held-out samples (0: one global batch) measures accuracy: evaluated().
  void setEvaluation(qint64 every_steps, int samples = 0);

  /// Starts one local worker per device of the cluster file, as `stagecraft-cli cluster up`
  /// does, or adopts those already running for it: localClusterStarted().
  bool startLocalCluster(const QString& cluster_path);
  /// Stops the local workers (a run in progress is cancelled first): localClusterStopped().
  bool stopLocalCluster();

  /// Profiles (when enabled) and deploys `plan` of `model` on `cluster` (devices with
  /// worker addresses); Deployed or failed().
  bool deploy(const Plan& plan, const ModelSpec& model, const Cluster& cluster,
              const control::TrainingOptions& options);
  /// Trains `steps` more steps: stepCompleted() for each, Stopped when done.
  bool start(qint64 steps);
  /// Ends the run at the next step boundary; Stopped with the step reached kept.
  bool stop();

  /// Plans again over the devices live now: the deployed cluster reduced to `live_devices`
  /// (all of its devices when empty), each device's speed calibrated from the latest
  /// telemetry, with planner `planner`, off the GUI thread: replanProposed() or failed().
  bool proposeReplan(const QString& planner, const PlanRequest& request, const QStringList& live_devices = {});
  /// Switches the job to `plan` over `cluster` (the calibrated cluster replanProposed()
  /// gave): stops at a step boundary, collects the weights, deploys them with the new plan
  /// at the step reached and, when a run was in progress, trains its remaining steps.
  /// `promise_sps`: what the re-plan is judged against instead of its prediction (going
  /// back to a plan: what it measured).
  bool applyReplan(const Plan& plan, const Cluster& cluster, std::optional<double> promise_sps = std::nullopt);
  /// While training: re-plans at the next step boundary over every device of the deployed
  /// run's cluster that answers now, taking in `devices` (named for the log) that joined or
  /// came back. Refused otherwise.
  bool includeDevices(const QString& devices);
  /// After the divergence guard stopped the run: trains on to the run's target at learning
  /// rate `lr` from the weights it went back to.
  bool continueWithLearningRate(double lr);
  /// When no step runs and a TorchScript model is deployed: writes the weights the workers
  /// hold now into a copy of its file at `path` (torch.jit.load loads it):
  /// modelExported() or failed().
  bool exportModel(const QString& path);
  /// Whether the deployed model came from a TorchScript file (exportModel() can write it).
  bool canExportModel() const { return model_ && model_->proto().has_script(); }
  /// The most iteration reports ever posted to this thread and not yet shown at once: the
  /// bound (1024) holds however far behind this thread falls.
  int reportsInFlightPeak() const { return reports_in_flight_peak_.load(); }

 Q_SIGNALS:
  void stateChanged(stagecraft::gui::TrainingState state);
  /// costBasis() and predictedSamplesPerSecond() changed: a deployment, a re-plan, a recovery.
  void predictionChanged();
  /// A phase's progress: `done` of `total` (total 0: no measure).
  void progress(const QString& text, int done, int total);
  void localClusterStarted(const stagecraft::Cluster& cluster);
  void localClusterStopped();
  /// One pipeline step: its mean loss, measured samples/s, the plan's predicted samples/s
  /// and the seconds since start().
  void stepCompleted(qint64 step, double loss, double measured_samples_per_second,
                     double predicted_samples_per_second, double seconds);
  /// A member's report of one iteration: its busy fraction, memory and timeline, with
  /// TimelineEvent::device (and peer) as indices into deployedCluster().
  void iterationReported(const QString& device, double busy_fraction, double memory_mb,
                         const std::vector<stagecraft::TimelineEvent>& timeline);
  /// What the coordinator or a worker (`source`) says.
  void logMessage(const QString& source, QtMsgType level, const QString& text);
  /// A command failed; `message` is one sentence fit to show.
  void failed(const QString& message);
  /// The run reached its target step.
  void trainingFinished(qint64 step);
  /// Held-out samples after `step` steps: the share the model got right and their mean loss.
  void evaluated(qint64 step, double accuracy, double loss, qint64 samples);
  /// exportModel() wrote the model trained to `step` to `path`.
  void modelExported(const QString& path, qint64 step);
  /// `proposed` is over `calibrated` (the live devices); `current` is over `current_cluster`
  /// (every deployed device); both priced with `basis` (the run's, with the speeds measured
  /// now), as the figures are.
  void replanProposed(const stagecraft::Plan& current, const stagecraft::Plan& proposed,
                      double current_samples_per_second, double proposed_samples_per_second,
                      const stagecraft::Cluster& calibrated, const stagecraft::Cluster& current_cluster,
                      const stagecraft::CostBasis& basis);
  /// The job now runs `plan` over deployedCluster(), continuing at `step`: after
  /// applyReplan() or a recovery.
  void replanApplied(const stagecraft::Plan& plan, qint64 step);
  /// A device was lost (or stalled) after step `failed_after`; the run goes on from `step`
  /// as `action` says ("group": its group's survivors take its samples, "replan": a new plan
  /// over the devices left, "retry": it answers again). `device` may name several,
  /// comma-separated.
  void deviceLost(const QString& device, const QString& action, qint64 failed_after, qint64 step);
  /// The run completed its first step after a loss or re-plan, `seconds` after noticing it.
  void recovered(const QString& device, qint64 step, double seconds);
  /// The divergence guard stopped the run at `step` (its loss `loss`); the workers hold the
  /// weights of `kept_step`; training used learning rate `lr`. State Stopped.
  void diverged(qint64 step, double loss, qint64 kept_step, double lr);
  /// `device` has computed `slower_by` times slower than the plan expected, next to the
  /// others, for several steps; `plan` over `cluster` is predicted `gain` times faster (0:
  /// no plan found). `applying`: the run re-plans onto it by itself.
  void stragglerNoticed(const QString& device, double slower_by, double gain, bool applying,
                        const stagecraft::Plan& plan, const stagecraft::Cluster& cluster);
  /// Calibrated from training, `plan` over `cluster` (the deployed devices) is predicted
  /// `predicted` samples/s against the running plan's `current`: applyReplan(plan, cluster)
  /// switches to it.
  void betterPlanFound(const stagecraft::Plan& plan, const stagecraft::Cluster& cluster, double predicted,
                       double current);
  /// The re-plan applied after step `from_step` promised `promised` samples/s and measured
  /// `measured` by step `judged_step`, more than 15 % short; the plan before it, `previous`
  /// over `previous_cluster`, measured `before` (0: not measured). applyReplan(previous,
  /// previous_cluster, before) goes back.
  void promiseMissed(qint64 from_step, qint64 judged_step, double promised, double measured, double before,
                     const stagecraft::Plan& previous, const stagecraft::Cluster& previous_cluster);

 private:
  struct Deployment;  // what the controller's thread deploys and trains

  bool refuse(const QString& message);
  bool settled() const;  // Idle, Deployed or Stopped: no job runs or waits
  void setState(TrainingState state);
  void enqueue(std::function<void()> job);
  void toGui(std::function<void()> fn);
  void runJobs();

  // On the controller's thread.
  void startLocalJob(const std::string& path);
  void stopLocalJob();
  void deployJob(Plan plan, ModelSpec model, Cluster cluster, control::TrainingOptions options);
  void trainJob(std::int64_t target, bool continuing = false);  // continuing: after a re-plan
  void replanJob(control::ReplanRequest request, bool resume, std::int64_t target);
  control::RunEvents runEvents();
  /// Re-prices the deployed plan with the speeds training measured (predictionChanged(),
  /// betterPlanFound() when another plan is clearly faster); on the controller's thread.
  void calibrate(Deployment& d);
  void fail(const std::string& message, TrainingState next);
  void publishDeployment();
  void onIteration(std::uint64_t generation, int member, int device, const v1::IterationReport& report);

  // GUI-thread view (changed only by posted functions).
  TrainingState state_ = TrainingState::Idle;
  qint64 current_step_ = 0;
  qint64 target_step_ = 0;
  std::optional<Plan> plan_;
  std::optional<Cluster> cluster_;
  std::optional<ModelSpec> model_;
  std::optional<Cluster> local_cluster_;
  std::string local_token_;  // of local_cluster_
  double predicted_sps_ = 0;
  CostBasis cost_basis_;
  std::vector<v1::IterationReport> latest_reports_;  // per member of the deployed plan
  std::uint64_t shown_generation_ = 0;
  std::thread planner_;
  std::atomic<bool> planning_{false};
  std::thread advisor_;  // calibrate()'s search for a better plan (started on the controller's thread)
  std::atomic<bool> advising_{false};  // advisor_ is still searching

  // Settings, read by the controller's thread when a job starts.
  mutable std::mutex settings_mutex_;
  control::CoordinatorOptions coordinator_options_;
  std::string worker_binary_;
  std::string token_;
  bool profile_before_deploy_ = false;
  qint64 eval_every_ = 10;
  int eval_samples_ = 0;
  std::vector<int> profile_sizes_{1, 4, 16};

  // The controller's thread and what only it touches.
  std::unique_ptr<Deployment> deployment_;
  std::optional<control::LocalCluster> local_;
  std::string local_worker_token_;  // local_'s token, read once when it starts (local_token_ is the GUI's copy)
  bool local_owned_ = false;

  // Between the threads.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  bool training_ = false;  // TrainingRun::train() runs: stop / applyReplan are requests to it
  control::TrainingRun* active_run_ = nullptr;  // while training_
  bool quit_ = false;
  std::atomic<bool> cancel_{false};  // hard cancel: the coordinator stops the workers mid-step
  // Iteration reports posted to the GUI thread and not yet shown: beyond the bound a report
  // is dropped, and counted, rather than queued without end behind a GUI that falls behind.
  static constexpr int kMaxReportsInFlight = 1024;
  std::atomic<int> reports_in_flight_{0};
  std::atomic<int> reports_in_flight_peak_{0};  // written by the controller's thread only
  std::atomic<std::int64_t> reports_dropped_{0};  // this train(); logged when it ends
  std::thread thread_;
};

}  // namespace stagecraft::gui
