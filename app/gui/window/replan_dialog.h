#pragma once

#include <QDialog>

#include "cluster/cluster.h"
#include "cost/cost_basis.h"
#include "model/model_spec.h"
#include "plan/plan.h"

namespace stagecraft::gui {

class PlanCompareView;

/// "Re-plan now": the running plan beside the one the planner proposes over the devices
/// live now (with their measured speeds), and the predicted gain. Accepting applies it.
class ReplanDialog : public QDialog {
  Q_OBJECT

 public:
  ReplanDialog(const ModelSpec& model, const Cluster& current_cluster, const Plan& current, const Cluster& calibrated,
               const Plan& proposed, double current_samples_per_second, double proposed_samples_per_second,
               const CostBasis& basis, QWidget* parent = nullptr);

  PlanCompareView* view() const { return view_; }

 private:
  PlanCompareView* view_ = nullptr;
};

}  // namespace stagecraft::gui
