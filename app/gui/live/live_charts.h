#pragma once

#include <QColor>
#include <QList>
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <vector>

#include "sim/simulator.h"

class QSplitter;

namespace stagecraft::gui {

class ChartPlot;
class DeviceChart;
class LossChart;
class ThroughputChart;
class TimelineChart;

/// The live-monitoring dashboard: throughput and loss on top, devices and the pipeline
/// timeline below, in splitters. The training controller (and, before training, the
/// simulator) feeds it plain numbers; each chart replots at most every
/// ChartPlot::kReplotIntervalMs. Right-click a chart to export it or the whole dashboard.
class LiveCharts : public QWidget {
  Q_OBJECT

 public:
  enum class Chart { Invalid = 0, Throughput, Loss, Devices, Timeline };

  explicit LiveCharts(QWidget* parent = nullptr);
  ~LiveCharts() override;

  /// The devices of the run, in the index order addDeviceSample and timeline events use.
  /// `colors` per device (e.g. by tier); missing ones take ChartStyle's palette.
  void setDevices(const QStringList& names, const QList<QColor>& colors = {});
  /// One training step: a throughput point (measured and predicted) and a loss point.
  void addStep(std::int64_t step, double seconds_since_start, double measured_samples_per_second,
               double predicted_samples_per_second, double loss);
  /// The latest utilisation and memory of one device; busy_fraction 0..1.
  void addDeviceSample(int device, double seconds, double busy_fraction, double memory_mb,
                       double memory_limit_mb);
  /// The simulator's predicted iteration (measured = false) or one measured iteration.
  void setTimeline(const std::vector<TimelineEvent>& events, double iteration_ms, bool measured);
  /// Empties every chart for a new run; the devices stay.
  /// Marks step `step` (at `seconds` since the start) on the throughput and loss charts:
  /// a lost device or a re-plan.
  void addMarker(std::int64_t step, double seconds, const QString& label, const QColor& color);
  void clear();

  /// Replots every stale chart now (before a grab or a measurement).
  void flushReplots();

  ThroughputChart* throughputChart() const { return throughput_; }
  LossChart* lossChart() const { return loss_; }
  DeviceChart* deviceChart() const { return devices_; }
  TimelineChart* timelineChart() const { return timeline_; }
  ChartPlot* chart(Chart which) const;

  /// The whole dashboard as shown: PNG via QWidget::grab, PDF as vector graphics (one
  /// page the widget's size). False (logged) when the file cannot be written.
  bool exportPng(const QString& path);
  bool exportPdf(const QString& path);
  /// One chart at its on-screen size; PDF for a .pdf suffix, PNG otherwise.
  bool exportChart(Chart which, const QString& path);
  /// Save dialog, then exportPng / exportPdf after the chosen suffix.
  bool exportInteractively();

 private:
  void showChartMenu(ChartPlot* chart, const QPoint& pos);

  ThroughputChart* throughput_ = nullptr;
  LossChart* loss_ = nullptr;
  DeviceChart* devices_ = nullptr;
  TimelineChart* timeline_ = nullptr;
  QSplitter* rows_ = nullptr;
};

}  // namespace stagecraft::gui
