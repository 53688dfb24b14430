#include "io/error.h"

namespace stagecraft {
namespace {

// gRPC's status codes by number (grpc/impl/codegen/status.h); core links no gRPC, and
// tests/core/error_kinds_test.cpp checks these against grpc::StatusCode.
constexpr int kGrpcCancelled = 1;
constexpr int kGrpcUnknown = 2;
constexpr int kGrpcInvalidArgument = 3;
constexpr int kGrpcDeadlineExceeded = 4;
constexpr int kGrpcNotFound = 5;
constexpr int kGrpcAlreadyExists = 6;
constexpr int kGrpcPermissionDenied = 7;
constexpr int kGrpcResourceExhausted = 8;
constexpr int kGrpcFailedPrecondition = 9;
constexpr int kGrpcAborted = 10;
constexpr int kGrpcOutOfRange = 11;
constexpr int kGrpcUnimplemented = 12;
constexpr int kGrpcInternal = 13;
constexpr int kGrpcUnavailable = 14;
constexpr int kGrpcDataLoss = 15;
constexpr int kGrpcUnauthenticated = 16;

struct CodeName {
  int code;
  std::string_view name;
};

constexpr CodeName kCodeNames[] = {
    {0, "OK"},
    {kGrpcCancelled, "CANCELLED"},
    {kGrpcUnknown, "UNKNOWN"},
    {kGrpcInvalidArgument, "INVALID_ARGUMENT"},
    {kGrpcDeadlineExceeded, "DEADLINE_EXCEEDED"},
    {kGrpcNotFound, "NOT_FOUND"},
    {kGrpcAlreadyExists, "ALREADY_EXISTS"},
    {kGrpcPermissionDenied, "PERMISSION_DENIED"},
    {kGrpcResourceExhausted, "RESOURCE_EXHAUSTED"},
    {kGrpcFailedPrecondition, "FAILED_PRECONDITION"},
    {kGrpcAborted, "ABORTED"},
    {kGrpcOutOfRange, "OUT_OF_RANGE"},
    {kGrpcUnimplemented, "UNIMPLEMENTED"},
    {kGrpcInternal, "INTERNAL"},
    {kGrpcUnavailable, "UNAVAILABLE"},
    {kGrpcDataLoss, "DATA_LOSS"},
    {kGrpcUnauthenticated, "UNAUTHENTICATED"},
};

}  // namespace

ErrorKind errorKindOfGrpcCode(int grpc_code) {
  switch (grpc_code) {
    case kGrpcInvalidArgument:
    case kGrpcNotFound:
    case kGrpcPermissionDenied:
    case kGrpcResourceExhausted:
    case kGrpcOutOfRange:
      return ErrorKind::InvalidInput;
    case kGrpcCancelled:
    case kGrpcDeadlineExceeded:
    case kGrpcAlreadyExists:
    case kGrpcFailedPrecondition:
    case kGrpcAborted:
    case kGrpcUnavailable:
    case kGrpcUnauthenticated:
      return ErrorKind::Environment;
    case kGrpcUnknown:
    case kGrpcUnimplemented:
    case kGrpcInternal:
    case kGrpcDataLoss:
    default:
      return ErrorKind::Protocol;
  }
}

std::string_view grpcCodeName(int grpc_code) {
  for (const auto& c : kCodeNames) {
    if (c.code == grpc_code) return c.name;
  }
  return {};
}

ErrorKind errorKindOfReport(std::string_view report) {
  const auto colon = report.find(':');
  if (colon == std::string_view::npos) return ErrorKind::Protocol;
  const std::string_view name = report.substr(0, colon);
  for (const auto& c : kCodeNames) {
    if (c.code != 0 && c.name == name) return errorKindOfGrpcCode(c.code);
  }
  return ErrorKind::Protocol;
}

}  // namespace stagecraft
