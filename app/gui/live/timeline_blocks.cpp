#include "live/timeline_blocks.h"

#include <QFontMetricsF>

#include <algorithm>
#include <limits>

#include "live/chart_style.h"

namespace stagecraft::gui {

TimelineBlocks::TimelineBlocks(QCPAxis* time_axis, QCPAxis* row_axis) : QCPAbstractPlottable(time_axis, row_axis) {
  setAntialiasedFill(false);
  setSelectable(QCP::stNone);
}

void TimelineBlocks::setBlocks(std::vector<TimelineBlock> blocks) { blocks_ = std::move(blocks); }

QCPRange TimelineBlocks::laneSpan(const TimelineBlock& block) {
  const double r = block.row;
  switch (block.kind) {
    case EventKind::Forward:
    case EventKind::Backward:
      return {r - 0.42, r + 0.12};
    case EventKind::Send:
      return {r + 0.16, r + 0.29};
    case EventKind::Receive:
      return {r + 0.31, r + 0.44};
    case EventKind::AllReduce:
    case EventKind::Update:
      return {r + 0.16, r + 0.44};
    case EventKind::Invalid:
      break;
  }
  return {r - 0.42, r + 0.44};
}

QRectF TimelineBlocks::pixelRect(const TimelineBlock& block) const {
  const QCPRange lane = laneSpan(block);
  const double x0 = keyAxis()->coordToPixel(block.start_ms);
  const double x1 = keyAxis()->coordToPixel(block.end_ms);
  const double y0 = valueAxis()->coordToPixel(lane.lower);
  const double y1 = valueAxis()->coordToPixel(lane.upper);
  return QRectF(QPointF(std::min(x0, x1), std::min(y0, y1)), QPointF(std::max(x0, x1), std::max(y0, y1)));
}

void TimelineBlocks::draw(QCPPainter* painter) {
  if (blocks_.empty()) return;
  const QCPRange visible = keyAxis()->range();
  QFont font = mParentPlot->font();
  font.setPointSizeF(std::max(6.0, font.pointSizeF() - 2));
  painter->setFont(font);
  const QFontMetricsF metrics(font);
  const double digit_width = metrics.horizontalAdvance(QLatin1Char('0'));
  painter->setPen(Qt::NoPen);
  for (const TimelineBlock& block : blocks_) {
    if (block.end_ms < visible.lower || block.start_ms > visible.upper) continue;
    QRectF rect = pixelRect(block);
    // A hairline gap between neighbours that are wide enough to afford one.
    if (rect.width() > 4) rect.adjust(0, 0, -1, 0);
    if (rect.width() < 1) rect.setWidth(1);
    const QColor color = ChartStyle::eventColor(block.kind, block.micro_batch);
    painter->fillRect(rect, color);
    if (block.micro_batch < 0 || (block.kind != EventKind::Forward && block.kind != EventKind::Backward)) continue;
    const QString number = QString::number(block.micro_batch);
    if (rect.width() < digit_width * number.size() + 2 || rect.height() < metrics.height()) continue;
    painter->setPen(ChartStyle::textColorOn(color));
    painter->drawText(rect, Qt::AlignCenter, number);
    painter->setPen(Qt::NoPen);
  }
}

void TimelineBlocks::drawLegendIcon(QCPPainter* painter, const QRectF& rect) const {
  painter->fillRect(rect, ChartStyle::eventColor(EventKind::Forward));
}

int TimelineBlocks::blockAt(const QPointF& pos) const {
  // Later blocks are drawn on top: search from the back.
  for (int i = static_cast<int>(blocks_.size()) - 1; i >= 0; --i) {
    QRectF rect = pixelRect(blocks_[static_cast<std::size_t>(i)]);
    if (rect.width() < 2) rect.adjust(-1, 0, 1, 0);
    if (rect.contains(pos)) return i;
  }
  return -1;
}

double TimelineBlocks::selectTest(const QPointF& pos, bool only_selectable, QVariant* details) const {
  Q_UNUSED(details);
  if (only_selectable && !mSelectable) return -1;
  if (!mKeyAxis || !mValueAxis) return -1;
  return blockAt(pos) >= 0 ? 0 : -1;
}

QCPRange TimelineBlocks::getKeyRange(bool& found_range, QCP::SignDomain in_sign_domain) const {
  Q_UNUSED(in_sign_domain);
  found_range = !blocks_.empty();
  if (blocks_.empty()) return {};
  double lower = std::numeric_limits<double>::max();
  double upper = std::numeric_limits<double>::lowest();
  for (const TimelineBlock& block : blocks_) {
    lower = std::min(lower, block.start_ms);
    upper = std::max(upper, block.end_ms);
  }
  return {lower, upper};
}

QCPRange TimelineBlocks::getValueRange(bool& found_range, QCP::SignDomain in_sign_domain,
                                       const QCPRange& in_key_range) const {
  Q_UNUSED(in_sign_domain);
  Q_UNUSED(in_key_range);
  found_range = !blocks_.empty();
  if (blocks_.empty()) return {};
  int rows = 0;
  for (const TimelineBlock& block : blocks_) rows = std::max(rows, block.row);
  return {-0.5, rows + 0.5};
}

}  // namespace stagecraft::gui
