#pragma once

#include <cstdint>

#include "live/chart_plot.h"

namespace stagecraft::gui {

/// Samples per second over the run's time: the measured line and, dashed, the planner's
/// prediction, so a run falling behind its plan shows at a glance. Keeps the last
/// timeWindow() seconds in view while following (all data is kept for dragging back).
class ThroughputChart : public ChartPlot {
  Q_OBJECT

 public:
  /// Seconds of history in view while following.
  static constexpr double kDefaultWindowSeconds = 120;

  explicit ThroughputChart(QWidget* parent = nullptr);

  /// One training step. A NaN or non-positive prediction leaves a gap in the dashed line.
  void addStep(std::int64_t step, double seconds_since_start, double measured_samples_per_second,
               double predicted_samples_per_second);
  void clear();

  /// 0 shows every step (the axis grows with the run).
  void setTimeWindow(double seconds);
  double timeWindow() const { return window_seconds_; }

  /// The predicted line's legend says where the prediction comes from ("profiled"...).
  void setPredictionSource(const QString& source);
  QString predictedName() const;
  int measuredPointCount() const;
  int predictedPointCount() const;
  QCPGraph* measuredGraph() const { return measured_; }
  QCPGraph* predictedGraph() const { return predicted_; }

  QString exportName() const override { return QStringLiteral("throughput"); }

 protected:
  void prepareReplot() override;

 private:
  QCPGraph* measured_ = nullptr;
  QCPGraph* predicted_ = nullptr;
  double window_seconds_ = kDefaultWindowSeconds;
  double last_seconds_ = 0;
};

}  // namespace stagecraft::gui
