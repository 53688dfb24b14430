// CompareModel: one row per core planner, filled off the GUI thread by PlanSession::compare().
#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

#include "editor/plan_session.h"
#include "model/zoo.h"
#include "models/compare_model.h"

using namespace stagecraft;
using namespace stagecraft::gui;

class CompareModelTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void fillsOneRowPerPlannerWithTheBestAtOne() {
    PlanSession session;
    session.setDocument(ModelSpec::fromProto(zooModel("mlp")),
                        Cluster::load(std::string(STAGECRAFT_TEST_CLUSTERS) + "/jetson-edge.json"));
    CompareModel model(&session);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    session.compare();
    QTRY_COMPARE_WITH_TIMEOUT(reset.count(), 1, 120000);
    QCOMPARE(model.rowCount(), static_cast<int>(plannerNames().size()));
    double best_ratio = 0;
    for (int r = 0; r < model.rowCount(); ++r) {
      const bool feasible = model.data(model.index(r, CompareModel::Feasible), Qt::EditRole).toBool();
      if (!feasible) {
        QVERIFY(!model.data(model.index(r, CompareModel::Note)).toString().isEmpty());
        continue;
      }
      QVERIFY(model.data(model.index(r, CompareModel::SamplesPerSecond), Qt::EditRole).toDouble() > 0);
      best_ratio = std::max(best_ratio, model.data(model.index(r, CompareModel::RatioToBest), Qt::EditRole).toDouble());
    }
    QCOMPARE(best_ratio, 1.0);
    QCOMPARE(model.data(model.index(0, CompareModel::Planner)).toString(), QString::fromStdString(plannerNames()[0]));
  }

  void aPlannerWithoutAPlanShowsItsReason() {
    CompareModel model(nullptr);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    PlannerComparison row;
    row.planner = QStringLiteral("exhaustive");
    row.reason = QStringLiteral("too many devices to enumerate");
    model.setRows({row});
    QCOMPARE(model.data(model.index(0, CompareModel::Note)).toString(), row.reason);
    QCOMPARE(model.data(model.index(0, CompareModel::SamplesPerSecond)).toString(), QString());
  }
};

QTEST_MAIN(CompareModelTest)
#include "compare_model_test.moc"
