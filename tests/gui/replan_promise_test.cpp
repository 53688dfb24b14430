// A re-plan that measures far below what it promised: the console says so in the banner and
// offers to go back, and going back restores the plan before it, in the run and the editor.
// In-process fake workers report each step's time: 2 ms on one stage, 10 s on two.
#include <QFile>
#include <QPushButton>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>
#include <vector>

#include "editor/plan_session.h"
#include "fake_worker.h"
#include "live/training_controller.h"
#include "window/main_window.h"
#include "window/notice_banner.h"

namespace stagecraft::gui {
namespace {

using stagecraft::testing::FakeWorkerScript;
using stagecraft::testing::FakeWorkerServer;

constexpr int kWaitMs = 30'000;

std::unique_ptr<FakeWorkerServer> fake(const std::string& name) {
  FakeWorkerScript script;
  script.name = name;
  script.events = [](std::int64_t step, const v1::StageAssignment& assignment) {
    const double ms = assignment.stages() == 2 ? 10'000.0 : 2.0;
    return std::vector<v1::TelemetryEvent>{stagecraft::testing::defaultIteration(step, assignment, ms)};
  };
  return std::make_unique<FakeWorkerServer>(script);
}

Plan planOf(const ModelSpec& model, bool two_stages) {
  Plan p;
  p.model = model.name();
  p.batch_size = 64;
  p.microbatches = 2;
  const int layers = model.layerCount();
  if (two_stages) {
    p.stages = {Stage{0, layers / 2, {{0, 32}}}, Stage{layers / 2, layers, {{1, 32}}}};
  } else {
    p.stages = {Stage{0, layers, {{0, 32}}}};
  }
  return p;
}

}  // namespace

class ReplanPromiseTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void aReplanFarBelowItsPromiseOffersToGoBackAndGoingBackRestoresThePlan() {
    auto a = fake("fake-a");
    auto b = fake("fake-b");
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("fakes.json"));
    {
      QFile file(path);
      QVERIFY(file.open(QIODevice::WriteOnly));
      file.write(QStringLiteral(R"({"name": "fakes", "devices": [
        {"name": "fake-a", "tier": "edge", "gflops": 100, "memory_mb": 4096, "bandwidth_mbps": 1000, "address": "%1"},
        {"name": "fake-b", "tier": "edge", "gflops": 100, "memory_mb": 4096, "bandwidth_mbps": 1000, "address": "%2"}]})")
                     .arg(QString::fromStdString(a->address()), QString::fromStdString(b->address()))
                     .toUtf8());
    }
    MainWindow window;
    window.openStartup(path, QStringLiteral("mlp"), {});
    PlanSession* session = window.session();
    QVERIFY(session->hasDocument());
    TrainingController* controller = window.controller();
    const ModelSpec model = session->model();
    const Cluster cluster = session->cluster();
    auto* banner = window.findChild<NoticeBanner*>();
    QVERIFY(banner != nullptr);

    QSignalSpy states(controller, &TrainingController::stateChanged);
    QVERIFY(controller->deploy(planOf(model, false), model, cluster, control::TrainingOptions{}));
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), TrainingState::Deployed, kWaitMs);
    QSignalSpy steps(controller, &TrainingController::stepCompleted);
    QSignalSpy applied(controller, &TrainingController::replanApplied);
    QSignalSpy missed(controller, &TrainingController::promiseMissed);
    QVERIFY(controller->start(100'000));
    QTRY_VERIFY_WITH_TIMEOUT(steps.size() >= 3, kWaitMs);

    // Two stages: predicted far faster than 6.4 samples/s, measured 64 samples in 10 s.
    QVERIFY(controller->applyReplan(planOf(model, true), cluster));
    QTRY_VERIFY_WITH_TIMEOUT(missed.size() == 1, kWaitMs);
    const QList<QVariant> verdict = missed.front();
    const double promised = verdict[2].toDouble();
    const double measured = verdict[3].toDouble();
    const double before = verdict[4].toDouble();
    QVERIFY2(measured < 0.85 * promised, qPrintable(QStringLiteral("%1 vs %2").arg(measured).arg(promised)));
    QVERIFY(qAbs(measured - 6.4) < 1e-6);
    QVERIFY(qAbs(before - 64 * 1000.0 / 2) < 1e-6);
    QCOMPARE(verdict[5].value<Plan>().stageCount(), 1);

    // Where the eye is: the banner, with the way back.
    QVERIFY(!banner->isHidden());
    QVERIFY2(banner->text().contains(QStringLiteral("promised")), qPrintable(banner->text()));
    QVERIFY(banner->text().contains(QStringLiteral("measures 6.4")));
    QVERIFY(banner->text().contains(QStringLiteral("The plan before it measured 32000.0")));
    QCOMPARE(banner->actionButton()->text(), QStringLiteral("Go back to the previous plan"));
    QCOMPARE(controller->deployedPlan()->stageCount(), 2);
    const int applied_before = applied.size();
    QTest::mouseClick(banner->actionButton(), Qt::LeftButton);
    QVERIFY(banner->isHidden());
    QTRY_VERIFY_WITH_TIMEOUT(applied.size() > applied_before, kWaitMs);
    QCOMPARE(applied.back()[0].value<Plan>().stageCount(), 1);
    QCOMPARE(controller->deployedPlan()->stageCount(), 1);
    QCOMPARE(session->plan().stageCount(), 1);  // the editor shows the plan it went back to
    // The way back is judged against what the plan measured before: kept, nothing more to say.
    const int at = steps.size();
    QTRY_VERIFY_WITH_TIMEOUT(steps.size() >= at + 8, kWaitMs);
    QCOMPARE(missed.size(), 1);
    QVERIFY(controller->stop());
    QTRY_COMPARE_WITH_TIMEOUT(controller->state(), TrainingState::Stopped, kWaitMs);
  }
};

}  // namespace stagecraft::gui

QTEST_MAIN(stagecraft::gui::ReplanPromiseTest)
#include "replan_promise_test.moc"
