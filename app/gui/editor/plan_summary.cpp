#include "editor/plan_summary.h"

#include <QGridLayout>
#include <QLabel>
#include <QLoggingCategory>
#include <cmath>

#include "editor/display_units.h"
#include "editor/plan_session.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcPlanSummary, "stagecraft.gui.plansummary")

namespace {

QLabel* figure(QGridLayout* grid, int column, const QString& caption, QWidget* parent, QLabel** caption_label = nullptr) {
  auto* title = new QLabel(caption, parent);
  if (caption_label) *caption_label = title;
  title->setStyleSheet(QStringLiteral("color: #6b7280;"));
  auto* value = new QLabel(QStringLiteral("–"), parent);
  QFont f = value->font();
  f.setPointSizeF(f.pointSizeF() * 1.35);
  f.setBold(true);
  value->setFont(f);
  value->setTextInteractionFlags(Qt::TextSelectableByMouse);
  grid->addWidget(title, 0, column);
  grid->addWidget(value, 1, column);
  return value;
}

}  // namespace

PlanSummary::PlanSummary(QWidget* parent) : QWidget(parent) {
  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(10, 6, 10, 6);
  grid->setHorizontalSpacing(28);
  grid->setVerticalSpacing(0);
  samples_ = figure(grid, 0, tr("Samples/s"), this, &samples_caption_);
  iteration_ = figure(grid, 1, tr("Iteration"), this);
  bubble_ = figure(grid, 2, tr("Bubble"), this);
  microbatches_ = figure(grid, 3, tr("Micro-batches"), this);
  delta_ = new QLabel(this);
  delta_->setToolTip(tr("How the last edit changed the predicted samples/s."));
  grid->addWidget(delta_, 1, 4, Qt::AlignLeft | Qt::AlignVCenter);
  measured_ = new QLabel(this);
  measured_->setToolTip(tr("Samples/s training measures on this plan (the last steps), and its share of the prediction."));
  grid->addWidget(measured_, 1, 5, Qt::AlignLeft | Qt::AlignVCenter);
  grid->setColumnStretch(6, 1);
  problem_ = new QLabel(this);
  problem_->setWordWrap(true);
  problem_->setStyleSheet(QStringLiteral("color: #c62828; font-weight: 600;"));
  problem_->setVisible(false);
  grid->addWidget(problem_, 2, 0, 1, 7);
}

void PlanSummary::setSession(PlanSession* session) {
  if (session_) disconnect(session_, nullptr, this, nullptr);
  session_ = session;
  if (session_) {
    // The change label compares one edit with the plan before it: not across models,
    // clusters or a new way of pricing.
    for (auto signal : {&PlanSession::modelChanged, &PlanSession::clusterChanged, &PlanSession::pricingChanged}) {
      connect(session_, signal, this, [this] { last_samples_per_second_ = 0; });
    }
    connect(session_, &PlanSession::evaluated, this, &PlanSummary::refresh);
  }
  refresh();
}

void PlanSummary::refresh() {
  const QString none = QStringLiteral("–");
  if (!session_ || !session_->hasDocument()) {
    for (QLabel* l : {samples_, iteration_, bubble_, microbatches_}) l->setText(none);
    problem_->clear();
    problem_->setVisible(false);
    delta_->clear();
    measured_->clear();
    last_samples_per_second_ = 0;
    return;
  }
  const PlanEvaluation& ev = session_->evaluation();
  const CostSource source = session_->costSource();
  samples_caption_->setText(tr("Samples/s (%1)").arg(costSourceLabel(source)));
  switch (source) {
    case CostSource::Specs:
      samples_caption_->setToolTip(tr("Predicted from the cluster file's speeds and the model's FLOPs."));
      break;
    case CostSource::Profiled:
      samples_caption_->setToolTip(tr("Predicted from each layer's time measured on the workers."));
      break;
    case CostSource::Calibrated:
      samples_caption_->setToolTip(tr("Predicted with each device's speed as training measured it."));
      break;
  }
  showMeasured();
  microbatches_->setText(tr("%1 × %2").arg(ev.microbatches).arg(ev.micro_batch_size));
  microbatches_->setToolTip(tr("%1 micro-batches of %2 samples per iteration.").arg(ev.microbatches).arg(ev.micro_batch_size));
  if (ev.valid) {
    samples_->setText(QString::number(ev.samples_per_second, 'f', 1));
    iteration_->setText(formatMs(ev.iteration_ms));
    bubble_->setText(tr("%1 %").arg(ev.bubble_fraction * 100, 0, 'f', 1));
    samples_->setToolTip(tr("Simulated; the closed-form estimate is %1 samples/s.")
                             .arg(ev.estimated_samples_per_second, 0, 'f', 1));
    problem_->clear();
    problem_->setVisible(false);
    const double before = last_samples_per_second_;
    if (before > 0 && std::abs(ev.samples_per_second - before) > 1e-9 * before) {
      const double percent = (ev.samples_per_second / before - 1) * 100;
      delta_->setText(percent >= 0 ? tr("▲ %1 %").arg(percent, 0, 'f', 1) : tr("▼ %1 %").arg(-percent, 0, 'f', 1));
      delta_->setStyleSheet(percent >= 0 ? QStringLiteral("color: #2e7d32; font-weight: 600;")
                                         : QStringLiteral("color: #c62828; font-weight: 600;"));
    } else {
      delta_->clear();
    }
    last_samples_per_second_ = ev.samples_per_second;
  } else {
    delta_->clear();
    for (QLabel* l : {samples_, iteration_, bubble_}) l->setText(none);
    samples_->setToolTip({});
    problem_->setText(ev.problems.size() > 1
                          ? tr("Invalid plan: %1 (and %2 more)").arg(ev.problems.front()).arg(ev.problems.size() - 1)
                          : tr("Invalid plan: %1").arg(ev.problems.value(0)));
    problem_->setVisible(true);
  }
}

QString PlanSummary::samplesPerSecondText() const { return samples_->text(); }
QString PlanSummary::iterationText() const { return iteration_->text(); }
QString PlanSummary::bubbleText() const { return bubble_->text(); }
QString PlanSummary::microbatchesText() const { return microbatches_->text(); }
QString PlanSummary::problemText() const { return problem_->text(); }
QString PlanSummary::deltaText() const { return delta_->text(); }
QString PlanSummary::sourceText() const { return samples_caption_->text(); }
QString PlanSummary::measuredText() const { return measured_->text(); }

void PlanSummary::setMeasured(double samples_per_second) {
  measured_sps_ = samples_per_second > 0 && std::isfinite(samples_per_second) ? samples_per_second : 0;
  showMeasured();
}

void PlanSummary::showMeasured() {
  const double predicted = session_ && session_->hasDocument() && session_->evaluation().valid
                               ? session_->evaluation().samples_per_second
                               : 0;
  if (measured_sps_ <= 0) {
    measured_->clear();
  } else if (predicted > 0) {
    measured_->setText(tr("measured %1 (%2 %)").arg(measured_sps_, 0, 'f', 1).arg(100 * measured_sps_ / predicted, 0, 'f', 0));
  } else {
    measured_->setText(tr("measured %1").arg(measured_sps_, 0, 'f', 1));
  }
}

}  // namespace stagecraft::gui
