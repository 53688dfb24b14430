#pragma once

#include <QAbstractTableModel>
#include <QPointer>

namespace stagecraft::gui {

class PlanSession;

/// One row per layer of the session's model: what it computes, what it costs and which
/// stage holds it. Rows drag as kLayersMimeType (Move) onto stages. DisplayRole is
/// formatted text; EditRole and kRawRole give raw numbers for sorting.
class LayerTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Index = 0, Name, Kind, OutputShape, ForwardFlops, Parameters, Activation, StageColumn, ColumnCount };
  /// The raw value of a cell (int, double or QString), for sorting proxies.
  static constexpr int kRawRole = Qt::UserRole;

  explicit LayerTableModel(PlanSession* session, QObject* parent = nullptr);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QStringList mimeTypes() const override;
  /// The layers of `indexes`' rows, ascending, as kLayersMimeType.
  QMimeData* mimeData(const QModelIndexList& indexes) const override;
  Qt::DropActions supportedDragActions() const override;

 private:
  void reset();
  void refreshStages();

  QPointer<PlanSession> session_;
  int rows_ = 0;
};

}  // namespace stagecraft::gui
