// MainWindow's documents: the cluster, model and plan it opens and saves, the recent
// files, and the question before quitting with plan edits that are not saved.
#include <QComboBox>
#include <QCoreApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QInputDialog>
#include <QLineEdit>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QUndoStack>

#include "cluster/cluster_catalog.h"
#include "control/local_cluster.h"
#include "control/model_import.h"
#include "io/error.h"
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

const QString kScriptShapes = QStringLiteral("torchscript/shape/");

QString fromStd(const std::string& text) { return QString::fromStdString(text); }

/// A zoo name, a model JSON, or a TorchScript file with the sample shape given for it
/// before, imported by the worker's shape probe (a second or so, under a wait cursor).
ModelSpec loadNamedModel(const QString& name_or_path) {
  const std::string path = name_or_path.toStdString();
  if (!control::isTorchScriptPath(path)) return loadModel(path);
  const QString shape = QSettings().value(kScriptShapes + name_or_path).toString();
  if (shape.isEmpty()) {
    throw Error(MainWindow::tr("%1: give its sample shape with File → Open TorchScript Model…")
                    .arg(name_or_path)
                    .toStdString());
  }
  QGuiApplication::setOverrideCursor(Qt::WaitCursor);
  struct Restore {
    ~Restore() { QGuiApplication::restoreOverrideCursor(); }
  } restore;
  return control::loadModelOrScript(
      path, shape.toStdString(),
      control::findWorkerBinary({}, QCoreApplication::applicationFilePath().toStdString()));
}

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
      ModelSpec model = [&] {
        try {
          return loadNamedModel(pending_model_.isEmpty() ? kDefaultModel : pending_model_);
        } catch (const std::exception& e) {
          // A TorchScript file saved in the settings may be gone: the default model then.
          log_->append(tr("console"), LogModel::Level::Warning, QString::fromUtf8(e.what()));
          return loadModel(kDefaultModel.toStdString());
        }
      }();
      const bool scripted = model.proto().has_script();
      const QString name = fromStd(model.name());
      session_->setDocument(std::move(model), std::move(cluster));
      if (scripted) listTorchScriptModel(pending_model_, name);
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
    ModelSpec model = loadNamedModel(name_or_path);
    if (model.proto().has_script()) listTorchScriptModel(name_or_path, fromStd(model.name()));
    pending_model_ = name_or_path;
    if (session_->hasDocument()) session_->setModel(std::move(model));
    QSettings().setValue(QStringLiteral("model"), name_or_path);
  } catch (const std::exception& e) {
    showError(tr("Cannot load the model"), QString::fromUtf8(e.what()));
  }
}

void MainWindow::openTorchScriptModel() {
  QSettings settings;
  const QString path = QFileDialog::getOpenFileName(
      this, tr("Open TorchScript model"), settings.value(QStringLiteral("torchscript/folder")).toString(),
      tr("TorchScript files (*.pt *.pth *.ts);;All files (*)"));
  if (path.isEmpty()) return;
  settings.setValue(QStringLiteral("torchscript/folder"), QFileInfo(path).path());
  bool ok = false;
  const QString shape = QInputDialog::getText(
      this, tr("Sample shape"),
      tr("The shape of one sample, without the batch:\nC,H,W for images (3,32,32), D for vectors (784),\nT for "
         "token sequences (when the first layer is an nn.Embedding)."),
      QLineEdit::Normal, settings.value(kScriptShapes + path, QStringLiteral("3,32,32")).toString(), &ok);
  if (!ok || shape.trimmed().isEmpty()) return;
  settings.setValue(kScriptShapes + path, shape.trimmed());
  selectModel(path);
  if (session_->hasDocument() && session_->model().proto().has_script()) {
    log_->append(tr("console"), LogModel::Level::Info,
                 tr("Imported %1: %2 layers.").arg(path).arg(session_->model().layerCount()));
  }
}

void MainWindow::listTorchScriptModel(const QString& path, const QString& name) {
  int index = model_picker_->findData(path);
  if (index < 0) {
    model_picker_->addItem(tr("%1 (TorchScript)").arg(name), path);
    index = model_picker_->count() - 1;
    model_picker_->setItemData(index, path, Qt::ToolTipRole);
  }
  model_picker_->setCurrentIndex(index);
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
