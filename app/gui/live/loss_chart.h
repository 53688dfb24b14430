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
  /// An evaluation on held-out samples: its loss as a point beside the training loss, its
  /// accuracy on the right axis (0-100 %).
  void addEvaluation(std::int64_t step, double accuracy, double loss);
  void clear();

  /// Losses spanning kAutoLogRange or more (all positive) switch the axis to logarithmic
  /// by themselves, so a loss that grew by orders of magnitude does not flatten the rest.
  static constexpr double kAutoLogRange = 100;
  /// A logarithmic loss axis; losses <= 0 are then left out of the range. The user's
  /// choice: the axis no longer switches by itself.
  void setLogScale(bool log_scale);
  bool logScale() const { return log_scale_; }
  /// Steps in view while following; 0 shows all (the default).
  void setStepWindow(int steps);
  int stepWindow() const { return step_window_; }

  int pointCount() const;
  QCPGraph* lossGraph() const { return loss_; }
  QCPGraph* smoothedGraph() const { return smoothed_; }
  QCPGraph* heldOutLossGraph() const { return held_out_loss_; }
  QCPGraph* accuracyGraph() const { return accuracy_; }

  QString exportName() const override { return QStringLiteral("loss"); }

 protected:
  void prepareReplot() override;
  void resizeEvent(QResizeEvent* event) override;
  void addChartActions(QMenu* menu) override;

 private:
  void fitLegend();

  QCPGraph* loss_ = nullptr;
  QCPGraph* smoothed_ = nullptr;
  QCPGraph* held_out_loss_ = nullptr;
  QCPGraph* accuracy_ = nullptr;  // on yAxis2
  void applyLogScale(bool log_scale);

  bool log_scale_ = false;
  bool auto_log_ = true;  // until the user picks a scale
  double min_loss_ = 0, max_loss_ = 0;  // of the losses shown, for the automatic switch
  int step_window_ = 0;
  bool has_ema_ = false;
  double ema_ = 0;
};

}  // namespace stagecraft::gui
