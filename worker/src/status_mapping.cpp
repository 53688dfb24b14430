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
  const std::string_view name = grpcCodeName(static_cast<int>(code));
  return name.empty() ? "CODE_" + std::to_string(static_cast<int>(code)) : std::string(name);
}

std::string describeError(std::exception_ptr error) {
  const grpc::Status status = toStatus(error);
  return statusCodeName(status.error_code()) + ": " + status.error_message();
}

WorkerError fromStatus(const grpc::Status& status, const std::string& context) {
  return WorkerError(errorCode(status.error_code()), context + ": " + status.error_message());
}

}  // namespace stagecraft::worker
