#include "models/layer_table_model.h"

#include <QLoggingCategory>
#include <QMimeData>
#include <algorithm>
#include <set>

#include "editor/display_units.h"
#include "editor/plan_session.h"
#include "models/mime_types.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcLayerTableModel, "stagecraft.gui.layertablemodel")

namespace {

QString shapeText(const std::vector<int>& shape) {
  QStringList parts;
  for (int d : shape) parts << QString::number(d);
  return parts.join(QStringLiteral(" × "));
}

}  // namespace

LayerTableModel::LayerTableModel(PlanSession* session, QObject* parent)
    : QAbstractTableModel(parent), session_(session) {
  connect(session, &PlanSession::modelChanged, this, &LayerTableModel::reset);
  connect(session, &PlanSession::planChanged, this, &LayerTableModel::refreshStages);
  reset();
}

void LayerTableModel::reset() {
  beginResetModel();
  rows_ = session_ && session_->hasDocument() ? session_->model().layerCount() : 0;
  endResetModel();
}

void LayerTableModel::refreshStages() {
  const int rows = session_ && session_->hasDocument() ? session_->model().layerCount() : 0;
  if (rows != rows_) {
    reset();
    return;
  }
  if (rows_ > 0) Q_EMIT dataChanged(index(0, StageColumn), index(rows_ - 1, StageColumn));
}

int LayerTableModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_; }

int LayerTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LayerTableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) || !session_ ||
      !session_->hasDocument() || index.row() >= session_->model().layerCount()) {
    return {};
  }
  const int i = index.row();
  const ModelSpec& model = session_->model();
  const LayerCost& cost = model.cost(i);
  int stage = -1;
  const Plan& plan = session_->plan();
  for (int s = 0; s < plan.stageCount(); ++s) {
    if (i >= plan.stages[s].layer_begin && i < plan.stages[s].layer_end) stage = s;
  }
  const QString name = QString::fromStdString(model.layer(i).name());
  const QString kind = layerKindLabel(model.layer(i));

  if (role == Qt::DisplayRole) {
    switch (index.column()) {
      case Index: return i;
      case Name: return name;
      case Kind: return kind;
      case OutputShape: return shapeText(cost.output_shape);
      case ForwardFlops: return formatFlops(cost.forward_flops);
      case Parameters: return formatCount(cost.parameters);
      case Activation: return formatBytes(cost.output_bytes);
      case StageColumn: return stage >= 0 ? QVariant(stage) : QVariant(tr("none"));
      default: return {};
    }
  }
  if (role == Qt::EditRole || role == kRawRole) {
    switch (index.column()) {
      case Index: return i;
      case Name: return name;
      case Kind: return kind;
      case OutputShape: return shapeText(cost.output_shape);
      case ForwardFlops: return cost.forward_flops;
      case Parameters: return cost.parameters;
      case Activation: return cost.output_bytes;
      case StageColumn: return stage;
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    const bool numeric = index.column() == Index || index.column() == ForwardFlops ||
                         index.column() == Parameters || index.column() == Activation ||
                         index.column() == StageColumn;
    return QVariant::fromValue(Qt::Alignment((numeric ? Qt::AlignRight : Qt::AlignLeft) | Qt::AlignVCenter));
  }
  if (role == Qt::ToolTipRole) {
    return tr("Layer %1 “%2” (%3): output %4, forward %5 and backward %6 per sample, %7 parameters, "
              "%8 of activation per sample. Drag it onto a neighbouring stage to move it there.")
        .arg(i)
        .arg(name, kind, shapeText(cost.output_shape), formatFlops(cost.forward_flops),
             formatFlops(cost.backward_flops), formatCount(cost.parameters), formatBytes(cost.output_bytes));
  }
  return {};
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return QAbstractTableModel::headerData(section, orientation, role);
  if (role == Qt::DisplayRole) {
    switch (section) {
      case Index: return tr("#");
      case Name: return tr("Layer");
      case Kind: return tr("Kind");
      case OutputShape: return tr("Output");
      case ForwardFlops: return tr("Forward FLOPs");
      case Parameters: return tr("Parameters");
      case Activation: return tr("Activation");
      case StageColumn: return tr("Stage");
      default: return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case ForwardFlops: return tr("Forward FLOPs per sample (a multiply-add counts as two).");
      case Parameters: return tr("Trainable parameters.");
      case Activation: return tr("Activation handed to the next layer, per sample.");
      case StageColumn: return tr("The pipeline stage that holds the layer.");
      default: return {};
    }
  }
  return {};
}

Qt::ItemFlags LayerTableModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDragEnabled | Qt::ItemNeverHasChildren;
}

QStringList LayerTableModel::mimeTypes() const { return {kLayersMimeType}; }

QMimeData* LayerTableModel::mimeData(const QModelIndexList& indexes) const {
  std::set<int> rows;
  for (const QModelIndex& index : indexes) {
    if (index.isValid() && index.model() == this) rows.insert(index.row());
  }
  if (rows.empty()) return nullptr;
  qCDebug(lcLayerTableModel) << "dragging" << rows.size() << "layers";
  return makeLayersMimeData(std::vector<int>(rows.begin(), rows.end()));
}

Qt::DropActions LayerTableModel::supportedDragActions() const { return Qt::MoveAction; }

}  // namespace stagecraft::gui
