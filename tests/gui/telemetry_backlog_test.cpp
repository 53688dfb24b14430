// A console whose GUI thread falls behind its run's telemetry: iteration reports beyond a
// bound are dropped and counted instead of queueing without end, and the log says how many.
// In-process fake workers, 1 ms steps; the test's own thread is the GUI thread, held busy.
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include <chrono>
#include <memory>
#include <thread>

#include "fake_worker.h"
#include "live/training_controller.h"
#include "model/zoo.h"

namespace stagecraft::gui {
namespace {

using stagecraft::testing::FakeWorkerScript;
using stagecraft::testing::FakeWorkerServer;

constexpr int kWaitMs = 60'000;
constexpr qint64 kSteps = 700;

}  // namespace

class TelemetryBacklogTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QStandardPaths::setTestModeEnabled(true); }

  void reportsBeyondTheBoundAreDroppedCountedAndLogged() {
    std::vector<std::unique_ptr<FakeWorkerServer>> fakes;
    v1::Cluster proto;
    proto.set_name("fakes");
    for (const char* name : {"fake-a", "fake-b"}) {
      FakeWorkerScript script;
      script.name = name;
      script.iteration_ms = 1;
      fakes.push_back(std::make_unique<FakeWorkerServer>(script));
      auto* d = proto.add_devices();
      d->set_name(name);
      d->set_tier("edge");
      d->set_gflops(100);
      d->set_memory_mb(4096);
      d->set_bandwidth_mbps(1000);
      d->set_address(fakes.back()->address());
    }
    const Cluster cluster = Cluster::fromProto(proto);
    const ModelSpec model = ModelSpec::fromProto(zooModel("mlp"));
    Plan plan;  // one stage on both: every step brings two reports
    plan.model = model.name();
    plan.batch_size = 8;
    plan.microbatches = 1;
    plan.stages = {Stage{0, model.layerCount(), {{0, 4}, {1, 4}}}};

    TrainingController controller;
    QSignalSpy reports(&controller, &TrainingController::iterationReported);
    QSignalSpy log(&controller, &TrainingController::logMessage);
    control::TrainingOptions training;
    QVERIFY(controller.deploy(plan, model, cluster, training));
    QTRY_COMPARE_WITH_TIMEOUT(controller.state(), TrainingState::Deployed, kWaitMs);
    QVERIFY(controller.start(kSteps));

    // The GUI thread is busy (here: not looking) until the workers have trained every step.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitMs);
    while ((fakes[0]->worker().step() < kSteps || fakes[1]->worker().step() < kSteps) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    QCOMPARE(fakes[0]->worker().step(), kSteps);
    QCOMPARE(reports.size(), 0);

    QTRY_COMPARE_WITH_TIMEOUT(controller.state(), TrainingState::Stopped, kWaitMs);
    // What waited for the GUI was bounded (reports the coordinator still passed on after
    // the GUI looked again were shown too), and with what was dropped it is every report.
    QVERIFY2(controller.reportsInFlightPeak() <= 1024, qPrintable(QString::number(controller.reportsInFlightPeak())));
    const QRegularExpression dropped(
        QStringLiteral(R"((\d+) telemetry report\S* dropped .* \((\d+) by the workers, (\d+) here\))"));
    int here = -1, workers = -1, total = -1;
    for (const QList<QVariant>& entry : log) {
      const auto match = dropped.match(entry[2].toString());
      if (!match.hasMatch()) continue;
      total = match.captured(1).toInt();
      workers = match.captured(2).toInt();
      here = match.captured(3).toInt();
    }
    QVERIFY2(here > 0, "the console said nothing of the reports it dropped");
    QCOMPARE(controller.reportsInFlightPeak(), 1024);  // dropped only once the bound was full
    QCOMPARE(workers, 0);  // the coordinator kept up: nothing was lost at the workers
    QCOMPARE(total, workers + here);
    QCOMPARE(reports.size() + here, static_cast<int>(2 * kSteps));
  }
};

}  // namespace stagecraft::gui

QTEST_MAIN(stagecraft::gui::TelemetryBacklogTest)
#include "telemetry_backlog_test.moc"
