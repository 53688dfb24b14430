#pragma once

#include <functional>
#include <string>

#include "stagecraft/v1/group_store.grpc.pb.h"
#include "stagecraft/v1/worker.grpc.pb.h"
#include "tensor_channel.h"

namespace stagecraft::worker {

class WorkerNode;

/// OK, or UNAUTHENTICATED when the call does not carry `token` (compared in constant time;
/// an empty `token` lets everyone in).
grpc::Status authorizeCaller(const grpc::ServerContextBase& context, const std::string& token);

/// Reads one Push stream on gRPC's callback threads, raw: each message's header is parsed
/// and its tensor bytes copied once from gRPC's slices to their place (push_wire.h), a
/// tensor sent in pieces (PeerOutbox) assembled piece by piece as they arrive, and each
/// tensor handed to `receive` as soon as it is whole; `receive` must not block. What
/// `receive` throws, or a message that is no PeerTensor, ends the stream with that error's
/// status. `reply` is the call's response, set to an empty PushReply. A synchronous
/// handler's Read costs a hand-off between threads per message (about 0.4 ms of a 4 MiB
/// activation's 1.9 ms on loopback, bench_data_path).
grpc::ServerReadReactor<grpc::ByteBuffer>* readPushStream(grpc::ByteBuffer* reply, PushReceiver receive);
/// A Push stream refused before its first message (an unauthenticated caller).
grpc::ServerReadReactor<grpc::ByteBuffer>* refusePushStream(grpc::Status status);

/// The gRPC face of a WorkerNode: checks the caller's cluster token, unpacks requests,
/// delegates, maps errors (through status_mapping.h, nowhere else). Push, the stream of
/// activations and gradients, is served by callbacks (readPushStream); the rest by gRPC's
/// synchronous thread pool.
class WorkerService final : public v1::Worker::WithRawCallbackMethod_Push<v1::Worker::Service> {
 public:
  /// `token`: what every call must carry under control::kTokenMetadataKey; empty: nothing
  /// (an --insecure worker).
  WorkerService(WorkerNode& node, std::string token);
  /// The tensor channel OpenTensorChannel grants tickets of (null: none, port 0). Before the
  /// server starts.
  void setTensorChannel(TensorChannelServer* channel) { channel_ = channel; }

  grpc::Status Describe(grpc::ServerContext*, const v1::DescribeRequest*, v1::WorkerInfo* reply) override;
  grpc::Status Profile(grpc::ServerContext*, const v1::ProfileRequest* request, v1::DeviceProfile* reply) override;
  grpc::Status Deploy(grpc::ServerContext*, const v1::StageAssignment* request, v1::DeployReply* reply) override;
  grpc::Status Start(grpc::ServerContext*, const v1::StartRequest* request, v1::StartReply* reply) override;
  grpc::Status Stop(grpc::ServerContext*, const v1::StopRequest* request, v1::StopReply* reply) override;
  grpc::Status Telemetry(grpc::ServerContext* context, const v1::TelemetryRequest* request,
                         grpc::ServerWriter<v1::TelemetryEvent>* writer) override;
  grpc::Status Heartbeat(grpc::ServerContext*, const v1::HeartbeatRequest*, v1::HeartbeatReply* reply) override;
  grpc::Status GetWeights(grpc::ServerContext*, const v1::GetWeightsRequest*, v1::StageWeights* reply) override;
  grpc::Status SetWeights(grpc::ServerContext*, const v1::StageWeights* request, v1::SetWeightsReply*) override;
  grpc::ServerReadReactor<grpc::ByteBuffer>* Push(grpc::CallbackServerContext* context, grpc::ByteBuffer* reply) override;
  grpc::Status OpenTensorChannel(grpc::ServerContext* context, const v1::TensorChannelRequest* request,
                                 v1::TensorChannelGrant* reply) override;
  grpc::Status StoreBackup(grpc::ServerContext* context, const v1::StageWeights* request,
                           v1::StoreBackupReply*) override;
  grpc::Status ListBackups(grpc::ServerContext*, const v1::ListBackupsRequest* request, v1::BackupList* reply) override;
  grpc::Status GetBackup(grpc::ServerContext*, const v1::BackupRef* request, v1::StageWeights* reply) override;
  grpc::Status Evaluate(grpc::ServerContext*, const v1::EvaluateRequest* request, v1::EvaluateReply* reply) override;
  grpc::Status HasModelFile(grpc::ServerContext*, const v1::ModelFileRef* request, v1::ModelFileStatus* reply) override;
  grpc::Status PutModelFile(grpc::ServerContext* context, grpc::ServerReader<v1::ModelFileChunk>* reader,
                            v1::ModelFileStatus* reply) override;

 private:
  /// OK, or UNAUTHENTICATED without the right token (compared in constant time).
  grpc::Status authorize(const grpc::ServerContextBase& context) const;

  WorkerNode& node_;
  std::string token_;
  TensorChannelServer* channel_ = nullptr;
};

/// The GroupStore service: the store of the stage group this worker is rank 0 of, for the
/// group's other members; the same token as every Worker call.
class GroupStoreService final : public v1::GroupStore::Service {
 public:
  GroupStoreService(WorkerNode& node, std::string token) : node_(node), token_(std::move(token)) {}
  grpc::Status Call(grpc::ServerContext* context, const v1::GroupStoreRequest* request,
                    v1::GroupStoreReply* reply) override;

 private:
  WorkerNode& node_;
  std::string token_;
};

}  // namespace stagecraft::worker
