#include "control/net.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "io/error.h"

namespace stagecraft::control {
namespace {

/// A TCP socket bound to 127.0.0.1:`port` (0: any), or -1.
int bindLoopback(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  // As gRPC servers do: connections of an earlier listener in TIME_WAIT do not hold the port.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::optional<HostPort> splitHostPort(std::string_view address) {
  std::string_view host;
  std::string_view port;
  if (address.starts_with('[')) {
    const auto close = address.find(']');
    if (close == std::string_view::npos || close + 1 >= address.size() || address[close + 1] != ':')
      return std::nullopt;
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const auto colon = address.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return std::nullopt;  // a bare IPv6 literal
  }
  int value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value <= 0 || value > 65535) return std::nullopt;
  return HostPort{std::string(host), value};
}

std::string joinHostPort(std::string_view host, int port) {
  if (host.find(':') != std::string_view::npos) return "[" + std::string(host) + "]:" + std::to_string(port);
  return std::string(host) + ":" + std::to_string(port);
}

bool isLoopbackHost(std::string_view host) { return host == "localhost" || host == "::1" || host.starts_with("127."); }

std::vector<int> freeLoopbackPorts(int count) {
  std::vector<int> fds;
  std::vector<int> ports;
  for (int i = 0; i < count; ++i) {
    const int fd = bindLoopback(0);
    sockaddr_in addr{};
    socklen_t len = sizeof addr;
    if (fd < 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      const std::string reason = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      for (int f : fds) ::close(f);
      throw environmentError("cannot find a free TCP port on 127.0.0.1 (" + reason + ")");
    }
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int f : fds) ::close(f);
  return ports;
}

bool loopbackPortIsFree(int port) {
  const int fd = bindLoopback(port);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

}  // namespace stagecraft::control
