#include "live/beacon_discovery.h"

#include <QHostAddress>
#include <QLoggingCategory>
#include <QNetworkDatagram>
#include <QUdpSocket>

namespace stagecraft::gui {

Q_LOGGING_CATEGORY(lcBeaconDiscovery, "stagecraft.gui.beacondiscovery")

BeaconDiscovery::BeaconDiscovery(QObject* parent) : QObject(parent) {}

BeaconDiscovery::~BeaconDiscovery() = default;

bool BeaconDiscovery::start(quint16 port) {
  stop();
  error_.clear();
  socket_ = new QUdpSocket(this);
  if (!socket_->bind(QHostAddress::AnyIPv4, port, QAbstractSocket::ShareAddress | QAbstractSocket::ReuseAddressHint)) {
    error_ = tr("Cannot listen for worker beacons on UDP port %1: %2").arg(port).arg(socket_->errorString());
    qCWarning(lcBeaconDiscovery) << error_;
    delete socket_;
    socket_ = nullptr;
    return false;
  }
  connect(socket_, &QUdpSocket::readyRead, this, &BeaconDiscovery::readPending);
  qCInfo(lcBeaconDiscovery) << "listening for beacons on UDP port" << socket_->localPort();
  return true;
}

void BeaconDiscovery::stop() {
  delete socket_;
  socket_ = nullptr;
}

bool BeaconDiscovery::listening() const { return socket_ != nullptr; }

quint16 BeaconDiscovery::port() const { return socket_ ? socket_->localPort() : 0; }

void BeaconDiscovery::readPending() {
  while (socket_ && socket_->hasPendingDatagrams()) {
    const QNetworkDatagram datagram = socket_->receiveDatagram(static_cast<qint64>(control::kMaxBeaconBytes) + 1);
    const QByteArray bytes = datagram.data();
    std::optional<v1::Beacon> beacon = control::decodeBeacon(std::string_view(bytes.constData(), bytes.size()));
    if (!beacon) continue;
    QHostAddress sender = datagram.senderAddress();
    bool is_v4 = false;
    const quint32 v4 = sender.toIPv4Address(&is_v4);  // ::ffff:a.b.c.d as a.b.c.d
    if (is_v4) sender = QHostAddress(v4);
    beacon->set_address(control::resolveBeaconAddress(beacon->address(), sender.toString().toStdString()));
    Q_EMIT deviceSeen(*beacon);
  }
}

}  // namespace stagecraft::gui
