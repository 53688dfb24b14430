#include "live/live_charts.h"

#include <QFileInfo>
#include <QLoggingCategory>
#include <QMenu>
#include <QPageSize>
#include <QPdfWriter>
#include <QSplitter>
#include <QVBoxLayout>

#include "live/chart_plot.h"
#include "live/device_chart.h"
#include "live/loss_chart.h"
#include "live/throughput_chart.h"
#include "live/timeline_chart.h"

namespace stagecraft::gui {

namespace {
Q_LOGGING_CATEGORY(lcLiveCharts, "stagecraft.gui.livecharts")
}  // namespace

LiveCharts::LiveCharts(QWidget* parent) : QWidget(parent) {
  throughput_ = new ThroughputChart;
  loss_ = new LossChart;
  devices_ = new DeviceChart;
  timeline_ = new TimelineChart;

  auto* top = new QSplitter(Qt::Horizontal);
  top->addWidget(throughput_);
  top->addWidget(loss_);
  top->setStretchFactor(0, 3);
  top->setStretchFactor(1, 2);
  auto* bottom = new QSplitter(Qt::Horizontal);
  bottom->addWidget(devices_);
  bottom->addWidget(timeline_);
  // The Gantt needs the width: micro-batch numbers only fit in wide blocks.
  bottom->setStretchFactor(0, 1);
  bottom->setStretchFactor(1, 2);
  rows_ = new QSplitter(Qt::Vertical);
  rows_->addWidget(top);
  rows_->addWidget(bottom);
  rows_->setStretchFactor(0, 2);
  rows_->setStretchFactor(1, 3);
  for (QSplitter* splitter : {top, bottom, rows_}) splitter->setChildrenCollapsible(false);
  // Initial shares (the splitter scales them to its size); stretch factors alone leave
  // the charts at their size hints.
  top->setSizes({3000, 2000});
  bottom->setSizes({1000, 2000});
  rows_->setSizes({2000, 3000});

  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(rows_);

  for (ChartPlot* plot : std::initializer_list<ChartPlot*>{throughput_, loss_, devices_, timeline_}) {
    plot->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(plot, &QWidget::customContextMenuRequested, this,
            [this, plot](const QPoint& pos) { showChartMenu(plot, pos); });
  }
}

LiveCharts::~LiveCharts() = default;

void LiveCharts::setDevices(const QStringList& names, const QList<QColor>& colors) {
  devices_->setDevices(names, colors);
  timeline_->setDevices(names);
}

void LiveCharts::addStep(std::int64_t step, double seconds_since_start, double measured_samples_per_second,
                         double predicted_samples_per_second, double loss) {
  throughput_->addStep(step, seconds_since_start, measured_samples_per_second, predicted_samples_per_second);
  loss_->addStep(step, loss);
}

void LiveCharts::addDeviceSample(int device, double seconds, double busy_fraction, double memory_mb,
                                 double memory_limit_mb) {
  devices_->addDeviceSample(device, seconds, busy_fraction, memory_mb, memory_limit_mb);
}

void LiveCharts::setTimeline(const std::vector<TimelineEvent>& events, double iteration_ms, bool measured) {
  timeline_->setTimeline(events, iteration_ms, measured);
}

void LiveCharts::addMarker(std::int64_t step, double seconds, const QString& label, const QColor& color) {
  throughput_->addMarker(seconds, label, color);
  loss_->addMarker(static_cast<double>(step), label, color);
}

void LiveCharts::clear() {
  throughput_->clear();
  throughput_->clearMarkers();
  loss_->clear();
  loss_->clearMarkers();
  devices_->clear();
  timeline_->clear();
}

void LiveCharts::flushReplots() {
  for (ChartPlot* plot : std::initializer_list<ChartPlot*>{throughput_, loss_, devices_, timeline_}) {
    plot->flushReplot();
  }
}

ChartPlot* LiveCharts::chart(Chart which) const {
  switch (which) {
    case Chart::Throughput:
      return throughput_;
    case Chart::Loss:
      return loss_;
    case Chart::Devices:
      return devices_;
    case Chart::Timeline:
      return timeline_;
    case Chart::Invalid:
      break;
  }
  return nullptr;
}

bool LiveCharts::exportPng(const QString& path) {
  flushReplots();
  if (!grab().save(path, "PNG")) {
    qCWarning(lcLiveCharts) << "cannot write PNG" << path;
    return false;
  }
  return true;
}

bool LiveCharts::exportPdf(const QString& path) {
  flushReplots();
  QPdfWriter writer(path);
  // One page the widget's size, 96 units per inch, so widget pixels map 1:1.
  writer.setResolution(96);
  writer.setPageSize(QPageSize(QSizeF(width(), height()) * 72.0 / 96.0, QPageSize::Point));
  writer.setPageMargins(QMarginsF(0, 0, 0, 0));
  writer.setCreator(QStringLiteral("Stagecraft"));
  writer.setTitle(tr("Training Dashboard"));
  QCPPainter painter;
  if (!painter.begin(&writer)) {
    qCWarning(lcLiveCharts) << "cannot write PDF" << path;
    return false;
  }
  // Each chart as vector graphics at its place on screen.
  painter.setMode(QCPPainter::pmVectorized);
  painter.setMode(QCPPainter::pmNoCaching);
  painter.setMode(QCPPainter::pmNonCosmetic);  // as QCustomPlot::savePdf does: line widths scale with the page
  painter.fillRect(QRect(QPoint(0, 0), size()), Qt::white);
  for (ChartPlot* plot : std::initializer_list<ChartPlot*>{throughput_, loss_, devices_, timeline_}) {
    if (!plot->isVisibleTo(this)) continue;
    painter.save();
    painter.translate(plot->mapTo(this, QPoint(0, 0)));
    plot->toPainter(&painter, plot->width(), plot->height());
    painter.restore();
  }
  painter.end();
  if (QFileInfo(path).size() == 0) {
    qCWarning(lcLiveCharts) << "PDF is empty" << path;
    return false;
  }
  return true;
}

bool LiveCharts::exportChart(Chart which, const QString& path) {
  ChartPlot* plot = chart(which);
  return plot != nullptr && plot->exportTo(path);
}

bool LiveCharts::exportInteractively() {
  const QString path = ChartPlot::askExportPath(this, tr("Export Dashboard"), QStringLiteral("dashboard"));
  if (path.isEmpty()) return false;
  return QFileInfo(path).suffix().compare(QLatin1String("pdf"), Qt::CaseInsensitive) == 0 ? exportPdf(path)
                                                                                           : exportPng(path);
}

void LiveCharts::showChartMenu(ChartPlot* plot, const QPoint& pos) {
  QMenu menu(this);
  plot->populateContextMenu(&menu);
  connect(menu.addAction(tr("Export Dashboard…")), &QAction::triggered, this, [this] { exportInteractively(); });
  menu.exec(plot->mapToGlobal(pos));
}

}  // namespace stagecraft::gui
