#include "live/throughput_chart.h"

#include <QLoggingCategory>

#include <algorithm>
#include <cmath>
#include <limits>

#include "live/chart_style.h"

namespace stagecraft::gui {

namespace {
Q_LOGGING_CATEGORY(lcThroughputChart, "stagecraft.gui.throughputchart")
}  // namespace

ThroughputChart::ThroughputChart(QWidget* parent) : ChartPlot(parent) {
  measured_ = addGraph();
  measured_->setName(tr("Measured"));
  measured_->setPen(QPen(ChartStyle::measuredColor(), 2));
  measured_->setAdaptiveSampling(true);

  predicted_ = addGraph();
  predicted_->setName(tr("Predicted"));
  predicted_->setPen(QPen(ChartStyle::predictedColor(), 2, Qt::DashLine));
  predicted_->setAdaptiveSampling(true);
  // A prediction holds until the next one (a re-plan, a calibration): a step, not a ramp.
  predicted_->setLineStyle(QCPGraph::lsStepLeft);

  ChartStyle::setAxisLabel(xAxis, tr("Time since start (s)"));
  ChartStyle::setAxisLabel(yAxis, tr("Throughput (samples/s)"));
  xAxis->setRange(0, 10);
  yAxis->setRange(0, 1);
  // Beside the title: inside the axes it covered the curves, which fill the height the
  // axis scales to.
  ChartStyle::setHeader(this, new QCPTextElement(this, tr("Throughput"), ChartStyle::titleFont()), 2);
  enableKeyNavigation();
}

void ThroughputChart::addStep(std::int64_t step, double seconds_since_start, double measured_samples_per_second,
                              double predicted_samples_per_second) {
  if (!std::isfinite(seconds_since_start)) {
    qCWarning(lcThroughputChart) << "step" << step << "has no time; dropped";
    return;
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  measured_->addData(seconds_since_start,
                     std::isfinite(measured_samples_per_second) ? measured_samples_per_second : nan);
  predicted_->addData(seconds_since_start,
                      predicted_samples_per_second > 0 ? predicted_samples_per_second : nan);
  last_seconds_ = std::max(last_seconds_, seconds_since_start);
  requestReplot();
}

void ThroughputChart::clear() {
  measured_->data()->clear();
  predicted_->data()->clear();
  last_seconds_ = 0;
  xAxis->setRange(0, 10);
  yAxis->setRange(0, 1);
  setFollowing(true);
  requestReplot();
}

void ThroughputChart::setTimeWindow(double seconds) {
  window_seconds_ = std::max(0.0, seconds);
  requestReplot();
}

void ThroughputChart::setPredictionSource(const QString& source) {
  predicted_->setName(source.isEmpty() ? tr("Predicted") : tr("Predicted (%1)").arg(source));
  requestReplot();
}

QString ThroughputChart::predictedName() const { return predicted_->name(); }

int ThroughputChart::measuredPointCount() const { return measured_->data()->size(); }
int ThroughputChart::predictedPointCount() const { return predicted_->data()->size(); }

void ThroughputChart::prepareReplot() {
  if (!following() || measured_->data()->isEmpty()) return;
  const double first = measured_->data()->constBegin()->key;
  double lower = first;
  double upper = std::max(last_seconds_, first + 10);
  if (window_seconds_ > 0 && upper - lower > window_seconds_) lower = upper - window_seconds_;
  // A little air on the right so the newest point is not glued to the frame.
  xAxis->setRange(lower, upper + 0.02 * (upper - lower));

  // Only the visible window decides the value range: an early spike scrolls away.
  double high = 0;
  for (QCPGraph* graph : {measured_, predicted_}) {
    bool found = false;
    const QCPRange range = graph->getValueRange(found, QCP::sdBoth, xAxis->range());
    if (found) high = std::max(high, range.upper);
  }
  yAxis->setRange(0, high > 0 ? high * 1.12 : 1);
}

}  // namespace stagecraft::gui
