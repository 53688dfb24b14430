// LiveCharts and its four charts: one point per step, bars per device sample, one Gantt
// block per timeline event, clear(), coalesced replots and PNG / PDF export.
#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QTemporaryDir>
#include <QtTest>

#include "cluster/cluster.h"
#include "cost/cost_model.h"
#include "live/chart_plot.h"
#include "live/chart_style.h"
#include "live/device_chart.h"
#include "live/live_charts.h"
#include "live/loss_chart.h"
#include "live/throughput_chart.h"
#include "live/timeline_chart.h"
#include "model/zoo.h"
#include "planner/planner.h"
#include "sim/simulator.h"

using namespace stagecraft;
using gui::LiveCharts;

namespace {

QStringList deviceNames(int count) {
  QStringList names;
  for (int i = 0; i < count; ++i) names << QStringLiteral("dev-%1").arg(i);
  return names;
}

void feedSteps(LiveCharts& charts, int steps) {
  for (int s = 1; s <= steps; ++s) charts.addStep(s, 0.5 * s, 100 + s % 7, 110, 2.0 / s);
}

/// The 1F1B iteration the simulator predicts for the hybrid plan of vgg11 on jetson-edge.
SimulationResult jetsonVggSimulation() {
  const Cluster cluster = Cluster::load(STAGECRAFT_TEST_CLUSTERS "/jetson-edge.json");
  const ModelSpec model = loadModel("vgg11");  // CostModel keeps references to both
  const CostModel cost(model, cluster);
  PlanRequest request;
  request.batch_size = 64;
  const PlanOutcome outcome = makePlan(*makePlanner("hybrid"), cost, request);
  if (!outcome.feasible) qFatal("no plan: %s", outcome.reason.c_str());
  return simulate(outcome.plan, cost);
}

QByteArray fileStart(const QString& path, int bytes) {
  QFile file(path);
  if (!file.open(QIODevice::ReadOnly)) return {};
  return file.read(bytes);
}

}  // namespace

/// A chart whose every replot takes `ms` more (a busy prepareReplot): the replot rate
/// must follow the cost.
class SlowChart final : public gui::ChartPlot {
 public:
  explicit SlowChart(int ms) : ms_(ms) {}
  QString exportName() const override { return QStringLiteral("slow"); }

 protected:
  void prepareReplot() override {
    QElapsedTimer busy;
    busy.start();
    while (busy.elapsed() < ms_) {
    }
  }

 private:
  int ms_;
};

class LiveChartsTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void feedingStepsPutsOnePointPerStepInEverySeries() {
    LiveCharts charts;
    feedSteps(charts, 37);
    QCOMPARE(charts.throughputChart()->measuredPointCount(), 37);
    QCOMPARE(charts.throughputChart()->predictedPointCount(), 37);
    QCOMPARE(charts.lossChart()->pointCount(), 37);
    QCOMPARE(charts.lossChart()->smoothedGraph()->dataCount(), 37);
    QCOMPARE(charts.throughputChart()->measuredGraph()->data()->at(36)->key, 18.5);
    QCOMPARE(charts.throughputChart()->predictedGraph()->data()->at(0)->value, 110.0);
  }

  void throughputKeepsTheLastWindowInView() {
    LiveCharts charts;
    charts.throughputChart()->setTimeWindow(120);
    feedSteps(charts, 1000);  // 500 s
    charts.flushReplots();
    const QCPRange range = charts.throughputChart()->xAxis->range();
    QVERIFY2(qAbs(range.lower - 380) < 1e-6, qPrintable(QString::number(range.lower)));
    QVERIFY(range.upper >= 500);
    // Every point is kept for dragging back.
    QCOMPARE(charts.throughputChart()->measuredPointCount(), 1000);
  }

  void throughputLegendSitsAboveTheAxesNotOverTheCurves() {
    LiveCharts charts;
    charts.resize(1200, 800);
    feedSteps(charts, 20);
    gui::ThroughputChart* chart = charts.throughputChart();
    chart->resize(500, 200);
    chart->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(chart->legend->visible());
    QCOMPARE(chart->legend->itemCount(), 2);
    // Both entries in one row beside the title, all of it above the axis rectangle.
    QCOMPARE(chart->legend->rowCount(), 1);
    const QRect legend = chart->legend->outerRect(), axes = chart->axisRect()->rect();
    QVERIFY2(legend.bottom() <= axes.top(), qPrintable(QStringLiteral("legend bottom %1, axes top %2")
                                                           .arg(legend.bottom()).arg(axes.top())));
    QVERIFY(legend.height() > 0);
  }

  void lossLegendSitsUnderTheTitleNotOverTheCurves() {
    gui::LossChart loss;
    gui::LossChart* chart = &loss;
    for (int s = 1; s <= 20; ++s) loss.addStep(s, 2.3 - 0.05 * s);
    loss.resize(300, 180);
    loss.show();
    QVERIFY(QTest::qWaitForWindowExposed(&loss));
    const auto check = [&](int width, int rows) {
      chart->resize(width, 180);  // a shown widget gets its resize event at once
      chart->requestReplot();
      chart->flushReplot();
      QCOMPARE(chart->legend->rowCount(), rows);
      const QRect legend = chart->legend->outerRect(), axes = chart->axisRect()->rect();
      QVERIFY2(legend.bottom() <= axes.top(), qPrintable(QStringLiteral("width %1: legend bottom %2, axes top %3")
                                                             .arg(width).arg(legend.bottom()).arg(axes.top())));
      QVERIFY(legend.height() > 0);
      QVERIFY2(legend.right() <= chart->width(), qPrintable(QStringLiteral("width %1: legend right %2")
                                                                .arg(width).arg(legend.right())));
    };
    check(300, 1);  // loss and its average side by side
    chart->addEvaluation(20, 0.4, 1.5);
    QCOMPARE(chart->legend->itemCount(), 4);
    check(900, 1);  // four side by side where they fit
    check(300, 2);  // two a row in a narrow chart
  }

  void lossLogScaleSwitchesTheAxis() {
    LiveCharts charts;
    feedSteps(charts, 20);
    charts.lossChart()->setLogScale(true);
    charts.flushReplots();
    QCOMPARE(charts.lossChart()->yAxis->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(charts.lossChart()->yAxis->range().lower > 0);
  }

  void aLossThatGrowsByOrdersOfMagnitudeSwitchesToALogAxis() {
    LiveCharts charts;
    gui::LossChart* loss = charts.lossChart();
    for (int s = 1; s <= 20; ++s) loss->addStep(s, 2.3 - 0.05 * s);
    QVERIFY(!loss->logScale());  // an ordinary curve stays linear
    loss->addStep(21, 989376024.0);  // a diverging step
    QVERIFY(loss->logScale());
    charts.flushReplots();
    QCOMPARE(loss->yAxis->scaleType(), QCPAxis::stLogarithmic);
    // The user's choice holds from then on.
    loss->setLogScale(false);
    loss->addStep(22, 1e12);
    QVERIFY(!loss->logScale());
  }

  void heldOutEvaluationsShowOnlyOnceTheyHappen() {
    LiveCharts charts;
    gui::LossChart* loss = charts.lossChart();
    for (int s = 1; s <= 10; ++s) loss->addStep(s, 2.0 - 0.1 * s);
    // No evaluation yet: no accuracy axis, no empty legend entries.
    QVERIFY(!loss->yAxis2->visible());
    QVERIFY(!loss->legend->hasItemWithPlottable(loss->accuracyGraph()));
    QVERIFY(!loss->legend->hasItemWithPlottable(loss->heldOutLossGraph()));
    loss->addEvaluation(10, 0.375, 2.5);
    charts.flushReplots();
    QVERIFY(loss->yAxis2->visible());
    QVERIFY(loss->legend->hasItemWithPlottable(loss->accuracyGraph()));
    QCOMPARE(loss->accuracyGraph()->dataCount(), 1);
    QCOMPARE(loss->accuracyGraph()->data()->constBegin()->value, 37.5);  // percent on the right axis
    QVERIFY(loss->yAxis->range().contains(2.5));  // the held-out loss is in view beside training's
    loss->addEvaluation(20, 0.9, 1.0);
    QCOMPARE(loss->legend->itemCount(), 4);  // each entry once
    loss->clear();  // a new run
    QVERIFY(!loss->yAxis2->visible());
    QVERIFY(!loss->legend->hasItemWithPlottable(loss->accuracyGraph()));
    QCOMPARE(loss->heldOutLossGraph()->dataCount(), 0);
  }

  void deviceSamplesUpdateTheBars() {
    LiveCharts charts;
    charts.setDevices(deviceNames(16));
    gui::DeviceChart* devices = charts.deviceChart();
    QCOMPARE(devices->deviceCount(), 16);
    QVERIFY(devices->busyBars(3)->data()->isEmpty());
    charts.addDeviceSample(3, 1.0, 0.75, 3000, 6000);
    charts.addDeviceSample(4, 1.0, 0.5, 5500, 6000);
    charts.addDeviceSample(5, 1.0, 1.0, 6600, 6000);
    charts.addDeviceSample(3, 2.0, 0.25, 1500, 6000);  // the latest sample wins
    charts.addDeviceSample(99, 2.0, 0.25, 1500, 6000);  // unknown: ignored
    charts.flushReplots();
    QCOMPARE(devices->busyBars(3)->dataCount(), 1);
    QCOMPARE(devices->busyBars(3)->data()->at(0)->key, 3.0);
    QCOMPARE(devices->busyBars(3)->data()->at(0)->value, 25.0);
    QCOMPARE(devices->memoryBars(3)->data()->at(0)->value, 25.0);
    QCOMPARE(devices->memoryLevel(3), 0);
    QCOMPARE(devices->memoryLevel(4), 1);
    QCOMPARE(devices->memoryLevel(5), 2);
    QCOMPARE(devices->memoryBars(4)->brush().color(), gui::ChartStyle::warningColor());
    QCOMPARE(devices->memoryBars(5)->brush().color(), gui::ChartStyle::overLimitColor());
    QCOMPARE(devices->memoryBars(3)->brush().color(), gui::ChartStyle::deviceColor(3));
    QVERIFY(devices->busyBars(0)->data()->isEmpty());
  }

  void setTimelineMakesOneBlockPerEventOnItsDevicesRow() {
    LiveCharts charts;
    charts.resize(1400, 900);
    charts.show();
    QVERIFY(QTest::qWaitForWindowExposed(&charts));
    const SimulationResult sim = jetsonVggSimulation();
    QVERIFY(sim.timeline.size() > 100);
    charts.setDevices(deviceNames(7));
    charts.setTimeline(sim.timeline, sim.iteration_ms, false);
    charts.flushReplots();
    gui::TimelineChart* timeline = charts.timelineChart();
    QCOMPARE(timeline->blockCount(), static_cast<int>(sim.timeline.size()));
    QCOMPARE(timeline->rowCount(), 7);
    QCOMPARE(timeline->iterationMs(), sim.iteration_ms);
    QVERIFY(!timeline->measured());
    for (std::size_t i = 0; i < sim.timeline.size(); ++i) {
      const gui::TimelineBlock& block = timeline->blocks()[i];
      QCOMPARE(block.row, sim.timeline[i].device);
      QCOMPARE(block.kind, sim.timeline[i].kind);
      QCOMPARE(block.micro_batch, sim.timeline[i].micro_batch);
      QCOMPARE(block.start_ms, sim.timeline[i].start_ms);
      QCOMPARE(block.end_ms, sim.timeline[i].end_ms);
    }
    // The whole iteration is in view, and a block is drawn where its row and times say.
    QVERIFY(timeline->xAxis->range().upper >= sim.iteration_ms);
    const gui::TimelineBlock* widest = nullptr;
    for (const gui::TimelineBlock& block : timeline->blocks()) {
      if (block.kind == EventKind::Forward && (widest == nullptr || block.end_ms - block.start_ms >
                                                                        widest->end_ms - widest->start_ms)) {
        widest = &block;
      }
    }
    QVERIFY(widest != nullptr);
    const QCPRange lane = gui::TimelineBlocks::laneSpan(*widest);
    const QPointF centre(timeline->xAxis->coordToPixel((widest->start_ms + widest->end_ms) / 2),
                         timeline->yAxis->coordToPixel((lane.lower + lane.upper) / 2));
    const auto* blocks = static_cast<const gui::TimelineBlocks*>(timeline->plottable(0));
    const int hit = blocks->blockAt(centre);
    QVERIFY(hit >= 0);
    QCOMPARE(&timeline->blocks()[static_cast<std::size_t>(hit)], widest);

    // A measured iteration replaces the prediction.
    std::vector<TimelineEvent> measured = {{0, 0, EventKind::Forward, -1, 0, 5},
                                           {1, 0, EventKind::Receive, 0, 5, 6},
                                           {0, 0, EventKind::Send, 1, 5, 6}};
    charts.setTimeline(measured, 12, true);
    QCOMPARE(timeline->blockCount(), 3);
    QVERIFY(timeline->measured());
    QCOMPARE(timeline->blocks()[1].row, 1);

    // A note (the first iterations after a recovery) follows the title until removed.
    timeline->setNote(QStringLiteral("back 0.8 s after losing nx-1"));
    charts.setTimeline(measured, 12, true);
    QVERIFY(timeline->title().startsWith(QStringLiteral("Measured Iteration: 12.0 ms")));
    QVERIFY(timeline->title().endsWith(QStringLiteral("back 0.8 s after losing nx-1")));
    timeline->setNote({});
    QCOMPARE(timeline->title(), QStringLiteral("Measured Iteration: 12.0 ms"));
  }

  void clearEmptiesEveryChart() {
    LiveCharts charts;
    charts.setDevices(deviceNames(4));
    feedSteps(charts, 10);
    charts.addDeviceSample(1, 1, 0.5, 100, 1000);
    charts.setTimeline({{0, 0, EventKind::Forward, -1, 0, 5}}, 5, false);
    charts.clear();
    charts.flushReplots();
    QCOMPARE(charts.throughputChart()->measuredPointCount(), 0);
    QCOMPARE(charts.throughputChart()->predictedPointCount(), 0);
    QCOMPARE(charts.lossChart()->pointCount(), 0);
    QVERIFY(charts.deviceChart()->busyBars(1)->data()->isEmpty());
    QVERIFY(charts.deviceChart()->memoryBars(1)->data()->isEmpty());
    QCOMPARE(charts.deviceChart()->deviceCount(), 4);  // the devices stay
    QCOMPARE(charts.timelineChart()->blockCount(), 0);
    feedSteps(charts, 3);
    QCOMPARE(charts.throughputChart()->measuredPointCount(), 3);
  }

  void replotsAreCoalescedAndSkippedWhileHidden() {
    LiveCharts charts;
    charts.setDevices(deviceNames(16));
    feedSteps(charts, 5);
    QTest::qWait(3 * gui::ChartPlot::kReplotIntervalMs);
    QCOMPARE(charts.throughputChart()->replotCount(), 0);  // hidden: nothing drawn
    charts.show();
    QVERIFY(QTest::qWaitForWindowExposed(&charts));
    QTRY_VERIFY(!charts.throughputChart()->replotPending());
    const int before = charts.throughputChart()->replotCount();
    for (int s = 0; s < 200; ++s) {
      charts.addStep(s, s, 1, 1, 1);
      for (int d = 0; d < 16; ++d) charts.addDeviceSample(d, s, 0.5, 10, 100);
    }
    QTRY_VERIFY(!charts.throughputChart()->replotPending());
    QVERIFY(charts.throughputChart()->replotCount() - before <= 2);
    QVERIFY(charts.deviceChart()->replotCount() <= 3);
  }

  void aSlowChartReplotsLessOftenSoItCannotHogTheGuiThread() {
    // A chart whose replot takes ~30 ms (as 64 devices' rows may) waits ten times that
    // before the next; a cheap one keeps the fastest rate.
    SlowChart slow(30);
    slow.resize(400, 300);
    slow.show();
    QVERIFY(QTest::qWaitForWindowExposed(&slow));
    QCOMPARE(slow.replotIntervalMs(), gui::ChartPlot::kReplotIntervalMs);
    slow.requestReplot();
    QTRY_COMPARE(slow.replotCount(), 1);
    QVERIFY2(slow.replotIntervalMs() >= 10 * 30, qPrintable(QString::number(slow.replotIntervalMs())));
    QVERIFY(slow.replotIntervalMs() <= gui::ChartPlot::kMaxReplotIntervalMs);
    // Fed without pause for a second: a handful of replots, not thirty.
    QElapsedTimer fed;
    fed.start();
    while (fed.elapsed() < 1000) {
      slow.requestReplot();
      QTest::qWait(5);
    }
    QVERIFY2(slow.replotCount() <= 1 + 4, qPrintable(QString::number(slow.replotCount())));
    SlowChart cheap(0);
    cheap.resize(400, 300);
    cheap.show();
    QVERIFY(QTest::qWaitForWindowExposed(&cheap));
    cheap.requestReplot();
    QTRY_COMPARE(cheap.replotCount(), 1);
    QVERIFY(cheap.replotIntervalMs() < 10 * 30);
  }

  void exportsWriteValidPngAndPdf() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    LiveCharts charts;
    charts.resize(1200, 800);
    charts.setDevices(deviceNames(5));
    feedSteps(charts, 30);
    charts.addDeviceSample(0, 1, 0.5, 100, 1000);
    charts.show();
    QVERIFY(QTest::qWaitForWindowExposed(&charts));

    const QString chart_png = dir.filePath(QStringLiteral("throughput.png"));
    QVERIFY(charts.exportChart(LiveCharts::Chart::Throughput, chart_png));
    const QImage chart_image(chart_png);
    QVERIFY(!chart_image.isNull());
    QCOMPARE(chart_image.size(), charts.throughputChart()->size());

    const QString chart_pdf = dir.filePath(QStringLiteral("devices.pdf"));
    QVERIFY(charts.exportChart(LiveCharts::Chart::Devices, chart_pdf));
    QCOMPARE(fileStart(chart_pdf, 4), QByteArray("%PDF"));

    const QString sized_png = dir.filePath(QStringLiteral("loss.png"));
    QVERIFY(charts.lossChart()->exportPng(sized_png, 640, 480));
    QCOMPARE(QImage(sized_png).size(), QSize(640, 480));

    const QString dashboard_png = dir.filePath(QStringLiteral("dashboard.png"));
    QVERIFY(charts.exportPng(dashboard_png));
    const QImage dashboard(dashboard_png);
    QVERIFY(!dashboard.isNull());
    QCOMPARE(dashboard.size(), charts.size() * charts.devicePixelRatio());

    const QString dashboard_pdf = dir.filePath(QStringLiteral("dashboard.pdf"));
    QVERIFY(charts.exportPdf(dashboard_pdf));
    QCOMPARE(fileStart(dashboard_pdf, 4), QByteArray("%PDF"));
    QVERIFY(QFileInfo(dashboard_pdf).size() > 2000);

    QVERIFY(!charts.exportPng(dir.filePath(QStringLiteral("missing/dir/x.png"))));
  }
};

QTEST_MAIN(LiveChartsTest)
#include "live_charts_test.moc"
