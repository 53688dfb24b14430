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

QLabel* figure(QGridLayout* grid, int column, const QString& caption, QWidget* parent) {
  auto* title = new QLabel(caption, parent);
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
  samples_ = figure(grid, 0, tr("Samples/s"), this);
  iteration_ = figure(grid, 1, tr("Iteration"), this);
  bubble_ = figure(grid, 2, tr("Bubble"), this);
  microbatches_ = figure(grid, 3, tr("Micro-batches"), this);
  delta_ = new QLabel(this);
  delta_->setToolTip(tr("How the last edit changed the predicted samples/s."));
  grid->addWidget(delta_, 1, 4, Qt::AlignLeft | Qt::AlignVCenter);
  grid->setColumnStretch(5, 1);
  problem_ = new QLabel(this);
  problem_->setWordWrap(true);
  problem_->setStyleSheet(QStringLiteral("color: #c62828; font-weight: 600;"));
  problem_->setVisible(false);
  grid->addWidget(problem_, 2, 0, 1, 6);
}

void PlanSummary::setSession(PlanSession* session) {
  if (session_) disconnect(session_, nullptr, this, nullptr);
  session_ = session;
  if (session_) connect(session_, &PlanSession::evaluated, this, &PlanSummary::refresh);
  refresh();
}

void PlanSummary::refresh() {
  const QString none = QStringLiteral("–");
  if (!session_ || !session_->hasDocument()) {
    for (QLabel* l : {samples_, iteration_, bubble_, microbatches_}) l->setText(none);
    problem_->clear();
    problem_->setVisible(false);
    delta_->clear();
    last_samples_per_second_ = 0;
    return;
  }
  const PlanEvaluation& ev = session_->evaluation();
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

}  // namespace stagecraft::gui
