#pragma once
// UDP beacon discovery: workers announce themselves on the LAN, consoles and the CLI
// listen. Plain POSIX sockets, no Qt: a Qt console may read datagrams with QUdpSocket and
// hand them to decodeBeacon(), or use BeaconListener on a thread.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stagecraft/v1/discovery.pb.h"

namespace stagecraft::control {

/// The UDP port workers announce on and listeners bind by default.
constexpr int kDefaultBeaconPort = 47800;
/// Every beacon datagram starts with these bytes; anything else on the port is junk.
constexpr std::string_view kBeaconMagic = "SCB1";
/// A datagram longer than this is not a beacon (a beacon is a few hundred bytes).
constexpr std::size_t kMaxBeaconBytes = 8192;

/// kBeaconMagic followed by the serialized beacon.
std::string encodeBeacon(const v1::Beacon& beacon);
/// The beacon in `datagram`, or nullopt for anything that is not one: no magic, a
/// truncated or malformed message, no name or no address port, an oversize datagram; and
/// values no worker sends (forged or broken): an unknown tier, negative or non-finite
/// figures, control characters in its text (an ESC or newline in a name), overlong text.
std::optional<v1::Beacon> decodeBeacon(std::string_view datagram);

/// `address` ("host:port") with the host replaced by `sender_ip` when the host is empty
/// or 0.0.0.0 (a worker listening on all interfaces does not know which one a listener
/// reaches it by); otherwise `address` unchanged.
std::string resolveBeaconAddress(const std::string& address, const std::string& sender_ip);

/// A beacon as a listener heard it.
struct HeardBeacon {
  v1::Beacon beacon;      ///< address already resolved against the sender (see resolveBeaconAddress)
  std::string sender_ip;  ///< the datagram's source address
  std::chrono::steady_clock::time_point heard_at;
};

/// A UDP socket bound to INADDR_ANY:`port` with SO_REUSEADDR and SO_REUSEPORT, so several
/// listeners on one machine (a console and a CLI) each receive the broadcasts. Throws
/// Error naming the port when it cannot bind.
class BeaconListener {
 public:
  explicit BeaconListener(int port = kDefaultBeaconPort);
  ~BeaconListener();
  BeaconListener(const BeaconListener&) = delete;
  BeaconListener& operator=(const BeaconListener&) = delete;

  /// The bound port (the system's pick when constructed with 0).
  int port() const { return port_; }
  /// Waits up to `timeout` for the first datagram, then takes whatever else is queued
  /// without waiting; returns the beacons among them (junk is dropped), in arrival order.
  std::vector<HeardBeacon> poll(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  int port_ = 0;
};

/// A UDP socket that sends beacons to `host`:`port` (255.255.255.255 with SO_BROADCAST,
/// or a unicast address such as 127.0.0.1). Throws Error for a host that is not an IPv4
/// address or a socket the system refuses.
class BeaconSender {
 public:
  BeaconSender(const std::string& host, int port);
  ~BeaconSender();
  BeaconSender(const BeaconSender&) = delete;
  BeaconSender& operator=(const BeaconSender&) = delete;

  /// Sends one beacon; false (with the reason in lastError()) when the system refused, e.g.
  /// no route for a broadcast. Never blocks for long: the socket is non-blocking.
  bool send(const v1::Beacon& beacon);
  const std::string& lastError() const { return last_error_; }

 private:
  int fd_ = -1;
  std::string host_;
  int port_ = 0;
  std::string last_error_;
};

/// Beacons heard over a listening window, one per worker address (the latest wins), in
/// the order first heard.
std::vector<HeardBeacon> uniqueByAddress(const std::vector<HeardBeacon>& heard);

}  // namespace stagecraft::control
