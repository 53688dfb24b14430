#include "editor/plan_session.h"

#include <QFileInfo>
#include <QLoggingCategory>
#include <QThread>
#include <algorithm>
#include <utility>

#include "control/replan.h"
#include "editor/plan_edit_command.h"
#include "io/error.h"
#include "io/json_io.h"
#include "plan/plan_io.h"
#include "plan/validation.h"
#include "sim/simulator.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcPlanSession, "stagecraft.gui.plansession")

/// What a background planner needs, copied so the GUI may change its document meanwhile.
struct PlanningInput {
  ModelSpec model;
  Cluster cluster;
  Optimizer optimizer;
  PlanRequest request;
  std::optional<CostBasis> basis;  // the session's, when it applies
  std::optional<Cluster> available;  // `cluster` without the devices that do not answer
};

namespace {

/// The cost model of `model` over `cluster` under `basis` (specs without one, or when the
/// basis does not fit them).
CostModel pricedBy(const ModelSpec& model, const Cluster& cluster, Optimizer optimizer, const CostBasis* basis) {
  if (basis) {
    try {
      return makeCostModel(model, cluster, optimizer, *basis);
    } catch (const std::exception&) {
      // A profile of another shape: specs, as before a run.
    }
  }
  return CostModel(model, cluster, optimizer);
}

PlannerComparison runPlanner(const std::string& name, const CostModel& cost, const PlanRequest& request) {
  PlannerComparison row;
  row.planner = QString::fromStdString(name);
  PlanOutcome outcome;
  try {
    outcome = makePlan(*makePlanner(name), cost, request);
  } catch (const std::exception& e) {
    row.reason = QString::fromStdString(e.what());
    return row;
  }
  row.plan_ms = outcome.plan_ms;
  if (!outcome.feasible) {
    row.reason = outcome.reason.empty() ? PlanSession::tr("The planner found no feasible plan.")
                                        : QString::fromStdString(outcome.reason);
    return row;
  }
  if (const auto problems = validatePlan(outcome.plan, cost); !problems.empty()) {
    row.reason = PlanSession::tr("The planner produced an invalid plan: %1").arg(QString::fromStdString(problems.front()));
    return row;
  }
  const SimulationResult sim = simulate(outcome.plan, cost);
  row.feasible = true;
  row.stages = outcome.plan.stageCount();
  row.microbatches = outcome.plan.microbatches;
  for (const Stage& st : outcome.plan.stages) row.devices_used += static_cast<int>(st.members.size());
  row.samples_per_second = sim.samples_per_second;
  row.iteration_ms = sim.iteration_ms;
  row.bubble_fraction = sim.bubble_fraction;
  row.plan = outcome.plan;
  return row;
}

/// `name`'s plan over the devices that answer, expressed over the whole cluster.
PlannerComparison planAround(const std::string& name, const PlanningInput& input) {
  const Cluster& over = input.available ? *input.available : input.cluster;
  const CostModel cost = pricedBy(input.model, over, input.optimizer, input.basis ? &*input.basis : nullptr);
  PlannerComparison row = runPlanner(name, cost, input.request);
  if (row.plan && input.available) row.plan = control::withoutDevices(*row.plan, over, input.cluster, {});
  return row;
}

}  // namespace

std::shared_ptr<PlanningInput> PlanSession::planningInput() {
  try {
    return std::make_shared<PlanningInput>(PlanningInput{*model_, *cluster_, cost_->optimizer(), request(),
                                                         activeBasis() ? std::optional(*activeBasis()) : std::nullopt,
                                                         availableCluster()});
  } catch (const std::exception& e) {  // no device answers
    Q_EMIT autoPlanFinished(false, tr("Cannot plan: %1").arg(QString::fromStdString(e.what())));
    return nullptr;
  }
}

PlanSession::PlanSession(QObject* parent) : QObject(parent) {}

PlanSession::~PlanSession() {
  // A planner thread only touches its own copies; wait so none outlives the process' Qt objects.
  for (const auto& thread : threads_) {
    if (thread) thread->wait();
  }
}

void PlanSession::setDocument(ModelSpec model, Cluster cluster) {
  model_ = std::make_unique<ModelSpec>(std::move(model));
  cluster_ = std::make_unique<Cluster>(std::move(cluster));
  documentChanged();
  rebuildCost();
  Q_EMIT modelChanged();
  Q_EMIT clusterChanged();
  resetToAutoPlan();
}

void PlanSession::setDocument(ModelSpec model, Cluster cluster, const Plan& plan) {
  model_ = std::make_unique<ModelSpec>(std::move(model));
  cluster_ = std::make_unique<Cluster>(std::move(cluster));
  documentChanged();
  plan_.optimizer = plan.optimizer;
  rebuildCost();
  undo_.clear();
  Q_EMIT modelChanged();
  Q_EMIT clusterChanged();
  applyPlan(plan);
}

void PlanSession::setModel(ModelSpec model) {
  model_ = std::make_unique<ModelSpec>(std::move(model));
  documentChanged();
  rebuildCost();
  Q_EMIT modelChanged();
  resetToAutoPlan();
}

void PlanSession::setCluster(Cluster cluster) {
  cluster_ = std::make_unique<Cluster>(std::move(cluster));
  documentChanged();
  rebuildCost();
  Q_EMIT clusterChanged();
  resetToAutoPlan();
}

void PlanSession::rebuildCost() {
  cost_.reset();
  if (model_ && cluster_) {
    const Optimizer optimizer = plan_.optimizer == Optimizer::Invalid ? Optimizer::Sgd : plan_.optimizer;
    cost_ = std::make_unique<CostModel>(pricedBy(*model_, *cluster_, optimizer, activeBasis()));
  }
}

const CostBasis* PlanSession::activeBasis() const {
  if (!basis_ || !model_ || !cluster_) return nullptr;
  return model_->name() == basis_model_ && cluster_->name() == basis_cluster_ ? &*basis_ : nullptr;
}

void PlanSession::setCostBasis(CostBasis basis, const std::string& model, const std::string& cluster) {
  basis_ = std::move(basis);
  basis_model_ = !model.empty() ? model : model_ ? model_->name() : std::string();
  basis_cluster_ = !cluster.empty() ? cluster : cluster_ ? cluster_->name() : std::string();
  if (!hasDocument()) return;
  rebuildCost();
  Q_EMIT pricingChanged();
  evaluate();
}

CostSource PlanSession::costSource() const {
  const CostBasis* basis = activeBasis();
  return basis ? basis->source() : CostSource::Specs;
}

PlanRequest PlanSession::request() const {
  PlanRequest r;
  r.batch_size = plan_.batch_size > 0 ? plan_.batch_size : default_batch_;
  r.microbatches = plan_.microbatches > 0 ? plan_.microbatches : default_microbatches_;
  r.schedule = plan_.schedule == Schedule::Invalid ? Schedule::OneFOneB : plan_.schedule;
  return r;
}

void PlanSession::resetToAutoPlan() {
  undo_.clear();
  if (!hasDocument()) return;
  const PlanRequest req = request();
  Plan plan;
  try {
    if (const std::optional<Cluster> available = availableCluster()) {
      // Around the devices that do not answer, expressed over the whole cluster again.
      const CostModel cost = pricedBy(*model_, *available, cost_->optimizer(), activeBasis());
      const PlanOutcome outcome = makePlan(*makePlanner("hybrid"), cost, req);
      if (outcome.feasible) plan = control::withoutDevices(outcome.plan, *available, *cluster_, {}).value_or(Plan{});
    } else {
      const PlanOutcome outcome = makePlan(*makePlanner("hybrid"), *cost_, req);
      if (outcome.feasible) plan = outcome.plan;
    }
  } catch (const std::exception& e) {
    qCWarning(lcPlanSession) << "hybrid planner failed:" << e.what();
  }
  if (plan.stages.empty()) {
    // Nothing fits: all layers on the device with the most memory, so the editor shows why.
    plan = emptyPlan(*cost_, req, "manual");
    int best = 0;
    for (int d = 1; d < cluster_->size(); ++d) {
      if (cluster_->device(d).memory_mb > cluster_->device(best).memory_mb) best = d;
    }
    plan.stages.push_back(Stage{0, model_->layerCount(), {DeviceShare{best, plan.microBatchSize()}}});
  }
  plan.optimizer = cost_->optimizer();
  applyPlan(plan);
}

int PlanSession::deviceIndex(const QString& name) const {
  if (!cluster_) return -1;
  const auto found = cluster_->find(name.toStdString());
  return found ? *found : -1;
}

QString PlanSession::deviceName(int device) const {
  if (!cluster_ || device < 0 || device >= cluster_->size()) return {};
  return QString::fromStdString(cluster_->device(device).name);
}

void PlanSession::applyPlan(const Plan& plan) {
  plan_ = plan;
  if (cost_ && cost_->optimizer() != plan_.optimizer && plan_.optimizer != Optimizer::Invalid) rebuildCost();
  Q_EMIT planChanged();
  evaluate();
}

void PlanSession::documentChanged() {
  ++generation_;
  if (!comparison_.empty()) {
    comparison_.clear();  // the rows were another model's or cluster's
    Q_EMIT comparisonFinished();
  }
}

void PlanSession::setUnavailableDevices(const QStringList& names) {
  std::set<std::string> next;
  for (const QString& name : names) next.insert(name.toStdString());
  if (next == unavailable_) return;
  unavailable_ = std::move(next);
  evaluate();
}

bool PlanSession::isUnavailable(int device) const {
  return cluster_ && device >= 0 && device < cluster_->size() && unavailable_.count(cluster_->device(device).name) > 0;
}

QStringList PlanSession::unavailableDevices() const {
  QStringList names;
  for (const std::string& name : unavailable_) names << QString::fromStdString(name);
  return names;
}

void PlanSession::setDeviceSource(std::function<std::optional<v1::Device>(const QString&)> source) {
  device_source_ = std::move(source);
}

std::optional<Cluster> PlanSession::availableCluster() const {
  std::vector<std::string> live;
  for (const Device& device : cluster_->devices()) {
    if (!unavailable_.count(device.name)) live.push_back(device.name);
  }
  if (static_cast<int>(live.size()) == cluster_->size()) return std::nullopt;
  if (live.empty()) throw Error("no device of the cluster answers");
  return control::restrictCluster(*cluster_, live);
}

void PlanSession::evaluate() {
  if (!hasDocument()) return;
  evaluation_ = evaluatePlan(plan_, *cost_);
  // A device that does not answer cannot train its share, whatever the figures say.
  QStringList lost;
  for (size_t s = 0; s < plan_.stages.size(); ++s) {
    for (const DeviceShare& m : plan_.stages[s].members) {
      if (!isUnavailable(m.device)) continue;
      lost << deviceName(m.device);
      if (s < evaluation_.stage_has_problem.size()) evaluation_.stage_has_problem[s] = true;
    }
  }
  if (!lost.isEmpty()) {
    evaluation_.valid = false;
    evaluation_.problems.prepend(tr("%1 does not answer: move it to the unused devices, or wait until it answers again.",
                                    nullptr, static_cast<int>(lost.size()))
                                     .arg(lost.join(QStringLiteral(", "))));
  }
  qCDebug(lcPlanSession) << "evaluated in" << evaluation_.evaluate_ms << "ms; valid" << evaluation_.valid;
  Q_EMIT evaluated();
}

bool PlanSession::refuse(const QString& reason) {
  last_error_ = reason;
  qCInfo(lcPlanSession) << "edit refused:" << reason;
  Q_EMIT editRefused(reason);
  return false;
}

bool PlanSession::push(const PlanEditResult& result, const QString& text, int id, int gesture) {
  if (!result.plan) return refuse(result.refusal);
  if (samePlan(*result.plan, plan_)) return true;
  undo_.push(new PlanEditCommand(this, plan_, *result.plan, text, static_cast<PlanEditKind>(id), gesture));
  return true;
}

bool PlanSession::moveBoundary(int boundary, int layer, int gesture) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  return push(PlanEdits::moveBoundary(plan_, *cost_, boundary, layer),
              tr("Move the boundary after stage %1").arg(boundary), static_cast<int>(PlanEditKind::MoveBoundary),
              gesture);
}

bool PlanSession::moveLayersToStage(const std::vector<int>& layers, int stage) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  return push(PlanEdits::moveLayersToStage(plan_, *cost_, layers, stage), tr("Move layers to stage %1").arg(stage),
              static_cast<int>(PlanEditKind::MoveLayers));
}

bool PlanSession::addDeviceToStage(const QString& device, int stage) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  int d = deviceIndex(device);
  if (d < 0) {
    QString refusal;
    d = joinDevice(device, stage, &refusal);
    if (!refusal.isEmpty()) return refuse(refusal);
  }
  if (d < 0) return refuse(tr("Device %1 is not in cluster %2.").arg(device, QString::fromStdString(cluster_->name())));
  return push(PlanEdits::addDeviceToStage(plan_, *cost_, d, stage), tr("Put %1 into stage %2").arg(device).arg(stage),
              static_cast<int>(PlanEditKind::AddDevice));
}

int PlanSession::joinDevice(const QString& name, int stage, QString* refusal) {
  if (!device_source_) return -1;
  const std::optional<v1::Device> device = device_source_(name);
  if (!device || device->name() != name.toStdString()) return -1;
  v1::Cluster proto = cluster_->toProto();
  *proto.add_devices() = *device;
  try {
    auto grown = std::make_unique<Cluster>(Cluster::fromProto(proto));
    // Only for an edit that will be made: a refused drop leaves the cluster as it was.
    const CostModel cost = pricedBy(*model_, *grown, cost_->optimizer(), activeBasis());
    if (const PlanEditResult edit = PlanEdits::addDeviceToStage(plan_, cost, grown->size() - 1, stage); !edit.plan) {
      *refusal = edit.refusal;
      return -1;
    }
    // Appended last: every plan on the undo stack still names the same devices.
    cluster_ = std::move(grown);
  } catch (const std::exception& e) {
    qCWarning(lcPlanSession) << "cannot add" << name << "to the cluster:" << e.what();
    return -1;
  }
  rebuildCost();
  evaluate();  // every per-device figure sized for the new device before anyone reads it
  Q_EMIT clusterChanged();
  Q_EMIT deviceJoined(name);
  return cluster_->size() - 1;
}

bool PlanSession::removeDeviceFromStage(const QString& device) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  const int d = deviceIndex(device);
  if (d < 0) return refuse(tr("Device %1 is not in cluster %2.").arg(device, QString::fromStdString(cluster_->name())));
  return push(PlanEdits::removeDevice(plan_, *cost_, d), tr("Take %1 out of its stage").arg(device),
              static_cast<int>(PlanEditKind::RemoveDevice));
}

bool PlanSession::addStage() {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  return push(PlanEdits::addStage(plan_, *cost_), tr("Add a stage"), static_cast<int>(PlanEditKind::AddStage));
}

bool PlanSession::removeStage(int stage) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  return push(PlanEdits::removeStage(plan_, *cost_, stage), tr("Remove stage %1").arg(stage),
              static_cast<int>(PlanEditKind::RemoveStage));
}

bool PlanSession::setBatchSize(int batch) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  return push(PlanEdits::setBatch(plan_, *cost_, batch, plan_.microbatches), tr("Set the batch to %1").arg(batch),
              static_cast<int>(PlanEditKind::Request));
}

bool PlanSession::setMicrobatches(int microbatches) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  return push(PlanEdits::setBatch(plan_, *cost_, plan_.batch_size, microbatches),
              tr("Use %1 micro-batches").arg(microbatches), static_cast<int>(PlanEditKind::Request));
}

bool PlanSession::setSchedule(Schedule schedule) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  return push(PlanEdits::setSchedule(plan_, *cost_, schedule),
              tr("Use the %1 schedule").arg(QString::fromUtf8(scheduleName(schedule).data(),
                                                              static_cast<int>(scheduleName(schedule).size()))),
              static_cast<int>(PlanEditKind::Request));
}

bool PlanSession::setOptimizer(Optimizer optimizer) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  if (optimizer == Optimizer::Invalid) return refuse(tr("Unknown optimizer."));
  Plan next = plan_;
  next.optimizer = optimizer;
  // Shares depend on memory, which depends on the optimizer's state: re-split under it.
  const CostModel cost = pricedBy(*model_, *cluster_, optimizer, activeBasis());
  PlanEdits::resplitAll(next, cost);
  const std::string_view name = optimizerName(optimizer);
  return push(PlanEditResult{next, {}},
              tr("Use the %1 optimizer").arg(QString::fromUtf8(name.data(), static_cast<int>(name.size()))),
              static_cast<int>(PlanEditKind::Request));
}

bool PlanSession::replacePlan(const Plan& plan, const QString& description) {
  if (!hasDocument()) return refuse(tr("Open a model and a cluster first."));
  for (const Stage& st : plan.stages) {
    if (st.layer_begin < 0 || st.layer_end > model_->layerCount()) {
      return refuse(tr("The plan names layers that model %1 does not have.").arg(QString::fromStdString(model_->name())));
    }
    for (const DeviceShare& m : st.members) {
      if (m.device < 0 || m.device >= cluster_->size()) {
        return refuse(
            tr("The plan names devices that cluster %1 does not have.").arg(QString::fromStdString(cluster_->name())));
      }
    }
  }
  return push(PlanEditResult{plan, {}}, description.isEmpty() ? tr("Replace the plan") : description,
              static_cast<int>(PlanEditKind::Replace));
}

void PlanSession::setBusy(bool busy) {
  const bool was = isBusy();
  busy_ += busy ? 1 : -1;
  if (was != isBusy()) Q_EMIT busyChanged(isBusy());
}

void PlanSession::startThread(QThread* thread) {
  threads_.erase(std::remove_if(threads_.begin(), threads_.end(), [](const QPointer<QThread>& t) { return !t; }),
                 threads_.end());
  threads_.emplace_back(thread);
  connect(thread, &QThread::finished, thread, &QObject::deleteLater);
  thread->start();
}

void PlanSession::autoPlan(const QString& planner, int microbatches) {
  if (!hasDocument()) {
    Q_EMIT autoPlanFinished(false, tr("Open a model and a cluster first."));
    return;
  }
  const std::shared_ptr<PlanningInput> input = planningInput();
  if (!input) return;
  if (microbatches >= 0) input->request.microbatches = microbatches;
  const int generation = generation_;
  const std::string name = planner.toStdString();
  setBusy(true);
  // The worker only touches its own copies; the result comes back through `finished`,
  // delivered in this thread, and is dropped if the session is gone by then.
  auto result = std::make_shared<PlannerComparison>();
  QThread* thread = QThread::create([input, name, result] {
    *result = planAround(name, *input);
  });
  connect(thread, &QThread::finished, this, [this, result, generation] {
    setBusy(false);
    if (generation != generation_) return;  // the document changed meanwhile
    if (!result->feasible) {
      Q_EMIT autoPlanFinished(false, tr("Planner %1 found no plan: %2").arg(result->planner, result->reason));
      return;
    }
    replacePlan(*result->plan, tr("Auto-plan with %1").arg(result->planner));
    Q_EMIT autoPlanFinished(true, tr("Planner %1 planned in %2 ms.").arg(result->planner).arg(result->plan_ms, 0, 'f', 1));
  });
  startThread(thread);
}

void PlanSession::compare() {
  if (!hasDocument()) return;
  const std::shared_ptr<PlanningInput> input = planningInput();
  if (!input) return;
  const int generation = generation_;
  setBusy(true);
  auto rows = std::make_shared<std::vector<PlannerComparison>>();
  QThread* thread = QThread::create([input, rows] {
    for (const std::string& name : plannerNames()) rows->push_back(planAround(name, *input));
  });
  connect(thread, &QThread::finished, this, [this, rows, generation] {
    setBusy(false);
    if (generation != generation_) return;
    comparison_ = std::move(*rows);
    Q_EMIT comparisonFinished();
  });
  startThread(thread);
}

bool PlanSession::loadPlan(const QString& path, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = why;
    last_error_ = why;
    qCWarning(lcPlanSession) << why;
    return false;
  };
  if (!cluster_) return fail(tr("Open a cluster before loading a plan."));
  try {
    v1::Plan proto;
    io::readJsonFile(path.toStdString(), proto);
    ModelSpec model = modelOfPlan(proto);
    const Plan plan = planFromProto(proto, *cluster_);
    const bool same_model = model_ && model_->name() == model.name() && model_->layerCount() == model.layerCount();
    if (same_model) return replacePlan(plan, tr("Load %1").arg(QFileInfo(path).fileName())) || fail(last_error_);
    // The file trains another model: it becomes the session's model, the plan as loaded.
    model_ = std::make_unique<ModelSpec>(std::move(model));
    documentChanged();
    plan_.optimizer = plan.optimizer;
    rebuildCost();
    undo_.clear();
    Q_EMIT modelChanged();
    applyPlan(plan);
    return true;
  } catch (const std::exception& e) {
    return fail(tr("Cannot load the plan: %1").arg(QString::fromStdString(e.what())));
  }
}

bool PlanSession::savePlan(const QString& path, QString* error) const {
  if (!hasDocument()) {
    if (error) *error = tr("There is no plan to save.");
    return false;
  }
  try {
    v1::Plan file = planToProto(plan_, *model_, *cluster_);
    if (evaluation_.valid) {
      file.mutable_predicted()->set_samples_per_second(evaluation_.samples_per_second);
      file.mutable_predicted()->set_iteration_ms(evaluation_.iteration_ms);
      file.mutable_predicted()->set_bubble_fraction(evaluation_.bubble_fraction);
    }
    io::writeJsonFile(path.toStdString(), file);
    return true;
  } catch (const std::exception& e) {
    if (error) *error = tr("Cannot save the plan: %1").arg(QString::fromStdString(e.what()));
    return false;
  }
}

}  // namespace stagecraft::gui
