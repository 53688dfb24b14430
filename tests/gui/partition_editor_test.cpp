// PartitionEditor: mouse drags on the drawn plan edit it through PlanSession (one undo
// step per drag), an invalid plan shows validation's sentences in a red banner, and the
// read-only mode ignores the mouse. Set STAGECRAFT_SCREENSHOTS=DIR to save PNGs.
#include <QApplication>
#include <QMimeData>
#include <QMouseEvent>
#include <QTest>

#include "editor/memory_bars.h"
#include "editor/partition_editor.h"
#include "editor/plan_compare_view.h"
#include "editor/plan_session.h"
#include "editor/plan_summary.h"
#include "gui_fixtures.h"
#include "model/zoo.h"
#include "models/mime_types.h"

using namespace stagecraft;
using namespace stagecraft::gui;
using namespace stagecraft::gui::testing;

namespace {

/// vgg11 on the shipped jetson-edge cluster, drawn 960 wide and `height` tall (0: the
/// editor's preferred height).
struct EditedPlan {
  explicit EditedPlan(int height = 0) {
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    editor.setSession(&session);
    editor.resize(960, height > 0 ? height : editor.heightForWidth(960));
  }
  PlanSession session;
  PartitionEditor editor;
};

void moveWithLeftButton(QWidget* w, QPoint pos) {
  QMouseEvent move(QEvent::MouseMove, QPointF(pos), QPointF(w->mapToGlobal(pos)), Qt::NoButton, Qt::LeftButton,
                   Qt::NoModifier);
  QApplication::sendEvent(w, &move);
}

/// Press at `from`, move in steps to `to` with the button held, release there.
void drag(QWidget* w, QPoint from, QPoint to) {
  QTest::mousePress(w, Qt::LeftButton, Qt::NoModifier, from);
  for (int i = 1; i <= 8; ++i) moveWithLeftButton(w, from + (to - from) * i / 8);
  QTest::mouseRelease(w, Qt::LeftButton, Qt::NoModifier, to);
}

void screenshot(QWidget* w, const char* name) {
  const QByteArray dir = qgetenv("STAGECRAFT_SCREENSHOTS");
  if (dir.isEmpty()) return;
  const QString path = QString::fromLocal8Bit(dir) + QLatin1Char('/') + QLatin1String(name);
  QVERIFY(w->grab().save(path));
  qInfo() << "saved" << path;
}

}  // namespace

class PartitionEditorTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void drawsOneLanePerStageAsAStaircase() {
    EditedPlan fixture;
    auto& [session, editor] = fixture;
    QVERIFY(session.plan().stageCount() >= 2);
    for (int s = 0; s + 1 < session.plan().stageCount(); ++s) {
      QVERIFY(editor.laneRect(s).bottom() < editor.laneRect(s + 1).top());
      QVERIFY(!editor.boundaryHandleRect(s).isEmpty());
      const Stage& st = session.plan().stages[s];
      // The next stage's first layer starts where this stage's last layer ends.
      QVERIFY(std::abs(editor.layerRect(st.layer_end - 1).right() + 1 - editor.layerRect(st.layer_end).left()) <= 1);
    }
    QVERIFY(editor.bannerText().isEmpty());
    QVERIFY(editor.trayRect().top() > editor.laneRect(session.plan().stageCount() - 1).bottom());
    screenshot(&editor, "partition_editor.png");

    // A deeper pipeline with a shared stage, as a person would build it.
    QVERIFY(session.addStage());
    QVERIFY(session.addStage());
    QVERIFY(session.addDeviceToStage(QStringLiteral("nano-1"), 0));
    editor.resize(960, editor.heightForWidth(960));
    QCOMPARE(editor.laneRect(3).isEmpty(), false);
    screenshot(&editor, "partition_editor_staircase.png");
  }

  void draggingABoundaryHandleMovesTheCutInOneUndoStep() {
    EditedPlan fixture;
    auto& [session, editor] = fixture;
    const Plan& plan = session.plan();
    const int before = plan.stages[0].layer_end;
    const double sps = session.evaluation().samples_per_second;
    const QPoint from = editor.boundaryHandleRect(0).center();
    // Two layers further right on the common axis when stage 1 can give them up, else two
    // layers further left: to the far edge of the layer the cut passes.
    const bool right = plan.stages[1].layer_end - plan.stages[1].layer_begin >= 3;
    QVERIFY(right || plan.stages[0].layer_end - plan.stages[0].layer_begin >= 3);
    const int target = right ? before + 2 : before - 2;
    const QRect passed = editor.layerRect(right ? before + 1 : before - 2);
    const int target_x = right ? passed.right() : passed.left();
    drag(&editor, from, QPoint(target_x, from.y()));
    QCOMPARE(session.plan().stages[0].layer_end, target);
    QCOMPARE(session.plan().stages[1].layer_begin, target);
    QCOMPARE(session.undoStack()->count(), 1);
    QVERIFY(session.evaluation().samples_per_second != sps);
    session.undoStack()->undo();
    QCOMPARE(session.plan().stages[0].layer_end, before);
    QCOMPARE(session.evaluation().samples_per_second, sps);
  }

  void draggingADeviceChipOntoAnotherLaneMovesIt() {
    EditedPlan fixture(800);
    auto& [session, editor] = fixture;
    // A device from the tray (or a shared stage) goes to stage 0, then on to stage 1.
    const auto stage_of = session.plan().stageOfDevice(session.cluster().size());
    QString device;
    for (int d = 0; d < session.cluster().size() && device.isEmpty(); ++d) {
      if (stage_of[d] < 0 || session.plan().stages[stage_of[d]].members.size() > 1) device = session.deviceName(d);
    }
    if (device.isEmpty()) QSKIP("every device is alone in its stage");
    const int from_stage = stage_of[session.deviceIndex(device)];
    const int to_stage = from_stage == 0 ? 1 : 0;
    const QPoint target = editor.laneRect(to_stage).topLeft() + QPoint(editor.laneRect(to_stage).width() / 2, 12);
    drag(&editor, editor.deviceChipRect(device).center(), target);
    QCOMPARE(session.plan().stageOfDevice(session.cluster().size())[session.deviceIndex(device)], to_stage);
    QCOMPARE(session.undoStack()->count(), 1);

    // Then onto the tray: it leaves its group.
    drag(&editor, editor.deviceChipRect(device).center(), editor.trayRect().center());
    QCOMPARE(session.plan().stageOfDevice(session.cluster().size())[session.deviceIndex(device)], -1);
    QCOMPARE(session.undoStack()->count(), 2);
  }

  void draggingALayerOntoTheNeighbourLaneMovesIt() {
    EditedPlan fixture(800);
    auto& [session, editor] = fixture;
    const int first = session.plan().stages[1].layer_begin;
    QVERIFY(session.plan().stages[1].layer_end - first >= 2);
    drag(&editor, editor.layerRect(first).center(), editor.laneRect(0).center());
    QCOMPARE(session.plan().stages[0].layer_end, first + 1);
  }

  void deleteKeyTakesTheSelectedDeviceOutOfItsStage() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    const auto stage_of = session.plan().stageOfDevice(session.cluster().size());
    int unused = -1;
    for (int d = 0; d < session.cluster().size(); ++d) {
      if (stage_of[d] < 0) unused = d;
    }
    if (unused < 0) QVERIFY(session.addStage());
    QVERIFY(session.addDeviceToStage(session.deviceName(unused >= 0 ? unused : 0), 0) || unused < 0);
    PartitionEditor editor;
    editor.setSession(&session);
    editor.resize(960, 800);
    const QString name = session.deviceName(session.plan().stages[0].members.back().device);
    QTest::mouseClick(&editor, Qt::LeftButton, Qt::NoModifier, editor.deviceChipRect(name).center());
    QCOMPARE(editor.selectedDevice(), name);
    QTest::keyClick(&editor, Qt::Key_Delete);
    QCOMPARE(session.plan().stageOfDevice(session.cluster().size())[session.deviceIndex(name)], -1);
  }

  void devicesDroppedFromAnotherViewJoinTheLane() {
    EditedPlan fixture(800);
    auto& [session, editor] = fixture;
    const auto stage_of = session.plan().stageOfDevice(session.cluster().size());
    int unused = -1;
    for (int d = 0; d < session.cluster().size(); ++d) {
      if (stage_of[d] < 0) unused = d;
    }
    if (unused < 0) QSKIP("no unused device");
    std::unique_ptr<QMimeData> data(makeDevicesMimeData({session.deviceName(unused)}));
    const QPoint pos = editor.laneRect(0).center();
    // As a drag from the device list arrives: enter (accepted), move, drop.
    QDragEnterEvent enter(pos, Qt::CopyAction | Qt::MoveAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&editor, &enter);
    QVERIFY(enter.isAccepted());
    QDragMoveEvent move(pos, Qt::CopyAction | Qt::MoveAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&editor, &move);
    QVERIFY(move.isAccepted());
    QDropEvent drop(QPointF(pos), Qt::CopyAction | Qt::MoveAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&editor, &drop);
    QCOMPARE(session.plan().stageOfDevice(session.cluster().size())[unused], 0);
  }

  void anInvalidPlanShowsTheBannerNamingTheDevice() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), bigAndTiny());
    Plan plan = session.plan();
    plan.stages = {Stage{0, session.model().layerCount(), {DeviceShare{1, plan.microBatchSize()}}}};
    QVERIFY(session.replacePlan(plan));
    PartitionEditor editor;
    editor.setSession(&session);
    editor.resize(900, editor.heightForWidth(900));
    QVERIFY2(editor.bannerText().contains(QStringLiteral("'tiny'")), qPrintable(editor.bannerText()));
    QVERIFY(!editor.laneRect(0).isEmpty());
    QVERIFY(editor.laneRect(0).top() > 20);  // below the banner
    PlanSummary summary;
    summary.setSession(&session);
    QVERIFY(summary.problemText().contains(QStringLiteral("tiny")));
    screenshot(&editor, "partition_editor_invalid.png");
  }

  void readOnlyIgnoresDrags() {
    EditedPlan fixture(800);
    auto& [session, editor] = fixture;
    editor.setReadOnly(true);
    const QPoint from = editor.boundaryHandleRect(0).center();
    drag(&editor, from, from + QPoint(120, 0));
    QCOMPARE(session.undoStack()->count(), 0);
  }

  void summaryMemoryBarsAndCompareViewFollowTheSession() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    PlanSummary summary;
    summary.setSession(&session);
    QCOMPARE(summary.samplesPerSecondText(), QString::number(session.evaluation().samples_per_second, 'f', 1));
    QVERIFY(summary.problemText().isEmpty());
    QVERIFY(summary.deltaText().isEmpty());
    QVERIFY(session.moveBoundary(0, session.plan().stages[0].layer_end + 1));
    QVERIFY2(summary.deltaText().endsWith(QStringLiteral(" %")), qPrintable(summary.deltaText()));
    session.undoStack()->undo();
    MemoryBars bars;
    bars.setSession(&session);
    bars.resize(bars.sizeHint());
    QVERIFY(bars.sizeHint().height() >= 7 * 20);
    screenshot(&summary, "plan_summary.png");
    screenshot(&bars, "memory_bars.png");

    const Plan current = session.plan();
    QVERIFY(session.removeStage(session.plan().stageCount() - 1));
    PlanCompareView view(session.model(), session.cluster(), session.plan(), current);
    view.resize(1400, 560);
    QVERIFY(view.gainText().endsWith(QStringLiteral("% samples/s")));
    QVERIFY(view.currentEditor()->isReadOnly());
    screenshot(&view, "plan_compare_view.png");
  }
};

QTEST_MAIN(PartitionEditorTest)
#include "partition_editor_test.moc"
