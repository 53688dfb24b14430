#pragma once

#include <QWidget>

#include "cluster/cluster.h"
#include "cost/cost_basis.h"
#include "model/model_spec.h"
#include "plan/plan.h"

class QLabel;

namespace stagecraft::gui {

class PartitionEditor;
class PlanSession;

/// Two read-only partition editors side by side, the current plan and a proposed one,
/// each captioned with its predicted throughput, and the predicted gain between them.
/// For the main window's "Re-plan now" dialog.
class PlanCompareView : public QWidget {
  Q_OBJECT

 public:
  PlanCompareView(const ModelSpec& model, const Cluster& cluster, const Plan& current, const Plan& proposed,
                  QWidget* parent = nullptr);
  /// Each plan over its own cluster: a re-plan may drop devices that stopped answering.
  /// Both priced with `basis` when given (the run's profiles and measured speeds), else
  /// from the clusters' specs.
  PlanCompareView(const ModelSpec& model, const Cluster& current_cluster, const Plan& current,
                  const Cluster& proposed_cluster, const Plan& proposed, QWidget* parent = nullptr,
                  const CostBasis* basis = nullptr);

  /// Proposed over current samples/s minus one (0.38 for "+38 %"); 0 when either is invalid.
  double gain() const { return gain_; }
  /// "+38 % samples/s", or why there is no figure.
  QString gainText() const;
  PartitionEditor* currentEditor() const { return current_editor_; }
  PartitionEditor* proposedEditor() const { return proposed_editor_; }

 private:
  PlanSession* current_;
  PlanSession* proposed_;
  PartitionEditor* current_editor_;
  PartitionEditor* proposed_editor_;
  QLabel* gain_label_;
  double gain_ = 0;
};

}  // namespace stagecraft::gui
