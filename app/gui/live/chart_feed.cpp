#include "live/chart_feed.h"

#include <algorithm>

#include "editor/display_units.h"
#include "live/live_charts.h"
#include "live/throughput_chart.h"
#include "live/timeline_chart.h"
#include "live/training_controller.h"

namespace stagecraft::gui {

ChartFeed::ChartFeed(TrainingController* controller, LiveCharts* charts, QObject* parent)
    : QObject(parent), controller_(controller), charts_(charts) {
  connect(controller_, &TrainingController::stepCompleted, this, &ChartFeed::onStep);
  connect(controller_, &TrainingController::iterationReported, this, &ChartFeed::onIteration);
  connect(controller_, &TrainingController::stateChanged, this, [this](TrainingState state) {
    if (state == TrainingState::Deployed) resetDevices();
  });
  connect(controller_, &TrainingController::replanApplied, this, [this] { resetDevices(); });
  connect(controller_, &TrainingController::predictionChanged, this, [this] {
    charts_->throughputChart()->setPredictionSource(costSourceLabel(controller_->costBasis().source()));
  });
  // A lost device is marked where training stood when it went.
  connect(controller_, &TrainingController::deviceLost, this,
          [this](const QString& device, const QString&, qint64 failed_after, qint64) {
            charts_->addMarker(failed_after, last_seconds_, tr("%1 lost").arg(device), QColor(0xc6, 0x28, 0x28));
            lost_ = device;
          });
  // The timeline says which iterations are the first after a recovery, for a few steps.
  connect(controller_, &TrainingController::recovered, this, [this](const QString& device, qint64 step, double seconds) {
    if (device.isEmpty() || device != lost_) return;  // a re-plan, a join, a straggler
    lost_.clear();
    charts_->timelineChart()->setNote(
        tr("back %1 s after losing %2").arg(seconds, 0, 'f', 1).arg(device));
    note_until_step_ = step + kNoteSteps;
  });
}

void ChartFeed::resetDevices() {
  const auto cluster = controller_->deployedCluster();
  if (!cluster) return;
  devices_.clear();
  QList<QColor> colors;
  for (const Device& device : cluster->devices()) {
    devices_ << QString::fromStdString(device.name);
    colors << tierColor(device.tier);
  }
  charts_->setDevices(devices_, colors);
  last_timelines_.clear();
}

void ChartFeed::onStep(qint64 step, double loss, double measured, double predicted, double seconds) {
  if (!clock_.isValid()) clock_.start();
  last_seconds_ = seconds;
  charts_->addStep(step, seconds, measured, predicted, loss);
  // The last iteration every device reported, drawn as one pipeline.
  std::vector<TimelineEvent> events;
  double iteration_ms = 0;
  for (const auto& [device, timeline] : last_timelines_) {
    for (const TimelineEvent& e : timeline) {
      events.push_back(e);
      iteration_ms = std::max(iteration_ms, e.end_ms);
    }
  }
  if (!events.empty()) charts_->setTimeline(events, iteration_ms, true);
  if (note_until_step_ > 0 && step > note_until_step_) {
    note_until_step_ = 0;
    charts_->timelineChart()->setNote({});
  }
}

void ChartFeed::onIteration(const QString& device, double busy_fraction, double memory_mb,
                            const std::vector<TimelineEvent>& timeline) {
  const int row = static_cast<int>(devices_.indexOf(device));
  if (row < 0) return;
  if (!clock_.isValid()) clock_.start();
  const auto cluster = controller_->deployedCluster();
  const double limit_mb = cluster && row < cluster->size() ? cluster->device(row).memory_mb : 0;
  charts_->addDeviceSample(row, clock_.elapsed() / 1000.0, busy_fraction, memory_mb, limit_mb);
  last_timelines_[device] = timeline;
}

}  // namespace stagecraft::gui
