// The main window's wiring: a cluster and a model open into the plan session, the editor's
// evaluation reaches the charts (predicted timeline) and the device list (stages), and
// edits go through the shared undo stack, and notices (a straggler) show in the banner.
#include <QAction>
#include <QApplication>
#include <QMimeData>
#include <QPushButton>
#include <QStandardPaths>
#include <QTest>
#include <QUndoStack>

#include "editor/partition_editor.h"
#include "fake_worker.h"
#include "editor/plan_session.h"
#include "live/live_charts.h"
#include "live/timeline_chart.h"
#include "live/training_controller.h"
#include "models/device_model.h"
#include "window/main_window.h"
#include "window/notice_banner.h"

namespace stagecraft::gui {

class MainWindowTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void opensClusterAndModelIntoTheSession() {
    MainWindow window;
    window.openStartup(QStringLiteral("jetson-edge"), QStringLiteral("mlp"), {});
    PlanSession* session = window.session();
    QVERIFY(session->hasDocument());
    QCOMPARE(QString::fromStdString(session->model().name()), QStringLiteral("mlp"));
    QCOMPARE(QString::fromStdString(session->cluster().name()), QStringLiteral("jetson-edge"));
    QVERIFY(session->evaluation().valid);
    QVERIFY(window.windowTitle().contains(QStringLiteral("mlp")));
    QVERIFY(window.windowTitle().contains(QStringLiteral("jetson-edge")));
    // The predicted pipeline is drawn before any training.
    QCOMPARE(window.charts()->timelineChart()->blockCount(),
             static_cast<int>(session->evaluation().timeline.size()));
    QVERIFY(window.charts()->timelineChart()->blockCount() > 0);
    QCOMPARE(window.controller()->state(), TrainingState::Idle);
  }

  void editsAreUndoneThroughTheWindowsUndoAction() {
    MainWindow window;
    window.openStartup(QStringLiteral("jetson-edge"), QStringLiteral("vgg11"), {});
    PlanSession* session = window.session();
    const Plan before = session->plan();
    QVERIFY(session->addStage());
    QVERIFY(!(session->plan().stages == before.stages));
    QAction* undo = nullptr;
    for (QAction* action : window.findChildren<QAction*>()) {
      if (action->shortcut() == QKeySequence(QKeySequence::Undo)) undo = action;
    }
    QVERIFY(undo != nullptr);
    QVERIFY(undo->isEnabled());
    undo->trigger();
    QVERIFY(session->plan().stages == before.stages);
  }

  void aStragglerNoticeOffersItsRePlanInTheBanner() {
    MainWindow window;
    window.openStartup(QStringLiteral("jetson-edge"), QStringLiteral("mlp"), {});
    auto* banner = window.findChild<NoticeBanner*>();
    QVERIFY(banner != nullptr);
    QVERIFY(banner->isHidden());
    const Plan plan = window.session()->plan();
    const Cluster cluster = window.session()->cluster();
    Q_EMIT window.controller()->stragglerNoticed(QStringLiteral("nano-2"), 1.38, 1.3, false, plan, cluster);
    QVERIFY(!banner->isHidden());
    QVERIFY(banner->text().contains(QStringLiteral("nano-2 takes 1.38x as long as the plan expects")));
    QVERIFY(banner->text().contains(QStringLiteral("1.30x faster")));
    QVERIFY(!banner->actionButton()->isHidden());
    QCOMPARE(banner->actionButton()->text(), QStringLiteral("Re-plan"));
    // Applied by the run itself: said, with nothing to click.
    Q_EMIT window.controller()->stragglerNoticed(QStringLiteral("nano-2"), 1.38, 1.3, true, plan, cluster);
    QVERIFY(banner->text().contains(QStringLiteral("Re-planning around it")));
    QVERIFY(banner->actionButton()->isHidden());
    banner->dismiss();
    QVERIFY(banner->isHidden());

    // A notice that offers something is not replaced by one that offers nothing.
    QVERIFY(banner->showNotice(QStringLiteral("tx2 answers again."), QStringLiteral("Re-plan with tx2"), [] {}));
    QVERIFY(!banner->showNotice(QStringLiteral("something to read")));
    QCOMPARE(banner->text(), QStringLiteral("tx2 answers again."));

    // A divergence offers to go on at a lower learning rate.
    Q_EMIT window.controller()->diverged(27, 989376024.0, 25, 0.05);
    QVERIFY(banner->text().contains(QStringLiteral("Training diverged at step 27")));
    QVERIFY(banner->text().contains(QStringLiteral("weights of step 25")));
    QCOMPARE(banner->actionButton()->text(), QStringLiteral("Continue at learning rate 0.01"));

    // Advice (a faster plan) does not cover a warning that offers the way out ...
    Q_EMIT window.controller()->betterPlanFound(plan, cluster, 12.0, 8.0);
    QVERIFY(banner->text().contains(QStringLiteral("Training diverged at step 27")));
    // ... but replaces older advice, and shows once the warning is dealt with.
    banner->dismiss();
    Q_EMIT window.controller()->stragglerNoticed(QStringLiteral("nano-2"), 1.38, 1.3, false, plan, cluster);
    Q_EMIT window.controller()->betterPlanFound(plan, cluster, 12.0, 8.0);
    QVERIFY2(banner->text().contains(QStringLiteral("another plan is predicted 12.0")), qPrintable(banner->text()));
    QCOMPARE(banner->actionButton()->text(), QStringLiteral("Re-plan"));
  }

  void aRefusedEditShowsInTheBannerUntilAnEditIsApplied() {
    MainWindow window;
    window.openStartup(QStringLiteral("jetson-edge"), QStringLiteral("vgg11"), {});
    auto* banner = window.findChild<NoticeBanner*>();
    PlanSession* session = window.session();
    QVERIFY(!session->setMicrobatches(7));  // 64 samples do not split into 7
    QVERIFY(!banner->isHidden());
    QVERIFY2(!banner->refusalText().isEmpty(), "no refusal shown");
    QCOMPARE(banner->refusalText(), session->lastError());
    QVERIFY(session->setMicrobatches(session->plan().microbatches == 4 ? 8 : 4));
    QVERIFY(banner->refusalText().isEmpty());
    QVERIFY(banner->isHidden());
    // Edited and not saved: the title says so.
    QVERIFY(window.isWindowModified());
  }

  void aLostDeviceIsOneStateForTheListTheEditorAndDeploy() {
    MainWindow window;
    window.openStartup(QStringLiteral("jetson-edge"), QStringLiteral("mlp"), {});
    PlanSession* session = window.session();
    QVERIFY(session->evaluation().valid);
    const int used = session->plan().stages.front().members.front().device;
    const QString name = session->deviceName(used);
    QAction* deploy = nullptr;
    for (QAction* action : window.findChildren<QAction*>()) {
      if (action->shortcut() == QKeySequence(QStringLiteral("F7"))) deploy = action;
    }
    QVERIFY(deploy != nullptr);
    QVERIFY(deploy->isEnabled());
    window.devices()->markLost(name, QStringLiteral("killed"));
    QVERIFY(session->isUnavailable(used));
    QVERIFY(!session->evaluation().valid);
    QVERIFY(!deploy->isEnabled());
  }

  void aBetterPlanFoundByCalibrationIsOfferedInTheBanner() {
    MainWindow window;
    window.openStartup(QStringLiteral("jetson-edge"), QStringLiteral("mlp"), {});
    auto* banner = window.findChild<NoticeBanner*>();
    Q_EMIT window.controller()->betterPlanFound(window.session()->plan(), window.session()->cluster(), 60, 40);
    QVERIFY(!banner->isHidden());
    QVERIFY2(banner->text().contains(QStringLiteral("Calibrated from training")), qPrintable(banner->text()));
    QVERIFY(banner->text().contains(QStringLiteral("1.50x")));
    QCOMPARE(banner->actionButton()->text(), QStringLiteral("Re-plan"));
  }

  void aWorkerHeardOnTheBeaconDraggedOntoAStageJoinsThePlan() {
    stagecraft::testing::FakeWorkerScript script;
    script.name = "orin-lab";
    stagecraft::testing::FakeWorkerServer worker(script);
    MainWindow window;
    window.openStartup(QStringLiteral("jetson-edge"), QStringLiteral("mlp"), {});
    PlanSession* session = window.session();
    const int devices = session->cluster().size();
    v1::Beacon beacon;
    beacon.set_name("orin-lab");
    beacon.set_tier("edge");
    beacon.set_address(worker.address());
    beacon.set_state("idle");
    beacon.set_measured_gflops(900);
    beacon.set_memory_mb(16384);
    const int row = window.devices()->mergeBeacon(beacon);
    // Heard, then verified: its worker answers Describe.
    QTRY_VERIFY_WITH_TIMEOUT(window.devices()->plannableDevice(QStringLiteral("orin-lab")).has_value(), 10000);
    // Dragged from the device list onto stage 0 of the editor, as the mouse does it.
    std::unique_ptr<QMimeData> data(window.devices()->mimeData({window.devices()->index(row, 0)}));
    auto* editor = window.findChild<PartitionEditor*>();
    QVERIFY(editor != nullptr);
    editor->resize(960, editor->heightForWidth(960));
    const QPoint pos = editor->laneRect(0).center();
    QDragEnterEvent enter(pos, Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(editor, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(pos), Qt::CopyAction, data.get(), Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(editor, &drop);
    QCOMPARE(session->cluster().size(), devices + 1);
    const int d = session->deviceIndex(QStringLiteral("orin-lab"));
    QCOMPARE(d, devices);
    QCOMPARE(session->plan().stageOfDevice(session->cluster().size())[static_cast<size_t>(d)], 0);
  }

  void workerLinesAreSaidInTheConsolesWords() {
    QCOMPARE(TrainingController::workerLine(QStringLiteral(
                 "deployed job 'j-7': stage 1 of 3, layers [2, 5), rank 0 of 2, 8 samples per micro-batch")),
             QStringLiteral("Job j-7 deployed: stage 1 of 3, layers 2–4, rank 0 of 2, 8 samples per micro-batch."));
    QCOMPARE(TrainingController::workerLine(QStringLiteral("stopped at step 12")), QStringLiteral("Stopped at step 12."));
    QCOMPARE(TrainingController::workerLine(QStringLiteral("something new")), QStringLiteral("something new"));
  }
};

}  // namespace stagecraft::gui

QTEST_MAIN(stagecraft::gui::MainWindowTest)
#include "main_window_test.moc"
