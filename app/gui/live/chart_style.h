#pragma once

#include <QColor>
#include <QFont>
#include <QString>

#include "cluster/cluster.h"
#include "sim/simulator.h"

class QCPAxis;
class QCustomPlot;
class QCPTextElement;

namespace stagecraft::gui {

/// The charts' one palette and one look, so the four charts (and a PDF of them) read as
/// one dashboard. Colours are from a colour-blind-safe set (Okabe–Ito / Tableau).
class ChartStyle {
 public:
  ChartStyle() = delete;

  /// Measured and predicted throughput, loss and its smoothed line.
  static QColor measuredColor();
  static QColor predictedColor();
  static QColor lossColor();
  static QColor lossSmoothedColor();
  static QColor accuracyColor();
  /// Memory above kMemoryWarnFraction of the limit, and above the limit.
  static QColor warningColor();
  static QColor overLimitColor();

  /// The colour of device `index` when the caller gave none: distinct for 10 devices,
  /// then repeating a little lighter.
  static QColor deviceColor(int index);

  /// A device bar's colour by tier (cloud, edge, end), for LiveCharts::setDevices.
  static QColor tierColor(Tier tier);

  /// A timeline block of `kind`; forward and backward alternate between shades by
  /// micro-batch so neighbouring micro-batches stay apart. micro_batch < 0: the base shade.
  static QColor eventColor(EventKind kind, int micro_batch = -1);
  /// Black or white, whichever reads better on `background`.
  static QColor textColorOn(const QColor& background);

  /// Applies the shared fonts, grid and margins to `plot`, and the label to each axis.
  static void apply(QCustomPlot* plot);
  static void setAxisLabel(QCPAxis* axis, const QString& label);
  static QFont titleFont();
  /// Puts `title` and the plot's legend side by side in a row above the axes, the legend's
  /// entries `legend_columns` to a row, so no entry covers the data however the axes scale.
  static void setHeader(QCustomPlot* plot, QCPTextElement* title, int legend_columns);

  /// Memory used / limit at which a device's memory bar turns to the warning colour.
  static constexpr double kMemoryWarnFraction = 0.9;
};

}  // namespace stagecraft::gui
