#include "control/training_run.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "control/backups.h"
#include "control/checkpoint.h"
#include "io/error.h"
#include "plan/validation.h"
#include "sim/simulator.h"

namespace stagecraft::control {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

double msSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

std::string_view recoveryKindName(RecoveryKind kind) {
  switch (kind) {
    case RecoveryKind::Lost: return "lost";
    case RecoveryKind::Stalled: return "stalled";
    case RecoveryKind::Joined: return "joined";
    case RecoveryKind::Straggler: return "straggler";
    case RecoveryKind::Manual: return "manual";
  }
  return "unknown";
}

TrainingRun::TrainingRun(Cluster cluster, ModelSpec model, Optimizer optimizer, TrainingOptions options,
                         CoordinatorOptions coordinator, RunSettings settings)
    : cluster_(std::make_shared<const Cluster>(std::move(cluster))),
      model_(std::make_shared<const ModelSpec>(std::move(model))),
      options_(std::move(options)),
      coordinator_options_(coordinator),
      settings_(std::move(settings)),
      optimizer_(optimizer),
      coordinator_(std::make_unique<Coordinator>(*cluster_, coordinator_options_)),
      step_(options_.start_step),
      backup_step_(options_.start_step),
      checkpoint_step_(options_.start_step),
      divergence_(settings_.divergence),
      promises_(settings_.promise) {}

TrainingRun::~TrainingRun() = default;

const Plan& TrainingRun::plan() const {
  if (!deployed_) throw std::logic_error("nothing is deployed");
  return deployed_->plan;
}

const Cluster& TrainingRun::deployedCluster() const {
  if (!deployed_) throw std::logic_error("nothing is deployed");
  return *deployed_->cluster;
}

Coordinator& TrainingRun::deployment() {
  if (!deployed_) throw std::logic_error("nothing is deployed");
  return *deployed_->coordinator;
}

void TrainingRun::profile(std::span<const int> micro_batches, int repeats,
                          const Coordinator::ProfileProgress& progress) {
  profiles_ = coordinator_->profile(*model_, micro_batches, repeats, progress);
}

void TrainingRun::setProfiles(const v1::ProfileSet& profiles) {
  CostModel check(*model_, *cluster_, optimizer_);
  check.setProfiles(profiles);  // throws for a profile of another model or an unknown device
  profiles_ = profiles;
}

CostModel TrainingRun::costModel(const Cluster& over, bool calibrated) const {
  return makeCostModel(*model_, over, optimizer_, costBasis(), calibrated);
}

CostBasis TrainingRun::costBasis() const {
  CostBasis basis;
  basis.profiles = profiles_;
  basis.factors = factors_;
  basis.backups = settings_.backup_every != 0;
  return basis;
}

CostBasis TrainingRun::calibratedBasis() {
  updateFactors();
  return costBasis();
}

void TrainingRun::deploy(const Plan& plan) {
  backup_.reset();
  backup_step_ = options_.start_step;
  install(plan, cluster_, nullptr);
}

void TrainingRun::deploy(const Plan& plan, const Cluster& over, const ModelWeights& weights) {
  backup_ = weights;
  backup_step_ = weights.step;
  install(plan, std::make_shared<const Cluster>(over), &weights);
}

void TrainingRun::install(Plan plan, std::shared_ptr<const Cluster> over, const ModelWeights* weights,
                          const Restore* restore) {
  follow_up_.reset();  // a new deployment: whoever it leaves out was left out on purpose
  auto coordinator = std::make_unique<Coordinator>(*over, coordinator_options_);
  const CostModel cost = costModel(*over);
  double predicted_ms = 0;
  try {
    predicted_ms = simulate(plan, cost).iteration_ms;
  } catch (const std::exception&) {
    predicted_ms = 0;  // a plan the simulator cannot price still trains
  }
  // Backups as often as their budget allows at the predicted step time, and no more often
  // than the meter's probe stride until their cost is measured; the measured step time and
  // cost adjust it before each segment (pinBackups).
  backup_cost_ = backupCost(plan, cost);
  // The first steps of a deployment fault every buffer in and are not a backup's doing.
  constexpr int kWarmSteps = 2;
  backup_meter_.reset(kWarmSteps, BackupMeter::windowFor(backup_cost_.link_ms, predicted_ms));
  // The deployment counts its backup steps from the step it starts at.
  const std::int64_t first = restore ? restore->choice.step : weights ? weights->step : backup_step_;
  // Backups are for a lost device's stage to come back from another device. A plan of one
  // device has none to send them to, and the copies it would keep itself serve a retry on
  // that device only, while the first of them cost its steps most (fresh pages: two such
  // copies took the local demo's 20-step run from 0.95 of its prediction to 0.78-0.87). In
  // auto it takes none; a checkpoint covers it.
  bool held_elsewhere = false;
  for (int s = 0; s < plan.stageCount(); ++s) held_elsewhere = held_elsewhere || plan.backupTarget(s) >= 0;
  backup_schedule_ = {settings_.backup_every >= 0 ? settings_.backup_every
                      : !held_elsewhere           ? 0
                                                  : std::max(backupStride(backup_cost_, predicted_ms,
                                                                          settings_.backup_budget),
                                                             backup_meter_.probeEvery()),
                      first};
  last_backup_ = scheduled_at_ = first;
  // In auto, the first backup comes right after the warm-up steps, whatever the stride: a
  // device lost before the first backup of a long stride would replay from the deployment
  // (20 steps in one bench run), and the meter sees its first backup's cost early.
  first_backup_ = first + backup_schedule_.every;
  if (settings_.backup_every < 0 && backup_schedule_.every > kWarmSteps + 1) {
    first_backup_ = first + kWarmSteps + 1;
    backup_schedule_.after = first_backup_ - backup_schedule_.every;
  }
  TrainingOptions options = options_;
  options.backup_every = backup_schedule_.every;
  if (restore) {
    coordinator->deploy(plan, *model_, options, restore->choice, *restore->holders);
  } else if (weights) {
    coordinator->deploy(plan, *model_, options, *weights);
  } else {
    options.start_step = backup_step_;
    coordinator->deploy(plan, *model_, options);
  }
  deployed_ = std::make_unique<Deployed>(Deployed{plan, std::move(over), std::move(coordinator), std::nullopt});
  deployed_->coordinator->setBackupSchedule(backup_schedule_);
  deployed_->expected.emplace(cost);
  stragglers_ = StragglerWatch(settings_.straggler);
  promises_.forget();  // replan() says when a deployment was chosen on a promise
  step_ = first;
  latest_.assign(static_cast<size_t>(deployed_->coordinator->memberCount()), v1::IterationReport{});
  window_ = StepWindow(deployed_->coordinator->memberCount(), kFactorSteps, first + 1);
  // A new plan has a step time of its own (slower without a lost fast device, and its
  // first step warms up): until it is measured, one-step segments under the user's limit.
  step_ms_ = 0;
  predicted_sps_ = predicted_ms > 0 ? plan.batch_size * 1000.0 / predicted_ms : 0;
}

void TrainingRun::applySilenceLimits() {
  if (!deployed_ || step_ms_ <= 0) return;
  // A few step times, but never less than the floor nor more than the user's limit.
  const auto few_steps = milliseconds(static_cast<std::int64_t>(std::ceil(settings_.stall_steps * step_ms_)));
  const milliseconds silence =
      std::min(std::max(few_steps, settings_.stall_floor), coordinator_options_.silence_limit);
  deployed_->coordinator->setSilenceLimits(std::min(coordinator_options_.probe_after, silence / 2), silence);
}

void TrainingRun::requestStop() {
  std::lock_guard lock(requests_mutex_);
  stop_requested_ = true;
}

void TrainingRun::requestReplan(ReplanRequest request) {
  std::lock_guard lock(requests_mutex_);
  replan_requested_ = std::move(request);
}

bool TrainingRun::checkpointDue() const {
  if (settings_.checkpoint_dir.empty() || step_ <= checkpoint_step_) return false;
  return settings_.checkpoint_every <= 0 || step_ - checkpoint_step_ >= settings_.checkpoint_every;
}

std::int64_t TrainingRun::segmentSteps(std::int64_t target) const {
  std::int64_t n = 1;
  if (step_ms_ > 0) {
    const double wanted = static_cast<double>(settings_.segment.count()) / step_ms_;
    n = std::clamp<std::int64_t>(std::llround(wanted), 1, 100'000);
  }
  n = std::min(n, target - step_);
  if (!settings_.checkpoint_dir.empty() && settings_.checkpoint_every > 0) {
    n = std::min(n, std::max<std::int64_t>(1, checkpoint_step_ + settings_.checkpoint_every - step_));
  }
  // Segments end where an evaluation is due.
  if (settings_.eval_every > 0) n = std::min(n, settings_.eval_every - step_ % settings_.eval_every);
  return std::max<std::int64_t>(n, 1);
}

void TrainingRun::takeBackup(RunResult& result) {
  const auto began = Clock::now();
  ModelWeights weights = deployed_->coordinator->collectWeights(true);
  result.backup_ms += msSince(began);
  backup_step_ = weights.step;
  backup_ = std::move(weights);
  if (checkpointDue()) writeCheckpointNow(result);
}

std::string TrainingRun::gatherBackup(std::span<const std::string> live) {
  if (settings_.backup_every == 0) return "checkpoint or deployment";
  std::string where;
  auto weights = gatherBackups(*deployed_->coordinator, live, step_, settings_.probe_deadline * 5, &where);
  if (!weights || weights->step <= backup_step_) return "checkpoint or deployment";
  backup_step_ = weights->step;
  backup_ = std::move(*weights);
  return where;
}

std::optional<TrainingRun::Restore> TrainingRun::findRestore(std::span<const std::string> live) {
  if (settings_.backup_every == 0) return std::nullopt;
  Coordinator& deployment = *deployed_->coordinator;
  const std::vector<std::string> names(live.begin(), live.end());
  const auto held = listBackups(deployment, &names, settings_.probe_deadline);
  std::optional<BackupChoice> choice = chooseBackups(stageRanges(deployment), held, step_);
  if (!choice || choice->step <= backup_step_) return std::nullopt;
  std::string where = describeBackups(*choice, *deployed_->cluster);
  return Restore{std::move(*choice), deployed_->cluster, std::move(where)};
}

void TrainingRun::writeCheckpointNow(RunResult& result) {
  const auto began = Clock::now();
  TrainingOptions options = options_;
  Plan plan = deployed_->plan;
  plan.optimizer = optimizer_;
  writeCheckpoint(settings_.checkpoint_dir,
                  makeCheckpoint(*backup_, *model_, plan, *deployed_->cluster, options));
  checkpoint_step_ = backup_step_;
  result.checkpoint_step = backup_step_;
  result.backup_ms += msSince(began);
}

void TrainingRun::evaluateNow(RunResult& result, const RunEvents& events) {
  if (step_ <= eval_step_ || !deployed_) return;
  const Plan& plan = deployed_->plan;
  const int size = std::max(1, plan.microBatchSize());
  const int micro_batches =
      settings_.eval_samples > 0 ? (settings_.eval_samples + size - 1) / size : std::max(1, plan.microbatches);
  const auto began = Clock::now();
  try {
    const Coordinator::Evaluation e = deployed_->coordinator->evaluate(micro_batches);
    EvalResult out{e.step, e.accuracy(), e.loss(), e.samples, msSince(began)};
    eval_step_ = e.step;
    result.evals.push_back(out);
    if (events.on_eval) events.on_eval(out);
  } catch (const WorkerError& e) {
    // Not the run's end: a lost device is the next segment's to find and recover from.
    eval_step_ = step_;
    if (events.on_log) events.on_log("coordinator", "evaluation after step " + std::to_string(step_) + " skipped: " + e.what());
  } catch (const Error& e) {
    eval_step_ = step_;
    if (events.on_log) events.on_log("coordinator", "evaluation after step " + std::to_string(step_) + " skipped: " + e.what());
  }
}

void TrainingRun::saveCheckpoint(const std::string& dir) {
  if (!deployed_) throw std::logic_error("TrainingRun::saveCheckpoint: nothing is deployed");
  Plan plan = deployed_->plan;
  plan.optimizer = optimizer_;
  writeCheckpoint(dir, makeCheckpoint(deployed_->coordinator->collectWeights(true), *model_, plan, *deployed_->cluster, options_));
}

void TrainingRun::updateFactors() {
  if (!deployed_) return;
  const CostModel uncalibrated = costModel(*deployed_->cluster, false);
  // The median over the last complete steps; the latest reports until there is one.
  const auto measured = window_.steps().empty() ? measuredFactors(deployed_->plan, uncalibrated, latest_)
                                                : measuredFactors(deployed_->plan, uncalibrated, window_.steps());
  for (const auto& [name, f] : measured) factors_[name] = f;
}

Plan TrainingRun::planOver(const Cluster& over, const std::string& why) const {
  const CostModel cost = costModel(over);
  const Plan& current = deployed_->plan;
  // The same global batch in as many micro-batches as before: the count the run was
  // planned (or told) to use. The cost model does not price a micro-batch's fixed costs
  // (dispatch, messages), so left to choose after calibration it can pick dozens of
  // one-sample micro-batches that are fast only on paper. Any count when that one fits
  // nowhere.
  const auto planner = makePlanner(settings_.planner);
  PlanOutcome outcome = makePlan(*planner, cost, PlanRequest{current.batch_size, current.microbatches, current.schedule});
  if (!outcome.feasible) outcome = makePlan(*planner, cost, PlanRequest{current.batch_size, 0, current.schedule});
  if (!outcome.feasible) {
    throw Error(why + ": planner '" + settings_.planner + "' found no plan over " + std::to_string(over.size()) +
                " devices" + (outcome.reason.empty() ? "" : " (" + outcome.reason + ")"));
  }
  return outcome.plan;
}

std::optional<TrainingRun::Restore> TrainingRun::keepStateHere() {
  Coordinator& deployment = *deployed_->coordinator;
  const std::int64_t at = deployment.keepStates();
  std::vector<std::string> names;
  for (const Device& d : deployed_->cluster->devices()) names.push_back(d.name);
  const auto held = listBackups(deployment, &names, settings_.probe_deadline);
  std::optional<BackupChoice> choice = chooseBackups(stageRanges(deployment), held, at);
  if (!choice || choice->step != at) return std::nullopt;
  std::string where = describeBackups(*choice, *deployed_->cluster);
  return Restore{std::move(*choice), deployed_->cluster, std::move(where)};
}

Recovery TrainingRun::replan(const ReplanRequest& request, RunResult& result) {
  Recovery rec;
  rec.kind = request.kind;
  rec.device = request.devices;
  rec.action = "replan";
  rec.failed_after = step_;
  rec.step = step_;
  updateFactors();
  auto phase = Clock::now();
  const auto phaseDone = [&phase](double& ms) {
    const auto now = Clock::now();
    ms += std::chrono::duration<double, std::milli>(now - phase).count();
    phase = now;
  };
  // The exact state at this boundary stays where it is: every member keeps a copy, and the
  // new plan's members take it from their own workers or fetch only the layers that change
  // device from the worker holding them (the coordinator collects the whole model only when
  // that cannot be arranged).
  std::optional<Restore> here = keepStateHere();
  if (!here) {
    ModelWeights weights = deployed_->coordinator->collectWeights(true);
    result.backup_ms += msSince(phase);
    backup_ = std::move(weights);
    backup_step_ = backup_->step;
  }
  phaseDone(rec.state_ms);

  std::shared_ptr<const Cluster> over;
  Plan next;
  if (request.plan) {
    over = request.cluster ? std::make_shared<const Cluster>(*request.cluster) : deployed_->cluster;
    next = *request.plan;  // the user's plan, device for device
  } else {
    std::vector<std::string> live;
    const std::vector<WorkerProbe> probes = coordinator_->probe(settings_.probe_deadline);
    for (int d = 0; d < cluster_->size(); ++d) {
      if (probes[d].reachable) live.push_back(cluster_->device(d).name);
    }
    over = std::make_shared<const Cluster>(restrictCluster(*cluster_, live));
    next = planOver(*over, "cannot re-plan");
    if (here) {
      // Among the arrangements of its stages, the one that moves the least state for its speed.
      const std::int64_t steps_left = std::max<std::int64_t>(target_ - step_, 1);
      next = placeNearState(std::move(next), *over, costModel(*over), here->choice, *here->holders, steps_left);
    }
  }
  rec.backup = here ? here->where : "the coordinator's copy";
  rec.stages = next.stageCount();
  for (const Stage& s : next.stages) rec.devices += static_cast<int>(s.members.size());
  phaseDone(rec.plan_ms);
  Plan previous = deployed_->plan;
  Cluster previous_cluster = *deployed_->cluster;
  const double before_sps = promises_.recentThroughput();
  install(next, over, here ? nullptr : &backup_.value(), here ? &*here : nullptr);
  if (here && backup_schedule_.every > 0) {
    // The copies this deployment started from are dropped at its first Start: its first
    // backup comes after its first step, so a loss soon after the re-plan does not replay
    // from an older one.
    first_backup_ = step_ + 1;
    backup_schedule_.after = first_backup_ - backup_schedule_.every;
    deployed_->coordinator->setBackupSchedule(backup_schedule_);
  }
  phaseDone(rec.deploy_ms);
  promises_.begin(request.promise_sps.value_or(predicted_sps_), before_sps, std::move(previous), std::move(previous_cluster), step_);
  return rec;
}

void TrainingRun::goBackFrom(Divergence& divergence, RunResult& result) {
  // The loss of step s comes from the weights after s - 1 steps: those after s - 2 are the
  // last known good. The stages stopped at most a step past s, their last three states kept.
  std::vector<std::string> deployed;
  for (const Device& d : deployed_->cluster->devices()) deployed.push_back(d.name);
  // The coordinator's own copy (a checkpoint's) may be of the weights that diverged.
  const bool held_too_new = backup_step_ > divergence.step - 2;
  for (const std::int64_t at_most : {divergence.step - 2, divergence.step - 1}) {
    if (settings_.backup_every == 0 || (!held_too_new && at_most <= backup_step_)) break;
    auto weights = gatherBackups(*deployed_->coordinator, deployed, at_most, settings_.probe_deadline * 5);
    if (weights && (held_too_new || weights->step > backup_step_)) {
      backup_step_ = weights->step;
      backup_ = std::move(*weights);
      break;
    }
  }
  divergence.kept_step = backup_step_;
  std::erase_if(result.steps, [&](const StepResult& s) { return s.step > backup_step_; });
  install(deployed_->plan, deployed_->cluster, backup_ ? &*backup_ : nullptr);
  // The losses seen up to the kept step stay the running level: a run that goes on and
  // diverges again is caught at once (the steps after it are replaced as they come again).
  diverged_ = true;
  if (!settings_.checkpoint_dir.empty() && backup_) writeCheckpointNow(result);
}

void TrainingRun::setLearningRate(double lr) {
  if (!(lr > 0) || !std::isfinite(lr)) throw Error("the learning rate must be positive");
  if (!deployed_) {
    options_.lr = lr;
    return;
  }
  if (!diverged_) {
    // The exact state at this boundary.
    ModelWeights weights = deployed_->coordinator->collectWeights(true);
    backup_step_ = weights.step;
    backup_ = std::move(weights);
  } else if (backup_) {
    // After a divergence the optimizer's state (momentum, Adam's moments) carries the
    // steps that blew up: the lower rate starts it afresh from the kept weights.
    for (auto& [layer, tensors] : backup_->layers) {
      std::erase_if(tensors, [](const v1::Tensor& t) { return t.name().find('#') != std::string::npos; });
    }
  }
  options_.lr = lr;
  install(deployed_->plan, deployed_->cluster, backup_ ? &*backup_ : nullptr);
  diverged_ = false;
}

Recovery TrainingRun::replanNow(const ReplanRequest& request) {
  if (!deployed_) throw std::logic_error("nothing is deployed to re-plan");
  RunResult scratch;
  return replan(request, scratch);
}

RunResult TrainingRun::train(std::int64_t target, const RunEvents& events, const std::atomic<bool>* cancel) {
  if (!deployed_) throw std::logic_error("nothing is deployed: call deploy() before train()");
  target_ = target;
  {
    std::lock_guard lock(requests_mutex_);
    stop_requested_ = false;
  }
  RunResult result;
  const auto started = Clock::now();
  auto last_join_check = Clock::now();
  auto last_progress = Clock::now();  // the last completed step (or the start)
  std::optional<Recovery> pending;    // a recovery waiting for its first step
  Clock::time_point pending_since;
  int failures = 0;
  std::optional<Divergence> diverged;
  diverged_ = false;

  TrainingCallbacks callbacks;
  callbacks.on_step = [&](const StepResult& s) {
    step_ = s.step;
    last_progress = Clock::now();
    result.steps.push_back(s);
    if (pending) {
      pending->recovered_ms = msSince(pending_since);
      result.recoveries.push_back(*pending);
      if (events.on_recovery) events.on_recovery(*pending);
      pending.reset();
    }
    backup_meter_.observe(s.step, s.iteration_ms, backup_schedule_.due(s.step));
    if (events.on_step) events.on_step(s);
    if (auto verdict = promises_.observe(s)) {
      result.promises.push_back(*verdict);
      if (events.on_promise) events.on_promise(*verdict);
    }
    if (!diverged) diverged = divergence_.observe(s.step, s.loss);
    if (step_ < target && !diverged) watchStragglers(events);
  };
  callbacks.halt = [&] { return diverged.has_value(); };
  callbacks.on_log = [&](const std::string& worker, const std::string& text) {
    if (events.on_log) events.on_log(worker, text);
  };
  callbacks.on_iteration = [&](int member, const v1::IterationReport& r) {
    if (member >= 0 && member < static_cast<int>(latest_.size())) latest_[member] = r;
    window_.add(member, r);
    bool backed_up = false;  // the copy's start, and a wait for it to finish when there was one
    for (const auto& e : r.timeline()) {
      if (e.kind() != "backup") continue;
      backup_copy_ms_ += std::max(0.0, e.end_ms() - e.start_ms());
      backed_up = true;
    }
    if (backed_up) backup_step_ms_ += r.iteration_ms();
    if (events.on_iteration) events.on_iteration(member, deployed_->coordinator->memberDevice(member), r);
  };

  while (true) {
    if (step_ >= target) {
      // Done; a user's re-plan asked for during the last segment still lands, so the run
      // ends on the plan asked for (it would otherwise wait for the next train()).
      std::lock_guard lock(requests_mutex_);
      if (!replan_requested_ || replan_requested_->kind != RecoveryKind::Manual) break;
    }
    if (cancel && cancel->load()) {
      result.cancelled = true;
      break;
    }
    std::optional<ReplanRequest> asked;
    bool stop = false;
    {
      std::lock_guard lock(requests_mutex_);
      stop = stop_requested_;
      stop_requested_ = false;
      asked = std::move(replan_requested_);
      replan_requested_.reset();
    }
    try {
      // A re-plan asked for together with a stop is applied first: the run stops on the
      // new plan.
      if (asked) {
        if (pending) result.recoveries.push_back(*pending);  // re-planned again before a step
        pending_since = Clock::now();
        pending = replan(*asked, result);
        if (events.on_deployed) events.on_deployed();
      }
      if (stop) {
        result.stopped = true;
        break;
      }
      if (asked) continue;
      const std::int64_t n = segmentSteps(target);
      pinBackups();
      const auto began = Clock::now();
      const TrainingResult segment = deployed_->coordinator->train(n, callbacks, cancel);
      result.telemetry_dropped += segment.telemetry_dropped;
      if (diverged) {
        goBackFrom(*diverged, result);
        result.diverged = diverged;
        break;
      }
      if (segment.cancelled) {
        result.cancelled = true;
        break;
      }
      const double ms = msSince(began);
      result.training_ms += ms;
      step_ms_ = ms / static_cast<double>(n);
      applySilenceLimits();
      if (settings_.eval_every > 0 && (step_ % settings_.eval_every == 0 || step_ >= target)) evaluateNow(result, events);
      if (step_ >= target && !settings_.checkpoint_dir.empty() && step_ > checkpoint_step_) {
        // The run's end is checkpointed too, so `run --resume` can take it further.
        takeBackup(result);
        if (checkpoint_step_ < step_) writeCheckpointNow(result);
      } else if (step_ < target && checkpointDue()) {
        takeBackup(result);
      }
      if (follow_up_ && !pending) {
        // The recovery resumed where the state was and has trained a step: the plan it put
        // off comes now (the devices it left out taken in), the state staying where it is
        // but for what the new plan needs.
        ReplanRequest follow_up = std::move(*follow_up_);
        follow_up_.reset();
        std::lock_guard lock(requests_mutex_);
        if (step_ < target && !replan_requested_) replan_requested_ = std::move(follow_up);  // a user's request wins
      }
      if (settings_.elastic && step_ < target && Clock::now() - last_join_check >= settings_.join_check) {
        last_join_check = Clock::now();
        if (auto join = joinCandidate()) {
          std::lock_guard lock(requests_mutex_);
          if (!replan_requested_) replan_requested_ = std::move(join);  // a user's request wins
        }
      }
    } catch (const WorkerError& e) {
      if (!settings_.recover || ++failures > settings_.max_recoveries) throw;
      const double detected_ms = msSince(last_progress);
      pending_since = Clock::now();
      if (pending) result.recoveries.push_back(*pending);  // failed again before a step
      pending = recover(e, detected_ms, result, events);
      if (events.on_deployed) events.on_deployed();
    }
  }
  if (pending) result.recoveries.push_back(*pending);
  result.wall_seconds = msSince(started) / 1000.0;
  result.backup_share = backup_step_ms_ > 0 ? backup_copy_ms_ / backup_step_ms_ : 0;
  result.backup_measured_ms = backup_meter_.costMs().value_or(0);
  return result;
}

}  // namespace stagecraft::control
