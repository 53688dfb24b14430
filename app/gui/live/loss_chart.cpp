#include "live/loss_chart.h"

#include <QLoggingCategory>
#include <QMenu>

#include <algorithm>
#include <cmath>

#include "live/chart_style.h"

namespace stagecraft::gui {

namespace {
Q_LOGGING_CATEGORY(lcLossChart, "stagecraft.gui.losschart")
}  // namespace

LossChart::LossChart(QWidget* parent) : ChartPlot(parent) {
  plotLayout()->insertRow(0);
  plotLayout()->addElement(0, 0, new QCPTextElement(this, tr("Training Loss"), ChartStyle::titleFont()));
  // The legend in a row of its own under the title, centred: inside the axes it covered the
  // curves of a chart a few hundred pixels wide. As many entries a row as the width holds
  // (fitLegend, on every resize and before every replot).
  auto* legend_row = new QCPLayoutGrid;
  plotLayout()->insertRow(1);
  plotLayout()->addElement(1, 0, legend_row);
  plotLayout()->setRowStretchFactor(1, 0.001);
  axisRect()->insetLayout()->take(legend);
  legend_row->addElement(0, 0, new QCPLayoutElement(this));
  legend_row->addElement(0, 1, legend);
  legend_row->addElement(0, 2, new QCPLayoutElement(this));
  legend_row->setColumnStretchFactor(0, 1);
  legend_row->setColumnStretchFactor(1, 0.01);
  legend_row->setColumnStretchFactor(2, 1);
  legend->setBorderPen(Qt::NoPen);
  // Tight rows: a chart a laptop's screen gives 140 pixels keeps most of them for the plot.
  legend->setMargins(QMargins(2, 0, 2, 0));
  legend->setRowSpacing(0);
  legend->setIconSize(18, 8);

  loss_ = addGraph();
  loss_->setName(tr("Loss"));
  loss_->setPen(QPen(ChartStyle::lossColor(), 1));
  loss_->setAdaptiveSampling(true);
  smoothed_ = addGraph();
  smoothed_->setName(tr("Smoothed (EMA)"));
  smoothed_->setPen(QPen(ChartStyle::lossSmoothedColor(), 2));
  smoothed_->setAdaptiveSampling(true);

  held_out_loss_ = addGraph();
  held_out_loss_->setName(tr("Held-out loss"));
  held_out_loss_->setPen(QPen(ChartStyle::lossSmoothedColor(), 1.5, Qt::DashLine));
  held_out_loss_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
  accuracy_ = addGraph(xAxis, yAxis2);
  accuracy_->setName(tr("Held-out accuracy"));
  accuracy_->setPen(QPen(ChartStyle::accuracyColor(), 2));
  accuracy_->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 6));
  ChartStyle::setAxisLabel(yAxis2, tr("Accuracy (%)"));
  yAxis2->setRange(0, 100);
  yAxis2->setVisible(false);  // until the first evaluation, as their legend entries
  held_out_loss_->removeFromLegend();
  accuracy_->removeFromLegend();
  legend->setFillOrder(QCPLegend::foColumnsFirst);

  ChartStyle::setAxisLabel(xAxis, tr("Step"));
  ChartStyle::setAxisLabel(yAxis, tr("Loss"));
  xAxis->setRange(0, 10);
  yAxis->setRange(0, 1);
  legend->setVisible(true);
  enableKeyNavigation();
}

void LossChart::addStep(std::int64_t step, double loss) {
  if (!std::isfinite(loss)) {
    qCWarning(lcLossChart) << "step" << step << "reported a non-finite loss" << loss;
    return;
  }
  ema_ = has_ema_ ? kSmoothing * ema_ + (1 - kSmoothing) * loss : loss;
  has_ema_ = true;
  loss_->addData(static_cast<double>(step), loss);
  smoothed_->addData(static_cast<double>(step), ema_);
  min_loss_ = pointCount() == 1 ? loss : std::min(min_loss_, loss);
  max_loss_ = pointCount() == 1 ? loss : std::max(max_loss_, loss);
  if (auto_log_ && !log_scale_ && min_loss_ > 0 && max_loss_ >= kAutoLogRange * min_loss_) applyLogScale(true);
  requestReplot();
}

void LossChart::addEvaluation(std::int64_t step, double accuracy, double loss) {
  if (std::isfinite(loss)) held_out_loss_->addData(static_cast<double>(step), loss);
  if (std::isfinite(accuracy)) accuracy_->addData(static_cast<double>(step), 100.0 * accuracy);
  yAxis2->setVisible(true);
  held_out_loss_->addToLegend();  // false, and nothing done, once they are in it
  accuracy_->addToLegend();
  requestReplot();
}

void LossChart::clear() {
  loss_->data()->clear();
  smoothed_->data()->clear();
  held_out_loss_->data()->clear();
  accuracy_->data()->clear();
  yAxis2->setVisible(false);
  held_out_loss_->removeFromLegend();
  accuracy_->removeFromLegend();
  if (auto_log_) applyLogScale(false);  // a new run starts linear unless the user chose
  has_ema_ = false;
  ema_ = 0;
  xAxis->setRange(0, 10);
  yAxis->setRange(log_scale_ ? 0.01 : 0, 1);
  setFollowing(true);
  requestReplot();
}

void LossChart::setLogScale(bool log_scale) {
  auto_log_ = false;
  applyLogScale(log_scale);
}

void LossChart::applyLogScale(bool log_scale) {
  if (log_scale_ == log_scale) return;
  log_scale_ = log_scale;
  if (log_scale_) {
    yAxis->setScaleType(QCPAxis::stLogarithmic);
    yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    yAxis->setNumberFormat(QStringLiteral("gb"));
  } else {
    yAxis->setScaleType(QCPAxis::stLinear);
    yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    yAxis->setNumberFormat(QStringLiteral("gb"));
  }
  requestReplot();
}

void LossChart::setStepWindow(int steps) {
  step_window_ = std::max(0, steps);
  requestReplot();
}

int LossChart::pointCount() const { return loss_->data()->size(); }

// Pixels the legend leaves free across the chart's width.
constexpr int kLegendSlack = 8;

void LossChart::fitLegend() {
  // All entries in one row when they fit the chart's width, else two a row, else one.
  const int entries = std::max(1, legend->itemCount());
  for (const int wrap : {entries, 2, 1}) {
    if (wrap > entries) continue;
    legend->setWrap(wrap);
    legend->setFillOrder(QCPLegend::foColumnsFirst, true);  // lays the entries out again
    if (legend->minimumOuterSizeHint().width() <= width() - kLegendSlack) break;
  }
}

void LossChart::resizeEvent(QResizeEvent* event) {
  fitLegend();
  ChartPlot::resizeEvent(event);
}

void LossChart::prepareReplot() {
  fitLegend();
  if (loss_->data()->isEmpty()) return;
  if (following()) {
    const double first = loss_->data()->constBegin()->key;
    const double last = (loss_->data()->constEnd() - 1)->key;
    double lower = first;
    if (step_window_ > 0 && last - lower > step_window_) lower = last - step_window_;
    const double upper = std::max(last, lower + 10);
    xAxis->setRange(lower, upper + 0.02 * (upper - lower));
  }
  bool found = false;
  const QCP::SignDomain domain = log_scale_ ? QCP::sdPositive : QCP::sdBoth;
  QCPRange range = loss_->getValueRange(found, domain, xAxis->range());
  if (!found) return;
  bool held_out = false;
  const QCPRange held_out_range = held_out_loss_->getValueRange(held_out, domain, xAxis->range());
  if (held_out) range.expand(held_out_range);
  if (log_scale_) {
    yAxis->setRange(range.lower / 1.5, range.upper * 1.5);
  } else {
    const double pad = std::max(1e-9, 0.08 * (range.upper - range.lower));
    const double lower = range.lower >= 0 ? std::max(0.0, range.lower - pad) : range.lower - pad;
    yAxis->setRange(lower, range.upper + pad);
  }
}

void LossChart::addChartActions(QMenu* menu) {
  QAction* log_action = menu->addAction(tr("Logarithmic Scale"));
  log_action->setCheckable(true);
  log_action->setChecked(log_scale_);
  connect(log_action, &QAction::toggled, this, &LossChart::setLogScale);
}

}  // namespace stagecraft::gui
