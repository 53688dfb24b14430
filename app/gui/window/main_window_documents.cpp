// MainWindow's documents: the cluster, model and plan it opens and saves, the recent
// files, and the question before quitting with plan edits that are not saved.
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QUndoStack>

#include "cluster/cluster_catalog.h"
#include "editor/plan_session.h"
#include "model/zoo.h"
#include "models/device_model.h"
#include "models/log_model.h"
#include "window/main_window.h"

namespace stagecraft::gui {

namespace {

constexpr int kMaxRecent = 8;
const QString kRecentClusters = QStringLiteral("recent/clusters");
const QString kRecentPlans = QStringLiteral("recent/plans");
const QString kDefaultCluster = QStringLiteral("jetson-edge");
const QString kDefaultModel = QStringLiteral("vgg11");

QString fromStd(const std::string& text) { return QString::fromStdString(text); }

}  // namespace

void MainWindow::openStartup(const QString& cluster, const QString& model, const QString& plan) {
  QSettings settings;
  const QString model_name = !model.isEmpty() ? model : settings.value(QStringLiteral("model"), kDefaultModel).toString();
  const int index = model_picker_->findData(model_name);
  if (index >= 0) model_picker_->setCurrentIndex(index);
  pending_model_ = model_name;
  const QString cluster_name =
      !cluster.isEmpty() ? cluster : settings.value(QStringLiteral("cluster"), kDefaultCluster).toString();
  if (!openCluster(cluster_name) && cluster.isEmpty()) openCluster(kDefaultCluster);
  if (!plan.isEmpty()) openPlan(plan);
}

bool MainWindow::openCluster(const QString& name_or_path) {
  try {
    const std::string path = resolveClusterPath(name_or_path.toStdString());
    Cluster cluster = Cluster::load(path);
    cluster_path_ = fromStd(path);
    devices_->loadCluster(cluster);
    if (!session_->hasDocument()) {
      session_->setDocument(loadModel(pending_model_.isEmpty() ? kDefaultModel.toStdString() : pending_model_.toStdString()),
                            std::move(cluster));
    } else {
      session_->setCluster(std::move(cluster));
    }
    QSettings().setValue(QStringLiteral("cluster"), cluster_path_);
    addRecent(kRecentClusters, cluster_path_);
    log_->append(tr("console"), LogModel::Level::Info, tr("Opened cluster %1.").arg(cluster_path_));
    updateTitle();
    return true;
  } catch (const std::exception& e) {
    showError(tr("Cannot open the cluster"), QString::fromUtf8(e.what()));
    return false;
  }
}

void MainWindow::selectModel(const QString& name_or_path) {
  try {
    ModelSpec model = loadModel(name_or_path.toStdString());
    pending_model_ = name_or_path;
    if (session_->hasDocument()) session_->setModel(std::move(model));
    QSettings().setValue(QStringLiteral("model"), name_or_path);
  } catch (const std::exception& e) {
    showError(tr("Cannot load the model"), QString::fromUtf8(e.what()));
  }
}

bool MainWindow::openPlan(const QString& path) {
  QString error;
  if (!session_->loadPlan(path, &error)) {
    showError(tr("Cannot open the plan"), error);
    return false;
  }
  plan_path_ = path;
  addRecent(kRecentPlans, path);
  const int index = model_picker_->findData(fromStd(session_->model().name()));
  if (index >= 0) model_picker_->setCurrentIndex(index);
  return true;
}

void MainWindow::savePlanAs() {
  QString path = QFileDialog::getSaveFileName(this, tr("Save plan"), plan_path_.isEmpty() ? QStringLiteral("plan.json") : plan_path_,
                                              tr("Plan files (*.json)"));
  if (path.isEmpty()) return;
  if (!path.endsWith(QLatin1String(".json"))) path += QLatin1String(".json");
  QString error;
  if (!session_->savePlan(path, &error)) {
    showError(tr("Cannot save the plan"), error);
    return;
  }
  plan_path_ = path;
  session_->undoStack()->setClean();
  addRecent(kRecentPlans, path);
  statusBar()->showMessage(tr("Saved %1").arg(path), 4000);
}

void MainWindow::addRecent(const QString& key, const QString& path) {
  QSettings settings;
  QStringList list = settings.value(key).toStringList();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent) list.removeLast();
  settings.setValue(key, list);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  QSettings settings;
  const QStringList clusters = settings.value(kRecentClusters).toStringList();
  const QStringList plans = settings.value(kRecentPlans).toStringList();
  for (const QString& path : clusters) {
    recent_menu_->addAction(tr("Cluster: %1").arg(QFileInfo(path).fileName()), this, [this, path] { openCluster(path); })
        ->setToolTip(path);
  }
  if (!clusters.isEmpty() && !plans.isEmpty()) recent_menu_->addSeparator();
  for (const QString& path : plans) {
    recent_menu_->addAction(tr("Plan: %1").arg(QFileInfo(path).fileName()), this, [this, path] { openPlan(path); })
        ->setToolTip(path);
  }
  recent_menu_->setEnabled(!recent_menu_->isEmpty());
}

bool MainWindow::confirmUnsavedPlan() {
  if (!session_->hasDocument() || session_->undoStack()->isClean()) return true;
  const auto answer = QMessageBox::question(
      this, tr("Unsaved plan"), tr("The plan has edits that are not saved. Save them before quitting?"),
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Save) {
    savePlanAs();
    return session_->undoStack()->isClean();  // the save dialog was not cancelled
  }
  return true;
}

}  // namespace stagecraft::gui
