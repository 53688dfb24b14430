#include "live/chart_plot.h"

#include <QContextMenuEvent>
#include <QElapsedTimer>
#include <QFileDialog>
#include <QFileInfo>
#include <QLoggingCategory>
#include <QMenu>
#include <algorithm>

#include "live/chart_style.h"

namespace stagecraft::gui {

namespace {
Q_LOGGING_CATEGORY(lcChartPlot, "stagecraft.gui.chartplot")
}  // namespace

ChartPlot::ChartPlot(QWidget* parent) : QCustomPlot(parent) {
  replot_timer_.setSingleShot(true);
  replot_timer_.setInterval(kReplotIntervalMs);
  connect(&replot_timer_, &QTimer::timeout, this, [this] {
    // Hidden charts stay stale until shown: no work for a tab nobody looks at.
    if (isVisible()) replotIfDirty();
  });
  ChartStyle::apply(this);
  setMinimumSize(240, 140);  // four fit a laptop screen (1366x768) beside the editor
}

ChartPlot::~ChartPlot() = default;

void ChartPlot::requestReplot() {
  dirty_ = true;
  if (!replot_timer_.isActive()) replot_timer_.start();
}

void ChartPlot::flushReplot() {
  replot_timer_.stop();
  replotIfDirty();
}

void ChartPlot::replotIfDirty() {
  if (!dirty_) return;
  dirty_ = false;
  QElapsedTimer took;
  took.start();
  prepareReplot();
  replot(rpImmediateRefresh);
  ++replot_count_;
  const qint64 interval = std::clamp<qint64>(kReplotCostFactor * took.elapsed(), kReplotIntervalMs, kMaxReplotIntervalMs);
  replot_timer_.setInterval(static_cast<int>(interval));
}

void ChartPlot::setFollowing(bool following) {
  if (following_ == following) return;
  following_ = following;
  requestReplot();
}

void ChartPlot::enableKeyNavigation() {
  key_navigation_ = true;
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  axisRect()->setRangeDrag(Qt::Horizontal);
  axisRect()->setRangeZoom(Qt::Horizontal);
  // A drag (not a mere click) or a wheel zoom means the user looks at something else.
  connect(this, &QCustomPlot::mouseMove, this, [this](QMouseEvent* event) {
    if (event->buttons() & Qt::LeftButton) following_ = false;
  });
  connect(this, &QCustomPlot::mouseWheel, this, [this] { following_ = false; });
  connect(this, &QCustomPlot::mouseDoubleClick, this, [this] { setFollowing(true); });
}

void ChartPlot::showEvent(QShowEvent* event) {
  QCustomPlot::showEvent(event);
  if (dirty_) requestReplot();
}

bool ChartPlot::exportPng(const QString& path, int width, int height) {
  flushReplot();
  if (!savePng(path, width, height)) {
    qCWarning(lcChartPlot) << "cannot write PNG" << path;
    return false;
  }
  return true;
}

bool ChartPlot::exportPdf(const QString& path, int width, int height) {
  flushReplot();
  if (!savePdf(path, width, height, QCP::epNoCosmetic, QStringLiteral("Stagecraft"), exportName())) {
    qCWarning(lcChartPlot) << "cannot write PDF" << path;
    return false;
  }
  return true;
}

bool ChartPlot::exportTo(const QString& path) {
  if (QFileInfo(path).suffix().compare(QLatin1String("pdf"), Qt::CaseInsensitive) == 0) {
    return exportPdf(path);
  }
  return exportPng(path);
}

QString ChartPlot::askExportPath(QWidget* parent, const QString& caption, const QString& suggested_name) {
  const QString png_filter = tr("PNG image (*.png)");
  const QString pdf_filter = tr("PDF document (*.pdf)");
  QString selected = png_filter;
  QString path = QFileDialog::getSaveFileName(parent, caption, suggested_name + QStringLiteral(".png"),
                                              png_filter + QStringLiteral(";;") + pdf_filter, &selected);
  if (path.isEmpty()) return {};
  if (QFileInfo(path).suffix().isEmpty()) {
    path += selected == pdf_filter ? QStringLiteral(".pdf") : QStringLiteral(".png");
  }
  return path;
}

bool ChartPlot::exportInteractively() {
  const QString path = askExportPath(this, tr("Export Chart"), exportName());
  return !path.isEmpty() && exportTo(path);
}

void ChartPlot::populateContextMenu(QMenu* menu) {
  addChartActions(menu);
  if (key_navigation_) {
    QAction* follow = menu->addAction(tr("Follow Latest"));
    follow->setCheckable(true);
    follow->setChecked(following_);
    connect(follow, &QAction::toggled, this, &ChartPlot::setFollowing);
  }
  if (!menu->isEmpty()) menu->addSeparator();
  connect(menu->addAction(tr("Export Chart…")), &QAction::triggered, this, [this] { exportInteractively(); });
}

void ChartPlot::contextMenuEvent(QContextMenuEvent* event) {
  QMenu menu(this);
  populateContextMenu(&menu);
  menu.exec(event->globalPos());
}

void ChartPlot::addMarker(double key, const QString& label, const QColor& color) {
  auto* line = new QCPItemStraightLine(this);
  line->point1->setCoords(key, 0);
  line->point2->setCoords(key, 1);
  line->setPen(QPen(color, 1.5, Qt::DashLine));
  auto* text = new QCPItemText(this);
  text->position->setTypeX(QCPItemPosition::ptPlotCoords);
  text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  text->position->setCoords(key, 0.02);
  // Left of the line: a marker is usually the newest thing on the chart, and the legend
  // sits at the right.
  text->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
  text->setPadding(QMargins(3, 1, 3, 1));
  text->setBrush(QColor(255, 255, 255, 220));
  text->setText(label);
  text->setColor(color);
  markers_.emplace_back(line, text);
  requestReplot();
}

void ChartPlot::clearMarkers() {
  for (auto& [line, text] : markers_) {
    removeItem(line);
    removeItem(text);
  }
  markers_.clear();
  requestReplot();
}

}  // namespace stagecraft::gui
