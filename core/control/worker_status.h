#pragma once

#include <chrono>
#include <stdexcept>
#include <string>
#include <string_view>

#include "io/error.h"

namespace grpc {
class Status;
}

namespace stagecraft::control {

/// A device's worker as the coordinator addresses it.
struct WorkerEndpoint {
  std::string name;     ///< the device's name in the cluster
  std::string address;  ///< host:port
  std::string token;    ///< the cluster token its calls carry; empty: none (an --insecure worker)

  /// "worker 'edge-1' (127.0.0.1:50052)", the way every message names a worker.
  std::string label() const;
};

/// A worker could not be reached, refused a call, failed while training or broke the
/// protocol. what() is one line that names the worker and its address, fit to be shown
/// as is.
class WorkerError : public std::runtime_error {
 public:
  /// A failed call (its grpc::StatusCode) or, with -1, a broken protocol.
  WorkerError(std::string worker, const std::string& message, int grpc_code = -1)
      : std::runtime_error(message),
        worker_(std::move(worker)),
        grpc_code_(grpc_code),
        kind_(grpc_code < 0 ? ErrorKind::Protocol : errorKindOfGrpcCode(grpc_code)) {}
  /// A failure that was no call's status, of the kind given.
  WorkerError(std::string worker, const std::string& message, ErrorKind kind)
      : std::runtime_error(message), worker_(std::move(worker)), kind_(kind) {}
  /// The device whose worker failed.
  const std::string& worker() const { return worker_; }
  /// The failed call's grpc::StatusCode; -1 when the failure was not a call's status
  /// (a telemetry report, a protocol error).
  int grpcCode() const { return grpc_code_; }
  /// The worker did not answer within the call's deadline (alive but stalled, or a host
  /// that drops packets).
  bool timedOut() const;
  /// What the failure means to the user (kErrorKinds): a worker that cannot be reached is
  /// the environment, one that refused a request the input, a broken answer the protocol.
  ErrorKind kind() const { return kind_; }

 private:
  std::string worker_;
  int grpc_code_ = -1;
  ErrorKind kind_ = ErrorKind::Protocol;
};

/// The one table from a failed call's grpc::Status to what a user reads, e.g.
/// UNAVAILABLE on connect -> "worker 'edge-1' (127.0.0.1:50052) is not reachable".
/// `call` is the RPC ("Describe"), `deadline` the limit the call had.
std::string describeStatus(const WorkerEndpoint& worker, std::string_view call, const grpc::Status& status,
                           std::chrono::milliseconds deadline);

/// The call failed on its connection (refused, reset, closed, no route), not in the worker.
bool isConnectionFailure(const grpc::Status& status);

/// describeStatus() as an exception.
WorkerError workerFailure(const WorkerEndpoint& worker, std::string_view call, const grpc::Status& status,
                          std::chrono::milliseconds deadline);

/// `text` on one line: newlines and tabs become spaces, runs of spaces collapse.
std::string oneLine(std::string_view text);

}  // namespace stagecraft::control
