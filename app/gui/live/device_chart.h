#pragma once

#include <QColor>
#include <QList>
#include <QStringList>
#include <vector>

#include "live/chart_plot.h"

namespace stagecraft::gui {

/// Per device, its latest sample: compute utilisation (busy %) beside memory as a share of
/// its limit, one horizontal bar per device with the device names down the side, so 16+
/// devices stay readable. A memory bar turns amber at ChartStyle::kMemoryWarnFraction of
/// the limit and red over it; its label gives used / limit.
class DeviceChart : public ChartPlot {
  Q_OBJECT

 public:
  explicit DeviceChart(QWidget* parent = nullptr);

  /// Replaces the devices (and drops their samples). `colors` gives each device's bar
  /// colour (e.g. by tier); missing entries take ChartStyle::deviceColor(index).
  void setDevices(const QStringList& names, const QList<QColor>& colors = {});
  /// The latest sample of device `device` (an index into setDevices' list); an unknown
  /// index is ignored (logged). busy_fraction is 0..1.
  void addDeviceSample(int device, double seconds, double busy_fraction, double memory_mb,
                       double memory_limit_mb);
  /// Drops every sample; the devices stay.
  void clear();

  int deviceCount() const { return static_cast<int>(devices_.size()); }
  QStringList deviceNames() const;
  /// The bars of device `device`: one data point each (none before its first sample);
  /// key = device index, value = percent.
  QCPBars* busyBars(int device) const;
  QCPBars* memoryBars(int device) const;
  /// 0 = fine, 1 = above the warning fraction, 2 = over the limit.
  int memoryLevel(int device) const;

  QString exportName() const override { return QStringLiteral("devices"); }

 protected:
  void prepareReplot() override;

 private:
  struct DeviceRow {
    QString name;
    QColor color;
    QCPBars* busy = nullptr;
    QCPBars* memory = nullptr;
    QCPItemText* busy_label = nullptr;
    QCPItemText* memory_label = nullptr;
    bool has_sample = false;
    double seconds = 0;
    double busy_fraction = 0;
    double memory_mb = 0;
    double memory_limit_mb = 0;
  };

  void removeRows();
  static void placeLabel(QCPItemText* label, double value, int row, QCPAxisRect* rect, const QColor& bar,
                         const QString& shorter = {});
  void layoutAxes();

  QCPAxisRect* busy_rect_ = nullptr;
  QCPAxisRect* memory_rect_ = nullptr;
  QCPItemStraightLine* warn_line_ = nullptr;
  QCPItemStraightLine* limit_line_ = nullptr;
  std::vector<DeviceRow> devices_;
};

}  // namespace stagecraft::gui
