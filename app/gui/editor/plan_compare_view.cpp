#include "editor/plan_compare_view.h"

#include <QGridLayout>
#include <QLabel>
#include <QLoggingCategory>
#include <QScrollArea>

#include "editor/partition_editor.h"
#include "editor/plan_session.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcPlanCompareView, "stagecraft.gui.plancompareview")

namespace {

QString caption(const QString& title, const PlanEvaluation& ev) {
  if (!ev.valid) return PlanCompareView::tr("%1 — invalid").arg(title);
  return PlanCompareView::tr("%1 — %2 samples/s").arg(title).arg(ev.samples_per_second, 0, 'f', 1);
}

QWidget* scrolled(PartitionEditor* editor, QWidget* parent) {
  auto* area = new QScrollArea(parent);
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::StyledPanel);
  area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  area->setWidget(editor);
  return area;
}

}  // namespace

PlanCompareView::PlanCompareView(const ModelSpec& model, const Cluster& cluster, const Plan& current,
                                 const Plan& proposed, QWidget* parent)
    : PlanCompareView(model, cluster, current, cluster, proposed, parent) {}

PlanCompareView::PlanCompareView(const ModelSpec& model, const Cluster& current_cluster, const Plan& current,
                                 const Cluster& proposed_cluster, const Plan& proposed, QWidget* parent,
                                 const CostBasis* basis)
    : QWidget(parent), current_(new PlanSession(this)), proposed_(new PlanSession(this)) {
  current_->setDocument(model, current_cluster, current);
  proposed_->setDocument(model, proposed_cluster, proposed);
  if (basis) {
    current_->setCostBasis(*basis);
    proposed_->setCostBasis(*basis);
  }
  current_editor_ = new PartitionEditor;
  current_editor_->setReadOnly(true);
  current_editor_->setSession(current_);
  proposed_editor_ = new PartitionEditor;
  proposed_editor_->setReadOnly(true);
  proposed_editor_->setSession(proposed_);

  const PlanEvaluation& a = current_->evaluation();
  const PlanEvaluation& b = proposed_->evaluation();
  if (a.valid && b.valid && a.samples_per_second > 0) gain_ = b.samples_per_second / a.samples_per_second - 1;

  auto* grid = new QGridLayout(this);
  auto* left = new QLabel(caption(tr("Current plan"), a), this);
  auto* right = new QLabel(caption(tr("Proposed plan"), b), this);
  for (QLabel* l : {left, right}) {
    QFont f = l->font();
    f.setBold(true);
    l->setFont(f);
  }
  gain_label_ = new QLabel(gainText(), this);
  QFont big = gain_label_->font();
  big.setPointSizeF(big.pointSizeF() * 1.5);
  big.setBold(true);
  gain_label_->setFont(big);
  gain_label_->setAlignment(Qt::AlignCenter);
  gain_label_->setStyleSheet(gain_ >= 0 ? QStringLiteral("color: #2e7d32;") : QStringLiteral("color: #c62828;"));
  grid->addWidget(left, 0, 0);
  grid->addWidget(right, 0, 1);
  grid->addWidget(scrolled(current_editor_, this), 1, 0);
  grid->addWidget(scrolled(proposed_editor_, this), 1, 1);
  grid->addWidget(gain_label_, 2, 0, 1, 2);
  grid->setRowStretch(1, 1);
  qCDebug(lcPlanCompareView) << "gain" << gain_;
}

QString PlanCompareView::gainText() const {
  if (!current_->evaluation().valid) return tr("The current plan is invalid; the proposed plan replaces it.");
  if (!proposed_->evaluation().valid) return tr("The proposed plan is invalid.");
  const double percent = gain_ * 100;
  return percent >= 0 ? tr("+%1 % samples/s").arg(percent, 0, 'f', 0) : tr("−%1 % samples/s").arg(-percent, 0, 'f', 0);
}

}  // namespace stagecraft::gui
