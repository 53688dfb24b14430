#include "control/discovery.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>

#include "control/net.h"
#include "io/error.h"

namespace stagecraft::control {
namespace {

std::string systemError(const std::string& what) { return what + ": " + std::strerror(errno); }

/// The port of "host:port" (the host may be empty), or nullopt.
std::optional<int> beaconPort(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size() || address.size() - colon > 6) return std::nullopt;
  int port = 0;
  for (char c : address.substr(colon + 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    port = port * 10 + (c - '0');
  }
  if (port < 1 || port > 65535) return std::nullopt;
  return port;
}

}  // namespace

std::string encodeBeacon(const v1::Beacon& beacon) {
  std::string out(kBeaconMagic);
  beacon.AppendToString(&out);
  return out;
}

namespace {

/// Printable text of at most `limit` bytes: no control characters (an ESC in a name would
/// drive the terminal that prints it, a newline would forge a row).
bool printable(const std::string& text, std::size_t limit) {
  if (text.size() > limit) return false;
  return std::none_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

bool nonNegative(double value) { return std::isfinite(value) && value >= 0; }

/// Values a worker can send: anything else is forged or broken.
bool plausible(const v1::Beacon& b) {
  if (b.tier() != "cloud" && b.tier() != "edge" && b.tier() != "end") return false;
  if (!printable(b.name(), 128) || !printable(b.address(), 256) || !printable(b.version(), 64) ||
      !printable(b.state(), 32) || !printable(b.job(), 256)) {
    return false;
  }
  return nonNegative(b.memory_mb()) && nonNegative(b.measured_gflops()) && b.cores() >= 0 && b.interval_ms() >= 0 &&
         b.interval_ms() <= 3'600'000;
}

}  // namespace

std::optional<v1::Beacon> decodeBeacon(std::string_view datagram) {
  if (datagram.size() > kMaxBeaconBytes || datagram.substr(0, kBeaconMagic.size()) != kBeaconMagic) {
    return std::nullopt;
  }
  datagram.remove_prefix(kBeaconMagic.size());
  v1::Beacon beacon;
  if (!beacon.ParseFromArray(datagram.data(), static_cast<int>(datagram.size()))) return std::nullopt;
  if (beacon.name().empty() || !plausible(beacon)) return std::nullopt;
  // The port must be there; the host may be left for the listener to fill in.
  if (!beaconPort(beacon.address())) return std::nullopt;
  return beacon;
}

std::string resolveBeaconAddress(const std::string& address, const std::string& sender_ip) {
  const auto port = beaconPort(address);
  if (!port) return address;
  const std::string host = address.substr(0, address.rfind(':'));
  if (!host.empty() && host != "0.0.0.0" && host != "[::]") return address;
  return joinHostPort(sender_ip, *port);
}

// ---- BeaconListener ----------------------------------------------------------------

BeaconListener::BeaconListener(int port) {
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throw environmentError(systemError("beacon listener: socket"));
  const int on = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const std::string message = systemError("beacon listener: cannot bind UDP port " + std::to_string(port));
    ::close(fd_);
    throw environmentError(message);
  }
  socklen_t len = sizeof addr;
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
}

BeaconListener::~BeaconListener() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<HeardBeacon> BeaconListener::poll(std::chrono::milliseconds timeout) {
  std::vector<HeardBeacon> out;
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(0, timeout.count()))) <= 0) return out;
  char buffer[kMaxBeaconBytes + 1];
  for (;;) {
    sockaddr_in from{};
    socklen_t from_len = sizeof from;
    const ssize_t n = ::recvfrom(fd_, buffer, sizeof buffer, 0, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 0) break;  // EAGAIN: the queue is empty
    auto beacon = decodeBeacon(std::string_view(buffer, static_cast<std::size_t>(n)));
    if (!beacon) continue;
    char ip[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &from.sin_addr, ip, sizeof ip);
    HeardBeacon heard;
    heard.sender_ip = ip;
    beacon->set_address(resolveBeaconAddress(beacon->address(), heard.sender_ip));
    heard.beacon = std::move(*beacon);
    heard.heard_at = std::chrono::steady_clock::now();
    out.push_back(std::move(heard));
  }
  return out;
}

// ---- BeaconSender ------------------------------------------------------------------

BeaconSender::BeaconSender(const std::string& host, int port) : host_(host), port_(port) {
  in_addr parsed{};
  if (::inet_pton(AF_INET, host.c_str(), &parsed) != 1) {
    throw Error("beacon: '" + host + "' is not an IPv4 address");
  }
  if (port <= 0 || port > 65535) throw Error("beacon: port " + std::to_string(port) + " is out of range");
  fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd_ < 0) throw environmentError(systemError("beacon sender: socket"));
  const int on = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_BROADCAST, &on, sizeof on);
}

BeaconSender::~BeaconSender() {
  if (fd_ >= 0) ::close(fd_);
}

bool BeaconSender::send(const v1::Beacon& beacon) {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port_));
  ::inet_pton(AF_INET, host_.c_str(), &to.sin_addr);
  const std::string datagram = encodeBeacon(beacon);
  if (::sendto(fd_, datagram.data(), datagram.size(), 0, reinterpret_cast<sockaddr*>(&to), sizeof to) < 0) {
    last_error_ = systemError("beacon to " + host_ + ":" + std::to_string(port_));
    return false;
  }
  last_error_.clear();
  return true;
}

std::vector<HeardBeacon> uniqueByAddress(const std::vector<HeardBeacon>& heard) {
  std::vector<HeardBeacon> out;
  std::map<std::string, std::size_t> index;
  for (const auto& h : heard) {
    const auto [it, fresh] = index.emplace(h.beacon.address(), out.size());
    if (fresh) {
      out.push_back(h);
    } else {
      out[it->second] = h;
    }
  }
  return out;
}

}  // namespace stagecraft::control
