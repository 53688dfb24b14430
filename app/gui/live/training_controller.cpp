#include "live/training_controller.h"

#include <QCoreApplication>
#include <QDir>
#include <QLoggingCategory>
#include <QMetaObject>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>

#include "control/replan.h"
#include "cost/cost_model.h"
#include "io/error.h"
#include "live/training_deployment.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcTrainingController, "stagecraft.gui.trainingcontroller")

namespace {

/// Members of a plan as the coordinator numbers them (buildAssignments): stage order,
/// then member order.
int memberCount(const Plan& plan) {
  int n = 0;
  for (const Stage& stage : plan.stages) n += static_cast<int>(stage.members.size());
  return n;
}

/// Whether every device of `cluster` that has an address is one of `local`'s workers.
bool servedLocally(const Cluster& cluster, const control::LocalCluster& local) {
  for (const Device& device : cluster.devices()) {
    if (device.address.empty()) continue;
    const auto& workers = local.state().workers();
    if (std::none_of(workers.begin(), workers.end(), [&](const auto& w) { return w.address() == device.address; })) {
      return false;
    }
  }
  return true;
}

}  // namespace

TrainingController::TrainingController(QObject* parent) : QObject(parent) {
  thread_ = std::thread([this] { runJobs(); });
}

TrainingController::~TrainingController() {
  cancel_ = true;
  {
    std::lock_guard lock(mutex_);
    quit_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (planner_.joinable()) planner_.join();
  if (advisor_.joinable()) advisor_.join();
}

QString TrainingController::stateText(TrainingState state) {
  switch (state) {
    case TrainingState::Idle: return tr("Idle");
    case TrainingState::StartingCluster: return tr("Starting local workers");
    case TrainingState::StoppingCluster: return tr("Stopping local workers");
    case TrainingState::Profiling: return tr("Profiling");
    case TrainingState::Deploying: return tr("Deploying");
    case TrainingState::Deployed: return tr("Deployed");
    case TrainingState::Training: return tr("Training");
    case TrainingState::Stopping: return tr("Stopping");
    case TrainingState::Stopped: return tr("Stopped");
    case TrainingState::Replanning: return tr("Re-planning");
  }
  return {};
}

void TrainingController::setCoordinatorOptions(const control::CoordinatorOptions& options) {
  std::lock_guard lock(settings_mutex_);
  coordinator_options_ = options;
}

void TrainingController::setToken(const std::string& token) {
  std::lock_guard lock(settings_mutex_);
  token_ = token;
}

std::string TrainingController::workerToken() const {
  {
    std::lock_guard lock(settings_mutex_);
    if (!token_.empty()) return token_;
  }
  return local_cluster_ ? local_token_ : std::string();
}

void TrainingController::setWorkerBinary(const QString& path) {
  std::lock_guard lock(settings_mutex_);
  worker_binary_ = path.toStdString();
}

void TrainingController::setProfileBeforeDeploy(bool enabled, const std::vector<int>& micro_batches) {
  std::lock_guard lock(settings_mutex_);
  profile_before_deploy_ = enabled;
  profile_sizes_ = micro_batches;
}

// ---- commands (GUI thread) ----
//
// Jobs run one after another on the controller's thread, and each posts its final state
// last; a command accepted in a settled state therefore queues behind nothing unfinished.

bool TrainingController::settled() const {
  return state_ == TrainingState::Idle || state_ == TrainingState::Deployed || state_ == TrainingState::Stopped;
}

bool TrainingController::refuse(const QString& message) {
  qCWarning(lcTrainingController) << message;
  Q_EMIT failed(message);
  return false;
}

bool TrainingController::startLocalCluster(const QString& cluster_path) {
  if (local_cluster_) return refuse(tr("Local workers are already running; stop them first."));
  if (!settled()) return refuse(tr("Cannot start local workers while %1.").arg(stateText(state_).toLower()));
  setState(TrainingState::StartingCluster);
  enqueue([this, path = cluster_path.toStdString()] { startLocalJob(path); });
  return true;
}

bool TrainingController::stopLocalCluster() {
  if (!local_cluster_ && state_ != TrainingState::StartingCluster) {
    return refuse(tr("No local workers are running."));
  }
  cancel_ = true;  // a run on them ends now, mid-step: they are going away
  enqueue([this] { stopLocalJob(); });
  return true;
}

bool TrainingController::deploy(const Plan& plan, const ModelSpec& model, const Cluster& cluster,
                                const control::TrainingOptions& options) {
  if (!settled()) return refuse(tr("Cannot deploy while %1.").arg(stateText(state_).toLower()));
  setState(TrainingState::Deploying);
  enqueue([this, plan, model, cluster, options] { deployJob(plan, model, cluster, options); });
  return true;
}

bool TrainingController::start(qint64 steps) {
  if (steps <= 0) return refuse(tr("Train at least one step."));
  const bool can = state_ == TrainingState::Deployed || state_ == TrainingState::Stopped;
  if (!can) return refuse(tr("Cannot start training while %1.").arg(stateText(state_).toLower()));
  target_step_ = current_step_ + steps;
  setState(TrainingState::Training);
  enqueue([this, target = static_cast<std::int64_t>(target_step_)] { trainJob(target); });
  return true;
}

bool TrainingController::stop() {
  bool training = false;
  {
    std::lock_guard lock(mutex_);
    training = training_;
    if (training) active_run_->requestStop();
  }
  if (!training) return refuse(tr("Nothing is training."));
  setState(TrainingState::Stopping);
  return true;
}

// ---- the controller's thread ----

void TrainingController::setState(TrainingState state) {
  if (state_ == state) return;
  state_ = state;
  qCInfo(lcTrainingController) << "state:" << stateText(state);
  Q_EMIT stateChanged(state);
}

void TrainingController::enqueue(std::function<void()> job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_all();
}

void TrainingController::toGui(std::function<void()> fn) {
  QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection);
}

void TrainingController::runJobs() {
  std::unique_lock lock(mutex_);
  while (true) {
    wake_.wait(lock, [&] { return quit_ || !jobs_.empty(); });
    if (quit_) break;
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    try {
      job();
    } catch (const std::exception& e) {
      // The coordinator has stopped the workers; what was deployed cannot go on.
      deployment_.reset();
      fail(e.what(), TrainingState::Idle);
    }
    lock.lock();
  }
  lock.unlock();
  // Closing: whatever runs on the workers stops; local workers this controller started go.
  deployment_.reset();
  if (local_ && local_owned_) {
    try {
      local_->stop();
    } catch (const std::exception& e) {
      qCWarning(lcTrainingController) << "stopping the local workers:" << e.what();
    }
  }
}

void TrainingController::fail(const std::string& message, TrainingState next) {
  const QString text = QString::fromStdString(message);
  qCWarning(lcTrainingController) << text;
  toGui([this, text, next] {
    Q_EMIT logMessage(tr("coordinator"), QtCriticalMsg, text);
    if (next == TrainingState::Idle) {
      plan_.reset();
      cluster_.reset();
      model_.reset();
    }
    setState(next);
    Q_EMIT failed(text);
  });
}

void TrainingController::startLocalJob(const std::string& path) {
  control::LocalClusterOptions options;
  {
    std::lock_guard lock(settings_mutex_);
    options.worker_binary = worker_binary_;
  }
  const Cluster file = Cluster::load(path);
  std::optional<control::LocalCluster> running = control::LocalCluster::find(file.name());
  if (running && running->anyAlive()) {
    local_owned_ = false;
    toGui([this, name = QString::fromStdString(file.name())] {
      Q_EMIT logMessage(tr("coordinator"), QtInfoMsg,
                        tr("Using the local workers already running for cluster %1; they read data files only inside the "
                           "--data-dir they were started with.")
                            .arg(name));
    });
  } else {
    options.worker_binary = control::findWorkerBinary(
        options.worker_binary, QCoreApplication::applicationFilePath().toStdString());
    // Local workers run as this user: they may read data files from the user's home.
    options.data_dir = QDir::homePath().toStdString();
    // Started for this console: they end with it, even when it crashes.
    options.end_with_this_process = true;
    const int n = file.size();
    toGui([this, n] { Q_EMIT progress(tr("Starting %1 local workers.").arg(n), 0, n); });
    running = control::LocalCluster::start(file, path, options);
    local_owned_ = true;
  }
  local_ = std::move(running);
  const Cluster applied = local_->apply(file);
  local_worker_token_ = local_->state().token_file().empty() ? std::string() : local_->token();
  toGui([this, applied, token = local_worker_token_] {
    local_cluster_ = applied;
    local_token_ = token;
    Q_EMIT progress(tr("%1 local workers answer.").arg(applied.size()), applied.size(), applied.size());
    setState(TrainingState::Idle);
    Q_EMIT localClusterStarted(applied);
  });
}

void TrainingController::stopLocalJob() {
  toGui([this] { setState(TrainingState::StoppingCluster); });
  deployment_.reset();
  cancel_ = false;
  if (local_) {
    local_->stop();
    local_.reset();
  }
  local_worker_token_.clear();
  toGui([this] {
    local_cluster_.reset();
    local_token_.clear();
    plan_.reset();
    cluster_.reset();
    model_.reset();
    setState(TrainingState::Idle);
    Q_EMIT localClusterStopped();
  });
}

void TrainingController::publishDeployment() {
  const control::TrainingRun& run = *deployment_->run;
  deployment_->predicted = run.predictedSamplesPerSecond();
  deployment_->calibrate_at = run.step() + kCalibrateAfterSteps;
  deployment_->calibrated = false;
  const int members = memberCount(run.plan());
  toGui([this, plan = run.plan(), cluster = run.deployedCluster(), model = run.model(),
         sps = run.predictedSamplesPerSecond(), basis = run.costBasis(), step = run.step(),
         generation = deployment_->generation, members] {
    plan_ = plan;
    cluster_ = cluster;
    model_ = model;
    predicted_sps_ = sps;
    cost_basis_ = basis;
    current_step_ = step;
    target_step_ = std::max(target_step_, static_cast<qint64>(step));
    shown_generation_ = generation;
    latest_reports_.assign(static_cast<size_t>(members), v1::IterationReport{});
    Q_EMIT predictionChanged();
  });
}

void TrainingController::setEvaluation(qint64 every_steps, int samples) {
  std::lock_guard lock(settings_mutex_);
  eval_every_ = std::max<qint64>(0, every_steps);
  eval_samples_ = std::max(0, samples);
}

void TrainingController::deployJob(Plan plan, ModelSpec model, Cluster cluster, control::TrainingOptions options) {
  control::CoordinatorOptions coordinator_options;
  control::RunSettings run_settings;
  bool profile = false;
  std::vector<int> sizes;
  {
    std::lock_guard lock(settings_mutex_);
    run_settings.eval_every = eval_every_;
    run_settings.eval_samples = eval_samples_;
    coordinator_options = coordinator_options_;
    coordinator_options.token = token_;
    profile = profile_before_deploy_;
    sizes = profile_sizes_;
  }
  // The local workers' token goes only to them, not to another cluster's workers.
  if (coordinator_options.token.empty() && local_ && servedLocally(cluster, *local_)) {
    coordinator_options.token = local_worker_token_;
  }
  cancel_ = false;
  const std::uint64_t generation = deployment_ ? deployment_->generation + 1 : 1;
  deployment_.reset();
  // Evaluated file data keep a tenth out of training (as the CLI's --holdout).
  if (run_settings.eval_every > 0 && options.data != "synthetic" && options.holdout == 0) options.holdout = 0.1;
  auto run = std::make_unique<control::TrainingRun>(cluster, model, plan.optimizer, options, coordinator_options,
                                                    run_settings);
  if (profile) {
    toGui([this, n = cluster.size()] {
      setState(TrainingState::Profiling);
      Q_EMIT progress(tr("Profiling the model on %1 workers.").arg(n), 0, n);
    });
    if (plan.microBatchSize() > 0) sizes.push_back(plan.microBatchSize());
    // As `run` does: a re-plan may give one device a whole batch, and past the largest size
    // timed the cost model scales in proportion, which misses large products' efficiency.
    if (plan.batch_size > 0) sizes.push_back(plan.batch_size);
    std::sort(sizes.begin(), sizes.end());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    run->profile(sizes, 3, [this](const std::string& device, int done, int total) {
      toGui([this, device = QString::fromStdString(device), done, total] {
        Q_EMIT progress(tr("Profiled %1.").arg(device), done, total);
      });
    });
  }

  const int members = memberCount(plan);
  toGui([this, members] {
    setState(TrainingState::Deploying);
    Q_EMIT progress(tr("Deploying the plan to %1 workers.").arg(members), 0, members);
  });
  run->deploy(plan);
  deployment_ = std::make_unique<Deployment>(Deployment{std::move(run), generation, {}});
  const QString job = QString::fromStdString(deployment_->run->deployment().job());
  publishDeployment();
  toGui([this, members, job] {
    Q_EMIT progress(tr("Deployed job %1 to %2 workers.").arg(job).arg(members), members, members);
    Q_EMIT logMessage(tr("coordinator"), QtInfoMsg, tr("Deployed job %1 to %2 workers.").arg(job).arg(members));
    setState(TrainingState::Deployed);
  });
}

void TrainingController::trainJob(std::int64_t target, bool continuing) {
  if (!deployment_) throw std::logic_error("nothing is deployed");
  Deployment& d = *deployment_;
  {
    std::lock_guard lock(mutex_);
    training_ = true;
    active_run_ = d.run.get();
  }
  if (!continuing) d.run_started = Clock::now();
  reports_dropped_ = 0;
  control::RunResult result;
  try {
    result = d.run->train(target, runEvents(), &cancel_);
  } catch (...) {
    std::lock_guard lock(mutex_);
    training_ = false;
    active_run_ = nullptr;
    throw;
  }
  {
    std::lock_guard lock(mutex_);
    training_ = false;
    active_run_ = nullptr;
  }
  const auto count = [](std::int64_t n) { return static_cast<int>(std::min<std::int64_t>(n, INT_MAX)); };
  if (const int workers = count(result.telemetry_dropped), here = count(reports_dropped_); workers + here > 0) {
    toGui([this, workers, here] {
      Q_EMIT logMessage(tr("coordinator"), QtWarningMsg,
                        tr("%n telemetry report(s) dropped because the console fell behind, so the charts have "
                           "gaps (%1 by the workers, %2 here).", "", workers + here)
                            .arg(workers)
                            .arg(here));
    });
  }
  const std::int64_t step = d.run->step();
  if (result.cancelled) {
    // Cancelled mid-step: the stages may stand at different steps, so the deployment
    // cannot continue.
    deployment_.reset();
    toGui([this, step] {
      Q_EMIT logMessage(tr("coordinator"), QtWarningMsg,
                        tr("Training was cancelled after step %1; deploy again to continue.").arg(step));
      plan_.reset();
      cluster_.reset();
      model_.reset();
      setState(TrainingState::Idle);
    });
    return;
  }
  if (result.diverged) {
    const control::Divergence dv = *result.diverged;
    const double lr = d.run->learningRate();
    toGui([this, dv, lr, target] {
      current_step_ = dv.kept_step;
      target_step_ = target;
      Q_EMIT logMessage(tr("coordinator"), QtCriticalMsg,
                        tr("Training diverged at step %1 (%2): stopped; the workers went back to the weights of step %3.")
                            .arg(dv.step)
                            .arg(std::isfinite(dv.loss) ? tr("the loss %1 is %2x its running level %3")
                                                              .arg(dv.loss, 0, 'g', 4)
                                                              .arg(dv.level > 0 ? dv.loss / dv.level : 0, 0, 'f', 0)
                                                              .arg(dv.level, 0, 'g', 4)
                                                        : tr("the loss is not finite"))
                            .arg(dv.kept_step));
      setState(TrainingState::Stopped);
      Q_EMIT diverged(dv.step, dv.loss, dv.kept_step, lr);
    });
    return;
  }
  toGui([this, step, target] {
    current_step_ = step;
    setState(TrainingState::Stopped);
    if (step >= target) Q_EMIT trainingFinished(step);
  });
}

bool TrainingController::continueWithLearningRate(double lr) {
  if (!deployment_ && !plan_) return refuse(tr("Deploy a plan before training."));
  if (state_ != TrainingState::Stopped) return refuse(tr("Cannot change the learning rate while %1.").arg(stateText(state_).toLower()));
  if (!(lr > 0)) return refuse(tr("The learning rate must be positive."));
  setState(TrainingState::Training);
  enqueue([this, lr, target = static_cast<std::int64_t>(target_step_)] {
    deployment_->run->setLearningRate(lr);
    toGui([this, lr] {
      Q_EMIT logMessage(tr("coordinator"), QtInfoMsg,
                        tr("Training goes on at learning rate %1 from step %2.").arg(lr).arg(current_step_));
    });
    trainJob(target, true);
  });
  return true;
}

// ---- re-planning ----

bool TrainingController::proposeReplan(const QString& planner_name, const PlanRequest& request,
                                       const QStringList& live_devices) {
  if (!plan_ || !cluster_ || !model_) return refuse(tr("Deploy a plan before re-planning."));
  if (planning_) return refuse(tr("A re-plan is already being computed."));
  std::shared_ptr<const Planner> planner;
  try {
    planner = makePlanner(planner_name.toStdString());
  } catch (const std::exception& e) {
    return refuse(QString::fromStdString(e.what()));
  }
  std::vector<std::string> live;
  for (const QString& name : live_devices) live.push_back(name.toStdString());
  if (planner_.joinable()) planner_.join();
  planning_ = true;
  planner_ = std::thread([this, plan = *plan_, cluster = *cluster_, model = *model_, reports = latest_reports_,
                          basis = cost_basis_, planner = std::move(planner), request, live = std::move(live)] {
    try {
      // The run's own costs (profiles, backups) with the speeds measured now: each member's
      // compute time against that prediction, as the run calibrates when it re-plans.
      CostBasis calibrated = basis;
      for (const auto& [name, f] :
           control::measuredFactors(plan, makeCostModel(model, cluster, plan.optimizer, basis, false), reports)) {
        calibrated.factors[name] = f;
      }
      const double current_sps =
          simulate(plan, makeCostModel(model, cluster, plan.optimizer, calibrated)).samples_per_second;
      const Cluster candidates = live.empty() ? cluster : control::restrictCluster(cluster, live);
      const CostModel cost = makeCostModel(model, candidates, plan.optimizer, calibrated);
      PlanOutcome outcome = makePlan(*planner, cost, request);
      if (!outcome.feasible) {
        const QString reason = outcome.reason.empty()
                                   ? tr("Planner %1 found no plan that fits the live devices.")
                                         .arg(QString::fromStdString(std::string(planner->name())))
                                   : QString::fromStdString(outcome.reason);
        toGui([this, reason] {
          planning_ = false;
          Q_EMIT failed(reason);
        });
        return;
      }
      const double proposed_sps = simulate(outcome.plan, cost).samples_per_second;
      toGui([this, plan, proposed = std::move(outcome.plan), current_sps, proposed_sps, candidates, cluster,
             calibrated] {
        planning_ = false;
        Q_EMIT replanProposed(plan, proposed, current_sps, proposed_sps, candidates, cluster, calibrated);
      });
    } catch (const std::exception& e) {
      toGui([this, text = QString::fromStdString(e.what())] {
        planning_ = false;
        Q_EMIT failed(text);
      });
    }
  });
  return true;
}

bool TrainingController::applyReplan(const Plan& plan, const Cluster& cluster, std::optional<double> promise_sps) {
  if (!plan_) return refuse(tr("Deploy a plan before re-planning."));
  const bool can = settled() || state_ == TrainingState::Training || state_ == TrainingState::Stopping;
  if (!can) return refuse(tr("Cannot re-plan while %1.").arg(stateText(state_).toLower()));
  bool training = false;
  {
    std::lock_guard lock(mutex_);
    training = training_;
    // The run re-plans at its next step boundary and goes on.
    if (training) {
      active_run_->requestReplan(control::ReplanRequest{plan, cluster, control::RecoveryKind::Manual, "", promise_sps});
    }
  }
  // A run that ended on its own a moment ago (its Stopped not here yet) still continues.
  const bool resume = !training && state_ == TrainingState::Training;
  if (training) return true;
  setState(TrainingState::Replanning);
  enqueue([this, request = control::ReplanRequest{plan, cluster, control::RecoveryKind::Manual, "", promise_sps}, resume,
           target = static_cast<std::int64_t>(target_step_)] { replanJob(request, resume, target); });
  return true;
}

bool TrainingController::includeDevices(const QString& devices) {
  std::lock_guard lock(mutex_);
  if (!training_) return false;
  control::ReplanRequest request;
  request.kind = control::RecoveryKind::Joined;
  request.devices = devices.toStdString();
  active_run_->requestReplan(std::move(request));
  return true;
}

void TrainingController::replanJob(control::ReplanRequest request, bool resume, std::int64_t target) {
  if (!deployment_) throw std::logic_error("nothing is deployed to re-plan");
  Deployment& d = *deployment_;
  const int members = request.plan ? memberCount(*request.plan) : 0;
  toGui([this, step = d.run->step(), members] {
    setState(TrainingState::Replanning);
    Q_EMIT progress(tr("Moving the weights at step %1 to %2 workers.").arg(step).arg(members), 0, 1);
  });
  d.run->replanNow(request);
  ++d.generation;
  publishDeployment();
  const std::int64_t step = d.run->step();
  toGui([this, plan = d.run->plan(), step, members, resume, target] {
    Q_EMIT progress(tr("The new plan runs on %1 workers from step %2.").arg(members).arg(step), 1, 1);
    Q_EMIT logMessage(tr("coordinator"), QtInfoMsg,
                      tr("Re-planned: %1 stages on %2 workers, continuing at step %3.")
                          .arg(plan.stageCount())
                          .arg(members)
                          .arg(step));
    Q_EMIT replanApplied(plan, step);
    setState(resume && step < target ? TrainingState::Training : TrainingState::Stopped);
  });
  if (resume && step < target) trainJob(target, true);
}

}  // namespace stagecraft::gui
