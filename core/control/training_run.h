#pragma once
// One training run from its first deployment to its last step, shared by the CLI and the
// console: deploy, train in short segments (so stops and re-plans land on a step boundary
// with every stage at the same step), have the stages back their state up on neighbour
// devices, and react, by itself, to a lost device (re-plan over the survivors and replay
// from the newest backup) or, on request, to a manual re-plan. Blocking calls on the caller's thread; requests from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/cluster.h"
#include "control/backup_meter.h"
#include "control/backup_schedule.h"
#include "control/coordinator.h"
#include "control/divergence.h"
#include "control/promise.h"
#include "control/replan.h"
#include "control/step_window.h"
#include "control/stragglers.h"
#include "cost/cost_basis.h"
#include "cost/cost_model.h"
#include "model/model_spec.h"
#include "plan/plan.h"
#include "planner/planner.h"

namespace stagecraft::control {

/// Why a run changed its plan.
enum class RecoveryKind { Lost, Stalled, Joined, Straggler, Manual };
std::string_view recoveryKindName(RecoveryKind kind);  ///< "lost", "stalled", ...

/// One change of plan while training, and what it cost.
struct Recovery {
  std::string device;  ///< the device lost or stalled (several: comma-separated); "" for manual
  std::string reason;  ///< the failure that revealed it (one line, names the worker)
  RecoveryKind kind = RecoveryKind::Lost;
  /// "group": the survivors of the lost device's stage group took its samples, the cuts
  /// stayed; "replan": a new plan over the live devices; "retry": a member that stalled
  /// answers again, the same plan replays from the backup.
  std::string action;
  std::int64_t failed_after = 0;  ///< the last step every stage completed before the failure
  std::int64_t step = 0;          ///< the step training continued from (the backup's)
  std::int64_t replayed_steps = 0;  ///< completed steps computed again (failed_after - step)
  /// Where the state replayed from came from: the workers that held each stage's backup,
  /// "checkpoint or deployment" when none was usable.
  std::string backup;
  double detected_ms = 0;   ///< from the last completed step to noticing the failure
  double recovered_ms = 0;  ///< from noticing it to the first step completed afterwards
  /// Where recovered_ms went before the first step: asking who is left, finding (and
  /// fetching) the state to replay from, choosing the plan, deploying it.
  double probe_ms = 0;
  double state_ms = 0;
  double plan_ms = 0;
  double deploy_ms = 0;
  /// Live devices that hold none of the state and that the best plan uses: the run resumed
  /// without them (RunSettings::resume_first) and takes them in at the next step boundary
  /// (a Joined re-plan). Comma-separated; empty when it resumed on the best plan.
  std::string joining;
  int stages = 0;           ///< of the plan that continued
  int devices = 0;          ///< of that plan
};

struct RunSettings {
  /// About how long one Start trains: stops and re-plans wait at most this long.
  std::chrono::milliseconds segment{500};
  /// Steps between backups: after every n-th step each stage's rank-0 member keeps its
  /// weights and optimizer state and sends a copy to a neighbour device, on a thread of its
  /// own (TrainingOptions::backup_every). A lost device's run replays from the newest step
  /// every stage still has. 0: none; the run then replays from its last checkpoint or
  /// deployment. kAutoBackups: as often as backup_budget allows, from what one round costs
  /// (backupCost, backupStride) against the step time (predicted, then measured); none for
  /// a plan of one device (no other device could hold them).
  static constexpr std::int64_t kAutoBackups = -1;
  std::int64_t backup_every = kAutoBackups;
  double backup_budget = 0.05;  ///< share of a step the backups may cost (kAutoBackups)
  bool recover = true;        ///< false: a lost device ends the run (WorkerError), as before
  int max_recoveries = 16;    ///< more failures than this end the run
  /// Describe deadline when finding out which devices are gone.
  std::chrono::milliseconds probe_deadline{2000};
  /// A member silent for this many step times (at least stall_floor) is probed and, if it
  /// does not answer, treated as stalled. Until a step time is known the coordinator's
  /// silence_limit holds.
  double stall_steps = 5;
  std::chrono::milliseconds stall_floor{3000};
  std::string planner = "hybrid";  ///< re-plans over survivors and manual re-plans
  /// After a loss, a fresh plan over the live devices replaces the old plan without the
  /// lost members only when predicted to finish the steps left at least this many times
  /// sooner, bringing its devices the state they lack included (keeping the cuts moves
  /// less and is what was tuned; a fresh plan may suit the survivors better).
  double replan_gain = 1.10;
  /// After a loss, when the best way on must first bring some device its state (a spare
  /// that holds none, fetching 50-100 MB over its link), resume at once on the fastest plan
  /// that moves nothing (among them the held states' boundaries on the devices holding
  /// them: planOnHeldState) where its first step is predicted to end sooner than the move
  /// and the best plan's first step, and re-plan at the next step boundary, once the run trains
  /// again, from the state where it is then: a Joined re-plan taking in the devices left out
  /// (Recovery::joining), or, when none were, a re-plan reported as the same loss.
  /// false: deploy the best plan at once, state moves included.
  bool resume_first = true;
  /// When set, a checkpoint (control/checkpoint.h) is written here, atomically, at a backup
  /// at least every `checkpoint_every` steps (0: at every backup), for `run --resume`.
  std::string checkpoint_dir;
  std::int64_t checkpoint_every = 0;
  /// Joins: every `join_check` at a step boundary, ask every device of cluster() that the
  /// deployment does not use; when some answer and a plan with them is predicted at least
  /// `replan_gain` times faster, re-plan onto them (a Joined recovery).
  bool elastic = false;
  /// Every this many steps (and at the end of train()), a forward pass over held-out samples
  /// measures accuracy: at least `eval_samples` of them, in micro-batches of the plan's
  /// size (0: one global batch). 0: never. A pass that fails is logged and skipped.
  std::int64_t eval_every = 0;
  int eval_samples = 0;
  std::chrono::milliseconds join_check{5000};
  /// Stragglers: a device whose compute is slower than the deployed plan expected, relative
  /// to the other devices, by more than straggler.slower_by for straggler.steps steps is
  /// reported (RunEvents::on_straggler) with the gain a re-plan over the deployed devices
  /// is predicted to bring; with auto_replan the run re-plans when that gain is at least
  /// replan_gain (a Straggler recovery).
  StragglerRule straggler;
  bool auto_replan = false;
  /// A re-plan (manual, a join, a straggler's) is judged `promise.steps` steps after it:
  /// measured throughput against the prediction it was chosen on (RunEvents::on_promise).
  PromiseRule promise;
  /// The divergence guard: a step whose loss is not finite or far above its running level
  /// stops the run at once; it goes back to the workers' backup from before that step (the
  /// last good weights) and train() returns with RunResult::diverged.
  DivergenceRule divergence;
};

/// A device slower than its plan expected (see RunSettings::straggler).
struct StragglerNotice {
  std::string device;      ///< several: comma-separated
  double slower_by = 0;    ///< the slowest one's compute over the plan's expectation, relative to the others
  std::int64_t step = 0;
  /// The current plan's predicted iteration time over a fresh plan's, both under the speeds
  /// measured now; 0 when no plan was found. The fresh plan and its cluster, for a re-plan.
  double gain = 0;
  std::optional<Plan> plan;
  std::optional<Cluster> cluster;
  bool applying = false;   ///< auto_replan: the run re-plans at the next step boundary
};

/// An evaluation pass on held-out samples (RunSettings::eval_every).
struct EvalResult {
  std::int64_t step = 0;  ///< after this many steps
  double accuracy = 0;    ///< share of the samples (tokens) whose top class is the label
  double loss = 0;        ///< mean over them
  std::int64_t samples = 0;
  double ms = 0;
};

/// Callbacks, all on the thread that calls TrainingRun::train().
struct RunEvents {
  std::function<void(const StepResult&)> on_step;  ///< a replayed step comes again
  std::function<void(const std::string& source, const std::string& text)> on_log;
  /// A member's IterationReport; deployedCluster().device(device) is its device.
  std::function<void(int member, int device, const v1::IterationReport&)> on_iteration;
  /// A new deployment during train(), after a recovery or a re-plan (plan(),
  /// deployedCluster() and deployment() describe it).
  std::function<void()> on_deployed;
  /// A device was lost or stalled: which, and what the run does about it (before redeploying).
  std::function<void(const Recovery&)> on_failure;
  /// A recovery or re-plan completed its first step; `recovered_ms` is filled.
  std::function<void(const Recovery&)> on_recovery;
  std::function<void(const StragglerNotice&)> on_straggler;
  /// The verdict on a re-plan, once per re-plan (see RunSettings::promise). When `missed`,
  /// requestReplan({previous, previous_cluster}) goes back to the plan before it.
  std::function<void(const PlanPromise&)> on_promise;
  /// An evaluation pass completed.
  std::function<void(const EvalResult&)> on_eval;
};

/// What train() ends with.
struct RunResult {
  std::vector<StepResult> steps;  ///< one per step of the run, replays counted once
  std::vector<Recovery> recoveries;
  bool cancelled = false;
  bool stopped = false;       ///< requestStop() ended it at a step boundary
  double wall_seconds = 0;
  double backup_ms = 0;       ///< time spent collecting the model for checkpoints and writing them
  /// The share of the step time the stages that take backups spent copying their state
  /// (the sending runs beside training), from the workers' timelines; 0 without backups.
  double backup_share = 0;
  /// What one backup cost the steps, measured (BackupMeter: the steps that carry it against
  /// those clear of it) on the last deployment; 0 when it could not be measured.
  double backup_measured_ms = 0;
  std::int64_t checkpoint_step = -1;  ///< of the last checkpoint written, -1 for none
  double training_ms = 0;     ///< time spent in segments
  /// Telemetry the workers dropped because the run read it too slowly (TrainingResult).
  std::int64_t telemetry_dropped = 0;
  /// The guard stopped the run: where, why, and the step it went back to (the run's step();
  /// `steps` ends there).
  std::optional<Divergence> diverged;
  std::vector<PlanPromise> promises;  ///< the verdicts on the re-plans of this train()
  std::vector<EvalResult> evals;      ///< in step order
};

/// A re-plan asked for by the user: this plan over this cluster (every device with a worker
/// address), or, with neither, whatever the planner finds best over the devices that answer
/// now, under the compute speeds measured so far.
struct ReplanRequest {
  std::optional<Plan> plan;
  std::optional<Cluster> cluster;
  RecoveryKind kind = RecoveryKind::Manual;  ///< Joined for an elastic join
  std::string devices;                       ///< the joining devices, for the report
  /// What the re-plan is judged against instead of the plan's prediction: going back to a
  /// plan, what it measured before (PlanPromise::before_sps).
  std::optional<double> promise_sps;
};

class TrainingRun {
 public:
  /// `cluster` is every device the run may use (with worker addresses); plans index it
  /// until a recovery or re-plan narrows it (deployedCluster()).
  TrainingRun(Cluster cluster, ModelSpec model, Optimizer optimizer, TrainingOptions options,
              CoordinatorOptions coordinator = {}, RunSettings settings = {});
  ~TrainingRun();
  TrainingRun(const TrainingRun&) = delete;
  TrainingRun& operator=(const TrainingRun&) = delete;

  const Cluster& cluster() const { return *cluster_; }
  const ModelSpec& model() const { return *model_; }
  Optimizer optimizer() const { return optimizer_; }
  /// The cluster-wide coordinator (Describe, Profile, stopJobs on every device).
  Coordinator& coordinator() { return *coordinator_; }

  /// Profiles every device (Coordinator::profile); the profiles then price every plan.
  void profile(std::span<const int> micro_batches, int repeats = 3, const Coordinator::ProfileProgress& progress = {});
  /// Profiles measured elsewhere (a file), for the devices the profile set names.
  void setProfiles(const v1::ProfileSet& profiles);
  /// The cost model of `over` (cluster() or a narrower one): the profiles for its devices,
  /// the backups' memory (with backups) and (with `calibrated`) the compute factors
  /// measured so far. Holds references to
  /// `over` and model().
  CostModel costModel(const Cluster& over, bool calibrated = true) const;
  /// What costModel() prices with: the profiles, the factors measured so far, the backups.
  CostBasis costBasis() const;
  /// costBasis() with the compute factors of the latest telemetry folded in first: what a
  /// re-plan would price with now. On train()'s thread (from its events) or between train()s.
  CostBasis calibratedBasis();

  /// Deploys `plan` (over cluster()) from the seed at options.start_step. Throws
  /// WorkerError / Error as Coordinator::deploy does.
  void deploy(const Plan& plan);
  /// Deploys `plan` over `over` from `weights` (a run that resumes).
  void deploy(const Plan& plan, const Cluster& over, const ModelWeights& weights);

  /// Trains until step `target` (absolute: the step every stage has completed), recovering
  /// from lost devices as RunSettings say. Throws WorkerError for a failure it cannot recover
  /// from (every device still answers, no plan fits the survivors, too many failures).
  RunResult train(std::int64_t target, const RunEvents& events = {}, const std::atomic<bool>* cancel = nullptr);

  /// Re-plans now, between two train() calls (a request during train() goes through
  /// requestReplan()): collects the weights, deploys the new plan from them.
  Recovery replanNow(const ReplanRequest& request);

  /// Trains on with learning rate `lr` from where the run stands (after a divergence: the
  /// weights it went back to, with the optimizer's state started afresh): redeploys the
  /// plan with the new rate. Between train() calls.
  void setLearningRate(double lr);
  double learningRate() const { return options_.lr; }

  /// From any thread: the run ends at its next step boundary (train() returns stopped).
  /// A stop asked for before train() starts is dropped.
  void requestStop();
  /// From any thread: the run re-plans at its next step boundary and goes on.
  void requestReplan(ReplanRequest request = {});

  // The deployment; valid after deploy(), changed only on train()'s thread.
  /// Collects the deployed job's weights and optimizer state now (between train() calls)
  /// and writes them as a checkpoint of the step reached to `dir` (control/checkpoint.h):
  /// what `run --export` and the console's export read. Throws std::logic_error when
  /// nothing is deployed, WorkerError or Error when a worker or the disk fails.
  void saveCheckpoint(const std::string& dir);
  const Plan& plan() const;
  const Cluster& deployedCluster() const;
  Coordinator& deployment();
  std::int64_t step() const { return step_; }
  /// Predicted samples/s of the deployed plan under costModel(deployedCluster()).
  double predictedSamplesPerSecond() const { return predicted_sps_; }
  /// Per device name, measured over predicted compute time (from the latest telemetry).
  const std::map<std::string, double>& computeFactors() const { return factors_; }
  /// The deployment's last few complete steps clear of backups (its first step left out),
  /// which the compute factors are the medians of.
  const StepWindow& recentSteps() const { return window_; }
  /// The step of the latest backup (the seed's start step before the first).
  std::int64_t backupStep() const { return backup_step_; }
  /// Steps between backups now (RunSettings::backup_every, or what kAutoBackups chose for
  /// the deployed plan); 0: none.
  std::int64_t backupEvery() const { return backup_schedule_.every; }
  /// Whether `step` (iterations done) is clear of the backups' copies, which slow the
  /// steps of the meter's window after one (BackupMeter::windowFor), so compute speeds may be
  /// calibrated from it; with backups closer than that no step is, and every step counts as
  /// clear as any.
  bool clearOfBackups(std::int64_t step) const;

 private:
  struct Deployed;

  /// A state the workers still hold, to deploy from where it is (see attachRestore).
  struct Restore {
    BackupChoice choice;
    std::shared_ptr<const Cluster> holders;  // the cluster choice's devices are of
    std::string where;                       // which worker held each stage's state
  };
  /// Deploys `plan` over `over` from `restore`, else `weights`, else the seed at
  /// backup_step_. Plan by value: it may be the deployed one.
  void install(Plan plan, std::shared_ptr<const Cluster> over, const ModelWeights* weights,
               const Restore* restore = nullptr);
  void takeBackup(RunResult& result);
  bool checkpointDue() const;
  /// The evaluation pass at the step reached (once per step), into result.evals.
  void evaluateNow(RunResult& result, const RunEvents& events);
  /// The newest state every stage still has on a live device (named in `live`), when newer
  /// than backup_: it becomes backup_. Returns where it came from.
  std::string gatherBackup(std::span<const std::string> live);
  /// The same state left where it is held, for install(); nullopt when none is newer.
  std::optional<Restore> findRestore(std::span<const std::string> live);
  /// At a step boundary: every member keeps its stage's state at the step reached
  /// (Coordinator::keepStates), left where it is for install(); nullopt when the stages do
  /// not all hold it (a worker that keeps no copies).
  std::optional<Restore> keepStateHere();
  /// Before a segment: the newest step every stage's workers hold twice (own and a
  /// neighbour's copy) is pinned on them, so however far the copies on the wire lag there is
  /// always a step to replay from. Costs a ListBackups to each device.
  void pinBackups();
  void writeCheckpointNow(RunResult& result);
  std::int64_t segmentSteps(std::int64_t target) const;
  std::int64_t target_ = 0;  // the step train() trains to
  void applySilenceLimits();
  void updateFactors();
  /// The run lost a device: returns the recovery, with the new deployment in place.
  Recovery recover(const WorkerError& error, double detected_ms, RunResult& result, const RunEvents& events);
  /// Every device of the run asked whether it answers; `failed` names the device whose
  /// error stopped the run.
  std::vector<WorkerProbe> probeSurvivors(const std::string& failed);
  Recovery replan(const ReplanRequest& request, RunResult& result);
  Plan planOver(const Cluster& over, const std::string& why) const;
  /// Devices that answer and are not deployed, when a plan with them is clearly faster.
  std::optional<ReplanRequest> joinCandidate();
  /// After each step: reports stragglers (and with auto_replan asks for a re-plan, applied
  /// at the end of the segment).
  void watchStragglers(const RunEvents& events);

  std::shared_ptr<const Cluster> cluster_;
  std::shared_ptr<const ModelSpec> model_;
  TrainingOptions options_;
  CoordinatorOptions coordinator_options_;
  RunSettings settings_;
  Optimizer optimizer_ = Optimizer::Sgd;
  std::unique_ptr<Coordinator> coordinator_;
  std::optional<v1::ProfileSet> profiles_;
  std::map<std::string, double> factors_;

  std::unique_ptr<Deployed> deployed_;
  std::int64_t step_ = 0;
  double step_ms_ = 0;  // wall time per step of the last segment; 0 before the first
  double predicted_sps_ = 0;
  std::vector<v1::IterationReport> latest_;  // per member of the deployment
  StepWindow window_;                        // its last complete steps, for the factors

  // The coordinator's backup: weights at backup_step_ (from a deployment, a re-plan, a
  // checkpoint or the workers' backups after a loss), or (none) the seed at backup_step_.
  std::optional<ModelWeights> backup_;
  std::int64_t backup_step_ = 0;
  BackupSchedule backup_schedule_;    // backupEvery(), and the steps it counts from
  std::int64_t last_backup_ = 0;      // the newest step the schedule backed up (or the deployment's first)
  std::int64_t scheduled_at_ = 0;     // the step backup_schedule_ was last looked at (pinBackups)
  std::int64_t first_backup_ = 0;     // the deployment's first backup step (kAutoBackups: early)
  BackupCost backup_cost_;            // of the deployed plan (kAutoBackups)
  double backup_copy_ms_ = 0, backup_step_ms_ = 0;  // for RunResult::backup_share
  BackupMeter backup_meter_;          // the deployment's backups as the step times show them
  std::int64_t checkpoint_step_ = 0;  // the last checkpoint's (or the start's) step
  std::int64_t eval_step_ = -1;       // the step last evaluated

  /// The guard tripped: back to the newest backup before the diverged step, installed.
  void goBackFrom(Divergence& divergence, RunResult& result);

  std::optional<ReplanRequest> follow_up_;  // the re-plan a recovery put off (resume_first)
  std::string rejected_joins_;  // the last set of joining devices that brought no gain
  DivergenceWatch divergence_;
  bool diverged_ = false;  // the last train() ended diverged: the workers hold backup_
  StragglerWatch stragglers_;
  PromiseWatch promises_;

  std::mutex requests_mutex_;
  bool stop_requested_ = false;
  std::optional<ReplanRequest> replan_requested_;
};

/// The deployment a TrainingRun trains (its own: defined here for the files that implement
/// TrainingRun).
struct TrainingRun::Deployed {
  Plan plan;
  std::shared_ptr<const Cluster> cluster;
  std::unique_ptr<Coordinator> coordinator;
  std::optional<CostModel> expected;  // what the plan was deployed under, for stragglers
};

}  // namespace stagecraft::control
