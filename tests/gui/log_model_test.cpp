// LogModel: rows appended at the bottom, capped by dropping the oldest, cleared; roles
// for filtering. QAbstractItemModelTester watches every change.
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QtTest>

#include "models/log_model.h"

using stagecraft::gui::LogModel;

class LogModelTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void appendAddsARowAtTheBottomWithItsRoles() {
    LogModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
    const QDateTime when(QDate(2026, 11, 30), QTime(10, 20, 30, 456));
    model.append(when, QStringLiteral("coordinator"), LogModel::Level::Info, QStringLiteral("deployed"));
    model.append(QStringLiteral("nx-1"), LogModel::Level::Error, QStringLiteral("lost heartbeat\nafter 3 s"));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(model.columnCount(), 4);
    QCOMPARE(inserted.count(), 2);
    QCOMPARE(inserted[1][1].toInt(), 1);
    QCOMPARE(inserted[1][2].toInt(), 1);

    QCOMPARE(model.index(0, LogModel::TimeColumn).data().toString(), QStringLiteral("10:20:30.456"));
    QCOMPARE(model.index(0, LogModel::SourceColumn).data().toString(), QStringLiteral("coordinator"));
    QCOMPARE(model.index(1, LogModel::LevelColumn).data().toString(), QStringLiteral("Error"));
    // One line per row; the whole text in the tooltip and TextRole.
    QCOMPARE(model.index(1, LogModel::TextColumn).data().toString(), QStringLiteral("lost heartbeat"));
    QCOMPARE(model.index(1, LogModel::TextColumn).data(Qt::ToolTipRole).toString(),
             QStringLiteral("lost heartbeat\nafter 3 s"));
    QCOMPARE(model.index(1, 0).data(LogModel::LevelRole).toInt(), static_cast<int>(LogModel::Level::Error));
    QCOMPARE(model.index(1, 2).data(LogModel::LevelNameRole).toString(), QStringLiteral("error"));
    QCOMPARE(model.index(1, 0).data(LogModel::SourceRole).toString(), QStringLiteral("nx-1"));
    QCOMPARE(model.index(0, 3).data(LogModel::TimeRole).toDateTime(), when);
    QVERIFY(model.index(1, 0).data(Qt::ForegroundRole).value<QColor>().isValid());
    QVERIFY(!model.index(1, LogModel::LevelColumn).data(Qt::DecorationRole).value<QIcon>().isNull());
    QCOMPARE(model.headerData(LogModel::TextColumn, Qt::Horizontal).toString(), QStringLiteral("Message"));
  }

  void appendPastTheCapRemovesTheOldestRows() {
    LogModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setMaximumRows(3);
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    for (int i = 0; i < 5; ++i) {
      model.append(QStringLiteral("w"), LogModel::Level::Info, QStringLiteral("m%1").arg(i));
    }
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(removed.count(), 2);
    QCOMPARE(removed[0][1].toInt(), 0);
    QCOMPARE(removed[0][2].toInt(), 0);
    QCOMPARE(model.index(0, LogModel::TextColumn).data().toString(), QStringLiteral("m2"));
    QCOMPARE(model.index(2, LogModel::TextColumn).data().toString(), QStringLiteral("m4"));
  }

  void loweringTheCapDropsTheOldestAtOnce() {
    LogModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (int i = 0; i < 10; ++i) model.append(QStringLiteral("w"), LogModel::Level::Warning, QString::number(i));
    QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
    model.setMaximumRows(4);
    QCOMPARE(removed.count(), 1);
    QCOMPARE(removed[0][2].toInt(), 5);
    QCOMPARE(model.rowCount(), 4);
    QCOMPARE(model.index(0, LogModel::TextColumn).data().toString(), QStringLiteral("6"));
    model.setMaximumRows(0);
    QCOMPARE(model.maximumRows(), 1);
    QCOMPARE(model.rowCount(), 1);
  }

  void clearEmptiesWithAReset() {
    LogModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.append(QStringLiteral("w"), LogModel::Level::Info, QStringLiteral("a"));
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    model.clear();
    QCOMPARE(model.rowCount(), 0);
    QCOMPARE(reset.count(), 1);
    model.clear();  // already empty: no needless reset
    QCOMPARE(reset.count(), 1);
    model.append(QStringLiteral("w"), LogModel::Level::Info, QStringLiteral("b"));
    QCOMPARE(model.rowCount(), 1);
  }

  void invalidLevelIsTakenAsInfo() {
    LogModel model;
    model.append(QStringLiteral("w"), LogModel::Level::Invalid, QStringLiteral("?"));
    QCOMPARE(model.index(0, 0).data(LogModel::LevelRole).toInt(), static_cast<int>(LogModel::Level::Info));
  }
};

QTEST_MAIN(LogModelTest)
#include "log_model_test.moc"
