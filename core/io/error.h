#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace stagecraft {

/// What went wrong, for whoever has to act on it. Each kind has one CLI exit status and
/// one gRPC status code (kErrorKinds: the one table both are read from).
enum class ErrorKind {
  /// A file, flag, plan, model or request that is wrong: the user fixes the input.
  InvalidInput,
  /// The machine or the network: a socket, a port in use, a process that does not start,
  /// a file that cannot be written, a worker that cannot be reached or refuses the token.
  Environment,
  /// A peer broke the protocol: a worker's answer or a message that cannot be right.
  Protocol,
  /// A bug in Stagecraft itself.
  Internal,
};

/// One row of the table of error kinds.
struct ErrorKindInfo {
  ErrorKind kind;
  std::string_view name;  ///< "invalid input", "environment", ...
  int exit_status;        ///< what stagecraft-cli exits with
  int grpc_code;          ///< the grpc::StatusCode a worker answers with (numbered as gRPC's)
};

/// The one table of error kinds, in the order of the enum. gRPC codes by number: 3
/// INVALID_ARGUMENT, 9 FAILED_PRECONDITION, 13 INTERNAL (core links no gRPC; a test checks
/// them against grpc::StatusCode). Exit statuses 0 (done), 1 (the work failed: training
/// diverged or was interrupted) and 3 (no plan fits) are outcomes, not errors; the CLI
/// defines them beside these.
inline constexpr ErrorKindInfo kErrorKinds[] = {
    {ErrorKind::InvalidInput, "invalid input", 2, 3},
    {ErrorKind::Environment, "environment", 4, 9},
    {ErrorKind::Protocol, "protocol", 5, 3},
    {ErrorKind::Internal, "internal", 70, 13},
};

/// The row of `kind`.
constexpr const ErrorKindInfo& errorKindInfo(ErrorKind kind) { return kErrorKinds[static_cast<int>(kind)]; }

/// What a failed call's grpc::StatusCode means to the caller: UNAVAILABLE, a deadline or
/// UNAUTHENTICATED is the environment; INVALID_ARGUMENT, PERMISSION_DENIED and the like
/// are the input the worker refused; INTERNAL, UNKNOWN, DATA_LOSS are a broken peer.
ErrorKind errorKindOfGrpcCode(int grpc_code);

/// A grpc::StatusCode's name as gRPC spells it ("OK", "INVALID_ARGUMENT", ...); empty for a
/// number that is no code.
std::string_view grpcCodeName(int grpc_code);

/// The kind of a failure a worker reported as text "CODE: message" (CODE as gRPC spells
/// it, e.g. "INVALID_ARGUMENT: ..."); Protocol when the text names no code.
ErrorKind errorKindOfReport(std::string_view report);

/// An error with a kind; what() is one line that names what is wrong and where, fit to be
/// printed as is. The kind defaults to InvalidInput, the common case. Misuse of an API by
/// the program itself is not an Error: it is a std::logic_error.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::InvalidInput)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

/// Error(message, ErrorKind::Environment).
inline Error environmentError(const std::string& message) { return Error(message, ErrorKind::Environment); }
/// Error(message, ErrorKind::Protocol).
inline Error protocolError(const std::string& message) { return Error(message, ErrorKind::Protocol); }

}  // namespace stagecraft
