#pragma once

#include <QAbstractTableModel>
#include <QDateTime>
#include <QString>
#include <deque>

namespace stagecraft::gui {

/// The log panel's rows: when, who (the coordinator or a worker's name), how bad, what.
/// Appends at the bottom; past maximumRows() the oldest rows go. Columns are for display,
/// the roles below for filtering (QSortFilterProxyModel::setFilterRole) and for tests.
class LogModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum class Level { Invalid = 0, Info, Warning, Error };
  Q_ENUM(Level)

  enum Column { TimeColumn = 0, SourceColumn, LevelColumn, TextColumn, ColumnCount };

  enum Role {
    LevelRole = Qt::UserRole + 1,  ///< int(Level), in every column
    LevelNameRole,                 ///< "info", "warning", "error" (untranslated), every column
    SourceRole,                    ///< QString
    TextRole,                      ///< QString, the whole message
    TimeRole,                      ///< QDateTime
  };

  static constexpr int kDefaultMaximumRows = 10000;

  explicit LogModel(QObject* parent = nullptr);

  /// Adds a row stamped now (or at `time`), dropping the oldest rows past maximumRows().
  void append(const QString& source, Level level, const QString& text);
  void append(const QDateTime& time, const QString& source, Level level, const QString& text);
  void clear();

  /// At least 1; lowering it drops the oldest rows at once.
  void setMaximumRows(int rows);
  int maximumRows() const { return maximum_rows_; }

  /// "Info", "Warning", "Error" (translated) / "info", "warning", "error".
  static QString levelLabel(Level level);
  static QString levelKey(Level level);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  struct Entry {
    QDateTime time;
    QString source;
    Level level = Level::Info;
    QString text;
  };

  void dropOldest(int count);

  std::deque<Entry> entries_;
  int maximum_rows_ = kDefaultMaximumRows;
};

}  // namespace stagecraft::gui
