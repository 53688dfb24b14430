// The one table of error kinds: its gRPC codes are gRPC's, failed calls map to the kind a
// user acts on, and the worker's reports keep their kind through the coordinator.
#include <gtest/gtest.h>
#include <grpcpp/support/status.h>

#include <set>

#include "control/worker_status.h"
#include "io/error.h"

namespace stagecraft {
namespace {

TEST(ErrorKinds, TheTableHasOneRowPerKindWithGrpcsOwnCodes) {
  ASSERT_EQ(std::size(kErrorKinds), 4u);
  std::set<int> exits;
  for (size_t i = 0; i < std::size(kErrorKinds); ++i) {
    EXPECT_EQ(static_cast<size_t>(kErrorKinds[i].kind), i) << "rows follow the enum";
    EXPECT_TRUE(exits.insert(kErrorKinds[i].exit_status).second) << "each kind its own exit status";
    // Outcomes, not errors: 0 done, 1 the training failed, 3 no plan fits.
    EXPECT_NE(kErrorKinds[i].exit_status, 0);
    EXPECT_NE(kErrorKinds[i].exit_status, 1);
    EXPECT_NE(kErrorKinds[i].exit_status, 3);
  }
  EXPECT_EQ(errorKindInfo(ErrorKind::InvalidInput).grpc_code, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(errorKindInfo(ErrorKind::Environment).grpc_code, grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(errorKindInfo(ErrorKind::Protocol).grpc_code, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(errorKindInfo(ErrorKind::Internal).grpc_code, grpc::StatusCode::INTERNAL);
  EXPECT_EQ(errorKindInfo(ErrorKind::InvalidInput).exit_status, 2) << "scripts rely on 2 for bad input";
}

TEST(ErrorKinds, AnErrorIsBadInputUnlessItSaysOtherwise) {
  EXPECT_EQ(Error("--batch must be positive").kind(), ErrorKind::InvalidInput);
  EXPECT_EQ(environmentError("port 50051 is in use").kind(), ErrorKind::Environment);
  EXPECT_EQ(protocolError("sent layers twice").kind(), ErrorKind::Protocol);
  EXPECT_STREQ(environmentError("port 50051 is in use").what(), "port 50051 is in use");
}

TEST(ErrorKinds, AFailedCallMeansTheKindAUserActsOn) {
  using grpc::StatusCode;
  const auto kindOf = [](StatusCode code) { return errorKindOfGrpcCode(static_cast<int>(code)); };
  EXPECT_EQ(kindOf(StatusCode::UNAVAILABLE), ErrorKind::Environment);
  EXPECT_EQ(kindOf(StatusCode::DEADLINE_EXCEEDED), ErrorKind::Environment);
  EXPECT_EQ(kindOf(StatusCode::UNAUTHENTICATED), ErrorKind::Environment);
  EXPECT_EQ(kindOf(StatusCode::FAILED_PRECONDITION), ErrorKind::Environment);
  EXPECT_EQ(kindOf(StatusCode::INVALID_ARGUMENT), ErrorKind::InvalidInput);
  EXPECT_EQ(kindOf(StatusCode::PERMISSION_DENIED), ErrorKind::InvalidInput);
  EXPECT_EQ(kindOf(StatusCode::RESOURCE_EXHAUSTED), ErrorKind::InvalidInput);
  EXPECT_EQ(kindOf(StatusCode::INTERNAL), ErrorKind::Protocol);
  EXPECT_EQ(kindOf(StatusCode::UNIMPLEMENTED), ErrorKind::Protocol);
  EXPECT_EQ(kindOf(StatusCode::DATA_LOSS), ErrorKind::Protocol);
}

TEST(ErrorKinds, CodesAreNamedAsGrpcSpellsThem) {
  EXPECT_EQ(grpcCodeName(static_cast<int>(grpc::StatusCode::OK)), "OK");
  EXPECT_EQ(grpcCodeName(static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT)), "INVALID_ARGUMENT");
  EXPECT_EQ(grpcCodeName(static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)), "UNAUTHENTICATED");
  EXPECT_EQ(grpcCodeName(17), "");
}

TEST(ErrorKinds, WhatAWorkerReportsKeepsItsKind) {
  EXPECT_EQ(errorKindOfReport("INVALID_ARGUMENT: loss: output [4, 10] and labels [4]"), ErrorKind::InvalidInput);
  EXPECT_EQ(errorKindOfReport("FAILED_PRECONDITION: MNIST images '/d/x': cannot open the file"), ErrorKind::Environment);
  EXPECT_EQ(errorKindOfReport("UNAVAILABLE: peer 'b' is not reachable"), ErrorKind::Environment);
  EXPECT_EQ(errorKindOfReport("no code: something odd"), ErrorKind::Protocol);
  EXPECT_EQ(errorKindOfReport(""), ErrorKind::Protocol);
}

TEST(ErrorKinds, AWorkerErrorTakesItsKindFromItsStatusOrIsAProtocolBreach) {
  using control::WorkerError;
  EXPECT_EQ(WorkerError("a", "not reachable", static_cast<int>(grpc::StatusCode::UNAVAILABLE)).kind(),
            ErrorKind::Environment);
  EXPECT_EQ(WorkerError("a", "rejected Deploy", static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT)).kind(),
            ErrorKind::InvalidInput);
  EXPECT_EQ(WorkerError("a", "reported step 3 twice").kind(), ErrorKind::Protocol);
  const WorkerError silent("a", "sent no telemetry for 5 s", ErrorKind::Environment);
  EXPECT_EQ(silent.kind(), ErrorKind::Environment);
  EXPECT_EQ(silent.grpcCode(), -1) << "no call failed";
  EXPECT_FALSE(silent.timedOut());
}

}  // namespace
}  // namespace stagecraft
