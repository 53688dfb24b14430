// DeviceModel: rows from a cluster file, drags carrying device names, and live status from
// heartbeats against in-process fake workers (no LibTorch, no real worker needed).
#include <QAbstractItemModelTester>
#include <QIcon>
#include <QMimeData>
#include <QSignalSpy>
#include <QtTest>
#include <memory>

#include "cluster/cluster.h"
#include "control/net.h"
#include "control/worker_client.h"
#include "fake_worker.h"
#include "models/device_model.h"
#include "models/mime_types.h"

using namespace std::chrono_literals;
using stagecraft::Cluster;
using stagecraft::gui::DeviceModel;
using stagecraft::gui::DeviceStatus;
using stagecraft::testing::FakeWorkerScript;
using stagecraft::testing::FakeWorkerServer;

namespace {

constexpr int kTimeoutMs = 10'000;

Cluster clusterOf(const std::vector<std::pair<std::string, std::string>>& devices) {
  stagecraft::v1::Cluster proto;
  proto.set_name("fakes");
  for (const auto& [name, address] : devices) {
    auto* d = proto.add_devices();
    d->set_name(name);
    d->set_tier("edge");
    d->set_gflops(10);
    d->set_memory_mb(512);
    d->set_bandwidth_mbps(100);
    d->set_address(address);
  }
  return Cluster::fromProto(proto);
}

FakeWorkerScript script(const std::string& name) {
  FakeWorkerScript s;
  s.name = name;
  s.slowdown = 4;  // Describe reports 100 / slowdown GFLOP/s
  return s;
}

}  // namespace

class DeviceModelTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void loadClusterGivesOneRowPerDevice() {
    DeviceModel model;
    model.setMonitoring(false);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    const Cluster cluster = Cluster::load(STAGECRAFT_TEST_CLUSTERS "/cloud-edge-end.json");
    model.loadCluster(cluster);
    QCOMPARE(model.rowCount(), cluster.size());
    QCOMPARE(model.columnCount(), int(DeviceModel::ColumnCount));
    for (int i = 0; i < cluster.size(); ++i) {
      QCOMPARE(model.data(model.index(i, DeviceModel::NameColumn)).toString(),
               QString::fromStdString(cluster.device(i).name));
      QCOMPARE(model.status(model.nameAt(i)), DeviceStatus::Unknown);
      QVERIFY(!model.data(model.index(i, DeviceModel::StatusColumn), Qt::DecorationRole).isNull());
      QVERIFY(!model.data(model.index(i, DeviceModel::StatusColumn), Qt::ToolTipRole).toString().isEmpty());
    }
    // The cluster for planning keeps the file's devices and links.
    const Cluster planned = model.cluster();
    QCOMPARE(planned.size(), cluster.size());
    QCOMPARE(planned.bandwidthMbps(0, 1), cluster.bandwidthMbps(0, 1));
    QVERIFY(model.liveDevices().isEmpty());
  }

  void mimeDataCarriesTheDraggedDeviceNames() {
    DeviceModel model;
    model.setMonitoring(false);
    model.loadCluster(Cluster::load(STAGECRAFT_TEST_CLUSTERS "/cloud-edge-end.json"));
    QVERIFY(model.flags(model.index(1, 0)) & Qt::ItemIsDragEnabled);
    QCOMPARE(model.mimeTypes(), QStringList{stagecraft::gui::kDevicesMimeType});
    // Several columns of one row count once; rows come in row order.
    std::unique_ptr<QMimeData> data(model.mimeData(
        {model.index(3, 0), model.index(1, 2), model.index(1, 0)}));
    QVERIFY(data);
    QCOMPARE(stagecraft::gui::devicesFromMimeData(data.get()), (QStringList{model.nameAt(1), model.nameAt(3)}));
  }

  void stageOfDeviceIsShown() {
    DeviceModel model;
    model.setMonitoring(false);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.loadCluster(Cluster::load(STAGECRAFT_TEST_CLUSTERS "/cloud-edge-end.json"));
    model.setStageOfDevice(model.nameAt(2), 1);
    QCOMPARE(model.data(model.index(2, DeviceModel::StageColumn)).toString(), QStringLiteral("1"));
    QCOMPARE(model.data(model.index(2, 0), DeviceModel::StageRole).toInt(), 1);
    model.clearStages();
    QCOMPARE(model.data(model.index(2, 0), DeviceModel::StageRole).toInt(), -1);
  }

  void aPassOfChangesIsAnnouncedOnceAndAnUnchangedProbeRoundNotAtAll() {
    // A view sizing its columns to their contents measures every row on each dataChanged:
    // a re-plan over 64 devices used to announce each row twice (the GUI thread stalled
    // ~0.6 s), and every probe round announced every row.
    FakeWorkerServer a(script("edge-a")), b(script("edge-b"));
    std::vector<std::pair<std::string, std::string>> devices{{"edge-a", a.address()}, {"edge-b", b.address()}};
    for (int i = 0; i < 6; ++i) devices.push_back({"idle-" + std::to_string(i), ""});
    DeviceModel model;
    model.setMonitoring(false);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.loadCluster(clusterOf(devices));
    QSignalSpy changes(&model, &QAbstractItemModel::dataChanged);
    model.clearStages();
    for (int row = 0; row < model.rowCount(); ++row) model.setStageOfDevice(model.nameAt(row), row == 0 ? -1 : row % 3);
    QCOMPARE(model.data(model.index(4, 0), DeviceModel::StageRole).toInt(), 1);  // shown at once
    QCOMPARE(changes.count(), 0);                                                // announced later,
    QTRY_COMPARE_WITH_TIMEOUT(changes.count(), 1, kTimeoutMs);                   // once, for all rows
    QCOMPARE(changes.first().at(0).toModelIndex().row(), 1);  // row 0 kept its -1
    QCOMPARE(changes.first().at(1).toModelIndex().row(), 7);
    QCOMPARE(changes.first().at(1).toModelIndex().column(), DeviceModel::ColumnCount - 1);

    // Probe rounds: the first changes both workers' rows; the next one, which finds the same
    // answers, changes nothing and announces nothing. (A round the model's start began may
    // arrive first: monitoring stops only after it.)
    QSignalSpy rounds(&model, &DeviceModel::probeRoundApplied);
    model.probeNow();
    QTRY_VERIFY_WITH_TIMEOUT(
        model.status("edge-a") == DeviceStatus::Reachable && model.status("edge-b") == DeviceStatus::Reachable,
        kTimeoutMs);
    QTRY_COMPARE_WITH_TIMEOUT(changes.count(), 2, kTimeoutMs);
    QCOMPARE(changes.last().at(0).toModelIndex().row(), 0);
    QCOMPARE(changes.last().at(1).toModelIndex().row(), 1);
    const auto applied = rounds.count();
    model.probeNow();
    QTRY_VERIFY_WITH_TIMEOUT(rounds.count() > applied, kTimeoutMs);
    QCoreApplication::processEvents();  // a change would be announced by now
    QCOMPARE(changes.count(), 2);
  }

  void beaconsMergeByAddressThenByName() {
    DeviceModel model;
    model.setMonitoring(false);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.loadCluster(clusterOf({{"edge-a", "10.0.0.5:50051"}, {"edge-b", ""}}));
    stagecraft::v1::Beacon beacon;
    beacon.set_name("renamed");
    beacon.set_tier("edge");
    beacon.set_address("10.0.0.5:50051");
    beacon.set_state("training");
    beacon.set_job("job-2");
    beacon.set_measured_gflops(30);
    beacon.set_memory_mb(1024);
    QCOMPARE(model.mergeBeacon(beacon), 0);  // same address: the file's edge-a
    QCOMPARE(model.nameAt(0), QStringLiteral("edge-a"));
    // A beacon is a hint anyone can send: only the worker's Describe answer says it is up.
    QCOMPARE(model.status("edge-a"), DeviceStatus::Unknown);
    beacon.set_name("edge-b");
    beacon.set_address("10.0.0.6:50051");
    beacon.set_state("idle");
    QCOMPARE(model.mergeBeacon(beacon), 1);  // same name, no address yet: edge-b gets this one
    QCOMPARE(model.data(model.index(1, DeviceModel::AddressColumn)).toString(), QStringLiteral("10.0.0.6:50051"));
    QCOMPARE(model.status("edge-b"), DeviceStatus::Unknown);
    // A beacon naming a device that has an address elsewhere does not move it.
    QSignalSpy conflicts(&model, &DeviceModel::beaconConflict);
    beacon.set_name("edge-a");
    beacon.set_address("10.0.0.66:50051");
    QCOMPARE(model.mergeBeacon(beacon), -1);
    QCOMPARE(model.data(model.index(0, DeviceModel::AddressColumn)).toString(), QStringLiteral("10.0.0.5:50051"));
    QCOMPARE(model.rowCount(), 2);
    QCOMPARE(conflicts.count(), 1);
    QCOMPARE(conflicts.first().at(1).toString(), QStringLiteral("10.0.0.5:50051"));
    QCOMPARE(conflicts.first().at(2).toString(), QStringLiteral("10.0.0.66:50051"));
    beacon.set_name("end-new");
    beacon.set_address("10.0.0.7:50051");
    beacon.set_tier("end");
    QCOMPARE(model.mergeBeacon(beacon), 2);  // neither: a new row
    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.cluster().device(2).tier, stagecraft::Tier::End);
    QCOMPARE(model.cluster().device(2).gflops, 30.0);
    QVERIFY(model.data(model.index(2, DeviceModel::NameColumn), Qt::DecorationRole).isNull());

    // A worker that answers every caller is marked, and the tooltip says why that matters.
    beacon.set_insecure(true);
    QCOMPARE(model.mergeBeacon(beacon), 2);
    QVERIFY(!model.data(model.index(2, DeviceModel::NameColumn), Qt::DecorationRole).isNull());
    const QString tip = model.data(model.index(2, DeviceModel::NameColumn), Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QLatin1String("--insecure")) && tip.contains(QLatin1String("--token-file")), qPrintable(tip));
    QVERIFY(!model.data(model.index(1, DeviceModel::NameColumn), Qt::ToolTipRole).toString().contains(
        QLatin1String("--insecure")));
  }

  void heartbeatsMoveStatusThroughReachableBusyAndLost() {
    auto alive = std::make_unique<FakeWorkerServer>(script("edge-a"));
    FakeWorkerServer steady(script("edge-b"));
    const int silent_port = stagecraft::control::freeLoopbackPorts(1).front();
    DeviceModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setProbeInterval(100ms);
    model.setLostAfterMisses(2);
    QSignalSpy changes(&model, &DeviceModel::statusChanged);
    model.loadCluster(clusterOf({{"edge-a", alive->address()},
                                 {"edge-b", steady.address()},
                                 {"nobody", "127.0.0.1:" + std::to_string(silent_port)}}));

    QTRY_COMPARE_WITH_TIMEOUT(model.status("edge-a"), DeviceStatus::Reachable, kTimeoutMs);
    QTRY_COMPARE_WITH_TIMEOUT(model.status("edge-b"), DeviceStatus::Reachable, kTimeoutMs);
    QCOMPARE(model.liveDevices(), (QStringList{"edge-a", "edge-b"}));
    // Describe's measured speed replaces the file's.
    QCOMPARE(model.cluster().device(0).gflops, 25.0);

    // A deployed job makes it busy.
    stagecraft::control::WorkerClient client({"edge-b", steady.address()});
    stagecraft::v1::StageAssignment assignment;
    assignment.set_job("job-1");
    assignment.add_group()->set_name("edge-b");
    client.deploy(assignment, 2s);
    QTRY_COMPARE_WITH_TIMEOUT(model.status("edge-b"), DeviceStatus::Busy, kTimeoutMs);
    QVERIFY(model.data(model.index(1, 0), Qt::ToolTipRole).toString().contains("job-1"));
    // Holding a job is not training: it reads idle until it trains.
    QCOMPARE(model.data(model.index(1, DeviceModel::StatusColumn)).toString(), QStringLiteral("idle, job deployed"));

    // A worker that goes away is lost after two missed rounds; one never heard stays unknown.
    alive->shutdown();
    alive.reset();
    QTRY_COMPARE_WITH_TIMEOUT(model.status("edge-a"), DeviceStatus::Lost, kTimeoutMs);
    QCOMPARE(model.status("nobody"), DeviceStatus::Unknown);
    // Each status has its own icon, drawn once however often the view asks for it.
    const auto icon = [&](int row, int column) {
      return model.data(model.index(row, column), Qt::DecorationRole).value<QIcon>().cacheKey();
    };
    QVERIFY(icon(0, DeviceModel::StatusColumn) != icon(1, DeviceModel::StatusColumn));  // lost, busy
    QVERIFY(icon(0, DeviceModel::StatusColumn) != icon(2, DeviceModel::StatusColumn));  // lost, unknown
    QCOMPARE(icon(0, DeviceModel::NameColumn), icon(0, DeviceModel::StatusColumn));     // a lost name shows it too
    QCOMPARE(icon(1, DeviceModel::StatusColumn), icon(1, DeviceModel::StatusColumn));
    QVERIFY(!model.data(model.index(2, 0), Qt::ToolTipRole).toString().isEmpty());
    QCOMPARE(model.liveDevices(), QStringList{"edge-b"});
    QCOMPARE(model.lostDevices(), QStringList{"edge-a"});
    QVERIFY(!model.plannableDevice("edge-a"));
    QVERIFY(model.plannableDevice("edge-b"));
    QVERIFY(changes.count() >= 4);

    // Stopped on purpose: "stopped", never lost, however many rounds it misses.
    QSignalSpy after_stop(&model, &DeviceModel::statusChanged);
    model.markStopped({"edge-b"});
    steady.shutdown();
    QCOMPARE(model.status("edge-b"), DeviceStatus::Unknown);
    QCOMPARE(model.data(model.index(1, DeviceModel::StatusColumn)).toString(), QStringLiteral("stopped"));
    QCOMPARE(model.lostDevices(), QStringList{"edge-a"});
    for (int round = 0; round < 4; ++round) {
      QSignalSpy probed(&model, &DeviceModel::probeRoundApplied);
      QVERIFY(probed.wait(kTimeoutMs));
    }
    QCOMPARE(model.status("edge-b"), DeviceStatus::Unknown);
    for (const QList<QVariant>& change : after_stop) {
      QVERIFY(change.at(1).value<DeviceStatus>() != DeviceStatus::Lost);
    }
  }

  void aWorkerHeardForTheFirstTimeIsAnnouncedAndHighlighted() {
    FakeWorkerServer worker(script("orin-lab"));
    DeviceModel model;
    model.setProbeInterval(100ms);
    model.loadCluster(clusterOf({{"edge-a", "10.0.0.5:50051"}}));
    QSignalSpy discovered(&model, &DeviceModel::deviceDiscovered);
    stagecraft::v1::Beacon beacon;
    beacon.set_name("orin-lab");
    beacon.set_tier("edge");
    beacon.set_address(worker.address());
    beacon.set_state("idle");
    beacon.set_measured_gflops(40);
    beacon.set_memory_mb(2048);
    QCOMPARE(model.mergeBeacon(beacon), 1);
    QCOMPARE(discovered.count(), 1);
    QCOMPARE(discovered.first().at(0).toString(), QStringLiteral("orin-lab"));
    QVERIFY(!model.data(model.index(1, 0), Qt::BackgroundRole).isNull());
    QCOMPARE(model.data(model.index(1, DeviceModel::MemoryColumn)).toString(), QStringLiteral("2.0 GiB"));
    // Heard again: not news.
    model.mergeBeacon(beacon);
    QCOMPARE(discovered.count(), 1);
    // The highlight fades by itself.
    QTRY_VERIFY_WITH_TIMEOUT(model.data(model.index(1, 0), Qt::BackgroundRole).isNull(), kTimeoutMs);
    // It can be planned on once its worker answered Describe (the beacon alone is a hint).
    QTRY_VERIFY_WITH_TIMEOUT(model.plannableDevice("orin-lab").has_value(), kTimeoutMs);
    QCOMPARE(model.plannableDevice("orin-lab")->address(), worker.address());
  }

  void aBeaconAloneIsNotEnoughToPlanOn() {
    DeviceModel model;
    model.setMonitoring(false);
    stagecraft::v1::Beacon beacon;
    beacon.set_name("forged");
    beacon.set_tier("cloud");
    beacon.set_address("10.0.0.99:50051");
    beacon.set_state("idle");
    beacon.set_measured_gflops(5000);
    beacon.set_memory_mb(65536);
    QCOMPARE(model.mergeBeacon(beacon), 0);
    QCOMPARE(model.status("forged"), DeviceStatus::Unknown);
    QVERIFY(!model.plannableDevice("forged"));
    QCOMPARE(model.data(model.index(0, DeviceModel::StatusColumn)).toString(), QStringLiteral("heard, unconfirmed"));
    const QString tip = model.data(model.index(0, DeviceModel::StatusColumn), Qt::ToolTipRole).toString();
    QVERIFY2(tip.contains(QLatin1String("has not answered Describe yet")), qPrintable(tip));
  }

  void addByAddressDescribesTheWorkerOrSaysWhyNot() {
    FakeWorkerServer worker(script("end-9"));
    DeviceModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.setProbeInterval(100ms);
    QSignalSpy added(&model, &DeviceModel::deviceAdded);
    QSignalSpy failed(&model, &DeviceModel::addFailed);

    QString error;
    QVERIFY(!model.addByAddress("no-port-here", &error));
    QVERIFY(error.contains("no-port-here"));

    QVERIFY(model.addByAddress(QString::fromStdString(worker.address())));
    QTRY_COMPARE_WITH_TIMEOUT(added.count(), 1, kTimeoutMs);
    QCOMPARE(added.first().first().toString(), QStringLiteral("end-9"));
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(model.status("end-9"), DeviceStatus::Reachable);
    QCOMPARE(model.data(model.index(0, DeviceModel::TierColumn)).toString(), QStringLiteral("edge"));

    // The same worker again updates its row instead of adding one.
    QVERIFY(model.addByAddress(QString::fromStdString(worker.address())));
    QTRY_COMPARE_WITH_TIMEOUT(added.count(), 2, kTimeoutMs);
    QCOMPARE(model.rowCount(), 1);

    const QString nowhere = QStringLiteral("127.0.0.1:%1").arg(stagecraft::control::freeLoopbackPorts(1).front());
    QVERIFY(model.addByAddress(nowhere));
    QTRY_COMPARE_WITH_TIMEOUT(failed.count(), 1, kTimeoutMs);
    QCOMPARE(failed.first().first().toString(), nowhere);
    QVERIFY(failed.first().at(1).toString().contains(nowhere));
    QCOMPARE(model.rowCount(), 1);
  }
};

QTEST_MAIN(DeviceModelTest)
#include "device_model_test.moc"
