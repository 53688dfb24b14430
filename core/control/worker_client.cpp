#include "control/worker_client.h"

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <filesystem>
#include <fstream>

#include "control/cluster_token.h"
#include "io/error.h"
#include "control/transport_security.h"

namespace stagecraft::control {
namespace {

/// One unary call with a deadline; a failure throws WorkerError naming the worker. A
/// failed connection is tried once more as `resend` allows, waiting for it to come back.
template <class Request, class Reply, class Method>
Reply call(const WorkerEndpoint& endpoint, std::string_view name, Method method, const Request& request,
           std::chrono::milliseconds deadline, Resend resend) {
  const auto until = std::chrono::system_clock::now() + deadline;
  Reply reply;
  grpc::Status status;
  {
    grpc::ClientContext context;
    authorizeCall(context, endpoint);
    context.set_deadline(until);
    status = method(&context, request, &reply);
  }
  if (resend == Resend::IfConnectionFailed && isConnectionFailure(status)) {
    grpc::ClientContext context;
    authorizeCall(context, endpoint);
    context.set_wait_for_ready(true);  // through the channel's reconnect, not failing at its first refusal
    context.set_deadline(std::min(until, std::chrono::system_clock::now() + kReconnectWait));
    reply.Clear();
    const grpc::Status second = method(&context, request, &reply);
    // A connection that did not come back in time leaves the first failure as the news.
    if (second.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) status = second;
  }
  if (!status.ok()) throw workerFailure(endpoint, name, status, deadline);
  return reply;
}

}  // namespace

void authorizeCall(grpc::ClientContext& context, const WorkerEndpoint& endpoint) {
  if (!endpoint.token.empty()) context.AddMetadata(kTokenMetadataKey, endpoint.token);
}

std::shared_ptr<grpc::Channel> makeWorkerChannel(const std::string& address, int max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_message_bytes);
  args.SetMaxSendMessageSize(max_message_bytes);
  // Workers are on the LAN or loopback: a proxy from the environment would only get in the way.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Each client owns its connection, so one worker's trouble cannot stall another's calls.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel(address, workerChannelCredentials(), args);
}

WorkerClient::WorkerClient(WorkerEndpoint endpoint, int max_message_bytes)
    : endpoint_(std::move(endpoint)),
      channel_(makeWorkerChannel(endpoint_.address, max_message_bytes)),
      stub_(v1::Worker::NewStub(channel_)) {}

v1::WorkerInfo WorkerClient::describe(std::chrono::milliseconds deadline, Resend resend) {
  return call<v1::DescribeRequest, v1::WorkerInfo>(
      endpoint_, "Describe", [&](auto* c, const auto& r, auto* o) { return stub_->Describe(c, r, o); },
      v1::DescribeRequest{}, deadline, resend);
}

void WorkerClient::sendModelFile(const v1::ScriptSource& script, std::chrono::milliseconds deadline) {
  v1::ModelFileRef ref;
  ref.set_sha256(script.sha256());
  ref.set_size(script.size());
  const v1::ModelFileStatus held = call<v1::ModelFileRef, v1::ModelFileStatus>(
      endpoint_, "HasModelFile", [&](auto* c, const auto& r, auto* o) { return stub_->HasModelFile(c, r, o); }, ref,
      deadline, Resend::IfConnectionFailed);
  if (held.held()) return;
  std::ifstream in(script.path(), std::ios::binary);
  if (!in) throw environmentError(script.path() + ": the model file cannot be read");
  std::error_code ec;
  if (static_cast<std::int64_t>(std::filesystem::file_size(script.path(), ec)) != script.size() || ec) {
    throw Error(script.path() + ": has changed since it was imported (its size differs): import it again");
  }
  grpc::ClientContext context;
  authorizeCall(context, endpoint_);
  // A megabyte per second at the least, on top of the call's own deadline.
  const auto upload_deadline = deadline + std::chrono::milliseconds(script.size() / 1000);
  context.set_deadline(std::chrono::system_clock::now() + upload_deadline);
  v1::ModelFileStatus reply;
  auto writer = stub_->PutModelFile(&context, &reply);
  v1::ModelFileChunk chunk;
  chunk.set_sha256(script.sha256());
  chunk.set_size(script.size());
  constexpr std::size_t kChunkBytes = 1 << 20;
  std::string buffer(kChunkBytes, '\0');
  bool open = true;
  do {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    chunk.set_data(buffer.data(), static_cast<std::size_t>(in.gcount()));
    open = writer->Write(chunk);
    chunk.clear_sha256();
  } while (open && in && !in.eof());
  writer->WritesDone();
  const grpc::Status status = writer->Finish();
  if (!status.ok()) throw workerFailure(endpoint_, "PutModelFile", status, upload_deadline);
}

v1::DeviceProfile WorkerClient::profile(const v1::ProfileRequest& request, std::chrono::milliseconds deadline) {
  if (request.model().has_script()) sendModelFile(request.model().script(), deadline);
  return call<v1::ProfileRequest, v1::DeviceProfile>(
      endpoint_, "Profile", [&](auto* c, const auto& r, auto* o) { return stub_->Profile(c, r, o); }, request,
      deadline, Resend::IfConnectionFailed);
}

v1::DeployReply WorkerClient::deploy(const v1::StageAssignment& assignment, std::chrono::milliseconds deadline) {
  if (assignment.model().has_script()) sendModelFile(assignment.model().script(), deadline);
  return call<v1::StageAssignment, v1::DeployReply>(
      endpoint_, "Deploy", [&](auto* c, const auto& r, auto* o) { return stub_->Deploy(c, r, o); }, assignment,
      deadline, Resend::IfConnectionFailed);
}

v1::EvaluateReply WorkerClient::evaluate(const v1::EvaluateRequest& request, std::chrono::milliseconds deadline) {
  return call<v1::EvaluateRequest, v1::EvaluateReply>(
      endpoint_, "Evaluate", [&](auto* c, const auto& r, auto* o) { return stub_->Evaluate(c, r, o); }, request,
      deadline, Resend::Never);
}

void WorkerClient::start(const v1::StartRequest& request, std::chrono::milliseconds deadline) {
  call<v1::StartRequest, v1::StartReply>(
      endpoint_, "Start", [&](auto* c, const auto& r, auto* o) { return stub_->Start(c, r, o); }, request, deadline,
      Resend::Never);
}

v1::StopReply WorkerClient::stop(const v1::StopRequest& request, std::chrono::milliseconds deadline) {
  return call<v1::StopRequest, v1::StopReply>(
      endpoint_, "Stop", [&](auto* c, const auto& r, auto* o) { return stub_->Stop(c, r, o); }, request, deadline,
      Resend::Never);
}

v1::HeartbeatReply WorkerClient::heartbeat(std::chrono::milliseconds deadline) {
  return call<v1::HeartbeatRequest, v1::HeartbeatReply>(
      endpoint_, "Heartbeat", [&](auto* c, const auto& r, auto* o) { return stub_->Heartbeat(c, r, o); },
      v1::HeartbeatRequest{}, deadline, Resend::Never);
}

v1::StageWeights WorkerClient::getWeights(const v1::GetWeightsRequest& request, std::chrono::milliseconds deadline) {
  return call<v1::GetWeightsRequest, v1::StageWeights>(
      endpoint_, "GetWeights", [&](auto* c, const auto& r, auto* o) { return stub_->GetWeights(c, r, o); }, request,
      deadline, Resend::IfConnectionFailed);
}

v1::BackupList WorkerClient::listBackups(const std::string& job, std::chrono::milliseconds deadline) {
  v1::ListBackupsRequest request;
  request.set_job(job);
  return call<v1::ListBackupsRequest, v1::BackupList>(
      endpoint_, "ListBackups", [&](auto* c, const auto& r, auto* o) { return stub_->ListBackups(c, r, o); },
      request, deadline, Resend::Never);
}

v1::StageWeights WorkerClient::getBackup(const v1::BackupRef& ref, std::chrono::milliseconds deadline) {
  return call<v1::BackupRef, v1::StageWeights>(
      endpoint_, "GetBackup", [&](auto* c, const auto& r, auto* o) { return stub_->GetBackup(c, r, o); }, ref,
      deadline, Resend::Never);
}

}  // namespace stagecraft::control
