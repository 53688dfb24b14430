#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stagecraft::control {

/// "host:port", "[v6]:port" split into host and port; nullopt when there is no port or
/// the port is not a number in 1..65535. The host keeps no brackets.
struct HostPort {
  std::string host;
  int port = 0;
};
std::optional<HostPort> splitHostPort(std::string_view address);

/// `host` and `port` as an address gRPC and c10d accept ("[::1]:7" for IPv6 literals).
std::string joinHostPort(std::string_view host, int port);

/// localhost, 127.x.x.x or ::1.
bool isLoopbackHost(std::string_view host);

/// `count` distinct TCP ports that were free on the loopback interface a moment ago
/// (bound to port 0 together, then released). Throws Error when the system has none.
std::vector<int> freeLoopbackPorts(int count);

/// True when nothing listens on (or holds) 127.0.0.1:`port` right now.
bool loopbackPortIsFree(int port);

}  // namespace stagecraft::control
