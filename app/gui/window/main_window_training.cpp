// MainWindow's side of training: the controller's commands and what its signals show
// (charts, log, devices, status bar).
#include <QAction>
#include <QFileDialog>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QSettings>
#include <QStatusBar>
#include <algorithm>
#include <cmath>

#include "control/assignments.h"
#include "control/cluster_token.h"
#include "control/transport_security.h"
#include "control/replan.h"
#include "editor/plan_session.h"
#include "editor/display_units.h"
#include "editor/plan_summary.h"
#include "live/beacon_discovery.h"
#include "live/chart_feed.h"
#include "live/live_charts.h"
#include "live/loss_chart.h"
#include "live/training_controller.h"
#include "models/device_model.h"
#include "models/log_model.h"
#include "window/main_window.h"
#include "window/notice_banner.h"
#include "window/replan_dialog.h"
#include "window/training_panel.h"

namespace stagecraft::gui {

namespace {

LogModel::Level levelOf(QtMsgType type) {
  switch (type) {
    case QtWarningMsg:
      return LogModel::Level::Warning;
    case QtCriticalMsg:
    case QtFatalMsg:
      return LogModel::Level::Error;
    default:
      return LogModel::Level::Info;
  }
}

bool settledState(TrainingState state) {
  return state == TrainingState::Idle || state == TrainingState::Deployed || state == TrainingState::Stopped;
}

}  // namespace

void MainWindow::connectController() {
  chart_feed_ = new ChartFeed(controller_, charts_, this);
  connect(controller_, &TrainingController::stateChanged, this, [this](TrainingState state) {
    state_label_->setText(TrainingController::stateText(state));
    // Until the first step is measured, the timeline shows the plan's prediction (when the
    // editor's devices are the run's, row for row).
    if (state == TrainingState::Deployed && editorShowsDeployedDevices()) showPredictedTimeline();
    if (settledState(state)) progress_->setVisible(false);
    updateActions();
  });
  connect(controller_, &TrainingController::progress, this, [this](const QString& text, int done, int total) {
    progress_->setVisible(true);
    progress_->setRange(0, total);
    progress_->setValue(done);
    progress_->setFormat(total > 0 ? tr("%1 (%2/%3)").arg(text).arg(done).arg(total) : text);
    progress_->setTextVisible(true);
    statusBar()->showMessage(text, 4000);
  });
  connect(controller_, &TrainingController::localClusterStopped, this, [this] {
    // Down now: any answer heard while they were stopping does not make them lost later.
    devices_->markStopped(stopping_local_);
    stopping_local_.clear();
  });
  connect(controller_, &TrainingController::localClusterStarted, this, [this](const Cluster& cluster) {
    devices_->setToken(controller_->workerToken());
    devices_->applyLocalCluster(cluster);
    log_->append(tr("console"), LogModel::Level::Info,
                 tr("%n local worker(s) run on this machine.", nullptr, cluster.size()));
  });
  connect(controller_, &TrainingController::evaluated, this,
          [this](qint64 step, double accuracy, double loss, qint64 samples) {
            charts_->lossChart()->addEvaluation(step, accuracy, loss);
            log_->append(tr("coordinator"), LogModel::Level::Info,
                         tr("Held-out accuracy after step %1: %2 % of %3 samples (loss %4).")
                             .arg(step)
                             .arg(100.0 * accuracy, 0, 'f', 1)
                             .arg(samples)
                             .arg(loss, 0, 'f', 4));
          });
  connect(controller_, &TrainingController::stepCompleted, this,
          [this](qint64 step, double loss, double measured, double /*predicted*/, double seconds) {
            recent_steps_.push_back({step, seconds, measured});
            while (recent_steps_.size() > 6) recent_steps_.pop_front();
            // Over the last steps: samples/s for the header, steps/s and the time left here.
            double sps = 0;
            for (const RecentStep& r : recent_steps_) sps += r.samples_per_second;
            sps /= static_cast<double>(recent_steps_.size());
            summary_->setMeasured(showsDeployedPlan() ? sps : 0);
            QString text = tr("Step %1 of %2: loss %3, %4 samples/s")
                               .arg(step)
                               .arg(controller_->targetStep())
                               .arg(loss, 0, 'f', 4)
                               .arg(measured, 0, 'f', 1);
            const RecentStep& first = recent_steps_.front();
            const double span = seconds - first.seconds;
            if (recent_steps_.size() >= 2 && span > 0 && step > first.step) {
              const double steps_per_s = static_cast<double>(step - first.step) / span;
              const double left = static_cast<double>(std::max<qint64>(controller_->targetStep() - step, 0)) / steps_per_s;
              text += tr(", %1 steps/s, %2 left").arg(steps_per_s, 0, 'f', 2).arg(durationText(left));
            }
            statusBar()->showMessage(text);
          });
  connect(controller_, &TrainingController::predictionChanged, this, [this] {
    // One prediction everywhere: the editor prices with what the deployed run prices with.
    recent_steps_.clear();
    summary_->setMeasured(0);
    const auto plan = controller_->deployedPlan();
    const auto cluster = controller_->deployedCluster();
    session_->setCostBasis(controller_->costBasis(), plan ? plan->model : std::string(),
                           cluster ? cluster->name() : std::string());
  });
  connect(controller_, &TrainingController::logMessage, this,
          [this](const QString& source, QtMsgType level, const QString& text) {
            log_->append(source, levelOf(level), text);
          });
  connect(controller_, &TrainingController::failed, this, [this](const QString& message) {
    log_->append(tr("coordinator"), LogModel::Level::Error, message);
    statusBar()->showMessage(message, 10000);
    QMessageBox::warning(this, tr("Training"), message);
  });
  connect(controller_, &TrainingController::trainingFinished, this, [this](qint64 step) {
    log_->append(tr("coordinator"), LogModel::Level::Info, tr("Training reached step %1.").arg(step));
  });
  connect(controller_, &TrainingController::replanProposed, this,
          [this](const Plan& current, const Plan& proposed, double current_sps, double proposed_sps,
                 const Cluster& calibrated, const Cluster& current_cluster, const CostBasis& basis) {
            ReplanDialog dialog(session_->model(), current_cluster, current, calibrated, proposed, current_sps,
                                proposed_sps, basis, this);
            if (dialog.exec() != QDialog::Accepted) return;
            controller_->applyReplan(proposed, calibrated);
          });
  connect(controller_, &TrainingController::replanApplied, this, [this](const Plan& plan, qint64 step) {
    // The editor now shows the running plan over the devices it runs on (live, measured
    // speeds after a re-plan; the survivors after a loss).
    if (const auto cluster = controller_->deployedCluster()) session_->setDocument(session_->model(), *cluster, plan);
    log_->append(tr("coordinator"), LogModel::Level::Info,
                 tr("The new plan runs from step %1 with the weights carried over.").arg(step + 1));
  });
  connect(controller_, &TrainingController::deviceLost, this,
          [this](const QString& devices, const QString&, qint64 failed_after, qint64) {
            for (const QString& name : devices.split(QStringLiteral(", "), Qt::SkipEmptyParts)) {
              devices_->markLost(name, tr("lost while training, after step %1").arg(failed_after));
            }
            statusBar()->showMessage(tr("%1 lost; training goes on without it.").arg(devices), 10000);
            for (const QString& name : devices.split(QStringLiteral(", "), Qt::SkipEmptyParts)) {
              if (!lost_devices_.contains(name)) lost_devices_ << name;
            }
          });
  connect(controller_, &TrainingController::stragglerNoticed, this,
          [this](const QString& device, double slower_by, double gain, bool applying, const Plan& plan,
                 const Cluster& cluster) {
            const QString what = tr("%1 takes %2x as long as the plan expects, next to the other devices.")
                                     .arg(device)
                                     .arg(slower_by, 0, 'f', 2);
            // Without a faster plan there is nothing to do: the log has it.
            if (applying) {
              notice_->dismiss();  // the run acts by itself: an older offer is moot
              notice_->showNotice(tr("%1 Re-planning around it (predicted %2x faster).").arg(what).arg(gain, 0, 'f', 2));
            } else if (gain >= 1.1 && !plan.stages.empty()) {
              notice_->showNotice(tr("%1 A re-plan is predicted %2x faster.").arg(what).arg(gain, 0, 'f', 2),
                                  tr("Re-plan"), [this, plan, cluster] { controller_->applyReplan(plan, cluster); },
                                  NoticeBanner::Kind::Advice);
            }
          });
  connect(controller_, &TrainingController::betterPlanFound, this,
          [this](const Plan& plan, const Cluster& cluster, double predicted, double current) {
            const QString text = tr("Calibrated from training, another plan is predicted %1 samples/s against the "
                                    "running plan's %2 (%3x).")
                                     .arg(predicted, 0, 'f', 1)
                                     .arg(current, 0, 'f', 1)
                                     .arg(predicted / current, 0, 'f', 2);
            // A warning on screen (a missed promise with the way back) is not covered by advice.
            if (!notice_->showNotice(
                    text, tr("Re-plan"), [this, plan, cluster] { controller_->applyReplan(plan, cluster); },
                    NoticeBanner::Kind::Advice)) {
              log_->append(tr("coordinator"), LogModel::Level::Info, text);
            }
          });
  connect(controller_, &TrainingController::promiseMissed, this,
          [this](qint64 from_step, qint64, double promised, double measured, double before, const Plan& previous,
                 const Cluster& previous_cluster) {
            QString text = tr("The re-plan at step %1 promised %2 samples/s but measures %3 (%4 % of it).")
                               .arg(from_step)
                               .arg(promised, 0, 'f', 1)
                               .arg(measured, 0, 'f', 1)
                               .arg(100 * measured / promised, 0, 'f', 0);
            if (before > 0) text += QLatin1Char(' ') + tr("The plan before it measured %1.").arg(before, 0, 'f', 1);
            notice_->showNotice(text, tr("Go back to the previous plan"),
                                [this, previous, previous_cluster, before] {
                                  controller_->applyReplan(previous, previous_cluster,
                                                           before > 0 ? std::optional<double>(before) : std::nullopt);
                                });
          });
  connect(controller_, &TrainingController::diverged, this,
          [this](qint64 step, double loss, qint64 kept_step, double lr) {
            const double lower = lr / 5;
            notice_->showNotice(tr("Training diverged at step %1 (loss %2): stopped, and the workers went back to "
                                   "the weights of step %3. Learning rate %4 is too high.")
                                    .arg(step)
                                    .arg(loss, 0, 'g', 4)
                                    .arg(kept_step)
                                    .arg(lr),
                                tr("Continue at learning rate %1").arg(lower), [this, lower] {
                                  training_->setLearningRate(lower);
                                  controller_->continueWithLearningRate(lower);
                                });
            statusBar()->showMessage(tr("Training diverged at step %1.").arg(step), 10000);
          });

  devices_->setMonitoring(true);
}

bool MainWindow::showsDeployedPlan() const {
  const auto deployed = controller_->deployedPlan();
  const auto cluster = controller_->deployedCluster();
  if (!deployed || !cluster || !session_->hasDocument()) return false;
  const Plan& shown = session_->plan();
  if (shown.stages.size() != deployed->stages.size() || shown.microbatches != deployed->microbatches ||
      shown.batch_size != deployed->batch_size) {
    return false;
  }
  // By device name: the run's cluster may leave out devices the editor still lists.
  for (size_t s = 0; s < shown.stages.size(); ++s) {
    const Stage& a = shown.stages[s];
    const Stage& b = deployed->stages[s];
    if (a.layer_begin != b.layer_begin || a.layer_end != b.layer_end || a.members.size() != b.members.size()) return false;
    for (size_t m = 0; m < a.members.size(); ++m) {
      if (a.members[m].samples != b.members[m].samples ||
          session_->deviceName(a.members[m].device) != QString::fromStdString(cluster->device(b.members[m].device).name)) {
        return false;
      }
    }
  }
  return true;
}

bool MainWindow::editorShowsDeployedDevices() const {
  const auto cluster = controller_->deployedCluster();
  if (!cluster || !session_->hasDocument() || cluster->size() != session_->cluster().size()) return false;
  for (int d = 0; d < cluster->size(); ++d) {
    if (cluster->device(d).name != session_->cluster().device(d).name) return false;
  }
  return true;
}

QString MainWindow::durationText(double seconds) {
  const qint64 s = std::llround(std::max(0.0, seconds));
  if (s < 60) return tr("%1 s").arg(s);
  if (s < 3600) return tr("%1 min %2 s").arg(s / 60).arg(s % 60);
  return tr("%1 h %2 min").arg(s / 3600).arg((s % 3600) / 60);
}

void MainWindow::offerJoin(const QString& name) {
  const auto deployed = controller_->deployedCluster();
  if (controller_->state() != TrainingState::Training || !deployed || deployed->find(name.toStdString())) return;
  notice_->showNotice(tr("%1 answers again. Include it in a re-plan at the next step boundary?").arg(name),
                      tr("Re-plan with %1").arg(name), [this, name] {
                        if (!controller_->includeDevices(name)) {
                          statusBar()->showMessage(tr("Training is not running: deploy again to use %1.").arg(name),
                                                   8000);
                        }
                      });
}

void MainWindow::startDiscovery(quint16 port) {
  if (!discovery_->start(port)) {
    log_->append(tr("discovery"), LogModel::Level::Warning,
                 tr("Cannot listen for worker beacons on UDP port %1: %2").arg(port).arg(discovery_->errorString()));
  }
}

bool MainWindow::useTokenFile(const QString& path) {
  QSettings settings;
  const QString file = path.isEmpty() ? settings.value(QStringLiteral("workers/tokenFile")).toString() : path;
  if (file.isEmpty()) return true;
  try {
    const std::string token = control::readTokenFile(file.toStdString());
    controller_->setToken(token);
    devices_->setToken(token);
    settings.setValue(QStringLiteral("workers/tokenFile"), file);
    log_->append(tr("console"), LogModel::Level::Info, tr("Calls to workers carry the cluster token in %1.").arg(file));
    return true;
  } catch (const std::exception& e) {
    log_->append(tr("console"), LogModel::Level::Error,
                 tr("Cannot use the cluster token: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
}

bool MainWindow::useTls(const QString& cert, const QString& key, const QString& ca) {
  QSettings settings;
  const bool given = !cert.isEmpty() || !key.isEmpty() || !ca.isEmpty();
  const auto pick = [&](const QString& value, const QString& setting) {
    return given ? value : settings.value(setting).toString();
  };
  const control::TlsFiles files{pick(cert, QStringLiteral("workers/tlsCert")).toStdString(),
                                pick(key, QStringLiteral("workers/tlsKey")).toStdString(),
                                pick(ca, QStringLiteral("workers/tlsCa")).toStdString()};
  if (files.empty()) return true;
  try {
    control::setClientTls(control::readTlsFiles(files));
    settings.setValue(QStringLiteral("workers/tlsCert"), QString::fromStdString(files.cert));
    settings.setValue(QStringLiteral("workers/tlsKey"), QString::fromStdString(files.key));
    settings.setValue(QStringLiteral("workers/tlsCa"), QString::fromStdString(files.ca));
    log_->append(tr("console"), LogModel::Level::Info,
                 tr("Calls to workers use mutual TLS: certificate %1, cluster CA %2.")
                     .arg(QString::fromStdString(files.cert), QString::fromStdString(files.ca)));
    return true;
  } catch (const std::exception& e) {
    log_->append(tr("console"), LogModel::Level::Error,
                 tr("Cannot use TLS: %1").arg(QString::fromStdString(e.what())));
    return false;
  }
}

void MainWindow::startLocalCluster() {
  if (cluster_path_.isEmpty()) return;
  controller_->startLocalCluster(cluster_path_);
}

Cluster MainWindow::clusterWithAddresses() const {
  // The plan's devices are the session's; the addresses are the device list's (local
  // workers, discovered or added devices).
  std::vector<std::pair<std::string, std::string>> addresses;
  const Cluster listed = devices_->cluster();
  for (const Device& device : listed.devices()) {
    if (!device.address.empty()) addresses.emplace_back(device.name, device.address);
  }
  return control::withAddresses(session_->cluster(), addresses);
}

void MainWindow::deploy() {
  if (!session_->evaluation().valid) {
    showError(tr("Cannot deploy"), session_->evaluation().problems.value(0));
    return;
  }
  charts_->clear();
  controller_->setProfileBeforeDeploy(training_->profileBeforeDeploy());
  Cluster cluster = clusterWithAddresses();
  Plan plan = session_->plan();
  if (const QStringList lost = session_->unavailableDevices(); !lost.isEmpty()) {
    // The plan leaves them out (it is valid); the run does too, so profiling does not wait
    // on a device that does not answer.
    std::vector<std::string> live;
    for (const Device& device : cluster.devices()) {
      if (!lost.contains(QString::fromStdString(device.name))) live.push_back(device.name);
    }
    try {
      Cluster available = control::restrictCluster(cluster, live);
      plan = control::withoutDevices(plan, cluster, available, {}).value();
      cluster = std::move(available);
    } catch (const std::exception& e) {
      showError(tr("Cannot deploy"), QString::fromStdString(e.what()));
      return;
    }
  }
  controller_->setEvaluation(training_->evalEvery());
  controller_->deploy(plan, session_->model(), cluster, training_->trainingOptions());
}

void MainWindow::startTraining() { controller_->start(training_->steps()); }

void MainWindow::stopTraining() { controller_->stop(); }

void MainWindow::replanNow() {
  controller_->proposeReplan(training_->planner(), training_->request(), devices_->liveDevices());
}

void MainWindow::showPredictedTimeline() {
  if (!session_->hasDocument()) return;
  const PlanEvaluation& e = session_->evaluation();
  QStringList names;
  QList<QColor> colors;
  for (const Device& device : session_->cluster().devices()) {
    names << QString::fromStdString(device.name);
    colors << tierColor(device.tier);
  }
  charts_->setDevices(names, colors);
  charts_->setTimeline(e.valid ? e.timeline : std::vector<TimelineEvent>{}, e.iteration_ms, false);
}

void MainWindow::updateActions() {
  const TrainingState state = controller_->state();
  const bool settled = settledState(state);
  const bool busy_planning = session_->isBusy();
  const bool has_plan = session_->hasDocument() && session_->evaluation().valid;
  auto_plan_->setEnabled(session_->hasDocument() && !busy_planning);
  compare_all_->setEnabled(session_->hasDocument() && !busy_planning);
  start_local_->setEnabled(settled && !cluster_path_.isEmpty() && !controller_->localCluster());
  deploy_->setEnabled(settled && has_plan);
  start_->setEnabled(state == TrainingState::Deployed || state == TrainingState::Stopped);
  stop_->setEnabled(state == TrainingState::Training);
  replan_->setEnabled(state == TrainingState::Training || state == TrainingState::Stopped ||
                      state == TrainingState::Deployed);
  save_plan_->setEnabled(session_->hasDocument());
  export_model_->setEnabled(controller_->canExportModel() &&
                            (state == TrainingState::Deployed || state == TrainingState::Stopped));
}

void MainWindow::exportTrainedModel() {
  QSettings settings;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export trained model"),
      settings.value(QStringLiteral("torchscript/folder")).toString() + QStringLiteral("/trained.pt"),
      tr("TorchScript files (*.pt)"));
  if (path.isEmpty()) return;
  controller_->exportModel(path.endsWith(QLatin1String(".pt")) ? path : path + QStringLiteral(".pt"));
}

}  // namespace stagecraft::gui
