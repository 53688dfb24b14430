#include "live/log_panel.h"

#include <algorithm>

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QLoggingCategory>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollBar>
#include <QSortFilterProxyModel>
#include <QStyle>
#include <QTableView>
#include <QVBoxLayout>

namespace stagecraft::gui {

namespace {
Q_LOGGING_CATEGORY(lcLogPanel, "stagecraft.gui.logpanel")
}  // namespace

LogPanel::LogPanel(LogModel* model, QWidget* parent)
    : QWidget(parent),
      model_(model),
      level_filter_(new QSortFilterProxyModel(this)),
      text_filter_(new QSortFilterProxyModel(this)),
      view_(new QTableView(this)),
      level_combo_(new QComboBox(this)),
      text_edit_(new QLineEdit(this)) {
  Q_ASSERT(model_ != nullptr);
  // Two stock proxies in a row: level first (on the untranslated level key), then text.
  level_filter_->setSourceModel(model_);
  level_filter_->setFilterRole(LogModel::LevelNameRole);
  text_filter_->setSourceModel(level_filter_);
  text_filter_->setFilterKeyColumn(-1);
  text_filter_->setFilterCaseSensitivity(Qt::CaseInsensitive);

  level_combo_->addItem(tr("All Levels"), static_cast<int>(LogModel::Level::Info));
  level_combo_->addItem(tr("Warnings and Errors"), static_cast<int>(LogModel::Level::Warning));
  level_combo_->addItem(tr("Errors Only"), static_cast<int>(LogModel::Level::Error));
  level_combo_->setToolTip(tr("Show messages of this level and worse"));
  connect(level_combo_, &QComboBox::currentIndexChanged, this, [this] { applyLevelFilter(); });

  text_edit_->setPlaceholderText(tr("Filter messages"));
  text_edit_->setClearButtonEnabled(true);
  connect(text_edit_, &QLineEdit::textChanged, text_filter_, &QSortFilterProxyModel::setFilterFixedString);

  auto* clear = new QPushButton(tr("Clear"), this);
  clear->setToolTip(tr("Remove every message"));
  connect(clear, &QPushButton::clicked, model_, &LogModel::clear);

  view_->setModel(text_filter_);
  view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  view_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  view_->setWordWrap(false);
  view_->setAlternatingRowColors(true);
  view_->verticalHeader()->setVisible(false);
  view_->verticalHeader()->setDefaultSectionSize(view_->fontMetrics().height() + 6);
  view_->horizontalHeader()->setStretchLastSection(true);
  view_->horizontalHeader()->setSectionResizeMode(LogModel::TimeColumn, QHeaderView::ResizeToContents);
  // Wide enough for the longest level name (in this language) whatever rows are in view:
  // sizing to the visible rows cut "Warning" short once the first rows were all "Info".
  int level_width = view_->horizontalHeader()->fontMetrics().horizontalAdvance(
      view_->model()->headerData(LogModel::LevelColumn, Qt::Horizontal).toString());
  for (const auto level : {LogModel::Level::Info, LogModel::Level::Warning, LogModel::Level::Error}) {
    level_width = std::max(level_width, view_->fontMetrics().horizontalAdvance(LogModel::levelLabel(level)));
  }
  view_->horizontalHeader()->setSectionResizeMode(LogModel::LevelColumn, QHeaderView::Interactive);
  // ...plus the level's icon and the cell's margins.
  view_->setColumnWidth(LogModel::LevelColumn, level_width + view_->style()->pixelMetric(QStyle::PM_SmallIconSize) + 24);
  view_->setColumnWidth(LogModel::SourceColumn, 140);

  // Follow the newest row while the scroll bar sits at the bottom; a user who scrolls
  // up stops following until back at the bottom.
  QScrollBar* bar = view_->verticalScrollBar();
  connect(bar, &QScrollBar::valueChanged, this, [this, bar](int value) {
    follow_newest_ = value >= bar->maximum();
  });
  connect(bar, &QScrollBar::rangeChanged, this, [this, bar](int, int maximum) {
    if (follow_newest_) bar->setValue(maximum);
  });

  auto* tools = new QHBoxLayout;
  tools->setContentsMargins(0, 0, 0, 0);
  tools->addWidget(new QLabel(tr("Level:"), this));
  tools->addWidget(level_combo_);
  tools->addWidget(text_edit_, 1);
  tools->addWidget(clear);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(tools);
  layout->addWidget(view_, 1);
  applyLevelFilter();
}

LogPanel::~LogPanel() {
  // ~QWidget closes the window, and hiding the view resizes its scroll bar's range: by then
  // this is only a QWidget, so the follow-the-newest slots must be gone first (UBSan's vptr
  // check caught them reading a destroyed LogPanel).
  disconnect(view_->verticalScrollBar(), nullptr, this, nullptr);
}

QAbstractItemModel* LogPanel::filteredModel() const { return text_filter_; }

void LogPanel::setMinimumLevel(LogModel::Level level) {
  const int index = level_combo_->findData(static_cast<int>(level));
  if (index < 0) {
    qCWarning(lcLogPanel) << "no filter for level" << level;
    return;
  }
  level_combo_->setCurrentIndex(index);
}

LogModel::Level LogPanel::minimumLevel() const {
  return static_cast<LogModel::Level>(level_combo_->currentData().toInt());
}

void LogPanel::setTextFilter(const QString& text) { text_edit_->setText(text); }

void LogPanel::applyLevelFilter() {
  QStringList keys;
  for (LogModel::Level level : {LogModel::Level::Info, LogModel::Level::Warning, LogModel::Level::Error}) {
    if (level >= minimumLevel()) keys << LogModel::levelKey(level);
  }
  level_filter_->setFilterRegularExpression(
      QRegularExpression(QStringLiteral("^(%1)$").arg(keys.join(QLatin1Char('|')))));
}

}  // namespace stagecraft::gui
