#include "control/worker_status.h"

#include <grpcpp/support/status.h>

#include <array>

#include "control/cluster_token.h"
#include "control/transport_security.h"

namespace stagecraft::control {
namespace {

/// Seconds for a message: "5 s", "0.5 s".
std::string seconds(std::chrono::milliseconds ms) {
  const long long v = ms.count();
  if (v % 1000 == 0) return std::to_string(v / 1000) + " s";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 100) + " s";
}

/// gRPC reports a refused or dropped connection as UNAVAILABLE with one of these; a
/// worker that cannot reach a peer uses UNAVAILABLE with its own message.
bool isTransportFailure(std::string_view message) {
  constexpr std::array<std::string_view, 9> kMarks = {
      "failed to connect", "Connection refused", "connections to all backends failing",
      "Socket closed",     "Connection reset",   "DNS resolution failed",
      "Broken pipe",       "No route to host",   "Network is unreachable"};
  if (message.empty()) return true;
  for (auto mark : kMarks) {
    if (message.find(mark) != std::string_view::npos) return true;
  }
  return false;
}

/// A failed TLS handshake, as gRPC words it ("Ssl handshake failed", "certificate verify
/// failed", "WRONG_VERSION_NUMBER" for plain TCP meeting TLS...).
bool isTlsFailure(std::string_view message) {
  constexpr std::array<std::string_view, 7> kMarks = {"andshake", "SSL", "Ssl", "certificate", "CERTIFICATE",
                                                      "WRONG_VERSION_NUMBER", "TLS"};
  for (auto mark : kMarks) {
    if (message.find(mark) != std::string_view::npos) return true;
  }
  return false;
}

/// What to check when TLS does not come together, by whether this side talks TLS.
std::string tlsHint() {
  return clientTlsEnabled()
             ? "is the worker's certificate signed by --tls-ca, and this side's (--tls-cert) by the CA the worker trusts?"
             : "a worker started with --tls-* needs --tls-cert, --tls-key and --tls-ca here too";
}

}  // namespace

std::string WorkerEndpoint::label() const { return "worker '" + name + "' (" + address + ")"; }

std::string oneLine(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const bool space = c == '\n' || c == '\r' || c == '\t' || c == ' ';
    if (space) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool isConnectionFailure(const grpc::Status& status) {
  const std::string& detail = status.error_message();
  return status.error_code() == grpc::StatusCode::UNAVAILABLE && !isTlsFailure(detail) && isTransportFailure(detail);
}

std::string describeStatus(const WorkerEndpoint& worker, std::string_view call, const grpc::Status& status,
                           std::chrono::milliseconds deadline) {
  const std::string who = worker.label();
  const std::string what(call);
  const std::string detail = oneLine(status.error_message());
  const std::string suffix = detail.empty() ? "" : ": " + detail;
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return who + ": " + what + " succeeded";
    case grpc::StatusCode::UNAVAILABLE:
      if (isTlsFailure(detail)) {
        return who + " and this side do not agree on TLS" + suffix + " (" + tlsHint() + ")";
      }
      // Something listens there but hangs up before a word: a TLS worker meeting plain TCP,
      // or refusing this side's certificate.
      if (detail.find("Socket closed") != std::string::npos) {
        return who + " closed the connection before answering " + what + ": most likely a TLS mismatch (" + tlsHint() +
               ")";
      }
      if (isTransportFailure(detail)) return who + " is not reachable";
      return who + " cannot reach a peer during " + what + suffix;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return who + " did not answer " + what + " within " + seconds(deadline);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return who + " rejected " + what + suffix;
    case grpc::StatusCode::FAILED_PRECONDITION:
      return who + " is not ready for " + what + suffix;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return who + " ran out of resources in " + what + suffix;
    case grpc::StatusCode::ABORTED:
      return who + " aborted " + what + suffix;
    case grpc::StatusCode::CANCELLED:
      return what + " to " + who + " was cancelled";
    case grpc::StatusCode::UNIMPLEMENTED:
      return who + " does not implement " + what + " (is it a stagecraft-worker of this version?)";
    case grpc::StatusCode::UNAUTHENTICATED:
      return who + " refused " + what + suffix + " (give the cluster's token file: --token-file PATH or " +
             kTokenFileVariable + ")";
    case grpc::StatusCode::PERMISSION_DENIED:
      return who + " refused " + what + suffix;
    case grpc::StatusCode::NOT_FOUND:
      return who + " does not know what " + what + " asked for" + suffix;
    case grpc::StatusCode::INTERNAL:
      return who + " failed in " + what + " (internal error)" + suffix;
    default:
      return who + " failed in " + what + " (status " + std::to_string(static_cast<int>(status.error_code())) + ")" +
             suffix;
  }
}

WorkerError workerFailure(const WorkerEndpoint& worker, std::string_view call, const grpc::Status& status,
                          std::chrono::milliseconds deadline) {
  return WorkerError(worker.name, describeStatus(worker, call, status, deadline),
                     static_cast<int>(status.error_code()));
}

bool WorkerError::timedOut() const { return grpc_code_ == static_cast<int>(grpc::StatusCode::DEADLINE_EXCEEDED); }

}  // namespace stagecraft::control
