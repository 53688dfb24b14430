#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "control/worker_status.h"
#include "stagecraft/v1/worker.grpc.pb.h"

namespace grpc {
class Channel;
class ClientContext;
}

namespace stagecraft::control {

/// Messages carry whole models, profiles and stage weights: far over gRPC's 4 MiB default.
constexpr int kMaxWorkerMessageBytes = 512 * 1024 * 1024;

/// A channel to a worker with raised message limits, quick reconnects (a worker that is
/// starting answers within a second of listening) and no HTTP proxy.
std::shared_ptr<grpc::Channel> makeWorkerChannel(const std::string& address,
                                                 int max_message_bytes = kMaxWorkerMessageBytes);

/// Adds `endpoint`'s cluster token (if any) to a call's metadata, where the worker looks.
void authorizeCall(grpc::ClientContext& context, const WorkerEndpoint& endpoint);

/// Whether a call whose connection failed is sent once more. The calls that set a run up
/// (Describe, Profile, Deploy, a model file, collecting weights) are: a worker busy
/// accepting or a link that blinked should not end a deployment. The calls of a run under
/// way (Start, Stop, Heartbeat, Evaluate, the backups) and probes are not: a device that
/// refuses them is most likely gone, and the recovery must hear it at once.
enum class Resend {
  Never,
  IfConnectionFailed  ///< idempotent calls only
};

/// How long a resent call waits for the connection to come back (within its own deadline):
/// the channel retries a refused connection after 0.1 s, then 0.16 s.
constexpr std::chrono::milliseconds kReconnectWait{500};

/// The coordinator's end of one worker: every unary call has a deadline and turns a
/// failure into a WorkerError through describeStatus().
class WorkerClient {
 public:
  explicit WorkerClient(WorkerEndpoint endpoint, int max_message_bytes = kMaxWorkerMessageBytes);

  const WorkerEndpoint& endpoint() const { return endpoint_; }
  v1::Worker::Stub& stub() { return *stub_; }

  v1::WorkerInfo describe(std::chrono::milliseconds deadline, Resend resend = Resend::IfConnectionFailed);
  /// Profile and Deploy of a TorchScript model first make sure the worker holds its file
  /// (sendModelFile).
  v1::DeviceProfile profile(const v1::ProfileRequest& request, std::chrono::milliseconds deadline);
  v1::DeployReply deploy(const v1::StageAssignment& assignment, std::chrono::milliseconds deadline);
  void start(const v1::StartRequest& request, std::chrono::milliseconds deadline);
  v1::StopReply stop(const v1::StopRequest& request, std::chrono::milliseconds deadline);
  v1::HeartbeatReply heartbeat(std::chrono::milliseconds deadline);
  v1::StageWeights getWeights(const v1::GetWeightsRequest& request, std::chrono::milliseconds deadline);
  v1::BackupList listBackups(const std::string& job, std::chrono::milliseconds deadline);
  v1::StageWeights getBackup(const v1::BackupRef& ref, std::chrono::milliseconds deadline);
  v1::EvaluateReply evaluate(const v1::EvaluateRequest& request, std::chrono::milliseconds deadline);
  /// Streams the TorchScript file `script` names (its path here) to the worker in 1 MiB
  /// chunks unless the worker already holds it by hash. Throws Error when the file is gone
  /// or changed since it was imported, WorkerError when the worker refuses it.
  void sendModelFile(const v1::ScriptSource& script, std::chrono::milliseconds deadline);

 private:
  WorkerEndpoint endpoint_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Worker::Stub> stub_;
};

}  // namespace stagecraft::control
