// TrainingRun's reactions to a cluster that changes under it while training: devices that
// join (elastic runs), devices that fall behind their plan (stragglers), the backup step
// kept for a device that may yet be lost, who is left when one is, and the recovery.
#include <algorithm>
#include <cmath>
#include <exception>
#include <thread>

#include "control/backups.h"
#include "control/training_run.h"
#include "io/error.h"
#include "plan/validation.h"
#include "sim/simulator.h"

namespace stagecraft::control {
namespace {

using Clock = std::chrono::steady_clock;

/// "[0,5) d1 | [5,8) d2 d3": a plan's stages and their members, for a log line.
std::string layoutText(const Plan& plan, const Cluster& over) {
  std::string text;
  for (const Stage& s : plan.stages) {
    text += (text.empty() ? "[" : " | [") + std::to_string(s.layer_begin) + "," + std::to_string(s.layer_end) + ")";
    for (const DeviceShare& m : s.members) text += " " + over.device(m.device).name;
  }
  return text;
}

}  // namespace

bool TrainingRun::clearOfBackups(std::int64_t step) const {
  return backup_schedule_.clearOf(step, backup_meter_.window());
}

void TrainingRun::pinBackups() {
  // None asked for, or none chosen (a plan of one device: install).
  if (settings_.backup_every == 0 || backup_schedule_.every == 0) return;
  Coordinator& deployment = *deployed_->coordinator;
  // The last segment's backups, under the schedule it ran with.
  const std::int64_t done = backup_schedule_.lastIn(scheduled_at_, step_);
  if (done > 0) last_backup_ = done;
  const bool backed_up_now = done > 0 && done == step_;
  scheduled_at_ = step_;
  if (settings_.backup_every < 0 && step_ms_ > 0) {
    // The stride the budget allows at the step time measured now, and at the backups' cost
    // as the steps showed it once they have, never below the model's price
    // (BackupMeter::stride). Until it is measured, backups leave steps clear of them between,
    // so that it can be. Measured step times wander from segment to segment; the stride
    // follows only a move of more than a quarter, so the backups come at a steady pace.
    const std::int64_t stride = backup_meter_.stride(backup_cost_, step_ms_, settings_.backup_budget);
    const std::int64_t every = backup_schedule_.every;
    if (every <= 0 || stride * 4 < every * 3 || stride * 4 > every * 5) {
      // A deployment's first backup, not taken yet, stays where it was put (install).
      backup_schedule_ = step_ < first_backup_ ? BackupSchedule{stride, first_backup_ - stride}
                                               : BackupSchedule::next(stride, last_backup_, step_);
      deployment.setBackupSchedule(backup_schedule_);
    }
  }
  // Between segments, so briefly: a device that does not answer now is the segment's to find.
  // Only each stage's rank-0 member (its own copies) and its backup target (the copies it
  // holds) are asked, not every member of a wide group.
  const Plan& plan = deployed_->plan;
  std::vector<std::string> holders;
  for (int s = 0; s < plan.stageCount(); ++s) {
    for (const int d : {plan.stages[s].members.front().device, plan.backupTarget(s)}) {
      if (d < 0) continue;
      const std::string& name = deployment.cluster().device(d).name;
      if (std::find(holders.begin(), holders.end(), name) == holders.end()) holders.push_back(name);
    }
  }
  const auto held =
      listBackups(deployment, &holders, std::min(settings_.probe_deadline, std::chrono::milliseconds(500)));
  std::int64_t keep = deployment.keepBackupStep(), ship = deployment.shipBackupStep();
  if (const auto twice = twiceHeldStep(stageRanges(deployment), held); twice && *twice > keep) keep = *twice;
  if (ship <= keep) ship = 0;  // it arrived everywhere (or a newer step did)
  // Copies that keep up leave a recent step held twice by themselves; a step to ship
  // unskipped (the one every stage has just backed up) is named only when they fall behind,
  // since it goes before the newer copies and so makes the usual replay longer.
  constexpr std::int64_t kBehindSteps = 2;
  if (ship == 0 && step_ - keep > kBehindSteps && backed_up_now) ship = step_;
  deployment.setBackupSteps(keep, ship);
}

std::vector<WorkerProbe> TrainingRun::probeSurvivors(const std::string& failed) {
  std::vector<WorkerProbe> probes = coordinator_->probe(settings_.probe_deadline);
  // The device whose failure stopped the run and refuses a connection is gone. Any other
  // device that refuses is asked once more a moment later before it is given up: a process
  // that is gone refuses again, a connection that was being re-established answers.
  std::vector<int> doubtful;
  for (int d = 0; d < static_cast<int>(probes.size()); ++d) {
    if (!probes[d].reachable && !probes[d].timed_out && probes[d].endpoint.name != failed) doubtful.push_back(d);
  }
  if (doubtful.empty()) return probes;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::vector<WorkerProbe> again = coordinator_->probe(settings_.probe_deadline);
  for (int d : doubtful) {
    if (again[d].reachable) probes[d] = again[d];
  }
  return probes;
}

Recovery TrainingRun::recover(const WorkerError& first_error, double detected_ms, RunResult& result,
                              const RunEvents& events) {
  Recovery rec;
  rec.failed_after = step_;
  rec.detected_ms = detected_ms;
  updateFactors();
  std::optional<WorkerError> error = first_error;
  for (int attempt = 0;; ++attempt) {
    // Who is gone: every device of the run asked at once, with a short deadline.
    auto phase = Clock::now();
    const std::vector<WorkerProbe> probes = probeSurvivors(error->worker());
    const auto phaseDone = [&phase](double& ms) {
      const auto now = Clock::now();
      ms += std::chrono::duration<double, std::milli>(now - phase).count();
      phase = now;
    };
    phaseDone(rec.probe_ms);
    const Cluster& current = *deployed_->cluster;
    std::vector<std::string> lost, live, kept;
    std::string why_lost;  // each lost device's own answer, for the report
    bool all_timed_out = true;
    const std::vector<int> stage_of = deployed_->plan.stageOfDevice(current.size());
    const std::string& job = deployed_->coordinator->job();
    for (int d = 0; d < cluster_->size(); ++d) {
      const std::string& name = cluster_->device(d).name;
      const auto in_plan = current.find(name);
      const bool planned = in_plan && stage_of[*in_plan] >= 0;
      // A device of the plan that answers without the job has lost its stage's state: its
      // worker was restarted, or another process now listens at its address. It is lost
      // to this recovery (an elastic run may take it in again later).
      const bool without_job = planned && probes[d].reachable && probes[d].info.job() != job;
      if (probes[d].reachable && !without_job) {
        live.push_back(name);
        if (in_plan) kept.push_back(name);
      } else if (planned) {
        lost.push_back(name);
        all_timed_out = all_timed_out && probes[d].timed_out;
        if (without_job) {
          why_lost += "; worker '" + name + "' (" + probes[d].endpoint.address + ") answers without job '" + job +
                      "' (restarted, or another worker at its address)";
        } else if (name != error->worker()) {
          why_lost += "; " + probes[d].error;
        }
      }
    }
    std::shared_ptr<const Cluster> over;
    std::optional<Plan> next;
    // The newest state every stage still has, left on the workers that hold it: each new
    // member takes what it lacks straight from them.
    std::optional<Restore> restore;
    // The re-plan at the next step boundary when the run resumes on a plan that moves
    // nothing rather than the best one (RunSettings::resume_first).
    std::optional<ReplanRequest> follow_up;
    rec.joining.clear();
    if (lost.empty()) {
      // Every device answers. A member that timed out and answers again was only slow (a
      // stall shorter than the probe): stop what it still runs and replay on the same plan.
      // Otherwise the failure is the job's (bad data, a NaN), not a device's.
      if (!error->timedOut()) throw *error;
      coordinator_->stopJobs();
      phaseDone(rec.probe_ms);
      restore = findRestore(kept);
      phaseDone(rec.state_ms);
      rec.device = error->worker();
      rec.reason = error->what();
      rec.kind = RecoveryKind::Stalled;
      rec.action = "retry";
      next = deployed_->plan;
      over = deployed_->cluster;
    } else {
      rec.device = joinNames(lost);
      rec.kind = all_timed_out ? RecoveryKind::Stalled : RecoveryKind::Lost;
      rec.reason = error->what() + why_lost;
      restore = findRestore(kept);
      phaseDone(rec.state_ms);

      // The cheapest rung: the lost members' group keeps its cuts and its survivors take the
      // lost share. A new plan over every live device when that is impossible, does not fit,
      // or is predicted clearly slower than a fresh plan, counting the time to bring each
      // plan's devices the state they lack and then train the steps left.
      const std::int64_t steps_left = std::max<std::int64_t>(target_ - (restore ? restore->choice.step : backup_step_), 1);
      // Each way on: its plan, the time to bring its devices their state, and that plus the
      // steps left.
      struct Option {
        Plan plan;
        std::shared_ptr<const Cluster> over;
        double move_ms = 0, finish_ms = 0;
        const char* action = "replan";
      };
      const auto priced = [&](Plan plan, std::shared_ptr<const Cluster> c, const char* action, bool arrange = true) {
        const CostModel cost = costModel(*c);
        Option o{std::move(plan), c, 0, 0, action};
        if (restore) {
          // Among arrangements of its stages, the one that moves the least state for its speed.
          if (arrange) o.plan = placeNearState(std::move(o.plan), *c, cost, restore->choice, *restore->holders, steps_left);
          o.move_ms = restoreMs(o.plan, *c, cost, restore->choice, *restore->holders);
        }
        o.finish_ms = o.move_ms + static_cast<double>(steps_left) * simulate(o.plan, cost).iteration_ms;
        return o;
      };
      // Every way on, the group rung's first: the lost members' group keeping its cuts, as
      // arranged near the state and with every stage where it was; the fastest plan that moves
      // no state at all (the held states' boundaries on devices that hold them); fresh plans.
      std::vector<Option> options;
      std::size_t keeping_cuts = 0;  // the first options, which keep the cuts
      if (!kept.empty()) {
        auto narrowed = std::make_shared<const Cluster>(restrictCluster(current, kept));
        const CostModel narrowed_cost = costModel(*narrowed);
        if (auto p = withoutDevices(deployed_->plan, current, *narrowed, lost)) {
          if (validatePlan(*p, narrowed_cost).empty()) {
            options.push_back(priced(*p, narrowed, "group", false));
            options.push_back(priced(std::move(*p), narrowed, "group"));
            keeping_cuts = options.size();
          }
        }
        if (restore) {
          if (auto p = planOnHeldState(deployed_->plan, *narrowed, narrowed_cost, restore->choice, *restore->holders)) {
            options.push_back(priced(std::move(*p), narrowed, "replan", false));
          }
        }
      }
      // A fresh plan over every live device, and one over only those that hold the state:
      // a device holding nothing must first be brought its stage, and whether it gains
      // more than that costs over the steps left decides.
      std::vector<std::vector<std::string>> candidates{live};
      if (restore) {
        std::vector<std::string> holding;
        for (const std::string& name : live) {
          const auto at = restore->holders->find(name);
          const bool holds = at && std::any_of(restore->choice.holders.begin(), restore->choice.holders.end(),
                                               [&](const std::vector<int>& h) {
                                                 return std::find(h.begin(), h.end(), *at) != h.end();
                                               });
          if (holds) holding.push_back(name);
        }
        if (!holding.empty() && holding.size() < live.size()) candidates.push_back(std::move(holding));
      }
      std::exception_ptr unplannable;  // why the first candidate has no plan
      for (const auto& names : candidates) {
        auto c = std::make_shared<const Cluster>(restrictCluster(*cluster_, names));
        try {
          options.push_back(priced(planOver(*c, "cannot continue without " + rec.device), c, "replan"));
        } catch (const Error&) {
          if (!unplannable) unplannable = std::current_exception();
        }
      }
      if (options.empty()) std::rethrow_exception(unplannable);
      // Keeping the cuts moves less and is what was tuned: another plan must be clearly faster.
      const auto weighed = [&](std::size_t i) {
        return options[i].finish_ms * (i < keeping_cuts ? 1.0 : settings_.replan_gain);
      };
      std::size_t best = 0;
      for (std::size_t i = 1; i < options.size(); ++i) {
        if (weighed(i) < weighed(best)) best = i;
      }
      // Resume first where the state is: when the best way on must first bring some device
      // its state and a plan that moves nothing completes its first step sooner (its step
      // against the move and the best plan's step), the run goes on at once on that plan, and
      // is re-planned at the next step boundary (a Joined re-plan when it takes devices in,
      // which moves only what they need while the rest stays in place). The detour costs one
      // more deployment; the pause it spares is the move.
      std::size_t chosen = best;
      if (settings_.resume_first && options[best].move_ms >= 1.0) {
        const auto step_ms = [&](const Option& o) { return (o.finish_ms - o.move_ms) / static_cast<double>(steps_left); };
        // Among the plans that move nothing, weighed as the best was: keeping the cuts first.
        std::optional<std::size_t> stay;
        for (std::size_t i = 0; i < options.size(); ++i) {
          if (options[i].move_ms < 1.0 && (!stay || weighed(i) < weighed(*stay))) stay = i;
        }
        if (stay && step_ms(options[*stay]) < options[best].move_ms + step_ms(options[best])) {
          chosen = *stay;
          const auto used = [](const Option& o) {
            std::vector<std::string> names;
            for (const Stage& st : o.plan.stages) {
              for (const DeviceShare& m : st.members) names.push_back(o.over->device(m.device).name);
            }
            return names;
          };
          const std::vector<std::string> staying = used(options[*stay]);
          std::vector<std::string> joining;
          for (const std::string& name : used(options[best])) {
            if (std::find(staying.begin(), staying.end(), name) == staying.end()) joining.push_back(name);
          }
          rec.joining = joinNames(joining);
          // Nobody joins when the best plan only cuts the same devices differently: the
          // re-plan completes this recovery. (A group that could only be arranged better
          // stays as it is: its cuts are what was tuned.)
          if (!joining.empty()) {
            follow_up = ReplanRequest{std::nullopt, std::nullopt, RecoveryKind::Joined, rec.joining, std::nullopt};
          } else if (best >= keeping_cuts) {
            follow_up = ReplanRequest{std::nullopt, std::nullopt, rec.kind, rec.device, std::nullopt};
          }
        }
      }
      if (events.on_log) {
        // What was weighed, for whoever wonders why the run went on as it did.
        std::string weighed_text = "recovery options (predicted state move + steps left):";
        for (std::size_t i = 0; i < options.size(); ++i) {
          const Option& o = options[i];
          weighed_text += std::string(i == chosen ? " [chosen] " : i == best ? " [best] " : " ") + o.action + " " +
                          layoutText(o.plan, *o.over) + " " + std::to_string(static_cast<long long>(o.move_ms)) +
                          " + " + std::to_string(static_cast<long long>(o.finish_ms - o.move_ms)) + " ms;";
        }
        events.on_log("coordinator", weighed_text);
      }
      next = options[chosen].plan;
      over = options[chosen].over;
      rec.action = options[chosen].action;
    }

    rec.backup = restore ? restore->where : "checkpoint or deployment";
    rec.step = restore ? restore->choice.step : backup_step_;
    rec.replayed_steps = rec.failed_after - rec.step;
    rec.stages = next->stageCount();
    rec.devices = 0;
    for (const Stage& s : next->stages) rec.devices += static_cast<int>(s.members.size());
    phaseDone(rec.plan_ms);
    if (events.on_failure) events.on_failure(rec);
    phase = Clock::now();  // what on_failure does is the caller's time
    try {
      try {
        install(*next, over, backup_ ? &*backup_ : nullptr, restore ? &*restore : nullptr);
      } catch (const WorkerError& e) {
        if (!restore) throw;
        // The workers could not take the state from where it is held: the coordinator
        // fetches it and deploys it with the plan.
        if (events.on_log) {
          events.on_log("coordinator", std::string("restoring the backups where they are held failed (") + e.what() +
                                           "); fetching them first");
        }
        rec.backup = gatherBackup(kept);
        rec.step = backup_step_;
        rec.replayed_steps = rec.failed_after - rec.step;
        install(*next, over, backup_ ? &*backup_ : nullptr);
      }
      phaseDone(rec.deploy_ms);
      follow_up_ = std::move(follow_up);  // install() forgets the last deployment's
    } catch (const WorkerError& e) {
      phaseDone(rec.deploy_ms);
      // Another device went while deploying: look again (a few times at most).
      if (attempt >= 3) throw;
      error = e;
      continue;
    }
    // Steps past the backup are computed again; they count once.
    std::erase_if(result.steps, [&](const StepResult& s) { return s.step > rec.step; });
    return rec;
  }
}

std::optional<ReplanRequest> TrainingRun::joinCandidate() {
  // Asked at a step boundary, so briefly: a device that does not answer in half a second
  // is not joining.
  const std::vector<WorkerProbe> probes =
      coordinator_->probe(std::min(settings_.probe_deadline, std::chrono::milliseconds(500)));
  const Cluster& current = *deployed_->cluster;
  const std::vector<int> stage_of = deployed_->plan.stageOfDevice(current.size());
  std::vector<std::string> names, joining;
  for (int d = 0; d < cluster_->size(); ++d) {
    const std::string& name = cluster_->device(d).name;
    const auto at = current.find(name);
    if (at && stage_of[*at] >= 0) {
      names.push_back(name);
    } else if (probes[d].reachable && probes[d].info.state() != "training") {
      names.push_back(name);
      joining.push_back(name);
    }
  }
  if (joining.empty()) return std::nullopt;
  const std::string key = joinNames(joining);
  if (key == rejected_joins_) return std::nullopt;  // nothing new since the last look
  updateFactors();
  const Cluster over = restrictCluster(*cluster_, names);
  std::optional<ReplanRequest> request;
  try {
    Plan next = planOver(over, "joining " + key);
    const double next_ms = simulate(next, costModel(over)).iteration_ms;
    const double now_ms = simulate(deployed_->plan, costModel(current)).iteration_ms;
    bool uses_them = false;
    for (const Stage& stage : next.stages) {
      for (const DeviceShare& m : stage.members) {
        const std::string& name = over.device(m.device).name;
        uses_them = uses_them || std::find(joining.begin(), joining.end(), name) != joining.end();
      }
    }
    if (uses_them && next_ms * settings_.replan_gain < now_ms) {
      request = ReplanRequest{std::move(next), over, RecoveryKind::Joined, key, std::nullopt};
    }
  } catch (const Error&) {
    // No plan with them: as if no gain.
  }
  rejected_joins_ = request ? std::string() : key;
  return request;
}

void TrainingRun::watchStragglers(const RunEvents& events) {
  if (!deployed_ || !deployed_->expected) return;
  const Plan& plan = deployed_->plan;
  const Cluster& over = *deployed_->cluster;
  // Measured over expected compute, per device the plan uses and telemetry has measured.
  std::vector<double> factors;
  try {
    factors = control::computeFactors(plan, *deployed_->expected, latest_);
  } catch (const std::exception&) {
    return;
  }
  std::map<std::string, double> measured;
  std::map<std::string, std::int64_t> measured_at;  // workers are not in lockstep with the counted step
  int member = 0;
  for (const Stage& stage : plan.stages) {
    for (const DeviceShare& m : stage.members) {
      const std::int64_t at = latest_[member++].step();
      if (at <= 0 || m.samples <= 0) continue;
      const std::string& name = over.device(m.device).name;
      measured[name] = factors[m.device];
      measured_at[name] = std::max(measured_at[name], at);
    }
  }
  if (measured.size() < 2) return;  // slower than whom?
  const std::map<std::string, double> relative = relativeFactors(measured);
  // Each device counts the steps its own measurements come from, so "slow for 5 steps" is
  // five of its steps even when its telemetry runs ahead of the others'.
  std::vector<std::string> slow;
  StragglerNotice notice;
  for (const auto& [name, r] : relative) {
    if (stragglers_.observe(measured_at.at(name), {{name, r}}).empty()) continue;
    slow.push_back(name);
    notice.step = std::max(notice.step, measured_at.at(name));
  }
  if (slow.empty()) return;

  notice.device = joinNames(slow);
  for (const auto& name : slow) notice.slower_by = std::max(notice.slower_by, relative.at(name));
  updateFactors();
  try {
    Plan next = planOver(over, "re-planning around " + notice.device);
    const CostModel cost = costModel(over);
    const double now_ms = simulate(plan, cost).iteration_ms;
    const double next_ms = simulate(next, cost).iteration_ms;
    if (next_ms > 0) notice.gain = now_ms / next_ms;
    notice.plan = std::move(next);
    notice.cluster = over;
  } catch (const std::exception&) {
    notice.gain = 0;  // no plan: reported without one
  }
  notice.applying = settings_.auto_replan && notice.plan && notice.gain >= settings_.replan_gain;
  if (events.on_straggler) events.on_straggler(notice);
  if (notice.applying) {
    std::lock_guard lock(requests_mutex_);
    if (!replan_requested_) {  // a user's request wins
      replan_requested_ = ReplanRequest{notice.plan, notice.cluster, RecoveryKind::Straggler, notice.device, std::nullopt};
    }
  }
}

}  // namespace stagecraft::control
