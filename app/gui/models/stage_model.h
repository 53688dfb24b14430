#pragma once

#include <QAbstractTableModel>
#include <QPointer>

namespace stagecraft::gui {

class PlanSession;

/// One row per stage of the session's plan: its layers, its device group with shares,
/// the compute time of its slowest member and the memory of its fullest member. A drop
/// target: layers (kLayersMimeType) of a neighbouring stage join the stage the drop lands
/// on; devices (kDevicesMimeType) join its group. Every drop is a PlanSession edit.
class StageModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { StageColumn = 0, Layers, Devices, ComputeMs, Memory, ColumnCount };
  /// Raw values for sorting: stage, first layer, member count, ms, bytes.
  static constexpr int kRawRole = Qt::UserRole;

  explicit StageModel(PlanSession* session, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QStringList mimeTypes() const override;
  Qt::DropActions supportedDropActions() const override;
  bool canDropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                       const QModelIndex& parent) const override;
  bool dropMimeData(const QMimeData* data, Qt::DropAction action, int row, int column,
                    const QModelIndex& parent) override;

 private:
  /// The stage a drop at (row, parent) lands on, or -1.
  int targetStage(int row, const QModelIndex& parent) const;
  void reset();

  QPointer<PlanSession> session_;
  int rows_ = 0;
};

}  // namespace stagecraft::gui
