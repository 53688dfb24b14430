#include "models/stage_model.h"

#include <QBrush>
#include <QLoggingCategory>
#include <QMimeData>
#include <algorithm>

#include "editor/display_units.h"
#include "editor/plan_session.h"
#include "models/mime_types.h"

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcStageModel, "stagecraft.gui.stagemodel")

StageModel::StageModel(PlanSession* session, QObject* parent) : QAbstractTableModel(parent), session_(session) {
  // evaluated() follows every plan change, so the per-stage figures are current on reset.
  connect(session, &PlanSession::evaluated, this, &StageModel::reset);
  connect(session, &PlanSession::modelChanged, this, &StageModel::reset);
  connect(session, &PlanSession::clusterChanged, this, &StageModel::reset);
  reset();
}

void StageModel::reset() {
  beginResetModel();
  rows_ = session_ && session_->hasDocument() ? session_->plan().stageCount() : 0;
  endResetModel();
}

int StageModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : rows_; }

int StageModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant StageModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) || !session_ ||
      !session_->hasDocument() || index.row() >= session_->plan().stageCount()) {
    return {};
  }
  const int s = index.row();
  const Plan& plan = session_->plan();
  const Stage& st = plan.stages[s];
  const PlanEvaluation& ev = session_->evaluation();
  const ModelSpec& model = session_->model();
  const bool range_ok = st.layer_begin >= 0 && st.layer_end <= model.layerCount() && st.layer_begin < st.layer_end;

  QStringList members;
  int fullest = -1;
  for (const DeviceShare& m : st.members) {
    members << tr("%1 ×%2").arg(session_->deviceName(m.device)).arg(m.samples);
    if (m.device >= 0 && m.device < static_cast<int>(ev.memory_bytes.size()) &&
        (fullest < 0 || ev.memory_bytes[m.device] / ev.memory_limit_bytes[m.device] >
                            ev.memory_bytes[fullest] / ev.memory_limit_bytes[fullest])) {
      fullest = m.device;
    }
  }
  const double compute = s < static_cast<int>(ev.stage_compute_ms.size()) ? ev.stage_compute_ms[s] : 0.0;
  const bool bad = s < static_cast<int>(ev.stage_has_problem.size()) && ev.stage_has_problem[s];

  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case StageColumn: return s;
        case Layers:
          if (!range_ok) return tr("no layers");
          return tr("%1–%2 (%3 to %4)")
              .arg(st.layer_begin)
              .arg(st.layer_end - 1)
              .arg(QString::fromStdString(model.layer(st.layer_begin).name()),
                   QString::fromStdString(model.layer(st.layer_end - 1).name()));
        case Devices: return members.isEmpty() ? tr("no devices") : members.join(QStringLiteral(", "));
        case ComputeMs: return formatMs(compute);
        case Memory:
          if (fullest < 0) return QString();
          return tr("%1 of %2 (%3)")
              .arg(formatBytes(ev.memory_bytes[fullest]), formatBytes(ev.memory_limit_bytes[fullest]),
                   session_->deviceName(fullest));
        default: return {};
      }
    case Qt::EditRole:
    case kRawRole:
      switch (index.column()) {
        case StageColumn: return s;
        case Layers: return st.layer_begin;
        case Devices: return static_cast<int>(st.members.size());
        case ComputeMs: return compute;
        case Memory: return fullest < 0 ? 0.0 : ev.memory_bytes[fullest];
        default: return {};
      }
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(
          Qt::Alignment((index.column() == ComputeMs || index.column() == StageColumn ? Qt::AlignRight : Qt::AlignLeft) |
                        Qt::AlignVCenter));
    case Qt::ForegroundRole:
      if (bad && (index.column() == Memory || index.column() == Devices || index.column() == Layers)) {
        return QBrush(QColor(0xc6, 0x28, 0x28));
      }
      return {};
    case Qt::ToolTipRole:
      return tr("Stage %1 runs %2 on %3 device(s); one micro-batch of %4 samples takes %5 on its slowest member. "
                "Drop layers of a neighbouring stage or devices here.")
          .arg(s)
          .arg(range_ok ? tr("layers %1 to %2").arg(st.layer_begin).arg(st.layer_end - 1) : tr("no layers"))
          .arg(st.members.size())
          .arg(plan.microBatchSize())
          .arg(formatMs(compute));
    default: return {};
  }
}

QVariant StageModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) {
    return QAbstractTableModel::headerData(section, orientation, role);
  }
  switch (section) {
    case StageColumn: return tr("Stage");
    case Layers: return tr("Layers");
    case Devices: return tr("Devices (samples per micro-batch)");
    case ComputeMs: return tr("Compute per micro-batch");
    case Memory: return tr("Fullest device");
    default: return {};
  }
}

Qt::ItemFlags StageModel::flags(const QModelIndex& index) const {
  if (!index.isValid()) return Qt::NoItemFlags;
  return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsDropEnabled | Qt::ItemNeverHasChildren;
}

QStringList StageModel::mimeTypes() const { return {kLayersMimeType, kDevicesMimeType}; }

Qt::DropActions StageModel::supportedDropActions() const { return Qt::MoveAction | Qt::CopyAction; }

int StageModel::targetStage(int row, const QModelIndex& parent) const {
  if (parent.isValid()) return parent.model() == this ? parent.row() : -1;
  return row >= 0 && row < rows_ ? row : -1;
}

bool StageModel::canDropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                                 const QModelIndex& parent) const {
  if (!session_ || !session_->hasDocument() || data == nullptr) return false;
  if (action != Qt::MoveAction && action != Qt::CopyAction) return false;
  if (column >= ColumnCount) return false;
  const int stage = targetStage(row, parent);
  if (stage < 0) return false;
  if (data->hasFormat(kLayersMimeType)) {
    const std::vector<int> layers = layersFromMimeData(data);
    return !layers.empty() && PlanEdits::moveLayersToStage(session_->plan(), session_->costModel(), layers, stage).plan;
  }
  if (data->hasFormat(kDevicesMimeType)) {
    const QStringList devices = devicesFromMimeData(data);
    // Each device must exist and be free to join (not the last member of its own stage).
    return !devices.isEmpty() && std::all_of(devices.begin(), devices.end(), [&](const QString& d) {
      const int device = session_->deviceIndex(d);
      return device >= 0 &&
             PlanEdits::addDeviceToStage(session_->plan(), session_->costModel(), device, stage).plan.has_value();
    });
  }
  return false;
}

bool StageModel::dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                              const QModelIndex& parent) {
  if (action == Qt::IgnoreAction) return true;
  if (!canDropMimeData(data, action, row, column, parent)) return false;
  const int stage = targetStage(row, parent);
  if (data->hasFormat(kLayersMimeType)) {
    qCDebug(lcStageModel) << "layers dropped on stage" << stage;
    return session_->moveLayersToStage(layersFromMimeData(data), stage);
  }
  bool all = true;
  for (const QString& device : devicesFromMimeData(data)) all = session_->addDeviceToStage(device, stage) && all;
  return all;
}

}  // namespace stagecraft::gui
