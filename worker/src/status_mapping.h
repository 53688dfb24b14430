#pragma once
// The one table from internal errors to grpc::Status, and back for statuses that peers
// return to us.

#include <grpcpp/support/status.h>

#include <exception>
#include <string>

#include "worker_error.h"

namespace stagecraft::worker {

/// WorkerError by its code; stagecraft::Error by its kind (kErrorKinds: bad input, e.g. a
/// layer the model zoo rejects, → INVALID_ARGUMENT; a file the worker cannot read →
/// FAILED_PRECONDITION); anything else → INTERNAL.
grpc::Status toStatus(std::exception_ptr error);

/// Runs `body` and turns whatever it throws into a status.
template <typename Body>
grpc::Status guarded(Body&& body) {
  try {
    body();
    return grpc::Status::OK;
  } catch (...) {
    return toStatus(std::current_exception());
  }
}

/// "INVALID_ARGUMENT", "UNAVAILABLE", ...: the code as gRPC spells it.
std::string statusCodeName(grpc::StatusCode code);

/// "CODE: message" of whatever `error` holds, for telemetry and logs.
std::string describeError(std::exception_ptr error);

/// The WorkerError a peer's failed call means to us, with `context` before its message.
WorkerError fromStatus(const grpc::Status& status, const std::string& context);

}  // namespace stagecraft::worker
