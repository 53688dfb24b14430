// BeaconDiscovery: datagrams on a UDP port in, decoded beacons with resolved addresses out.
#include <QHostAddress>
#include <QSignalSpy>
#include <QUdpSocket>
#include <QtTest>

#include "control/discovery.h"
#include "live/beacon_discovery.h"

using stagecraft::gui::BeaconDiscovery;

namespace {

QByteArray beaconDatagram(const std::string& name, const std::string& address) {
  stagecraft::v1::Beacon beacon;
  beacon.set_name(name);
  beacon.set_tier("edge");
  beacon.set_address(address);
  beacon.set_state("idle");
  beacon.set_measured_gflops(12.5);
  beacon.set_memory_mb(2048);
  const std::string bytes = stagecraft::control::encodeBeacon(beacon);
  return QByteArray(bytes.data(), static_cast<qsizetype>(bytes.size()));
}

}  // namespace

class BeaconDiscoveryTest : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void decodesBeaconsAndDropsJunk() {
    BeaconDiscovery discovery;
    QVERIFY2(discovery.start(0), qPrintable(discovery.errorString()));
    QVERIFY(discovery.listening());
    QVERIFY(discovery.port() != 0);
    QSignalSpy seen(&discovery, &BeaconDiscovery::deviceSeen);

    QUdpSocket sender;
    const QHostAddress to(QHostAddress::LocalHost);
    sender.writeDatagram(QByteArray("not a beacon"), to, discovery.port());
    sender.writeDatagram(beaconDatagram("edge-7", "0.0.0.0:50077"), to, discovery.port());
    sender.writeDatagram(beaconDatagram("edge-8", "10.1.2.3:50078"), to, discovery.port());
    QTRY_COMPARE_WITH_TIMEOUT(seen.count(), 2, 5000);

    const auto first = seen.at(0).at(0).value<stagecraft::v1::Beacon>();
    QCOMPARE(first.name(), std::string("edge-7"));
    // A worker listening on every interface is reached by the address the datagram came from.
    QCOMPARE(first.address(), std::string("127.0.0.1:50077"));
    QCOMPARE(first.measured_gflops(), 12.5);
    QCOMPARE(seen.at(1).at(0).value<stagecraft::v1::Beacon>().address(), std::string("10.1.2.3:50078"));
  }

  void listenersShareThePort() {
    BeaconDiscovery first;
    QVERIFY2(first.start(0), qPrintable(first.errorString()));
    BeaconDiscovery second;
    QVERIFY2(second.start(first.port()), qPrintable(second.errorString()));
    QCOMPARE(second.port(), first.port());
    // So does the core's listener (`stagecraft-cli discover`).
    stagecraft::control::BeaconListener cli(first.port());
    QCOMPARE(cli.port(), int(first.port()));
    first.stop();
    QVERIFY(!first.listening());
    QCOMPARE(first.port(), quint16(0));
  }
};

QTEST_MAIN(BeaconDiscoveryTest)
#include "beacon_discovery_test.moc"
