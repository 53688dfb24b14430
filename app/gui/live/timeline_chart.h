#pragma once

#include <QStringList>
#include <vector>

#include "live/chart_plot.h"
#include "live/timeline_blocks.h"
#include "sim/simulator.h"

namespace stagecraft::gui {

/// The pipeline Gantt of one iteration: a row per device (its compute busy share on the
/// right), forward / backward blocks numbered by micro-batch, sends, receives and the
/// all-reduce beneath them, so bubbles and stragglers show. Fed the simulator's predicted
/// timeline before training and a measured iteration during it. Hovering a block tells
/// what it is; drag / wheel zoom the time axis, a double-click shows the whole iteration.
class TimelineChart : public ChartPlot {
  Q_OBJECT

 public:
  explicit TimelineChart(QWidget* parent = nullptr);

  /// Row names, in device-index order. Rows for devices the timeline names beyond this
  /// list are called "Device N".
  void setDevices(const QStringList& names);
  /// Replaces the blocks: one per event (event.device = row), and the iteration's end.
  void setTimeline(const std::vector<TimelineEvent>& events, double iteration_ms, bool measured);
  void clear();
  /// A line after the title, e.g. that this is the first iteration after a recovery;
  /// empty removes it. Kept across setTimeline(), removed by clear().
  void setNote(const QString& note);
  QString title() const;

  int blockCount() const { return static_cast<int>(blocks_->blocks().size()); }
  const std::vector<TimelineBlock>& blocks() const { return blocks_->blocks(); }
  int rowCount() const;
  double iterationMs() const { return iteration_ms_; }
  bool measured() const { return measured_; }

  /// "Forward", "Backward", "Send", "Receive", "All-reduce" (translated).
  static QString kindLabel(EventKind kind);

  QString exportName() const override { return QStringLiteral("timeline"); }

 protected:
  void prepareReplot() override;

 private:
  void updateTitle();
  void updateRows();
  void showBlockToolTip(QMouseEvent* event);
  QString rowName(int row) const;

  TimelineBlocks* blocks_ = nullptr;
  QCPTextElement* title_ = nullptr;
  QCPItemStraightLine* iteration_end_ = nullptr;
  QStringList names_;
  double iteration_ms_ = 0;
  bool measured_ = false;
  QString note_;
};

}  // namespace stagecraft::gui
