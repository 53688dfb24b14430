#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QStringList>
#include <map>
#include <vector>

#include "sim/simulator.h"

namespace stagecraft::gui {

class LiveCharts;
class TrainingController;

/// What the live charts show of a training run: the controller's steps (throughput
/// measured beside predicted, loss), each device's latest utilisation and memory, and the
/// measured pipeline timeline of the last step, with the deployed devices as rows. The one
/// link between TrainingController and LiveCharts, for the main window and its tests.
class ChartFeed : public QObject {
  Q_OBJECT

 public:
  ChartFeed(TrainingController* controller, LiveCharts* charts, QObject* parent = nullptr);

  /// Rows for the deployed (or re-planned) cluster; called when the controller deploys.
  void resetDevices();
  /// Devices, in row order, of the run being charted.
  const QStringList& devices() const { return devices_; }

 private:
  void onStep(qint64 step, double loss, double measured, double predicted, double seconds);
  void onIteration(const QString& device, double busy_fraction, double memory_mb,
                   const std::vector<TimelineEvent>& timeline);

  TrainingController* controller_;
  LiveCharts* charts_;
  QStringList devices_;
  std::map<QString, std::vector<TimelineEvent>> last_timelines_;  ///< per device, its last iteration
  QElapsedTimer clock_;
  double last_seconds_ = 0;  // of the last step shown
  static constexpr qint64 kNoteSteps = 20;  // how long the timeline says a recovery happened
  QString lost_;                // the device(s) lost, until the run is going again
  qint64 note_until_step_ = 0;  // 0: no note
};

}  // namespace stagecraft::gui
