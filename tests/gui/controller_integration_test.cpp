// TrainingController against real stagecraft-worker processes on loopback: local cluster up,
// deploy, train, re-plan over fewer devices with the weights carried over, train on, down.
// Needs $STAGECRAFT_WORKER (tests/CMakeLists.txt sets it when the worker is built here).
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>
#include <signal.h>

#include <cmath>
#include <set>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "live/chart_feed.h"
#include "live/device_chart.h"
#include "live/live_charts.h"
#include "live/loss_chart.h"
#include "live/throughput_chart.h"
#include "live/timeline_chart.h"
#include "live/training_controller.h"
#include "model/zoo.h"
#include "planner/planner.h"

using stagecraft::Cluster;
using stagecraft::Plan;
using stagecraft::gui::TrainingController;
using stagecraft::gui::TrainingState;

namespace {

constexpr int kStartTimeoutMs = 60'000;
constexpr int kStepTimeoutMs = 60'000;

/// Four emulated devices of different speeds on loopback; unique per process so parallel
/// runs do not share a state file.
QByteArray clusterJson() {
  return QStringLiteral(R"({
  "name": "gui-controller-%1",
  "default_latency_ms": 0.2,
  "devices": [
    {"name": "fast",   "tier": "edge", "gflops": 200, "memory_mb": 4096, "bandwidth_mbps": 1000},
    {"name": "mid-1",  "tier": "edge", "gflops": 100, "memory_mb": 4096, "bandwidth_mbps": 1000},
    {"name": "mid-2",  "tier": "edge", "gflops": 100, "memory_mb": 4096, "bandwidth_mbps": 1000},
    {"name": "slow",   "tier": "end",  "gflops": 50,  "memory_mb": 4096, "bandwidth_mbps": 1000}
  ]
})")
      .arg(QCoreApplication::applicationPid())
      .toUtf8();
}

/// clusterJson() in `dir`; its path, or "" when it cannot be written.
QString writeClusterFile(const QTemporaryDir& dir) {
  const QString path = dir.filePath(QStringLiteral("cluster.json"));
  QFile file(path);
  if (!file.open(QIODevice::WriteOnly) || file.write(clusterJson()) < 0) return {};
  return path;
}

std::set<QString> planDevices(const Plan& plan, const Cluster& cluster) {
  std::set<QString> names;
  for (const auto& stage : plan.stages) {
    for (const auto& member : stage.members) names.insert(QString::fromStdString(cluster.device(member.device).name));
  }
  return names;
}

/// The pid of the process whose command line has `--listen address` (a local worker).
pid_t workerListeningOn(const std::string& address) {
  QDir proc(QStringLiteral("/proc"));
  for (const QString& entry : proc.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
    bool numeric = false;
    const int pid = entry.toInt(&numeric);
    if (!numeric) continue;
    QFile file(QStringLiteral("/proc/%1/cmdline").arg(entry));
    if (!file.open(QIODevice::ReadOnly)) continue;
    const QList<QByteArray> args = file.readAll().split('\0');
    for (int i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--listen" && args[i + 1].toStdString() == address) return static_cast<pid_t>(pid);
    }
  }
  return -1;
}

}  // namespace

class ControllerIntegrationTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void trainsReplansAndContinuesWithoutLosingAStep() {
    if (qEnvironmentVariableIsEmpty("STAGECRAFT_WORKER")) {
      QSKIP("STAGECRAFT_WORKER is not set: build the worker here or export the path of a built stagecraft-worker");
    }
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    // The local workers' state, token and logs go into it, not into the user's folder.
    qputenv("XDG_RUNTIME_DIR", QFile::encodeName(dir.path()));
    const QString cluster_path = writeClusterFile(dir);
    QVERIFY(!cluster_path.isEmpty());

    TrainingController controller;
    // The charts as the main window feeds them.
    stagecraft::gui::LiveCharts charts;
    stagecraft::gui::ChartFeed feed(&controller, &charts);
    QSignalSpy started(&controller, &TrainingController::localClusterStarted);
    QSignalSpy stopped(&controller, &TrainingController::localClusterStopped);
    QSignalSpy steps(&controller, &TrainingController::stepCompleted);
    QSignalSpy iterations(&controller, &TrainingController::iterationReported);
    QSignalSpy failures(&controller, &TrainingController::failed);
    QSignalSpy proposals(&controller, &TrainingController::replanProposed);
    QSignalSpy finished(&controller, &TrainingController::trainingFinished);

    // Up.
    QVERIFY(controller.startLocalCluster(cluster_path));
    QTRY_COMPARE_WITH_TIMEOUT(started.count() + failures.count(), 1, kStartTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));
    const Cluster cluster = *controller.localCluster();
    QCOMPARE(cluster.size(), 4);

    // Plan over all four, deploy, train N steps.
    const stagecraft::ModelSpec model = stagecraft::loadModel("mlp");
    stagecraft::PlanRequest request;
    request.batch_size = 8;
    request.microbatches = 2;
    const stagecraft::CostModel cost(model, cluster);
    const auto outcome = stagecraft::makePlan(*stagecraft::makePlanner("hybrid"), cost, request);
    QVERIFY2(outcome.feasible, outcome.reason.c_str());
    stagecraft::control::TrainingOptions options;
    options.seed = 7;
    QVERIFY(controller.deploy(outcome.plan, model, cluster, options));
    QTRY_VERIFY_WITH_TIMEOUT(controller.state() == TrainingState::Deployed || !failures.isEmpty(), kStartTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));

    constexpr int kFirst = 3;
    constexpr int kSecond = 2;
    constexpr int kThird = 5;
    QVERIFY(controller.start(kFirst));
    QTRY_VERIFY_WITH_TIMEOUT(controller.state() == TrainingState::Stopped || !failures.isEmpty(), kStepTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));
    QCOMPARE(steps.count(), kFirst);
    QCOMPARE(controller.currentStep(), qint64(kFirst));
    QCOMPARE(finished.count(), 1);
    // Three steps in, the prediction is re-priced with the speeds training measured, and the
    // chart's predicted line says so.
    QTRY_COMPARE_WITH_TIMEOUT(controller.costBasis().source(), stagecraft::CostSource::Calibrated, kStepTimeoutMs);
    QVERIFY(controller.predictedSamplesPerSecond() > 0);
    QVERIFY2(charts.throughputChart()->predictedName().contains(QStringLiteral("calibrated from training")),
             qPrintable(charts.throughputChart()->predictedName()));

    // Every device of the plan reported its iterations.
    std::set<QString> reported;
    for (const auto& args : iterations) reported.insert(args.at(0).toString());
    QCOMPARE(reported, planDevices(outcome.plan, cluster));

    // Propose a plan over three devices (the slowest dropped), speeds calibrated by the
    // telemetry so far.
    const QStringList live{QStringLiteral("fast"), QStringLiteral("mid-1"), QStringLiteral("mid-2")};
    QVERIFY(controller.proposeReplan(QStringLiteral("hybrid"), request, live));
    QTRY_COMPARE_WITH_TIMEOUT(proposals.count() + failures.count(), 1, kStartTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));
    const Plan proposed = proposals.at(0).at(1).value<Plan>();
    const Cluster calibrated = proposals.at(0).at(4).value<Cluster>();
    QCOMPARE(calibrated.size(), 3);
    QVERIFY(proposals.at(0).at(2).toDouble() > 0);
    QVERIFY(proposals.at(0).at(3).toDouble() > 0);
    for (const QString& name : planDevices(proposed, calibrated)) QVERIFY(live.contains(name));

    // Apply it between runs: the weights move, the step count stays.
    QSignalSpy applied(&controller, &TrainingController::replanApplied);
    iterations.clear();
    QVERIFY(controller.applyReplan(proposed, calibrated));
    QTRY_COMPARE_WITH_TIMEOUT(applied.count() + failures.count(), 1, kStartTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));
    QTRY_COMPARE_WITH_TIMEOUT(controller.state(), TrainingState::Stopped, kStartTimeoutMs);
    QCOMPARE(applied.at(0).at(1).toLongLong(), qint64(kFirst));
    QCOMPARE(controller.currentStep(), qint64(kFirst));

    QVERIFY(controller.start(kSecond));
    QTRY_VERIFY_WITH_TIMEOUT(controller.state() == TrainingState::Stopped || !failures.isEmpty(), kStepTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));
    QCOMPARE(steps.count(), kFirst + kSecond);
    reported.clear();
    for (const auto& args : iterations) reported.insert(args.at(0).toString());
    QCOMPARE(reported, planDevices(proposed, calibrated));

    // Switch back to the first plan while a run is in progress: it ends at a step boundary,
    // moves and finishes its remaining steps on the new deployment.
    QVERIFY(controller.start(kThird));
    const int before = steps.count();
    QTRY_VERIFY_WITH_TIMEOUT(steps.count() > before || !failures.isEmpty(), kStepTimeoutMs);
    QVERIFY(controller.applyReplan(outcome.plan, cluster));
    QTRY_COMPARE_WITH_TIMEOUT(applied.count() + failures.count(), 2, kStartTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));
    QTRY_VERIFY_WITH_TIMEOUT(controller.state() == TrainingState::Stopped || !failures.isEmpty(), kStepTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));
    QCOMPARE(controller.currentStep(), qint64(kFirst + kSecond + kThird));

    // Continuous across both re-plans: steps 1..N in order, losses finite.
    QCOMPARE(steps.count(), kFirst + kSecond + kThird);
    for (int i = 0; i < steps.count(); ++i) {
      QCOMPARE(steps.at(i).at(0).toLongLong(), qint64(i + 1));
      QVERIFY(std::isfinite(steps.at(i).at(1).toDouble()));
      QVERIFY(steps.at(i).at(2).toDouble() > 0);
      QVERIFY(steps.at(i).at(3).toDouble() > 0);
    }

    // The charts' series got a point per step, and the last step's measured pipeline.
    charts.flushReplots();
    QCOMPARE(charts.throughputChart()->measuredPointCount(), kFirst + kSecond + kThird);
    QCOMPARE(charts.throughputChart()->predictedPointCount(), kFirst + kSecond + kThird);
    QCOMPARE(charts.lossChart()->pointCount(), kFirst + kSecond + kThird);
    QVERIFY(charts.timelineChart()->measured());
    QVERIFY(charts.timelineChart()->blockCount() > 0);
    QCOMPARE(charts.deviceChart()->deviceNames(), feed.devices());
    QCOMPARE(feed.devices().size(), 4);

    // Down.
    QVERIFY(controller.stopLocalCluster());
    QTRY_COMPARE_WITH_TIMEOUT(stopped.count(), 1, kStartTimeoutMs);
    QCOMPARE(controller.state(), TrainingState::Idle);
    QVERIFY(!controller.localCluster());
  }

  void aLostWorkerIsDroppedAndTrainingGoesOn() {
    if (qEnvironmentVariableIsEmpty("STAGECRAFT_WORKER")) {
      QSKIP("STAGECRAFT_WORKER is not set: build the worker here or export the path of a built stagecraft-worker");
    }
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    // The local workers' state, token and logs go into it, not into the user's folder.
    qputenv("XDG_RUNTIME_DIR", QFile::encodeName(dir.path()));
    const QString cluster_path = writeClusterFile(dir);
    QVERIFY(!cluster_path.isEmpty());
    TrainingController controller;
    stagecraft::gui::LiveCharts charts;
    stagecraft::gui::ChartFeed feed(&controller, &charts);
    QSignalSpy started(&controller, &TrainingController::localClusterStarted);
    QSignalSpy stopped(&controller, &TrainingController::localClusterStopped);
    QSignalSpy steps(&controller, &TrainingController::stepCompleted);
    QSignalSpy failures(&controller, &TrainingController::failed);
    QSignalSpy lost(&controller, &TrainingController::deviceLost);
    QSignalSpy recovered(&controller, &TrainingController::recovered);
    QSignalSpy applied(&controller, &TrainingController::replanApplied);
    QVERIFY(controller.startLocalCluster(cluster_path));
    QTRY_COMPARE_WITH_TIMEOUT(started.count() + failures.count(), 1, kStartTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));
    const Cluster cluster = *controller.localCluster();

    // Three stages, one device each; "slow" stands by.
    const stagecraft::ModelSpec model = stagecraft::loadModel("mlp");
    Plan plan;
    plan.model = model.name();
    plan.cluster = cluster.name();
    plan.batch_size = 8;
    plan.microbatches = 2;
    plan.stages = {{0, 3, {{*cluster.find("fast"), 4}}}, {3, 6, {{*cluster.find("mid-1"), 4}}},
                   {6, 8, {{*cluster.find("mid-2"), 4}}}};
    stagecraft::control::TrainingOptions options;
    options.seed = 7;
    QVERIFY(controller.deploy(plan, model, cluster, options));
    QTRY_VERIFY_WITH_TIMEOUT(controller.state() == TrainingState::Deployed || !failures.isEmpty(), kStartTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));

    constexpr int kSteps = 12;
    QVERIFY(controller.start(kSteps));
    QTRY_VERIFY_WITH_TIMEOUT(steps.count() >= 3 || !failures.isEmpty(), kStepTimeoutMs);
    const pid_t victim = workerListeningOn(cluster.device(*cluster.find("mid-1")).address);
    QVERIFY(victim > 0);
    QCOMPARE(::kill(victim, SIGKILL), 0);

    QTRY_VERIFY_WITH_TIMEOUT(controller.state() == TrainingState::Stopped || !failures.isEmpty(), kStepTimeoutMs);
    QVERIFY2(failures.isEmpty(), qPrintable(failures.value(0).value(0).toString()));
    QCOMPARE(controller.currentStep(), qint64(kSteps));
    QCOMPARE(lost.count(), 1);
    QCOMPARE(lost.at(0).at(0).toString(), QStringLiteral("mid-1"));
    QCOMPARE(recovered.count(), 1);
    // The run goes on with a plan over the devices left, the spare included if it helps.
    QCOMPARE(applied.count(), 1);
    const auto now = controller.deployedCluster();
    QVERIFY(now);
    QVERIFY(!now->find("mid-1"));
    QVERIFY(!planDevices(applied.at(0).at(0).value<Plan>(), *now).count(QStringLiteral("mid-1")));
    // The step after the last one before the loss comes again at most once per replayed
    // step; the last reported step is the target.
    QCOMPARE(steps.last().at(0).toLongLong(), qint64(kSteps));
    charts.flushReplots();
    QCOMPARE(charts.throughputChart()->markerCount(), 1);
    QCOMPARE(charts.lossChart()->markerCount(), 1);

    QVERIFY(controller.stopLocalCluster());
    QTRY_COMPARE_WITH_TIMEOUT(stopped.count(), 1, kStartTimeoutMs);
  }
};

QTEST_MAIN(ControllerIntegrationTest)
#include "controller_integration_test.moc"
