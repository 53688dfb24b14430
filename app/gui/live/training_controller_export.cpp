// TrainingController's export of a trained TorchScript model: a checkpoint of the weights
// the workers hold, written into a copy of the user's file by stagecraft-worker.
#include <QCoreApplication>
#include <QTemporaryDir>

#include "control/local_cluster.h"
#include "control/model_import.h"
#include "io/error.h"
#include "live/training_controller.h"
#include "live/training_deployment.h"

namespace stagecraft::gui {

bool TrainingController::exportModel(const QString& path) {
  if (!canExportModel()) return refuse(tr("Only a TorchScript model can be exported: open one with File → Open TorchScript Model…"));
  if (!settled() || !plan_) return refuse(tr("Export when no step runs: stop training first."));
  std::string binary;
  {
    std::lock_guard lock(settings_mutex_);
    binary = worker_binary_;
  }
  enqueue([this, path, binary] {
    try {
      QTemporaryDir folder;
      if (!folder.isValid()) throw environmentError("cannot make a temporary folder");
      if (!deployment_) throw Error("nothing is deployed");
      control::TrainingRun& run = *deployment_->run;
      const std::int64_t step = run.step();
      run.saveCheckpoint(folder.path().toStdString());
      control::exportTorchScript(
          folder.path().toStdString(), path.toStdString(),
          control::findWorkerBinary(binary, QCoreApplication::applicationFilePath().toStdString()));
      toGui([this, path, step] {
        Q_EMIT logMessage(tr("coordinator"), QtInfoMsg, tr("Exported the model trained to step %1 to %2.").arg(step).arg(path));
        Q_EMIT modelExported(path, step);
      });
    } catch (const std::exception& e) {
      const QString message = tr("Cannot export the model: %1").arg(QString::fromUtf8(e.what()));
      toGui([this, message] { Q_EMIT failed(message); });
    }
  });
  return true;
}

}  // namespace stagecraft::gui
