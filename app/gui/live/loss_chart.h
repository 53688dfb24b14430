#pragma once

#include <cstdint>

#include "live/chart_plot.h"

namespace stagecraft::gui {

/// Training loss per step, raw and smoothed (exponential moving average), optionally on a
/// logarithmic axis. Shows every step by default.
class LossChart : public ChartPlot {
  Q_OBJECT

 public:
  /// Weight of the history in the smoothed line: ema = a * ema + (1 - a) * loss.
  static constexpr double kSmoothing = 0.9;

  explicit LossChart(QWidget* parent = nullptr);

  /// A non-finite loss is dropped (logged).
  void addStep(std::int64_t step, double loss);
  void clear();

  /// A logarithmic loss axis; losses <= 0 are then left out of the range.
  void setLogScale(bool log_scale);
  bool logScale() const { return log_scale_; }
  /// Steps in view while following; 0 shows all (the default).
  void setStepWindow(int steps);
  int stepWindow() const { return step_window_; }

  int pointCount() const;
  QCPGraph* lossGraph() const { return loss_; }
  QCPGraph* smoothedGraph() const { return smoothed_; }

  QString exportName() const override { return QStringLiteral("loss"); }

 protected:
  void prepareReplot() override;
  void addChartActions(QMenu* menu) override;

 private:
  QCPGraph* loss_ = nullptr;
  QCPGraph* smoothed_ = nullptr;
  bool log_scale_ = false;
  int step_window_ = 0;
  bool has_ema_ = false;
  double ema_ = 0;
};

}  // namespace stagecraft::gui
