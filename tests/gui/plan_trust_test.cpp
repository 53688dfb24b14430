// What makes the editor's figures trustworthy: one prediction (priced with the run's basis,
// saying where it comes from), liveness (a lost device is not planned on), devices found on
// the LAN usable by a drag, derived views that do not outlive their model, and the
// bottleneck mark on the stage that bounds the iteration.
#include <QSignalSpy>
#include <QTest>

#include "control/replan.h"
#include "cost/cost_basis.h"
#include "editor/plan_session.h"
#include "editor/plan_summary.h"
#include "gui_fixtures.h"
#include "models/compare_model.h"
#include "sim/simulator.h"

using namespace stagecraft;
using namespace stagecraft::gui;
using namespace stagecraft::gui::testing;

namespace {

bool usesDevice(const Plan& plan, int device) {
  for (const Stage& st : plan.stages) {
    for (const DeviceShare& m : st.members) {
      if (m.device == device) return true;
    }
  }
  return false;
}

/// A worker the cluster file does not have, as the device list knows it from its beacon.
v1::Device discoveredBoard() {
  v1::Device d;
  d.set_name("orin-lab");
  d.set_tier("edge");
  d.set_gflops(900);
  d.set_memory_mb(16384);
  d.set_bandwidth_mbps(1000);
  d.set_address("127.0.0.1:50999");
  return d;
}

}  // namespace

class PlanTrustTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void theHeaderSaysWhereItsPredictionComesFromAndUsesTheRunsBasis() {
    PlanSession session;
    session.setDocument(zoo("mlp"), shippedCluster("jetson-edge"));
    PlanSummary summary;
    summary.setSession(&session);
    QCOMPARE(session.costSource(), CostSource::Specs);
    QVERIFY2(summary.sourceText().contains(QStringLiteral("from specs")), qPrintable(summary.sourceText()));
    const double from_specs = session.evaluation().samples_per_second;

    // Training measured every device at half its file speed: the header prices with that.
    CostBasis basis;
    for (const Device& d : session.cluster().devices()) basis.factors[d.name] = 2.0;
    session.setCostBasis(basis);
    QCOMPARE(session.costSource(), CostSource::Calibrated);
    QVERIFY2(summary.sourceText().contains(QStringLiteral("calibrated from training")), qPrintable(summary.sourceText()));
    const CostModel run_cost = makeCostModel(session.model(), session.cluster(), session.plan().optimizer, basis);
    const double run_figure = simulate(session.plan(), run_cost).samples_per_second;
    QCOMPARE(session.evaluation().samples_per_second, run_figure);
    QVERIFY(session.evaluation().samples_per_second < from_specs);
    QVERIFY2(summary.samplesPerSecondText() == QString::number(run_figure, 'f', 1), qPrintable(summary.samplesPerSecondText()));
    // A new basis is not an edit: no change label across it.
    QVERIFY(summary.deltaText().isEmpty());

    // Measured next to predicted, with their ratio.
    summary.setMeasured(run_figure / 2);
    QVERIFY2(summary.measuredText().contains(QStringLiteral("50 %")), qPrintable(summary.measuredText()));

    // Another model is priced from its specs again.
    session.setModel(zoo("vgg11"));
    QCOMPARE(session.costSource(), CostSource::Specs);
  }

  void aLostDeviceMakesThePlanInvalidAndAutoPlanLeavesItOut() {
    PlanSession session;
    session.setDocument(zoo("mlp"), shippedCluster("jetson-edge"));
    QVERIFY(session.evaluation().valid);
    const int used = session.plan().stages.front().members.front().device;
    const QString name = session.deviceName(used);
    session.setUnavailableDevices({name});
    QVERIFY(session.isUnavailable(used));
    QVERIFY(!session.evaluation().valid);
    QVERIFY2(session.evaluation().problems.front().contains(name), qPrintable(session.evaluation().problems.join('\n')));
    QVERIFY(session.evaluation().stage_has_problem.front());

    QSignalSpy finished(&session, &PlanSession::autoPlanFinished);
    session.autoPlan(QStringLiteral("hybrid"));
    QVERIFY(finished.wait(60000));
    QVERIFY2(finished.at(0).at(0).toBool(), qPrintable(finished.at(0).at(1).toString()));
    QVERIFY(!usesDevice(session.plan(), used));
    QVERIFY2(session.evaluation().valid, qPrintable(session.evaluation().problems.join('\n')));

    QSignalSpy compared(&session, &PlanSession::comparisonFinished);
    session.compare();
    QVERIFY(compared.wait(120000));
    for (const PlannerComparison& row : session.comparison()) {
      if (row.plan) QVERIFY2(!usesDevice(*row.plan, used), qPrintable(row.planner));
    }

    // It answers again: plannable again.
    session.setUnavailableDevices({});
    QVERIFY(!session.isUnavailable(used));
  }

  void aDiscoveredDeviceDroppedOnAStageJoinsTheCluster() {
    PlanSession session;
    session.setDocument(zoo("mlp"), shippedCluster("jetson-edge"));
    const int devices = session.cluster().size();
    // Without a source it is refused, saying why.
    QSignalSpy refused(&session, &PlanSession::editRefused);
    QVERIFY(!session.addDeviceToStage(QStringLiteral("orin-lab"), 0));
    QCOMPARE(refused.count(), 1);

    session.setDeviceSource([](const QString& name) -> std::optional<v1::Device> {
      if (name == QLatin1String("orin-lab")) return discoveredBoard();
      return std::nullopt;
    });
    QSignalSpy joined(&session, &PlanSession::deviceJoined);
    const Plan before = session.plan();
    QVERIFY2(session.addDeviceToStage(QStringLiteral("orin-lab"), 0), qPrintable(session.lastError()));
    QCOMPARE(joined.count(), 1);
    QCOMPARE(session.cluster().size(), devices + 1);
    QCOMPARE(session.deviceIndex(QStringLiteral("orin-lab")), devices);
    QVERIFY(usesDevice(session.plan(), devices));
    QCOMPARE(static_cast<int>(session.evaluation().memory_bytes.size()), devices + 1);
    // One undo step; the plans before it still name the same devices.
    session.undoStack()->undo();
    QVERIFY(!usesDevice(session.plan(), devices));
    QCOMPARE(session.plan().stages.size(), before.stages.size());
    // A name nobody knows is still refused.
    QVERIFY(!session.addDeviceToStage(QStringLiteral("nobody"), 0));
  }

  void derivedViewsDoNotOutliveTheirModel() {
    PlanSession session;
    session.setDocument(zoo("mlp"), shippedCluster("jetson-edge"));
    CompareModel table(&session);
    QSignalSpy compared(&session, &PlanSession::comparisonFinished);
    session.compare();
    QVERIFY(compared.wait(120000));
    QVERIFY(table.rowCount() > 0);
    PlanSummary summary;
    summary.setSession(&session);
    session.setMicrobatches(session.plan().microbatches == 4 ? 8 : 4);
    session.setModel(zoo("vgg11"));
    QCOMPARE(table.rowCount(), 0);
    QVERIFY(session.comparison().empty());
    QVERIFY2(summary.deltaText().isEmpty(), qPrintable(summary.deltaText()));
  }

  void theBottleneckIsTheStageThatIsOccupiedLongest() {
    PlanSession session;
    session.setDocument(zoo("vgg11"), shippedCluster("jetson-edge"));
    const PlanEvaluation& ev = session.evaluation();
    QVERIFY(session.plan().stageCount() >= 2);
    QVERIFY(ev.valid);
    QCOMPARE(static_cast<int>(ev.stage_busy_ms.size()), session.plan().stageCount());
    const auto longest = std::max_element(ev.stage_busy_ms.begin(), ev.stage_busy_ms.end());
    QCOMPARE(ev.bottleneck_stage, static_cast<int>(longest - ev.stage_busy_ms.begin()));
    // It bounds the iteration: no stage is occupied longer than an iteration lasts.
    QVERIFY(*longest <= ev.iteration_ms * (1 + 1e-9));
  }
};

QTEST_MAIN(PlanTrustTest)
#include "plan_trust_test.moc"
