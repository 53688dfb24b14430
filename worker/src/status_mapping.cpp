#include "status_mapping.h"

#include "io/error.h"

namespace stagecraft::worker {
namespace {

struct CodeMapping {
  ErrorCode error;
  grpc::StatusCode status;
};

constexpr CodeMapping kCodes[] = {
    {ErrorCode::InvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
    {ErrorCode::FailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
    {ErrorCode::NotFound, grpc::StatusCode::NOT_FOUND},
    {ErrorCode::ResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
    {ErrorCode::Unavailable, grpc::StatusCode::UNAVAILABLE},
    {ErrorCode::DeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
    {ErrorCode::Aborted, grpc::StatusCode::ABORTED},
    {ErrorCode::Internal, grpc::StatusCode::INTERNAL},
    {ErrorCode::PermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
};

grpc::StatusCode statusCode(ErrorCode code) {
  for (const auto& m : kCodes) {
    if (m.error == code) return m.status;
  }
  return grpc::StatusCode::INTERNAL;
}

ErrorCode errorCode(grpc::StatusCode code) {
  for (const auto& m : kCodes) {
    if (m.status == code) return m.error;
  }
  // CANCELLED, UNKNOWN, ...: the peer went away mid-call.
  return ErrorCode::Unavailable;
}

}  // namespace

grpc::Status toStatus(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const WorkerError& e) {
    return {statusCode(e.code()), e.what()};
  } catch (const stagecraft::Error& e) {
    return {static_cast<grpc::StatusCode>(errorKindInfo(e.kind()).grpc_code), e.what()};
  } catch (const std::exception& e) {
    // LibTorch's errors carry a backtrace after their first line: one line for the caller.
    std::string what = e.what();
    if (const auto nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
    return {grpc::StatusCode::INTERNAL, what};
  } catch (...) {
    return {grpc::StatusCode::INTERNAL, "unknown error"};
  }
}

std::string statusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED: return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "CODE_" + std::to_string(static_cast<int>(code));
  }
}

std::string describeError(std::exception_ptr error) {
  const grpc::Status status = toStatus(error);
  return statusCodeName(status.error_code()) + ": " + status.error_message();
}

WorkerError fromStatus(const grpc::Status& status, const std::string& context) {
  return WorkerError(errorCode(status.error_code()), context + ": " + status.error_message());
}

}  // namespace stagecraft::worker
