// What TrainingController makes of its run's events: log lines (translated) and signals on
// the GUI thread.
#include <QRegularExpression>
#include <cmath>
#include <QString>

#include "control/timeline_events.h"
#include "live/training_controller.h"
#include "live/training_deployment.h"
#include "planner/planner.h"
#include "sim/simulator.h"

namespace stagecraft::gui {

namespace {
/// How much faster a plan must be predicted under the calibrated speeds to be offered: less
/// is within what a re-plan's disruption and the calibration's noise eat (as the CLI).
constexpr double kBetterPlanGain = 1.1;
/// A re-calibrated prediction within this share of the last one is kept quiet.
constexpr double kRecalibrationNews = 0.03;
}  // namespace

QString TrainingController::workerLine(const QString& text) {
  // The worker (no Qt) speaks English; the lines it is known to send are said in the
  // console's language, anything else as it came.
  static const QRegularExpression deployed(QStringLiteral(
      R"(^deployed job '(.*)': stage (\d+) of (\d+), layers \[(\d+), (\d+)\), rank (\d+) of (\d+), (\d+) samples per micro-batch$)"));
  static const QRegularExpression lease(
      QStringLiteral(R"(^no coordinator for (\S+) s: stopped job '(.*)' at step (\d+) \(lease expired\); ready for a new Deploy$)"));
  static const QRegularExpression stopped(QStringLiteral(R"(^stopped at step (\d+)$)"));
  if (const QRegularExpressionMatch m = deployed.match(text); m.hasMatch()) {
    return tr("Job %1 deployed: stage %2 of %3, layers %4–%5, rank %6 of %7, %8 samples per micro-batch.")
        .arg(m.captured(1), m.captured(2), m.captured(3), m.captured(4),
             QString::number(m.captured(5).toInt() - 1), m.captured(6), m.captured(7), m.captured(8));
  }
  if (const QRegularExpressionMatch m = lease.match(text); m.hasMatch()) {
    return tr("No coordinator for %1 s: job %2 stopped at step %3 (its lease ran out); ready for a new deployment.")
        .arg(m.captured(1), m.captured(2), m.captured(3));
  }
  if (const QRegularExpressionMatch m = stopped.match(text); m.hasMatch()) {
    return tr("Stopped at step %1.").arg(m.captured(1));
  }
  return text;
}

void TrainingController::calibrate(Deployment& d) {
  control::TrainingRun& run = *d.run;
  CostBasis basis = run.calibratedBasis();
  if (basis.factors.empty()) return;  // no member measured yet: at the next step
  const bool first = !d.calibrated;
  d.calibrated = true;
  d.calibrate_at = run.step() + kRecalibrateEverySteps;
  const double before = d.predicted;
  try {
    d.predicted = simulate(run.plan(), run.costModel(run.deployedCluster())).samples_per_second;
  } catch (const std::exception& e) {
    toGui([this, text = QString::fromStdString(e.what())] {
      Q_EMIT logMessage(tr("coordinator"), QtWarningMsg, tr("Calibration from training skipped: %1").arg(text));
    });
    return;
  }
  // A re-calibration that moves the prediction by less than this is not news.
  if (!first && std::abs(d.predicted - before) <= kRecalibrationNews * before) return;
  toGui([this, basis, sps = d.predicted, before, step = run.step(), generation = d.generation] {
    if (generation != shown_generation_) return;
    cost_basis_ = basis;
    predicted_sps_ = sps;
    Q_EMIT logMessage(tr("coordinator"), QtInfoMsg,
                      tr("Calibrated from training at step %1: predicted %2 samples/s (was %3).")
                          .arg(step)
                          .arg(sps, 0, 'f', 1)
                          .arg(before, 0, 'f', 1));
    Q_EMIT predictionChanged();
  });
  // A plan clearly faster under the measured speeds is offered (as the CLI names one),
  // searched beside training so no step waits for the planner; once per deployment.
  if (!first || advising_) return;  // a search still running (the deployment before) is not waited for
  if (advisor_.joinable()) advisor_.join();
  advising_ = true;
  advisor_ = std::thread([this, basis = std::move(basis), plan = run.plan(), model = run.model(),
                          cluster = run.deployedCluster(), current = d.predicted, generation = d.generation] {
    struct Done {
      std::atomic<bool>& flag;
      ~Done() { flag = false; }
    } done{advising_};
    try {
      const CostModel cost = makeCostModel(model, cluster, plan.optimizer, basis);
      PlanOutcome outcome =
          makePlan(*makePlanner("hybrid"), cost, PlanRequest{plan.batch_size, plan.microbatches, plan.schedule});
      if (!outcome.feasible || outcome.plan.stages == plan.stages) return;
      const double sps = simulate(outcome.plan, cost).samples_per_second;
      if (sps < kBetterPlanGain * current) return;
      toGui([this, better = std::move(outcome.plan), cluster, sps, current, generation] {
        if (generation == shown_generation_) Q_EMIT betterPlanFound(better, cluster, sps, current);
      });
    } catch (const std::exception&) {
      // Advice only: without a plan there is nothing to offer.
    }
  });
}

control::RunEvents TrainingController::runEvents() {
  Deployment& d = *deployment_;
  control::RunEvents events;
  events.on_step = [this, &d](const control::StepResult& s) {
    // Not from a step a backup's copies slow: they would pass for slow compute.
    if (s.step >= d.calibrate_at && d.run->clearOfBackups(s.step)) calibrate(d);
    toGui([this, s, predicted = d.predicted, seconds = secondsSince(d.run_started)] {
      current_step_ = s.step;
      Q_EMIT stepCompleted(s.step, s.loss, s.samples_per_second, predicted, seconds);
    });
  };
  events.on_eval = [this](const control::EvalResult& e) {
    toGui([this, e] { Q_EMIT evaluated(e.step, e.accuracy, e.loss, e.samples); });
  };
  events.on_log = [this](const std::string& worker, const std::string& text) {
    toGui([this, worker = QString::fromStdString(worker), text = workerLine(QString::fromStdString(text))] {
      Q_EMIT logMessage(worker, QtInfoMsg, text);
    });
  };
  events.on_iteration = [this, &d](int member, int device, const v1::IterationReport& report) {
    onIteration(d.generation, member, device, report);
  };
  events.on_failure = [this](const control::Recovery& r) {
    QString what;
    if (r.action == "group") {
      what = tr("its group's other members take its samples");
    } else if (r.action == "retry") {
      what = tr("it answers again; the same plan goes on");
    } else {
      what = tr("re-planning over the devices left (%1)").arg(r.devices);
    }
    const QString text = (r.kind == control::RecoveryKind::Stalled
                              ? tr("%1 stopped answering after step %2: %3, from step %4. Cause: %5")
                              : tr("%1 was lost after step %2: %3, from step %4. Cause: %5"))
                             .arg(QString::fromStdString(r.device))
                             .arg(r.failed_after)
                             .arg(what)
                             .arg(r.step + 1)
                             .arg(QString::fromStdString(r.reason));
    toGui([this, r, text] {
      Q_EMIT logMessage(tr("coordinator"), QtWarningMsg, text);
      Q_EMIT deviceLost(QString::fromStdString(r.device), QString::fromStdString(r.action), r.failed_after, r.step);
    });
  };
  events.on_deployed = [this, &d] {
    ++d.generation;
    publishDeployment();
    toGui([this, plan = d.run->plan(), step = d.run->step()] { Q_EMIT replanApplied(plan, step); });
  };
  events.on_recovery = [this](const control::Recovery& r) {
    const double seconds = r.recovered_ms / 1000.0;
    const QString device = QString::fromStdString(r.device);
    QString text;
    switch (r.kind) {
      case control::RecoveryKind::Manual:
        text = tr("Re-planned in %1 s: %2 stages on %3 workers.").arg(seconds, 0, 'f', 2).arg(r.stages).arg(r.devices);
        break;
      case control::RecoveryKind::Joined:
        text = tr("%1 joined: re-planned in %2 s, %3 stages on %4 workers.")
                   .arg(device)
                   .arg(seconds, 0, 'f', 2)
                   .arg(r.stages)
                   .arg(r.devices);
        break;
      case control::RecoveryKind::Straggler:
        text = tr("Re-planned around %1 in %2 s: %3 stages on %4 workers.")
                   .arg(device)
                   .arg(seconds, 0, 'f', 2)
                   .arg(r.stages)
                   .arg(r.devices);
        break;
      default:
        text = tr("Training goes on without %1 after %2 s: %3 stages on %4 workers; steps replayed: %5.")
                   .arg(device)
                   .arg(seconds, 0, 'f', 2)
                   .arg(r.stages)
                   .arg(r.devices)
                   .arg(r.replayed_steps);
    }
    toGui([this, r, text, seconds] {
      Q_EMIT logMessage(tr("coordinator"), QtInfoMsg, text);
      Q_EMIT recovered(QString::fromStdString(r.device), r.step, seconds);
    });
  };
  events.on_straggler = [this](const control::StragglerNotice& n) {
    const QString device = QString::fromStdString(n.device);
    const QString slower = tr("%1 takes %2x as long as the plan expects, next to the other devices.")
                               .arg(device)
                               .arg(n.slower_by, 0, 'f', 2);
    const QString text = n.applying ? tr("%1 Re-planning, predicted %2x faster.").arg(slower).arg(n.gain, 0, 'f', 2)
                          : n.gain > 0 ? tr("%1 A re-plan is predicted %2x faster.").arg(slower).arg(n.gain, 0, 'f', 2)
                                       : tr("%1 No other plan is predicted to be faster.").arg(slower);
    toGui([this, n, device, text] {
      Q_EMIT logMessage(tr("coordinator"), QtWarningMsg, text);
      Q_EMIT stragglerNoticed(device, n.slower_by, n.gain, n.applying, n.plan.value_or(Plan{}),
                              n.cluster.value_or(Cluster{}));
    });
  };
  events.on_promise = [this](const control::PlanPromise& p) {
    const double share = 100 * p.measured_sps / p.promised_sps;
    const QString text = tr("The re-plan at step %1 promised %2 samples/s and measured %3 (%4 % of it).")
                             .arg(p.from_step)
                             .arg(p.promised_sps, 0, 'f', 1)
                             .arg(p.measured_sps, 0, 'f', 1)
                             .arg(share, 0, 'f', 0);
    toGui([this, p, text] {
      Q_EMIT logMessage(tr("coordinator"), p.missed ? QtWarningMsg : QtInfoMsg, text);
      if (p.missed) {
        Q_EMIT promiseMissed(p.from_step, p.judged_step, p.promised_sps, p.measured_sps, p.before_sps, p.previous,
                             p.previous_cluster);
      }
    });
  };
  return events;
}

void TrainingController::onIteration(std::uint64_t generation, int member, int device,
                                     const v1::IterationReport& report) {
  if (reports_in_flight_.load() >= kMaxReportsInFlight) {
    ++reports_dropped_;
    return;
  }
  if (const int now = ++reports_in_flight_; now > reports_in_flight_peak_.load()) reports_in_flight_peak_.store(now);
  const Cluster& cluster = deployment_->run->deployedCluster();
  std::vector<TimelineEvent> timeline = control::timelineEvents(report, device, cluster);
  toGui([this, generation, member, report, timeline = std::move(timeline),
         name = QString::fromStdString(cluster.device(device).name)] {
    --reports_in_flight_;
    if (generation != shown_generation_) return;  // a report of the deployment before a re-plan
    if (member >= 0 && member < static_cast<int>(latest_reports_.size())) latest_reports_[member] = report;
    Q_EMIT iterationReported(name, report.busy_fraction(), report.memory_mb(), timeline);
  });
}

}  // namespace stagecraft::gui
