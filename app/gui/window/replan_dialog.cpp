#include "window/replan_dialog.h"

#include <QDialogButtonBox>
#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QVBoxLayout>

#include "editor/display_units.h"
#include "editor/plan_compare_view.h"

namespace stagecraft::gui {

ReplanDialog::ReplanDialog(const ModelSpec& model, const Cluster& current_cluster, const Plan& current,
                           const Cluster& calibrated, const Plan& proposed, double current_samples_per_second,
                           double proposed_samples_per_second, const CostBasis& basis, QWidget* parent)
    : QDialog(parent) {
  setWindowTitle(tr("Re-plan now"));
  auto* layout = new QVBoxLayout(this);
  auto* intro = new QLabel(
      tr("Planned again over the %n device(s) that answer now, with the speeds measured during training. "
         "Applying stops at the end of the current step, carries the weights over and continues at the next step.",
         nullptr, calibrated.size()),
      this);
  intro->setWordWrap(true);
  layout->addWidget(intro);
  // Both plans priced with the measured speeds, so the comparison is like for like.
  view_ = new PlanCompareView(model, current_cluster, current, calibrated, proposed, this, &basis);
  layout->addWidget(view_, 1);
  auto* figures = new QLabel(tr("Predicted (%1): %2 → %3 samples/s")
                                 .arg(costSourceLabel(basis.source()),
                                      QLocale().toString(current_samples_per_second, 'f', 1),
                                      QLocale().toString(proposed_samples_per_second, 'f', 1)),
                             this);
  figures->setObjectName(QStringLiteral("replanFigures"));
  layout->addWidget(figures);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Apply | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Apply)->setText(tr("&Apply new plan"));
  buttons->button(QDialogButtonBox::Apply)->setDefault(true);
  connect(buttons->button(QDialogButtonBox::Apply), &QPushButton::clicked, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(1100, 640);
}

}  // namespace stagecraft::gui
