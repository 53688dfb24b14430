// StageModel: one row per stage, and a drop target for layers and devices that edits
// the plan through PlanSession (one undo step per drop).
#include <QAbstractItemModelTester>
#include <QMimeData>
#include <QTest>
#include <memory>

#include "editor/plan_session.h"
#include "model/zoo.h"
#include "models/mime_types.h"
#include "models/stage_model.h"

using namespace stagecraft;
using namespace stagecraft::gui;

class StageModelTest : public QObject {
  Q_OBJECT

 private:
  static void open(PlanSession& session, const char* model) {
    session.setDocument(ModelSpec::fromProto(zooModel(model)),
                        Cluster::load(std::string(STAGECRAFT_TEST_CLUSTERS) + "/jetson-edge.json"));
  }

 private Q_SLOTS:
  void passesTheModelTesterThroughEdits() {
    PlanSession session;
    StageModel model(&session);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    open(session, "vgg11");
    QCOMPARE(model.rowCount(), session.plan().stageCount());
    session.addStage();
    QCOMPARE(model.rowCount(), session.plan().stageCount());
    QVERIFY(session.removeStage(0));
    QCOMPARE(model.rowCount(), session.plan().stageCount());
    session.undoStack()->undo();
    QCOMPARE(model.rowCount(), session.plan().stageCount());
  }

  void describesEachStage() {
    PlanSession session;
    open(session, "vgg11");
    StageModel model(&session);
    const Stage& st = session.plan().stages[0];
    const QString devices = model.data(model.index(0, StageModel::Devices)).toString();
    QVERIFY2(devices.contains(session.deviceName(st.members[0].device) + QStringLiteral(" ×")), qPrintable(devices));
    QVERIFY(model.data(model.index(0, StageModel::Layers)).toString().startsWith(QStringLiteral("0–")));
    QVERIFY(model.data(model.index(0, StageModel::ComputeMs), Qt::EditRole).toDouble() > 0);
    QVERIFY(model.data(model.index(0, StageModel::Memory)).toString().contains(QStringLiteral(" of ")));
  }

  void aDeviceDroppedOnAStageJoinsItsGroup() {
    PlanSession session;
    open(session, "vgg11");
    StageModel model(&session);
    const int last = session.plan().stageCount() - 1;
    // Pick a device of another stage that is not alone there, or an unused one.
    const auto stage_of = session.plan().stageOfDevice(session.cluster().size());
    QString moving;
    for (int d = 0; d < session.cluster().size() && moving.isEmpty(); ++d) {
      if (stage_of[d] == last) continue;
      if (stage_of[d] < 0 || session.plan().stages[stage_of[d]].members.size() > 1) moving = session.deviceName(d);
    }
    if (moving.isEmpty()) QSKIP("every device is alone in its stage");
    std::unique_ptr<QMimeData> data(makeDevicesMimeData({moving}));
    QVERIFY(model.canDropMimeData(data.get(), Qt::MoveAction, -1, 0, model.index(last, 0)));
    const int steps = session.undoStack()->count();
    QVERIFY(model.dropMimeData(data.get(), Qt::MoveAction, -1, 0, model.index(last, 0)));
    QCOMPARE(session.plan().stageOfDevice(session.cluster().size())[session.deviceIndex(moving)], last);
    QCOMPARE(session.undoStack()->count(), steps + 1);
    QVERIFY(model.data(model.index(last, StageModel::Devices)).toString().contains(moving));
  }

  void refusesForeignDataUnknownDevicesAndBadTargets() {
    PlanSession session;
    open(session, "vgg11");
    StageModel model(&session);
    QMimeData text;
    text.setText(QStringLiteral("nx-1"));
    QVERIFY(!model.canDropMimeData(&text, Qt::MoveAction, -1, 0, model.index(0, 0)));
    QVERIFY(!model.dropMimeData(&text, Qt::MoveAction, -1, 0, model.index(0, 0)));
    std::unique_ptr<QMimeData> unknown(makeDevicesMimeData({QStringLiteral("no-such-board")}));
    QVERIFY(!model.canDropMimeData(unknown.get(), Qt::MoveAction, -1, 0, model.index(0, 0)));
    std::unique_ptr<QMimeData> device(makeDevicesMimeData({QStringLiteral("nano-3")}));
    QVERIFY(!model.canDropMimeData(device.get(), Qt::MoveAction, -1, 0, QModelIndex()));  // no stage
    QVERIFY(!model.canDropMimeData(device.get(), Qt::LinkAction, -1, 0, model.index(0, 0)));
    QVERIFY(!model.canDropMimeData(device.get(), Qt::MoveAction, -1, StageModel::ColumnCount, model.index(0, 0)));
    QCOMPARE(session.undoStack()->count(), 0);
  }
};

QTEST_MAIN(StageModelTest)
#include "stage_model_test.moc"
