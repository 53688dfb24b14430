// LogPanel: level and text filters over the model, Clear, and following the newest row
// unless the user scrolled up.
#include <QPushButton>
#include <QScrollBar>
#include <QTableView>
#include <QtTest>

#include "live/log_panel.h"

using stagecraft::gui::LogModel;
using stagecraft::gui::LogPanel;

class LogPanelTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void levelAndTextFiltersCombine() {
    LogModel model;
    LogPanel panel(&model);
    model.append(QStringLiteral("coordinator"), LogModel::Level::Info, QStringLiteral("plan deployed"));
    model.append(QStringLiteral("nx-1"), LogModel::Level::Warning, QStringLiteral("slow step"));
    model.append(QStringLiteral("nano-2"), LogModel::Level::Error, QStringLiteral("out of memory"));
    model.append(QStringLiteral("nano-3"), LogModel::Level::Error, QStringLiteral("lost heartbeat"));
    QCOMPARE(panel.filteredModel()->rowCount(), 4);
    panel.setMinimumLevel(LogModel::Level::Warning);
    QCOMPARE(panel.filteredModel()->rowCount(), 3);
    panel.setMinimumLevel(LogModel::Level::Error);
    QCOMPARE(panel.filteredModel()->rowCount(), 2);
    panel.setTextFilter(QStringLiteral("MEMORY"));
    QCOMPARE(panel.filteredModel()->rowCount(), 1);
    QCOMPARE(panel.filteredModel()->index(0, LogModel::SourceColumn).data().toString(), QStringLiteral("nano-2"));
    panel.setMinimumLevel(LogModel::Level::Info);
    panel.setTextFilter(QStringLiteral("nx-1"));  // the source column matches too
    QCOMPARE(panel.filteredModel()->rowCount(), 1);
  }

  void clearButtonEmptiesTheModel() {
    LogModel model;
    LogPanel panel(&model);
    model.append(QStringLiteral("w"), LogModel::Level::Info, QStringLiteral("a"));
    auto* clear = panel.findChild<QPushButton*>();
    QVERIFY(clear != nullptr);
    clear->click();
    QCOMPARE(model.rowCount(), 0);
  }

  void followsTheNewestRowUntilTheUserScrollsUp() {
    LogModel model;
    LogPanel panel(&model);
    panel.resize(600, 200);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    QScrollBar* bar = panel.view()->verticalScrollBar();
    for (int i = 0; i < 100; ++i) model.append(QStringLiteral("w"), LogModel::Level::Info, QString::number(i));
    QTRY_VERIFY(bar->maximum() > 0);
    QTRY_COMPARE(bar->value(), bar->maximum());
    QVERIFY(panel.followsNewest());

    bar->setValue(0);  // the user scrolls up to read
    QVERIFY(!panel.followsNewest());
    for (int i = 0; i < 20; ++i) model.append(QStringLiteral("w"), LogModel::Level::Info, QString::number(i));
    QTest::qWait(50);
    QCOMPARE(bar->value(), 0);

    bar->setValue(bar->maximum());  // back at the bottom: follows again
    QVERIFY(panel.followsNewest());
    for (int i = 0; i < 20; ++i) model.append(QStringLiteral("w"), LogModel::Level::Info, QString::number(i));
    QTRY_COMPARE(bar->value(), bar->maximum());
  }
};

QTEST_MAIN(LogPanelTest)
#include "log_panel_test.moc"
