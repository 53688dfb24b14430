#pragma once

#include <QString>
#include <QTimer>
#include <utility>
#include <vector>
#include "live/qcustomplot_include.h"

class QMenu;

namespace stagecraft::gui {

/// The base of the console's charts: a QCustomPlot that replots at most once per
/// kReplotIntervalMs (longer for a slow chart) however often its data changes, never while
/// hidden, and exports
/// itself to PNG or PDF (also from its context menu).
///
/// Subclasses only store data when fed and call requestReplot(); ranges, bar colours and
/// labels are brought up to date once per replot, in prepareReplot().
class ChartPlot : public QCustomPlot {
  Q_OBJECT

 public:
  /// At most one replot per this many milliseconds (about 30 frames per second)...
  static constexpr int kReplotIntervalMs = 33;
  /// ...and, for a chart whose replots are slow (64 devices' rows), at most one per this many
  /// times its last replot took, so no chart keeps the GUI thread busy for more than ~10 %
  /// of the time however fast its data comes; never less often than kMaxReplotIntervalMs.
  static constexpr int kReplotCostFactor = 10;
  static constexpr int kMaxReplotIntervalMs = 500;

  explicit ChartPlot(QWidget* parent = nullptr);
  ~ChartPlot() override;

  /// Marks the chart stale; it replots once within kReplotIntervalMs (or when shown).
  void requestReplot();
  /// Replots at once when stale (before an export, a grab or a measurement).
  void flushReplot();
  bool replotPending() const { return dirty_; }
  /// Replots done through requestReplot / flushReplot since construction.
  int replotCount() const { return replot_count_; }
  /// The least time between two replots now (after the last replot's cost).
  int replotIntervalMs() const { return replot_timer_.interval(); }

  /// True while the chart keeps its newest data (or, for the timeline, the whole
  /// iteration) in view. Dragging or zooming with the mouse turns it off; a double-click
  /// or "Follow latest" turns it back on.
  bool following() const { return following_; }
  void setFollowing(bool following);

  /// Writes the chart as it is now; width/height 0 take the widget's size. Return false
  /// (and log why) when the file cannot be written.
  bool exportPng(const QString& path, int width = 0, int height = 0);
  bool exportPdf(const QString& path, int width = 0, int height = 0);
  /// Writes PNG or PDF after the suffix of `path` (.pdf, anything else PNG).
  bool exportTo(const QString& path);

  /// Fills `menu` with this chart's own actions and "Export chart…". LiveCharts adds the
  /// dashboard's actions after them.
  void populateContextMenu(QMenu* menu);
  /// Asks for a file with a save dialog and exports; false when cancelled or failed.
  bool exportInteractively();

  /// A save dialog for PNG / PDF; an empty string when cancelled. The suffix follows the
  /// chosen filter when the user typed none.
  static QString askExportPath(QWidget* parent, const QString& caption, const QString& suggested_name);

  /// A dashed vertical line at `key` with `label` at its top (a lost device, a re-plan).
  void addMarker(double key, const QString& label, const QColor& color);
  /// Removes every marker.
  void clearMarkers();
  int markerCount() const { return static_cast<int>(markers_.size()); }

  /// A file name for exports, e.g. "throughput".
  virtual QString exportName() const = 0;

 protected:
  /// Called right before each replot: update ranges and derived items here.
  virtual void prepareReplot() {}
  /// Chart-specific context menu actions (added before "Export chart…").
  virtual void addChartActions(QMenu* menu) { Q_UNUSED(menu); }
  /// Lets the mouse drag and zoom the key axis; doing so stops following.
  void enableKeyNavigation();

  void showEvent(QShowEvent* event) override;
  void contextMenuEvent(QContextMenuEvent* event) override;

 private:
  void replotIfDirty();

  QTimer replot_timer_;
  bool dirty_ = false;
  bool following_ = true;
  bool key_navigation_ = false;
  int replot_count_ = 0;
  std::vector<std::pair<QCPItemStraightLine*, QCPItemText*>> markers_;
};

}  // namespace stagecraft::gui
