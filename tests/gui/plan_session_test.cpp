// PlanSession: edits re-evaluate at once, undo/redo restore exact figures, invalid edits
// explain themselves, plan files round-trip, auto-plan runs off the GUI thread.
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "editor/plan_edits.h"
#include "editor/plan_session.h"
#include "gui_fixtures.h"
#include "model/zoo.h"

using namespace stagecraft;
using namespace stagecraft::gui;
using namespace stagecraft::gui::testing;

class PlanSessionTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void setDocumentGivesAValidAutoPlan() {
    PlanSession session;
    QSignalSpy evaluated(&session, &PlanSession::evaluated);
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    QVERIFY(evaluated.count() >= 1);
    QVERIFY2(session.evaluation().valid, qPrintable(session.evaluation().problems.join('\n')));
    QVERIFY(session.evaluation().samples_per_second > 0);
    QCOMPARE(session.undoStack()->count(), 0);
  }

  void boundaryEditChangesThroughputAndUndoRedoRestoreIt() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    QVERIFY(session.plan().stageCount() >= 2);
    const Plan before = session.plan();
    const double sps_before = session.evaluation().samples_per_second;
    const double iteration_before = session.evaluation().iteration_ms;
    const double bubble_before = session.evaluation().bubble_fraction;
    const std::vector<double> memory_before = session.evaluation().memory_bytes;
    const Stage& s0 = before.stages[0];
    const int layer = s0.layer_end - s0.layer_begin >= 2 ? s0.layer_end - 1 : s0.layer_end + 1;
    QVERIFY(session.moveBoundary(0, layer));
    QCOMPARE(session.undoStack()->count(), 1);
    const Plan after = session.plan();
    const double sps_after = session.evaluation().samples_per_second;
    QCOMPARE(after.stages[0].layer_end, layer);
    QVERIFY(sps_after != sps_before);

    session.undoStack()->undo();
    QVERIFY(samePlan(session.plan(), before));
    QCOMPARE(session.evaluation().samples_per_second, sps_before);
    QCOMPARE(session.evaluation().iteration_ms, iteration_before);
    QCOMPARE(session.evaluation().bubble_fraction, bubble_before);
    QCOMPARE(session.evaluation().memory_bytes, memory_before);
    session.undoStack()->redo();
    QVERIFY(samePlan(session.plan(), after));
    QCOMPARE(session.evaluation().samples_per_second, sps_after);
  }

  void dragStepsOfOneGestureMergeIntoOneUndoStep() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    const Plan before = session.plan();
    const int end = before.stages[0].layer_end;
    // Two steps the same way, towards whichever neighbour has layers to spare.
    const int step = before.stages[1].layer_end - before.stages[1].layer_begin >= 3 ? 1 : -1;
    QVERIFY(session.moveBoundary(0, end + step, 7));
    QVERIFY(session.moveBoundary(0, end + 2 * step, 7));
    QCOMPARE(session.undoStack()->count(), 1);
    QCOMPARE(session.plan().stages[0].layer_end, end + 2 * step);
    session.undoStack()->undo();
    QVERIFY(samePlan(session.plan(), before));
  }

  void structurallyImpossibleEditsAreRefused() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    QSignalSpy refused(&session, &PlanSession::editRefused);
    const Plan before = session.plan();
    QVERIFY(!session.moveBoundary(0, before.stages[0].layer_begin));  // stage 0 would be empty
    QVERIFY(!session.setMicrobatches(7));                             // 64 does not divide by 7
    QCOMPARE(refused.count(), 2);
    QVERIFY(!session.lastError().isEmpty());
    QVERIFY(samePlan(session.plan(), before));
    QCOMPARE(session.undoStack()->count(), 0);
  }

  void overloadedDeviceMakesThePlanInvalidAndIsNamed() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), bigAndTiny());
    Plan all_on_tiny = session.plan();
    all_on_tiny.stages = {Stage{0, session.model().layerCount(), {DeviceShare{1, all_on_tiny.microBatchSize()}}}};
    QVERIFY(session.replacePlan(all_on_tiny));
    const PlanEvaluation& ev = session.evaluation();
    QVERIFY(!ev.valid);
    QVERIFY(!ev.problems.isEmpty());
    QVERIFY2(ev.problems.join('\n').contains(QStringLiteral("tiny")), qPrintable(ev.problems.join('\n')));
    QVERIFY(ev.device_over_memory[1]);
    QVERIFY(ev.stage_has_problem[0]);
    QCOMPARE(ev.samples_per_second, 0.0);
  }

  void deviceAndStageEdits() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    const int stages = session.plan().stageCount();
    QVERIFY(session.addStage() || session.plan().stageCount() == stages);
    const int now = session.plan().stageCount();
    QVERIFY(session.removeStage(now - 1));
    QCOMPARE(session.plan().stageCount(), now - 1);
    // Every device of the removed stage is unused now: put one into stage 0.
    const auto stage_of = session.plan().stageOfDevice(session.cluster().size());
    int unused = -1;
    for (int d = 0; d < session.cluster().size(); ++d) {
      if (stage_of[d] < 0) unused = d;
    }
    QVERIFY(unused >= 0);
    const QString name = session.deviceName(unused);
    QVERIFY(session.addDeviceToStage(name, 0));
    QCOMPARE(session.plan().stageOfDevice(session.cluster().size())[unused], 0);
    QCOMPARE(session.plan().stages[0].samples(), session.plan().microBatchSize());
    QVERIFY(session.removeDeviceFromStage(name));
    QCOMPARE(session.plan().stageOfDevice(session.cluster().size())[unused], -1);
  }

  void requestEditsApplyAndUndo() {
    PlanSession session;
    session.setDocument(zoo("mlp"), shippedCluster("jetson-edge"));
    const int micro = session.plan().microbatches;
    QVERIFY(session.setMicrobatches(micro == 4 ? 8 : 4));
    QCOMPARE(session.evaluation().microbatches, micro == 4 ? 8 : 4);
    QVERIFY(session.setSchedule(Schedule::GPipe));
    QCOMPARE(session.plan().schedule, Schedule::GPipe);
    session.undoStack()->undo();
    session.undoStack()->undo();
    QCOMPARE(session.plan().microbatches, micro);
  }

  void saveThenLoadGivesTheSamePlan() {
    QTemporaryDir dir;
    PlanSession session;
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    const Plan saved = session.plan();
    const QString path = dir.filePath(QStringLiteral("plan.json"));
    QString error;
    QVERIFY2(session.savePlan(path, &error), qPrintable(error));
    QVERIFY(session.moveBoundary(0, saved.stages[0].layer_end + 1));
    QVERIFY(!samePlan(session.plan(), saved));
    QVERIFY2(session.loadPlan(path, &error), qPrintable(error));
    QVERIFY(samePlan(session.plan(), saved));
    QVERIFY(!session.loadPlan(dir.filePath(QStringLiteral("missing.json")), &error));
    QVERIFY(error.contains(QStringLiteral("missing.json")));
  }

  void autoPlanRunsOffTheGuiThreadAndIsUndoable() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    QSignalSpy busy(&session, &PlanSession::busyChanged);
    QSignalSpy finished(&session, &PlanSession::autoPlanFinished);
    session.autoPlan(QStringLiteral("dp-weighted"));
    QVERIFY(session.isBusy());
    QVERIFY(finished.wait(60000));
    QVERIFY(!session.isBusy());
    QCOMPARE(busy.count(), 2);
    if (finished.at(0).at(0).toBool()) {
      QCOMPARE(session.plan().planner, std::string("dp-weighted"));
      QCOMPARE(session.undoStack()->count(), 1);
    }
  }

  void compareFillsOneRowPerPlanner() {
    PlanSession session;
    session.setDocument(zoo("mlp"), shippedCluster("jetson-edge"));
    QSignalSpy done(&session, &PlanSession::comparisonFinished);
    session.compare();
    QVERIFY(done.wait(120000));
    QCOMPARE(session.comparison().size(), plannerNames().size());
    bool any = false;
    for (const auto& row : session.comparison()) any = any || row.feasible;
    QVERIFY(any);
  }
};

QTEST_MAIN(PlanSessionTest)
#include "plan_session_test.moc"
