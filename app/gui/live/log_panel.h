#pragma once

#include <QWidget>

#include "models/log_model.h"

class QComboBox;
class QLineEdit;
class QSortFilterProxyModel;
class QTableView;

namespace stagecraft::gui {

/// The log below the charts: a table of a LogModel with a minimum-level filter, a text
/// filter (any column, case-insensitive) and "Clear". Keeps the newest row in view unless
/// the user scrolled up; scrolling back to the bottom resumes following.
class LogPanel : public QWidget {
  Q_OBJECT

 public:
  /// `model` is not owned (the main window shares it with the controller).
  explicit LogPanel(LogModel* model, QWidget* parent = nullptr);
  ~LogPanel() override;

  LogModel* model() const { return model_; }
  /// The rows shown, after both filters.
  QAbstractItemModel* filteredModel() const;
  QTableView* view() const { return view_; }

  /// Shows rows of `level` and worse (Info shows all).
  void setMinimumLevel(LogModel::Level level);
  LogModel::Level minimumLevel() const;
  void setTextFilter(const QString& text);
  /// True while new rows scroll into view.
  bool followsNewest() const { return follow_newest_; }

 private:
  void applyLevelFilter();

  LogModel* model_;
  QSortFilterProxyModel* level_filter_;
  QSortFilterProxyModel* text_filter_;
  QTableView* view_;
  QComboBox* level_combo_;
  QLineEdit* text_edit_;
  bool follow_newest_ = true;
};

}  // namespace stagecraft::gui
