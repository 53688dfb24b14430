#include "worker_service.h"

#include <optional>
#include <string_view>

#include <grpcpp/support/proto_buffer_reader.h>

#include "control/cluster_token.h"
#include "peer_outbox.h"
#include "push_wire.h"
#include "status_mapping.h"
#include "worker_node.h"

namespace stagecraft::worker {

WorkerService::WorkerService(WorkerNode& node, std::string token) : node_(node), token_(std::move(token)) {}

grpc::Status authorizeCaller(const grpc::ServerContextBase& context, const std::string& token) {
  const auto& metadata = context.client_metadata();
  const auto found = metadata.find(control::kTokenMetadataKey);
  std::optional<std::string_view> given;
  if (found != metadata.end()) given = std::string_view(found->second.data(), found->second.size());
  if (const char* why = control::tokenRefusal(given, token)) return {grpc::StatusCode::UNAUTHENTICATED, why};
  return grpc::Status::OK;
}

namespace {

class PushReader final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  PushReader(grpc::ByteBuffer* reply, PushReceiver receive)
      : receive_(std::move(receive)), assembler_(static_cast<std::size_t>(kMaxMessageBytes)) {
    // The reply is an empty PushReply: no bytes, but a message.
    grpc::Slice empty;
    *reply = grpc::ByteBuffer(&empty, 1);
    StartRead(&message_);
  }
  void OnReadDone(bool ok) override {
    if (!ok) {  // the sender finished its stream, or it broke (a half-assembled tensor goes with it)
      Finish(grpc::Status::OK);
      return;
    }
    if (grpc::Status failed = guarded([&] { take(); }); !failed.ok()) {
      Finish(failed);
      return;
    }
    message_.Clear();
    StartRead(&message_);
  }
  void OnDone() override { delete this; }

 private:
  /// The header parsed, the tensor bytes copied once from gRPC's slices into place.
  void take() {
    PushMessage message;
    {
      grpc::ProtoBufferReader header(&message_);
      if (!readPushHeader(header, message_.Length(), message)) {
        throw WorkerError(ErrorCode::InvalidArgument, "a Push message that is not a PeerTensor");
      }
    }
    const std::int64_t at = message.data_at;
    const std::size_t size = message.data_size;
    auto done = assembler_.add(std::move(message), [&](std::string& into, bool* finite) {
      grpc::ProtoBufferReader bytes(&message_);
      return appendMessageBytes(bytes, at, size, into, finite);
    });
    if (done) receive_(std::move(done->tensor), done->finite);
  }

  PushReceiver receive_;
  PieceAssembler assembler_;
  grpc::ByteBuffer message_;
};

class PushRefusal final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  explicit PushRefusal(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerReadReactor<grpc::ByteBuffer>* readPushStream(grpc::ByteBuffer* reply, PushReceiver receive) {
  return new PushReader(reply, std::move(receive));
}

grpc::ServerReadReactor<grpc::ByteBuffer>* refusePushStream(grpc::Status status) {
  return new PushRefusal(std::move(status));
}

grpc::Status WorkerService::authorize(const grpc::ServerContextBase& context) const {
  return authorizeCaller(context, token_);
}

grpc::Status GroupStoreService::Call(grpc::ServerContext* context, const v1::GroupStoreRequest* request,
                                     v1::GroupStoreReply* reply) {
  if (grpc::Status denied = authorizeCaller(*context, token_); !denied.ok()) return denied;
  return guarded([&] { *reply = node_.groupStore(*request); });
}

grpc::Status WorkerService::Describe(grpc::ServerContext* context, const v1::DescribeRequest*, v1::WorkerInfo* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  return guarded([&] { *reply = node_.describe(); });
}

grpc::Status WorkerService::Profile(grpc::ServerContext* context, const v1::ProfileRequest* request,
                                    v1::DeviceProfile* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  return guarded([&] { *reply = node_.profile(*request); });
}

grpc::Status WorkerService::Deploy(grpc::ServerContext* context, const v1::StageAssignment* request,
                                   v1::DeployReply* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  node_.touch();
  return guarded([&] { *reply = node_.deploy(*request); });
}

grpc::Status WorkerService::Start(grpc::ServerContext* context, const v1::StartRequest* request, v1::StartReply*) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  node_.touch();
  return guarded([&] { node_.start(*request); });
}

grpc::Status WorkerService::Stop(grpc::ServerContext* context, const v1::StopRequest* request, v1::StopReply* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  node_.touch();
  return guarded([&] { *reply = node_.stop(*request); });
}

grpc::Status WorkerService::Telemetry(grpc::ServerContext* context, const v1::TelemetryRequest*,
                                      grpc::ServerWriter<v1::TelemetryEvent>* writer) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  auto& hub = node_.telemetry();
  node_.touch();
  auto subscription = hub.subscribe();
  // The first event tells the subscriber it will see everything from now on.
  const v1::WorkerInfo info = node_.describe();
  v1::TelemetryEvent hello;
  hello.set_worker(info.name());
  hello.set_job(info.job());
  hello.set_log("telemetry subscribed");
  bool open = writer->Write(hello);
  while (open && !context->IsCancelled() && !subscription->closed()) {
    if (auto event = subscription->next(std::chrono::milliseconds(200))) open = writer->Write(*event);
  }
  hub.unsubscribe(subscription);
  node_.touch();  // the lease runs from the stream's end
  return grpc::Status::OK;
}

grpc::Status WorkerService::Heartbeat(grpc::ServerContext* context, const v1::HeartbeatRequest*, v1::HeartbeatReply* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  node_.touch();
  return guarded([&] { *reply = node_.heartbeat(); });
}

grpc::Status WorkerService::GetWeights(grpc::ServerContext* context, const v1::GetWeightsRequest* request,
                                       v1::StageWeights* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  node_.touch();
  return guarded([&] { *reply = node_.weights(request->optimizer_state()); });
}

grpc::Status WorkerService::SetWeights(grpc::ServerContext* context, const v1::StageWeights* request, v1::SetWeightsReply*) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  node_.touch();
  return guarded([&] { node_.setWeights(*request); });
}

grpc::ServerReadReactor<grpc::ByteBuffer>* WorkerService::Push(grpc::CallbackServerContext* context,
                                                               grpc::ByteBuffer* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return refusePushStream(std::move(denied));
  return readPushStream(reply, [this](v1::PeerTensor tensor, bool finite) { node_.receive(std::move(tensor), finite); });
}

grpc::Status WorkerService::OpenTensorChannel(grpc::ServerContext* context, const v1::TensorChannelRequest* request,
                                              v1::TensorChannelGrant* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  if (!channel_) return grpc::Status::OK;  // port 0: push over gRPC
  return guarded([&] {
    reply->set_ticket(channel_->issue(request->sender()));
    reply->set_port(channel_->port());
  });
}

grpc::Status WorkerService::StoreBackup(grpc::ServerContext* context, const v1::StageWeights* request,
                                        v1::StoreBackupReply*) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  std::string sender;
  const auto& metadata = context->client_metadata();
  if (const auto it = metadata.find("stagecraft-sender"); it != metadata.end()) {
    sender.assign(it->second.data(), it->second.size());
  }
  // The state is moved out, not copied (tens of megabytes, each page of a copy fresh): the
  // request is gRPC's to destroy after this returns but not const (the handler deserialised
  // it), and protobuf moves a heap message by swapping.
  return guarded([&] { node_.holdBackup(std::move(*const_cast<v1::StageWeights*>(request)), sender); });
}

grpc::Status WorkerService::ListBackups(grpc::ServerContext* context, const v1::ListBackupsRequest* request,
                                        v1::BackupList* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  node_.touch();
  return guarded([&] {
    for (auto& ref : node_.backups(request->job())) *reply->add_backups() = std::move(ref);
  });
}

grpc::Status WorkerService::GetBackup(grpc::ServerContext* context, const v1::BackupRef* request, v1::StageWeights* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  node_.touch();
  return guarded([&] { *reply = node_.backup(*request); });
}

grpc::Status WorkerService::Evaluate(grpc::ServerContext* context, const v1::EvaluateRequest* request,
                                     v1::EvaluateReply* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  node_.touch();
  return guarded([&] { *reply = node_.evaluate(*request); });
}

grpc::Status WorkerService::HasModelFile(grpc::ServerContext* context, const v1::ModelFileRef* request,
                                         v1::ModelFileStatus* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  return guarded([&] { *reply = node_.hasModelFile(*request); });
}

grpc::Status WorkerService::PutModelFile(grpc::ServerContext* context, grpc::ServerReader<v1::ModelFileChunk>* reader,
                                         v1::ModelFileStatus* reply) {
  if (grpc::Status denied = authorize(*context); !denied.ok()) return denied;
  return guarded([&] {
    v1::ModelFileChunk chunk;
    if (!reader->Read(&chunk)) throw WorkerError(ErrorCode::InvalidArgument, "model file: no chunk arrived");
    ModelCache::Upload upload = node_.modelFiles().begin(chunk.sha256(), chunk.size());
    do {
      upload.write(chunk.data());
    } while (reader->Read(&chunk));
    if (context->IsCancelled()) throw WorkerError(ErrorCode::Aborted, "model file: the sender gave up");
    upload.finish();
    reply->set_held(true);
  });
}

}  // namespace stagecraft::worker
