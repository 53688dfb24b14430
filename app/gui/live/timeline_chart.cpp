#include "live/timeline_chart.h"

#include <QLoggingCategory>
#include <QToolTip>

#include <algorithm>

#include "live/chart_style.h"

namespace stagecraft::gui {

namespace {
Q_LOGGING_CATEGORY(lcTimelineChart, "stagecraft.gui.timelinechart")
}  // namespace

TimelineChart::TimelineChart(QWidget* parent) : ChartPlot(parent) {
  title_ = new QCPTextElement(this, QString(), ChartStyle::titleFont());
  // Title and legend share the top row so the Gantt keeps all the height; six kinds in two
  // rows of three, so the title keeps its room.
  ChartStyle::setHeader(this, title_, 3);
  legend->setMargins(QMargins(4, 2, 12, 2));
  legend->setIconSize(14, 10);

  blocks_ = new TimelineBlocks(xAxis, yAxis);
  blocks_->removeFromLegend();
  // Legend entries only: empty bars with each kind's colour.
  for (EventKind kind : {EventKind::Forward, EventKind::Backward, EventKind::Send, EventKind::Receive,
                         EventKind::AllReduce, EventKind::Update}) {
    auto* entry = new QCPBars(xAxis, yAxis);
    entry->setName(kindLabel(kind));
    entry->setPen(Qt::NoPen);
    entry->setBrush(ChartStyle::eventColor(kind));
  }

  ChartStyle::setAxisLabel(xAxis, tr("Time in iteration (ms)"));
  yAxis->setRangeReversed(true);
  yAxis->grid()->setVisible(false);
  yAxis->setSubTicks(false);
  yAxis->setTickLength(0, 0);
  yAxis2->setVisible(true);
  yAxis2->setRangeReversed(true);
  yAxis2->setSubTicks(false);
  yAxis2->setTickLength(0, 0);
  yAxis2->setBasePen(Qt::NoPen);
  ChartStyle::setAxisLabel(yAxis2, tr("Compute busy"));
  connect(yAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), yAxis2,
          qOverload<const QCPRange&>(&QCPAxis::setRange));

  iteration_end_ = new QCPItemStraightLine(this);
  iteration_end_->setPen(QPen(QColor(0x55, 0x55, 0x55), 1, Qt::DashLine));
  iteration_end_->point1->setCoords(0, 0);
  iteration_end_->point2->setCoords(0, 1);
  iteration_end_->setVisible(false);

  xAxis->setRange(0, 1);
  enableKeyNavigation();
  setMouseTracking(true);
  connect(this, &QCustomPlot::mouseMove, this, &TimelineChart::showBlockToolTip);
  updateTitle();
  updateRows();
}

QString TimelineChart::kindLabel(EventKind kind) {
  switch (kind) {
    case EventKind::Forward:
      return tr("Forward");
    case EventKind::Backward:
      return tr("Backward");
    case EventKind::Send:
      return tr("Send");
    case EventKind::Receive:
      return tr("Receive");
    case EventKind::AllReduce:
      return tr("All-reduce");
    case EventKind::Update:
      return tr("Optimizer step");
    case EventKind::Invalid:
      break;
  }
  return tr("Unknown");
}

void TimelineChart::setDevices(const QStringList& names) {
  names_ = names;
  updateRows();
  requestReplot();
}

void TimelineChart::setTimeline(const std::vector<TimelineEvent>& events, double iteration_ms, bool measured) {
  std::vector<TimelineBlock> blocks;
  blocks.reserve(events.size());
  for (const TimelineEvent& event : events) {
    if (event.device < 0 || event.end_ms < event.start_ms) {
      qCWarning(lcTimelineChart) << "skipping malformed event on device" << event.device;
      continue;
    }
    blocks.push_back({event.device, event.kind, event.micro_batch, event.peer, event.start_ms, event.end_ms});
  }
  blocks_->setBlocks(std::move(blocks));
  iteration_ms_ = iteration_ms;
  measured_ = measured;
  updateTitle();
  updateRows();
  setFollowing(true);
  requestReplot();
}

void TimelineChart::clear() {
  note_.clear();
  blocks_->clearBlocks();
  iteration_ms_ = 0;
  measured_ = false;
  updateTitle();
  updateRows();
  xAxis->setRange(0, 1);
  requestReplot();
}

int TimelineChart::rowCount() const {
  int rows = static_cast<int>(names_.size());
  for (const TimelineBlock& block : blocks_->blocks()) rows = std::max(rows, block.row + 1);
  return rows;
}

QString TimelineChart::rowName(int row) const {
  return row < names_.size() ? names_[row] : tr("Device %1").arg(row);
}

void TimelineChart::updateTitle() {
  QString text;
  if (blocks_->blocks().empty()) {
    text = tr("Pipeline Timeline (no data yet)");
  } else if (measured_) {
    text = tr("Measured Iteration: %1 ms").arg(iteration_ms_, 0, 'f', 1);
  } else {
    text = tr("Predicted Iteration: %1 ms").arg(iteration_ms_, 0, 'f', 1);
  }
  title_->setText(note_.isEmpty() ? text : text + QStringLiteral(" \u2014 ") + note_);
}

void TimelineChart::setNote(const QString& note) {
  note_ = note;
  updateTitle();
  requestReplot();
}

QString TimelineChart::title() const { return title_->text(); }

void TimelineChart::updateRows() {
  const int rows = rowCount();
  std::vector<double> busy_ms(static_cast<std::size_t>(rows), 0.0);
  for (const TimelineBlock& block : blocks_->blocks()) {
    if (block.kind == EventKind::Forward || block.kind == EventKind::Backward) {
      busy_ms[static_cast<std::size_t>(block.row)] += block.end_ms - block.start_ms;
    }
  }
  auto names = QSharedPointer<QCPAxisTickerText>::create();
  auto busy = QSharedPointer<QCPAxisTickerText>::create();
  for (int row = 0; row < rows; ++row) {
    names->addTick(row, rowName(row));
    if (iteration_ms_ > 0) {
      busy->addTick(row, tr("%1 %").arg(100 * busy_ms[static_cast<std::size_t>(row)] / iteration_ms_, 0, 'f', 0));
    }
  }
  yAxis->setTicker(names);
  yAxis2->setTicker(busy);
  yAxis2->setTickLabels(iteration_ms_ > 0);
  yAxis->setRange(-0.5, std::max(1, rows) - 0.5);
}

void TimelineChart::prepareReplot() {
  bool found = false;
  const QCPRange keys = blocks_->getKeyRange(found);
  const double end = std::max(iteration_ms_, found ? keys.upper : 0.0);
  iteration_end_->setVisible(iteration_ms_ > 0);
  iteration_end_->point1->setCoords(iteration_ms_, 0);
  iteration_end_->point2->setCoords(iteration_ms_, 1);
  if (following() && end > 0) xAxis->setRange(0, end * 1.01);
}

void TimelineChart::showBlockToolTip(QMouseEvent* event) {
  const int index = blocks_->blockAt(event->position());
  if (index < 0) {
    QToolTip::hideText();
    return;
  }
  const TimelineBlock& block = blocks_->blocks()[static_cast<std::size_t>(index)];
  QString what;
  switch (block.kind) {
    case EventKind::Send:
      what = tr("Send micro-batch %1 to %2").arg(block.micro_batch).arg(rowName(block.peer));
      break;
    case EventKind::Receive:
      what = tr("Receive micro-batch %1 from %2").arg(block.micro_batch).arg(rowName(block.peer));
      break;
    case EventKind::AllReduce:
      what = tr("All-reduce of the stage's gradients");
      break;
    case EventKind::Update:
      what = tr("Optimizer step of the stage's weights");
      break;
    default:
      what = tr("%1 of micro-batch %2").arg(kindLabel(block.kind)).arg(block.micro_batch);
      break;
  }
  const QString text = tr("%1\n%2\n%3 – %4 ms (%5 ms)")
                           .arg(rowName(block.row), what)
                           .arg(block.start_ms, 0, 'f', 2)
                           .arg(block.end_ms, 0, 'f', 2)
                           .arg(block.end_ms - block.start_ms, 0, 'f', 2);
  QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

}  // namespace stagecraft::gui
