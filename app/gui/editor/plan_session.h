#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>
#include <QUndoStack>
#include <memory>
#include <optional>
#include <functional>
#include <memory>
#include <set>
#include <vector>

#include "cluster/cluster.h"
#include "cost/cost_basis.h"
#include "cost/cost_model.h"
#include "editor/plan_edits.h"
#include "editor/plan_evaluation.h"
#include "model/model_spec.h"
#include "plan/plan.h"
#include "planner/planner.h"

class QThread;

namespace stagecraft::gui {

struct PlanningInput;  // what a planner thread works on (plan_session.cpp)

/// One planner's answer in the Compare view: its plan simulated, or why it has none.
struct PlannerComparison {
  QString planner;
  bool feasible = false;
  QString reason;  ///< why there is no plan (from core), empty when feasible
  int stages = 0;
  int microbatches = 0;
  int devices_used = 0;
  double samples_per_second = 0;
  double iteration_ms = 0;
  double bubble_fraction = 0;
  double plan_ms = 0;
  std::optional<Plan> plan;
};

/// The document being edited: a model, a cluster, the planning request and the current
/// plan, with its evaluation recomputed synchronously after every change. Every edit is
/// an undoable command on undoStack(); an edit that cannot be represented is refused
/// (editRefused), one that is merely invalid is applied and evaluation() says why.
class PlanSession : public QObject {
  Q_OBJECT

 public:
  explicit PlanSession(QObject* parent = nullptr);
  ~PlanSession() override;

  /// Sets both at once and resets to an auto plan (hybrid); clears the undo stack.
  void setDocument(ModelSpec model, Cluster cluster);
  /// Sets both with a given plan (no auto plan), e.g. to show a proposed re-plan.
  void setDocument(ModelSpec model, Cluster cluster, const Plan& plan);
  /// Replace one side and reset to an auto plan (hybrid) when both are set.
  void setModel(ModelSpec model);
  void setCluster(Cluster cluster);

  bool hasDocument() const { return model_ && cluster_ && cost_; }
  const ModelSpec& model() const { return *model_; }
  const Cluster& cluster() const { return *cluster_; }
  const CostModel& costModel() const { return *cost_; }
  /// Prices every plan of this model on this cluster (the editor's figures, auto-plan,
  /// compare) with `basis`: what the deployed run prices with. Kept while the model and the
  /// cluster keep their names (a re-plan narrows the cluster); another model or cluster is
  /// priced from its specs again.
  /// `model` and `cluster` name what the basis was measured on (empty: the document's).
  void setCostBasis(CostBasis basis, const std::string& model = {}, const std::string& cluster = {});
  /// Where the figures come from: specs, profiles, or speeds calibrated from training.
  CostSource costSource() const;
  /// Devices whose workers stopped answering (lost), one state with the device list: a plan
  /// that uses one is invalid (the evaluation says which, the editor draws it red, Deploy
  /// refuses it), and auto-plan, compare and the plan made for a new model or cluster leave
  /// them out. A device that answers again is taken off the list by the caller.
  void setUnavailableDevices(const QStringList& names);
  bool isUnavailable(int device) const;
  QStringList unavailableDevices() const;
  /// Where a device the cluster lacks comes from (a worker discovered on the beacon or
  /// added by address): addDeviceToStage() adds it to the session's cluster, the plan kept,
  /// instead of refusing it. nullopt: not known there either.
  void setDeviceSource(std::function<std::optional<v1::Device>(const QString&)> source);
  const Plan& plan() const { return plan_; }
  const PlanEvaluation& evaluation() const { return evaluation_; }
  QUndoStack* undoStack() { return &undo_; }
  /// What the next auto-plan / compare asks the planners for (batch, micro-batches, schedule).
  PlanRequest request() const;
  Optimizer optimizer() const { return plan_.optimizer; }
  /// Cluster index of the device called `name`, or -1.
  int deviceIndex(const QString& name) const;
  QString deviceName(int device) const;
  /// The last refusal's sentence.
  QString lastError() const { return last_error_; }

  // Edits: true when applied (one undo step), false when refused (editRefused emitted).
  // `gesture` != 0 merges consecutive edits of one mouse drag into one undo step.
  bool moveBoundary(int boundary, int layer, int gesture = 0);
  bool moveLayersToStage(const std::vector<int>& layers, int stage);
  bool addDeviceToStage(const QString& device, int stage);
  bool removeDeviceFromStage(const QString& device);
  bool addStage();
  bool removeStage(int stage);
  bool setBatchSize(int batch);
  bool setMicrobatches(int microbatches);
  bool setSchedule(Schedule schedule);
  bool setOptimizer(Optimizer optimizer);
  /// Replaces the whole plan (an auto-plan result, a loaded file, a re-plan) as one undo
  /// step. Refused when it names layers or devices this model and cluster lack.
  bool replacePlan(const Plan& plan, const QString& description = {});

  /// Plans with `planner` (a core plannerNames() entry) off the GUI thread; busyChanged
  /// brackets it, autoPlanFinished reports, and a feasible plan replaces the current one
  /// (one undo step). `microbatches`: -1 keeps the current count, 0 lets makePlan choose.
  void autoPlan(const QString& planner, int microbatches = -1);
  /// Runs every planner off the GUI thread; comparisonFinished delivers one row each.
  void compare();
  bool isBusy() const { return busy_ > 0; }
  const std::vector<PlannerComparison>& comparison() const { return comparison_; }

  /// The plan file the CLI reads and writes (stagecraft.v1.Plan JSON). Load checks the
  /// file's model against the session's and its devices against the cluster.
  bool loadPlan(const QString& path, QString* error = nullptr);
  bool savePlan(const QString& path, QString* error = nullptr) const;

  /// Used by the undo commands: sets the plan without pushing a command.
  void applyPlan(const Plan& plan);

 Q_SIGNALS:
  void modelChanged();
  void clusterChanged();
  void planChanged();
  /// evaluation() has been recomputed (after every planChanged).
  void evaluated();
  void editRefused(const QString& reason);
  void busyChanged(bool busy);
  void autoPlanFinished(bool ok, const QString& message);
  /// comparison() changed: new rows, or none after the model or the cluster changed.
  void comparisonFinished();
  /// setCostBasis() changed how plans are priced (evaluated() follows).
  void pricingChanged();
  /// addDeviceToStage() took `device` into the cluster from the device source.
  void deviceJoined(const QString& device);

 private:
  bool push(const PlanEditResult& result, const QString& text, int id = -1, int gesture = 0);
  bool refuse(const QString& reason);
  void resetToAutoPlan();
  void rebuildCost();
  const CostBasis* activeBasis() const;  // basis_ when it fits the document, else nullptr
  /// The cluster without the unavailable devices; nullopt when none is unavailable. Throws
  /// Error when none is left.
  std::optional<Cluster> availableCluster() const;
  void documentChanged();  // a new model or cluster: derived views of the old one go
  /// Copies for a planner thread; nullptr (autoPlanFinished says why) when none can be made.
  std::shared_ptr<PlanningInput> planningInput();
  /// Device `name` from the device source, appended to the cluster when putting it into
  /// `stage` is an edit that can be made: its index; else -1 (with the edit's refusal).
  int joinDevice(const QString& name, int stage, QString* refusal);
  void evaluate();
  void setBusy(bool busy);
  void startThread(QThread* thread);

  std::unique_ptr<ModelSpec> model_;
  std::unique_ptr<Cluster> cluster_;
  std::unique_ptr<CostModel> cost_;
  std::optional<CostBasis> basis_;
  std::string basis_model_, basis_cluster_;  // the document the basis was measured on
  std::set<std::string> unavailable_;
  std::function<std::optional<v1::Device>(const QString&)> device_source_;
  Plan plan_;
  PlanEvaluation evaluation_;
  QUndoStack undo_;
  QString last_error_;
  int busy_ = 0;
  int generation_ = 0;  ///< bumped when model or cluster change; stale results are dropped
  int default_batch_ = 64;
  int default_microbatches_ = 8;
  std::vector<PlannerComparison> comparison_;
  std::vector<QPointer<QThread>> threads_;
};

}  // namespace stagecraft::gui
