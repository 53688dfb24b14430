// The coordinator's pieces that need no worker: host:port parsing, gRPC status messages
// naming the worker, and folding per-member telemetry into steps.
#include <grpcpp/support/status.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "control/net.h"
#include "control/telemetry.h"
#include "control/worker_status.h"
#include "control_fixtures.h"
#include "io/error.h"

namespace stagecraft {
namespace {

using testing::iteration;

using control::StepResult;
using control::TelemetryAggregator;
using control::WorkerError;
using std::chrono::milliseconds;

TEST(ControlNet, SplitsHostAndPort) {
  EXPECT_EQ(control::splitHostPort("127.0.0.1:50051")->port, 50051);
  EXPECT_EQ(control::splitHostPort("edge-1.lan:7")->host, "edge-1.lan");
  EXPECT_EQ(control::splitHostPort("[::1]:80")->host, "::1");
  EXPECT_FALSE(control::splitHostPort("127.0.0.1"));
  EXPECT_FALSE(control::splitHostPort("host:0"));
  EXPECT_FALSE(control::splitHostPort("host:http"));
  EXPECT_EQ(control::joinHostPort("::1", 5), "[::1]:5");
}

// ---------------------------------------------------------------- status messages

TEST(ControlStatus, EachCodeReadsAsOneLineNamingTheWorker) {
  const control::WorkerEndpoint w{"edge-1", "127.0.0.1:50052"};
  const auto text = [&](grpc::StatusCode code, const std::string& message) {
    return control::describeStatus(w, "Deploy", grpc::Status(code, message), milliseconds(5000));
  };
  EXPECT_EQ(text(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses"),
            "worker 'edge-1' (127.0.0.1:50052) is not reachable");
  EXPECT_EQ(text(grpc::StatusCode::UNAVAILABLE,
                 "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:50052: Connection refused"),
            "worker 'edge-1' (127.0.0.1:50052) is not reachable");
  // Something listens but hangs up: a TLS worker, and this side talks plain TCP.
  EXPECT_EQ(text(grpc::StatusCode::UNAVAILABLE,
                 "failed to connect to all addresses; last error: UNAVAILABLE: ipv4:127.0.0.1:50052: Socket closed"),
            "worker 'edge-1' (127.0.0.1:50052) closed the connection before answering Deploy: most likely a TLS "
            "mismatch (a worker started with --tls-* needs --tls-cert, --tls-key and --tls-ca here too)");
  const std::string refused = text(grpc::StatusCode::UNAVAILABLE,
                                   "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:50052: Ssl "
                                   "handshake failed: SSL_ERROR_SSL: error:0A000086:SSL routines::certificate verify failed");
  EXPECT_EQ(refused.rfind("worker 'edge-1' (127.0.0.1:50052) and this side do not agree on TLS: ", 0), 0u) << refused;
  EXPECT_NE(refused.find("certificate verify failed"), std::string::npos) << refused;
  EXPECT_EQ(text(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded"),
            "worker 'edge-1' (127.0.0.1:50052) did not answer Deploy within 5 s");
  EXPECT_EQ(text(grpc::StatusCode::INVALID_ARGUMENT, "layer 9 out of range\nsee log"),
            "worker 'edge-1' (127.0.0.1:50052) rejected Deploy: layer 9 out of range see log");
  EXPECT_EQ(text(grpc::StatusCode::RESOURCE_EXHAUSTED, "needs 900 MB, has 512 MB"),
            "worker 'edge-1' (127.0.0.1:50052) ran out of resources in Deploy: needs 900 MB, has 512 MB");
  EXPECT_EQ(text(grpc::StatusCode::UNAVAILABLE, "peer 'edge-2' unreachable"),
            "worker 'edge-1' (127.0.0.1:50052) cannot reach a peer during Deploy: peer 'edge-2' unreachable");
  EXPECT_NE(text(grpc::StatusCode::UNIMPLEMENTED, "").find("does not implement Deploy"), std::string::npos);
  EXPECT_NE(text(grpc::StatusCode::FAILED_PRECONDITION, "not deployed").find("not ready for Deploy"),
            std::string::npos);
}

TEST(ControlStatus, OnlyAFailedConnectionIsWorthSendingAgain) {
  const auto status = [](grpc::StatusCode code, const std::string& message) { return grpc::Status(code, message); };
  const grpc::Status refused = status(grpc::StatusCode::UNAVAILABLE,
                                      "failed to connect to all addresses; last error: UNAVAILABLE: "
                                      "ipv4:127.0.0.1:50052: Connection refused");
  EXPECT_TRUE(control::isConnectionFailure(refused));
  EXPECT_TRUE(control::isConnectionFailure(status(grpc::StatusCode::UNAVAILABLE, "Connection reset by peer")));
  // A TLS disagreement does not heal by itself; a worker's own UNAVAILABLE is its news.
  const grpc::Status tls = status(grpc::StatusCode::UNAVAILABLE,
                                  "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:50052: "
                                  "Ssl handshake failed: SSL_ERROR_SSL");
  EXPECT_FALSE(control::isConnectionFailure(tls));
  EXPECT_FALSE(control::isConnectionFailure(status(grpc::StatusCode::UNAVAILABLE, "peer 'edge-2' unreachable")));
  EXPECT_FALSE(control::isConnectionFailure(status(grpc::StatusCode::DEADLINE_EXCEEDED, "Deadline Exceeded")));
  EXPECT_FALSE(control::isConnectionFailure(status(grpc::StatusCode::INTERNAL, "failed to connect")));
}

// ---------------------------------------------------------------- telemetry aggregation

std::vector<control::TelemetryMember> members(const std::vector<bool>& last_stage) {
  std::vector<control::TelemetryMember> out;
  for (size_t i = 0; i < last_stage.size(); ++i) {
    out.push_back({{"d" + std::to_string(i), "127.0.0.1:" + std::to_string(6000 + i)}, last_stage[i]});
  }
  return out;
}

TEST(ControlTelemetry, LossIsWeightedBySamplesOverLastStageMembers) {
  TelemetryAggregator agg(members({false, true, true}), 32, "j");
  // A first-stage member's loss, if it sent one, does not count.
  EXPECT_TRUE(agg.add(0, iteration("j", 1, 99.0, 5, 10)).empty());
  EXPECT_TRUE(agg.add(1, iteration("j", 1, 1.0, 24, 20)).empty());
  const auto steps = agg.add(2, iteration("j", 1, 3.0, 8, 40));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].step, 1);
  EXPECT_DOUBLE_EQ(steps[0].loss, (1.0 * 24 + 3.0 * 8) / 32);
  EXPECT_EQ(steps[0].loss_samples, 32);
  EXPECT_DOUBLE_EQ(steps[0].iteration_ms, 40);
  EXPECT_DOUBLE_EQ(steps[0].samples_per_second, 32 * 1000.0 / 40);
}

TEST(ControlTelemetry, StepCompletesOnlyWhenEveryMemberReportedIt) {
  TelemetryAggregator agg(members({false, true}), 8, "j");
  EXPECT_TRUE(agg.add(0, iteration("j", 1, 0, 0, 5)).empty());
  EXPECT_TRUE(agg.add(0, iteration("j", 2, 0, 0, 5)).empty());  // the first stage runs ahead
  EXPECT_EQ(agg.incompleteSteps(), (std::vector<std::int64_t>{1, 2}));
  auto steps = agg.add(1, iteration("j", 1, 2.0, 8, 6));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].step, 1);
  steps = agg.add(1, iteration("j", 2, 1.5, 8, 6));
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_DOUBLE_EQ(steps[0].loss, 1.5);

  // Events of another job are ignored; finished needs every member.
  EXPECT_TRUE(agg.add(1, iteration("other", 3, 7, 8, 6)).empty());
  v1::TelemetryEvent done;
  done.set_job("j");
  done.set_finished(true);
  agg.add(0, done);
  EXPECT_FALSE(agg.finished());
  agg.add(1, done);
  EXPECT_TRUE(agg.finished());
}

TEST(ControlTelemetry, ErrorEventAndDuplicateStepThrowNamingTheWorker) {
  TelemetryAggregator agg(members({false, true}), 8, "j");
  v1::TelemetryEvent error;
  error.set_job("j");
  error.set_error("CUDA out of memory");
  try {
    agg.add(1, error);
    FAIL();
  } catch (const WorkerError& e) {
    EXPECT_EQ(e.worker(), "d1");
    EXPECT_STREQ(e.what(), "worker 'd1' (127.0.0.1:6001) failed: CUDA out of memory");
  }
  agg.add(0, iteration("j", 1, 0, 0, 1));
  EXPECT_THROW(agg.add(0, iteration("j", 1, 0, 0, 1)), WorkerError);
}

}  // namespace
}  // namespace stagecraft
