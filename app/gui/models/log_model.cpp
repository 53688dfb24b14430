#include "models/log_model.h"

#include <QApplication>
#include <QColor>
#include <QIcon>
#include <QLoggingCategory>
#include <QStyle>

#include <algorithm>

namespace stagecraft::gui {

namespace {
Q_LOGGING_CATEGORY(lcLogModel, "stagecraft.gui.logmodel")

QIcon levelIcon(LogModel::Level level) {
  // The style's icons need a QApplication; a model used under QGuiApplication has none.
  auto* app = qobject_cast<QApplication*>(QCoreApplication::instance());
  if (app == nullptr) return {};
  switch (level) {
    case LogModel::Level::Info:
      return QApplication::style()->standardIcon(QStyle::SP_MessageBoxInformation);
    case LogModel::Level::Warning:
      return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
    case LogModel::Level::Error:
      return QApplication::style()->standardIcon(QStyle::SP_MessageBoxCritical);
    case LogModel::Level::Invalid:
      break;
  }
  return {};
}

QVariant levelForeground(LogModel::Level level) {
  switch (level) {
    case LogModel::Level::Warning:
      return QColor(0xb3, 0x5c, 0x00);
    case LogModel::Level::Error:
      return QColor(0xc6, 0x28, 0x28);
    default:
      return {};
  }
}
}  // namespace

LogModel::LogModel(QObject* parent) : QAbstractTableModel(parent) {}

QString LogModel::levelLabel(Level level) {
  switch (level) {
    case Level::Info:
      return tr("Info");
    case Level::Warning:
      return tr("Warning");
    case Level::Error:
      return tr("Error");
    case Level::Invalid:
      break;
  }
  return tr("Unknown");
}

QString LogModel::levelKey(Level level) {
  switch (level) {
    case Level::Info:
      return QStringLiteral("info");
    case Level::Warning:
      return QStringLiteral("warning");
    case Level::Error:
      return QStringLiteral("error");
    case Level::Invalid:
      break;
  }
  return QStringLiteral("invalid");
}

void LogModel::append(const QString& source, Level level, const QString& text) {
  append(QDateTime::currentDateTime(), source, level, text);
}

void LogModel::append(const QDateTime& time, const QString& source, Level level, const QString& text) {
  if (level == Level::Invalid) {
    qCWarning(lcLogModel) << "log entry without a level from" << source << "taken as info";
    level = Level::Info;
  }
  // Make room first so the view never holds more than maximumRows() rows.
  dropOldest(static_cast<int>(entries_.size()) + 1 - maximum_rows_);
  const int row = static_cast<int>(entries_.size());
  beginInsertRows({}, row, row);
  entries_.push_back({time, source, level, text});
  endInsertRows();
}

void LogModel::dropOldest(int count) {
  count = std::min(count, static_cast<int>(entries_.size()));
  if (count <= 0) return;
  beginRemoveRows({}, 0, count - 1);
  entries_.erase(entries_.begin(), entries_.begin() + count);
  endRemoveRows();
}

void LogModel::clear() {
  if (entries_.empty()) return;
  beginResetModel();
  entries_.clear();
  endResetModel();
}

void LogModel::setMaximumRows(int rows) {
  maximum_rows_ = std::max(1, rows);
  dropOldest(static_cast<int>(entries_.size()) - maximum_rows_);
}

int LogModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(entries_.size());
}

int LogModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant LogModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const Entry& entry = entries_[static_cast<std::size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case TimeColumn:
          return entry.time.toString(QStringLiteral("HH:mm:ss.zzz"));
        case SourceColumn:
          return entry.source;
        case LevelColumn:
          return levelLabel(entry.level);
        case TextColumn:
          // One line per row; the tooltip shows the rest.
          return entry.text.section(QLatin1Char('\n'), 0, 0);
        default:
          return {};
      }
    case Qt::ToolTipRole:
      return index.column() == TimeColumn ? entry.time.toString(Qt::ISODateWithMs) : entry.text;
    case Qt::DecorationRole:
      return index.column() == LevelColumn ? QVariant(levelIcon(entry.level)) : QVariant();
    case Qt::ForegroundRole:
      return levelForeground(entry.level);
    case LevelRole:
      return static_cast<int>(entry.level);
    case LevelNameRole:
      return levelKey(entry.level);
    case SourceRole:
      return entry.source;
    case TextRole:
      return entry.text;
    case TimeRole:
      return entry.time;
    default:
      return {};
  }
}

QVariant LogModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case TimeColumn:
      return tr("Time");
    case SourceColumn:
      return tr("Source");
    case LevelColumn:
      return tr("Level");
    case TextColumn:
      return tr("Message");
    default:
      return {};
  }
}

}  // namespace stagecraft::gui
