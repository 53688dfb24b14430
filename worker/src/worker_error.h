#pragma once
// Errors the worker raises internally. They become grpc::Status in one place
// (status_mapping.h); nothing else picks status codes.

#include <stdexcept>
#include <string>

namespace stagecraft::worker {

enum class ErrorCode {
  Invalid = 0,
  InvalidArgument,     ///< a bad assignment, tensor or request
  FailedPrecondition,  ///< not deployed yet, already training, wrong job
  NotFound,            ///< a backup that is not held
  ResourceExhausted,   ///< the stage does not fit the worker's memory
  Unavailable,         ///< a peer cannot be reached
  DeadlineExceeded,    ///< a peer did not deliver in time
  Aborted,             ///< the job was stopped
  Internal,            ///< a broken invariant
  PermissionDenied,    ///< a data file outside the worker's --data-dir
};

/// An error with the status class it belongs to; the message is one line.
class WorkerError : public std::runtime_error {
 public:
  WorkerError(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace stagecraft::worker
