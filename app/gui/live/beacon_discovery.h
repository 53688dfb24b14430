#pragma once

#include <QObject>
#include <QString>

#include "control/discovery.h"
#include "stagecraft/v1/discovery.pb.h"

class QUdpSocket;

namespace stagecraft::gui {

/// Listens for the UDP beacons workers send (core/control/discovery.h) on the GUI thread's
/// event loop: each datagram that decodes as a beacon becomes deviceSeen(), with its
/// address resolved against the sender; anything else on the port is dropped. The socket
/// shares its port (ShareAddress | ReuseAddressHint), so a console and a CLI `discover` can
/// listen at once.
class BeaconDiscovery : public QObject {
  Q_OBJECT

 public:
  explicit BeaconDiscovery(QObject* parent = nullptr);
  ~BeaconDiscovery() override;

  /// Binds every IPv4 interface on `port` (0: one the system picks, see port()). False,
  /// with the reason in errorString(), when the port cannot be bound.
  bool start(quint16 port = static_cast<quint16>(control::kDefaultBeaconPort));
  void stop();
  bool listening() const;
  /// The bound port, 0 when not listening.
  quint16 port() const;
  /// Why start() failed, as one sentence.
  QString errorString() const { return error_; }

 Q_SIGNALS:
  /// A worker announced itself; beacon.address() is host:port as this console reaches it.
  void deviceSeen(const stagecraft::v1::Beacon& beacon);

 private:
  void readPending();

  QUdpSocket* socket_ = nullptr;
  QString error_;
};

}  // namespace stagecraft::gui
