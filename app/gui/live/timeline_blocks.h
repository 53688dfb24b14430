#pragma once

#include "live/qcustomplot_include.h"

#include <vector>

#include "sim/simulator.h"

namespace stagecraft::gui {

/// One block of the pipeline Gantt: `row` is the device's row, times in milliseconds.
struct TimelineBlock {
  int row = 0;
  EventKind kind = EventKind::Invalid;
  int micro_batch = -1;
  int peer = -1;
  double start_ms = 0;
  double end_ms = 0;
};

/// A QCustomPlot plottable drawing thousands of Gantt blocks in one pass (items would be
/// one QObject each and far slower). Each device row (height 1, key = time, value = row)
/// has a compute lane on top (forward / backward, numbered by micro-batch where wide
/// enough) and a communication lane below (send above receive; the all-reduce spans both),
/// so bubbles show as gaps in the compute lane.
class TimelineBlocks : public QCPAbstractPlottable {
  Q_OBJECT

 public:
  TimelineBlocks(QCPAxis* time_axis, QCPAxis* row_axis);

  void setBlocks(std::vector<TimelineBlock> blocks);
  const std::vector<TimelineBlock>& blocks() const { return blocks_; }
  void clearBlocks() { blocks_.clear(); }

  /// The block under pixel `pos`, or -1.
  int blockAt(const QPointF& pos) const;
  /// The value-axis span [top, bottom] of `block`'s lane within its row.
  static QCPRange laneSpan(const TimelineBlock& block);

  double selectTest(const QPointF& pos, bool only_selectable, QVariant* details = nullptr) const override;
  QCPRange getKeyRange(bool& found_range, QCP::SignDomain in_sign_domain = QCP::sdBoth) const override;
  QCPRange getValueRange(bool& found_range, QCP::SignDomain in_sign_domain = QCP::sdBoth,
                         const QCPRange& in_key_range = QCPRange()) const override;

 protected:
  void draw(QCPPainter* painter) override;
  void drawLegendIcon(QCPPainter* painter, const QRectF& rect) const override;

 private:
  QRectF pixelRect(const TimelineBlock& block) const;

  std::vector<TimelineBlock> blocks_;
};

}  // namespace stagecraft::gui
