#pragma once

#include <QAbstractTableModel>
#include <QPointer>
#include <vector>

#include "editor/plan_session.h"

namespace stagecraft::gui {

/// The Compare view: one row per core planner with its simulated plan, or the reason it
/// has none. Filled from PlanSession::compare() (run off the GUI thread).
class CompareModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  // The figures people compare first come first: a narrow dock shows them without a scroll.
  enum Column { Planner = 0, SamplesPerSecond, RatioToBest, IterationMs, Stages, Microbatches, Bubble, Feasible,
                PlanTime, Note, ColumnCount };
  static constexpr int kRawRole = Qt::UserRole;

  /// Follows `session`'s comparisonFinished; `session` may be null (setRows only).
  explicit CompareModel(PlanSession* session, QObject* parent = nullptr);

  void setRows(std::vector<PlannerComparison> rows);
  const std::vector<PlannerComparison>& rows() const { return rows_; }
  /// The row's plan, when it has one (for "apply this plan").
  const PlannerComparison* row(int index) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;

 private:
  QPointer<PlanSession> session_;
  std::vector<PlannerComparison> rows_;
  double best_ = 0;
};

}  // namespace stagecraft::gui
