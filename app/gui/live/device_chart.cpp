#include "live/device_chart.h"

#include <QFontMetrics>
#include <QLoggingCategory>

#include <algorithm>
#include <cmath>

#include "editor/display_units.h"
#include "live/chart_style.h"

namespace stagecraft::gui {

namespace {
Q_LOGGING_CATEGORY(lcDeviceChart, "stagecraft.gui.devicechart")

constexpr double kBarWidth = 0.68;

void setSingleBar(QCPBars* bars, double key, double value) {
  bars->data()->clear();
  bars->addData(key, value);
}

QCPItemText* makeBarLabel(QCustomPlot* plot, QCPAxisRect* rect) {
  auto* label = new QCPItemText(plot);
  label->setClipAxisRect(rect);
  label->setClipToAxisRect(true);
  label->position->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  label->setPadding(QMargins(4, 0, 0, 0));
  QFont font = label->font();
  font.setPointSizeF(font.pointSizeF() - 1);
  label->setFont(font);
  label->setVisible(false);
  return label;
}

QCPItemStraightLine* makeVerticalLine(QCustomPlot* plot, QCPAxisRect* rect, double x, const QPen& pen) {
  auto* line = new QCPItemStraightLine(plot);
  line->setClipAxisRect(rect);
  line->point1->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  line->point2->setAxes(rect->axis(QCPAxis::atBottom), rect->axis(QCPAxis::atLeft));
  line->point1->setCoords(x, 0);
  line->point2->setCoords(x, 1);
  line->setPen(pen);
  return line;
}

QString formatMemory(double used_mb, double limit_mb) {
  constexpr double kMiB = 1024.0 * 1024.0;  // the workers report MiB
  return DeviceChart::tr("%1 / %2").arg(formatBytes(used_mb * kMiB), formatBytes(limit_mb * kMiB));
}
}  // namespace

DeviceChart::DeviceChart(QWidget* parent) : ChartPlot(parent) {
  plotLayout()->clear();
  busy_rect_ = new QCPAxisRect(this);
  memory_rect_ = new QCPAxisRect(this);
  plotLayout()->addElement(0, 0, new QCPTextElement(this, tr("Utilisation"), ChartStyle::titleFont()));
  plotLayout()->addElement(0, 1, new QCPTextElement(this, tr("Memory"), ChartStyle::titleFont()));
  plotLayout()->addElement(1, 0, busy_rect_);
  plotLayout()->addElement(1, 1, memory_rect_);
  plotLayout()->setColumnSpacing(12);
  // Rows of both panels line up: same top and bottom margins.
  auto* margins = new QCPMarginGroup(this);
  busy_rect_->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
  memory_rect_->setMarginGroup(QCP::msTop | QCP::msBottom, margins);
  xAxis = busy_rect_->axis(QCPAxis::atBottom);
  yAxis = busy_rect_->axis(QCPAxis::atLeft);
  xAxis2 = busy_rect_->axis(QCPAxis::atTop);
  yAxis2 = busy_rect_->axis(QCPAxis::atRight);
  ChartStyle::apply(this);
  for (QCPAxisRect* rect : {busy_rect_, memory_rect_}) {
    for (QCPAxis* axis : rect->axes()) {
      axis->grid()->setPen(QPen(QColor(0xe4, 0xe4, 0xe4)));
      axis->setBasePen(QPen(QColor(0x88, 0x88, 0x88)));
      axis->setTickPen(QPen(QColor(0x88, 0x88, 0x88)));
      axis->setSubTickPen(QPen(QColor(0xaa, 0xaa, 0xaa)));
    }
    QCPAxis* names = rect->axis(QCPAxis::atLeft);
    names->setRangeReversed(true);
    names->grid()->setVisible(false);
    names->setTicker(QSharedPointer<QCPAxisTickerText>::create());
    names->setSubTicks(false);
    names->setTickLength(0, 0);
  }
  ChartStyle::setAxisLabel(busy_rect_->axis(QCPAxis::atBottom), tr("Busy (%)"));
  ChartStyle::setAxisLabel(memory_rect_->axis(QCPAxis::atBottom), tr("Memory (% of limit)"));
  ChartStyle::setAxisLabel(busy_rect_->axis(QCPAxis::atLeft), QString());
  ChartStyle::setAxisLabel(memory_rect_->axis(QCPAxis::atLeft), QString());
  // The names are on the left panel only; the memory panel's rows line up with them.
  memory_rect_->axis(QCPAxis::atLeft)->setTickLabels(false);
  busy_rect_->axis(QCPAxis::atBottom)->setRange(0, 130);
  memory_rect_->axis(QCPAxis::atBottom)->setRange(0, 145);
  auto percent_ticks = QSharedPointer<QCPAxisTickerFixed>::create();
  percent_ticks->setTickStep(50);  // 0, 50, 100 %: the labels stay apart in a narrow panel
  percent_ticks->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
  busy_rect_->axis(QCPAxis::atBottom)->setTicker(percent_ticks);
  memory_rect_->axis(QCPAxis::atBottom)->setTicker(percent_ticks);

  warn_line_ = makeVerticalLine(this, memory_rect_, 100 * ChartStyle::kMemoryWarnFraction,
                                QPen(ChartStyle::warningColor(), 1, Qt::DashLine));
  limit_line_ = makeVerticalLine(this, memory_rect_, 100, QPen(ChartStyle::overLimitColor(), 1.5));
  layoutAxes();
}

void DeviceChart::removeRows() {
  for (DeviceRow& row : devices_) {
    removePlottable(row.busy);
    removePlottable(row.memory);
    removeItem(row.busy_label);
    removeItem(row.memory_label);
  }
  devices_.clear();
}

void DeviceChart::setDevices(const QStringList& names, const QList<QColor>& colors) {
  removeRows();
  devices_.resize(static_cast<std::size_t>(names.size()));
  for (int i = 0; i < names.size(); ++i) {
    DeviceRow& row = devices_[static_cast<std::size_t>(i)];
    row.name = names[i];
    row.color = i < colors.size() && colors[i].isValid() ? colors[i] : ChartStyle::deviceColor(i);
    row.busy = new QCPBars(busy_rect_->axis(QCPAxis::atLeft), busy_rect_->axis(QCPAxis::atBottom));
    row.memory = new QCPBars(memory_rect_->axis(QCPAxis::atLeft), memory_rect_->axis(QCPAxis::atBottom));
    for (QCPBars* bars : {row.busy, row.memory}) {
      bars->setWidth(kBarWidth);
      bars->setPen(Qt::NoPen);
      bars->setBrush(row.color);
      bars->removeFromLegend();
    }
    row.busy_label = makeBarLabel(this, busy_rect_);
    row.memory_label = makeBarLabel(this, memory_rect_);
  }
  layoutAxes();
  requestReplot();
}

QStringList DeviceChart::deviceNames() const {
  QStringList names;
  for (const DeviceRow& row : devices_) names << row.name;
  return names;
}

void DeviceChart::layoutAxes() {
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  for (int i = 0; i < deviceCount(); ++i) ticker->addTick(i, devices_[static_cast<std::size_t>(i)].name);
  for (QCPAxisRect* rect : {busy_rect_, memory_rect_}) {
    QCPAxis* names = rect->axis(QCPAxis::atLeft);
    names->setTicker(ticker);
    names->setRange(-0.6, std::max(1, deviceCount()) - 0.4);
  }
}

void DeviceChart::addDeviceSample(int device, double seconds, double busy_fraction, double memory_mb,
                                  double memory_limit_mb) {
  if (device < 0 || device >= deviceCount()) {
    qCWarning(lcDeviceChart) << "sample for unknown device" << device << "of" << deviceCount();
    return;
  }
  DeviceRow& row = devices_[static_cast<std::size_t>(device)];
  row.has_sample = true;
  row.seconds = seconds;
  row.busy_fraction = std::clamp(std::isfinite(busy_fraction) ? busy_fraction : 0.0, 0.0, 1.0);
  row.memory_mb = std::max(0.0, memory_mb);
  row.memory_limit_mb = memory_limit_mb;
  setSingleBar(row.busy, device, 100 * row.busy_fraction);
  setSingleBar(row.memory, device, memory_limit_mb > 0 ? 100 * row.memory_mb / memory_limit_mb : 0);
  requestReplot();
}

void DeviceChart::clear() {
  for (DeviceRow& row : devices_) {
    row.has_sample = false;
    row.busy->data()->clear();
    row.memory->data()->clear();
  }
  requestReplot();
}

QCPBars* DeviceChart::busyBars(int device) const {
  return device >= 0 && device < deviceCount() ? devices_[static_cast<std::size_t>(device)].busy : nullptr;
}

QCPBars* DeviceChart::memoryBars(int device) const {
  return device >= 0 && device < deviceCount() ? devices_[static_cast<std::size_t>(device)].memory : nullptr;
}

int DeviceChart::memoryLevel(int device) const {
  if (device < 0 || device >= deviceCount()) return 0;
  const DeviceRow& row = devices_[static_cast<std::size_t>(device)];
  if (!row.has_sample || row.memory_limit_mb <= 0) return 0;
  const double fraction = row.memory_mb / row.memory_limit_mb;
  if (fraction > 1) return 2;
  return fraction >= ChartStyle::kMemoryWarnFraction ? 1 : 0;
}

void DeviceChart::prepareReplot() {
  // The range first: labels are placed by pixels.
  double memory_high = 100;
  for (const DeviceRow& row : devices_) {
    if (row.has_sample && row.memory_limit_mb > 0) {
      memory_high = std::max(memory_high, 100 * row.memory_mb / row.memory_limit_mb);
    }
  }
  memory_rect_->axis(QCPAxis::atBottom)->setRange(0, std::max(145.0, memory_high * 1.1));
  updateLayout();  // so the panels' pixel extents are current on the first replot too
  for (int i = 0; i < deviceCount(); ++i) {
    DeviceRow& row = devices_[static_cast<std::size_t>(i)];
    row.busy_label->setVisible(row.has_sample);
    row.memory_label->setVisible(row.has_sample);
    if (!row.has_sample) continue;
    const double busy = 100 * row.busy_fraction;
    row.busy_label->setText(tr("%1 %").arg(busy, 0, 'f', 0));
    placeLabel(row.busy_label, busy, i, busy_rect_, row.color);

    const double percent = row.memory_limit_mb > 0 ? 100 * row.memory_mb / row.memory_limit_mb : 0;
    const int level = memoryLevel(i);
    const QColor bar = level == 2 ? ChartStyle::overLimitColor() : level == 1 ? ChartStyle::warningColor() : row.color;
    row.memory->setBrush(bar);
    row.memory_label->setText(row.memory_limit_mb > 0 ? formatMemory(row.memory_mb, row.memory_limit_mb)
                                                      : formatBytes(row.memory_mb * 1024.0 * 1024.0));
    // A narrow panel gets the used share only; the full figure is in the row's tooltip.
    placeLabel(row.memory_label, percent, i, memory_rect_, bar, tr("%1 %").arg(percent, 0, 'f', 0));
  }
}

void DeviceChart::placeLabel(QCPItemText* label, double value, int row, QCPAxisRect* rect, const QColor& bar,
                             const QString& shorter) {
  // Right of a short bar; inside the end of a long one, where it cannot run off the panel;
  // the shorter text (or none) when it fits neither.
  QCPAxis* axis = rect->axis(QCPAxis::atBottom);
  const QFontMetrics metrics(label->font());
  const double end_px = axis->coordToPixel(value);
  const auto fits = [&](const QString& text) {
    const double text_px = metrics.horizontalAdvance(text) + 8;
    return end_px + text_px <= rect->right() || end_px - rect->left() >= text_px;
  };
  if (!fits(label->text())) {
    if (shorter.isEmpty() || !fits(shorter)) {
      label->setVisible(false);
      return;
    }
    label->setText(shorter);
  }
  const double text_px = metrics.horizontalAdvance(label->text()) + 8;
  const bool inside = end_px + text_px > rect->right();
  label->position->setCoords(value, row);
  label->setPositionAlignment((inside ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter);
  label->setPadding(inside ? QMargins(0, 0, 4, 0) : QMargins(4, 0, 0, 0));
  label->setColor(inside ? ChartStyle::textColorOn(bar) : QColor(0x33, 0x33, 0x33));
}

}  // namespace stagecraft::gui
