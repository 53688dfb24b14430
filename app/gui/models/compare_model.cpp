#include "models/compare_model.h"

#include <QBrush>
#include <QFont>
#include <QLoggingCategory>
#include <algorithm>

#include "editor/display_units.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcCompareModel, "stagecraft.gui.comparemodel")

CompareModel::CompareModel(PlanSession* session, QObject* parent) : QAbstractTableModel(parent), session_(session) {
  if (session) {
    connect(session, &PlanSession::comparisonFinished, this, [this] { setRows(session_->comparison()); });
    setRows(session->comparison());
  }
}

void CompareModel::setRows(std::vector<PlannerComparison> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  best_ = 0;
  for (const auto& r : rows_) {
    if (r.feasible) best_ = std::max(best_, r.samples_per_second);
  }
  endResetModel();
  qCDebug(lcCompareModel) << rows_.size() << "planners compared";
}

const PlannerComparison* CompareModel::row(int index) const {
  return index >= 0 && index < static_cast<int>(rows_.size()) ? &rows_[index] : nullptr;
}

int CompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int CompareModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const PlannerComparison& r = rows_[index.row()];
  const double ratio = best_ > 0 && r.feasible ? r.samples_per_second / best_ : 0.0;
  const int c = index.column();
  if (role == Qt::DisplayRole) {
    if (c == Planner) return r.planner;
    if (c == Feasible) return r.feasible ? tr("yes") : tr("no");
    if (c == PlanTime) return formatMs(r.plan_ms);
    if (c == Note) return r.reason;
    if (!r.feasible) return QString();
    switch (c) {
      case Stages: return r.stages;
      case Microbatches: return r.microbatches;
      case SamplesPerSecond: return QString::number(r.samples_per_second, 'f', 1);
      case IterationMs: return formatMs(r.iteration_ms);
      case Bubble: return tr("%1 %").arg(r.bubble_fraction * 100, 0, 'f', 1);
      case RatioToBest: return tr("%1×").arg(ratio, 0, 'f', 2);
      default: return {};
    }
  }
  if (role == Qt::EditRole || role == kRawRole) {
    switch (c) {
      case Planner: return r.planner;
      case Feasible: return r.feasible;
      case Stages: return r.stages;
      case Microbatches: return r.microbatches;
      case SamplesPerSecond: return r.samples_per_second;
      case IterationMs: return r.iteration_ms;
      case Bubble: return r.bubble_fraction;
      case RatioToBest: return ratio;
      case PlanTime: return r.plan_ms;
      case Note: return r.reason;
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    return QVariant::fromValue(Qt::Alignment((c == Planner || c == Note || c == Feasible ? Qt::AlignLeft : Qt::AlignRight) |
                                             Qt::AlignVCenter));
  }
  if (role == Qt::ForegroundRole && !r.feasible) return QBrush(QColor(0xc6, 0x28, 0x28));
  if (role == Qt::FontRole && r.feasible && r.samples_per_second >= best_ && best_ > 0) {
    QFont bold;
    bold.setBold(true);
    return bold;
  }
  if (role == Qt::ToolTipRole) {
    if (!r.feasible) return tr("Planner %1 has no plan: %2").arg(r.planner, r.reason);
    return tr("Planner %1: %2 stages on %3 devices, %4 micro-batches, %5 samples/s predicted by the simulator.")
        .arg(r.planner)
        .arg(r.stages)
        .arg(r.devices_used)
        .arg(r.microbatches)
        .arg(r.samples_per_second, 0, 'f', 1);
  }
  return {};
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
    return QAbstractTableModel::headerData(section, orientation, role);
  }
  switch (section) {
    case Planner: return tr("Planner");
    case Feasible: return tr("Feasible");
    case Stages: return tr("Stages");
    case Microbatches: return tr("Micro-batches");
    case SamplesPerSecond: return tr("Samples/s");
    case IterationMs: return tr("Iteration");
    case Bubble: return tr("Bubble");
    case RatioToBest: return tr("vs best");
    case PlanTime: return tr("Plan time");
    case Note: return tr("Reason");
    default: return {};
  }
}

Qt::ItemFlags CompareModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
}

}  // namespace stagecraft::gui
