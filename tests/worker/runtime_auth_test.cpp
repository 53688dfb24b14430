// A worker started with --token-file answers only callers that carry the cluster token:
// every RPC without it, or with another, is refused with UNAUTHENTICATED and the worker
// goes on serving; it will not start without a token or --insecure, nor with a token file
// others can read. (Training between token-holding workers, peers' pushes and backups
// included, is runtime_recovery_test.)
#include <sys/stat.h>

#include "control/coordinator.h"
#include "io/error.h"
#include "runtime_test_driver.h"
#include "stagecraft/v1/group_store.grpc.pb.h"
#include "worker_options.h"

namespace stagecraft::worker::testing {
namespace {

/// A context with a deadline and, when `token` is not empty, that token.
std::unique_ptr<grpc::ClientContext> contextWith(const std::string& token) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + 20s);
  if (!token.empty()) context->AddMetadata(control::kTokenMetadataKey, token);
  return context;
}

/// The status of each kind of call `token` gets from `w`.
std::map<std::string, grpc::StatusCode> everyCall(WorkerProcess& w, const std::string& token) {
  std::map<std::string, grpc::StatusCode> out;
  v1::Worker::Stub& stub = w.stub();
  {
    v1::WorkerInfo reply;
    out["Describe"] = stub.Describe(contextWith(token).get(), {}, &reply).error_code();
  }
  {
    v1::HeartbeatReply reply;
    out["Heartbeat"] = stub.Heartbeat(contextWith(token).get(), {}, &reply).error_code();
  }
  {
    v1::StageAssignment assignment;
    assignment.set_job("intruder");
    v1::DeployReply reply;
    out["Deploy"] = stub.Deploy(contextWith(token).get(), assignment, &reply).error_code();
  }
  {
    v1::StopReply reply;
    out["Stop"] = stub.Stop(contextWith(token).get(), {}, &reply).error_code();
  }
  {
    v1::StageWeights reply;
    out["GetWeights"] = stub.GetWeights(contextWith(token).get(), {}, &reply).error_code();
  }
  {
    v1::SetWeightsReply reply;
    out["SetWeights"] = stub.SetWeights(contextWith(token).get(), {}, &reply).error_code();
  }
  {
    v1::StoreBackupReply reply;
    out["StoreBackup"] = stub.StoreBackup(contextWith(token).get(), {}, &reply).error_code();
  }
  {
    v1::BackupList reply;
    out["ListBackups"] = stub.ListBackups(contextWith(token).get(), {}, &reply).error_code();
  }
  {
    v1::ProfileRequest request;
    *request.mutable_model() = smallMlp();
    request.add_micro_batches(1);
    request.set_repeats(1);
    v1::DeviceProfile reply;
    out["Profile"] = stub.Profile(contextWith(token).get(), request, &reply).error_code();
  }
  {
    auto context = contextWith(token);
    v1::PushReply reply;
    auto writer = stub.Push(context.get(), &reply);
    v1::PeerTensor t;
    t.set_job("intruder");
    writer->Write(t);
    writer->WritesDone();
    out["Push"] = writer->Finish().error_code();
  }
  {
    // The ticket to a tensor channel: only for callers with the token.
    v1::TensorChannelRequest request;
    request.set_sender("intruder");
    v1::TensorChannelGrant reply;
    out["OpenTensorChannel"] = stub.OpenTensorChannel(contextWith(token).get(), request, &reply).error_code();
  }
  {
    auto store = v1::GroupStore::NewStub(grpc::CreateChannel(w.address(), grpc::InsecureChannelCredentials()));
    v1::GroupStoreRequest request;
    request.set_job("intruder");
    request.set_op(v1::GroupStoreRequest::GET);
    request.add_keys("k");
    v1::GroupStoreReply reply;
    out["GroupStore"] = store->Call(contextWith(token).get(), request, &reply).error_code();
  }
  {
    auto context = contextWith(token);
    auto reader = stub.Telemetry(context.get(), {});
    v1::TelemetryEvent event;
    if (reader->Read(&event)) context->TryCancel();  // admitted: it greets the subscriber
    const grpc::Status status = reader->Finish();
    out["Telemetry"] = status.error_code() == grpc::StatusCode::CANCELLED ? grpc::StatusCode::OK : status.error_code();
  }
  return out;
}

TEST(RuntimeAuth, EveryCallWithoutTheRightTokenIsRefusedAndTheWorkerGoesOnServing) {
  const TokenFile token;
  WorkerProcess w("guarded", token.flags());
  std::string wrong = token.token();
  wrong.back() = wrong.back() == '0' ? '1' : '0';  // one digit off, same length

  for (const std::string& given : {std::string(), wrong, std::string("short")}) {
    const auto calls = everyCall(w, given);
    EXPECT_EQ(calls.size(), 13u);
    for (const auto& [call, code] : calls) {
      EXPECT_EQ(code, grpc::StatusCode::UNAUTHENTICATED) << call << " with token '" << given << "'";
    }
  }
  // The right token passes the check: each call then fails or succeeds on its own merits.
  for (const auto& [call, code] : everyCall(w, token.token())) {
    EXPECT_NE(code, grpc::StatusCode::UNAUTHENTICATED) << call;
  }
  v1::WorkerInfo info;
  ASSERT_TRUE(w.call(&v1::Worker::Stub::Describe, v1::DescribeRequest{}, &info).ok());
  EXPECT_EQ(info.name(), "guarded");
  EXPECT_FALSE(info.insecure());
}

TEST(RuntimeAuth, TheCoordinatorNamesAMissingOrWrongToken) {
  const TokenFile token;
  auto workers = startWorkers({"a"}, token.flags());
  const Cluster cluster = Cluster::fromProto(clusterProtoOf(workers, "guarded"));
  control::Coordinator without(cluster);
  try {
    without.describe();
    FAIL() << "Describe without the token was answered";
  } catch (const control::WorkerError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("worker 'a' ("), std::string::npos) << what;
    EXPECT_NE(what.find("refused Describe"), std::string::npos) << what;
    EXPECT_NE(what.find("--token-file"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  control::CoordinatorOptions options;
  options.token = token.token();
  control::Coordinator with(cluster, options);
  EXPECT_EQ(with.describe().at(0).name(), "a");
}

TEST(RuntimeAuth, AnInsecureWorkerAnswersAnyoneAndSaysSo) {
  WorkerProcess w("open", {"--insecure"});
  v1::WorkerInfo info;
  ASSERT_TRUE(w.stub().Describe(contextWith("").get(), {}, &info).ok());
  EXPECT_TRUE(info.insecure());
}

TEST(RuntimeAuth, NoTokenNoStartAndATokenOthersCanReadIsRefused) {
  const TokenFile token;
  const std::vector<std::string> base{STAGECRAFT_WORKER, "--listen", "127.0.0.1:0", "--name", "x", "--tier", "edge",
                                      "--beacon-port", "0"};
  {
    ChildProcess neither(base);
    EXPECT_EQ(neither.readLine(5s), "");
    EXPECT_EQ(neither.wait(10s), 2);
  }
  ASSERT_EQ(::chmod(token.path().c_str(), 0644), 0);
  {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), {"--token-file", token.path()});
    ChildProcess readable(argv);
    EXPECT_EQ(readable.readLine(5s), "");
    EXPECT_EQ(readable.wait(10s), 2);
  }
  // What the worker prints (one line each).
  const std::vector<std::string> flags{"--listen", "127.0.0.1:0", "--name", "x", "--tier", "edge"};
  const auto reason = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = flags;
    args.insert(args.end(), extra.begin(), extra.end());
    try {
      parseWorkerOptions(args);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(reason({}).find("--token-file PATH is required"), std::string::npos) << reason({});
  const std::string shared = reason({"--token-file", token.path()});
  EXPECT_NE(shared.find("mode 0644"), std::string::npos) << shared;
  EXPECT_NE(shared.find("chmod 600"), std::string::npos) << shared;
  EXPECT_NE(reason({"--token-file", "/nonexistent/token"}).find("cannot read token file"), std::string::npos);
  EXPECT_NE(reason({"--token-file", "/dev/null"}).find("not a regular file"), std::string::npos);
  EXPECT_NE(reason({"--insecure", "--token-file", token.path()}).find("exclude each other"), std::string::npos);
  ASSERT_EQ(::chmod(token.path().c_str(), 0600), 0);
  EXPECT_EQ(reason({"--token-file", token.path()}), "accepted");
  EXPECT_EQ(reason({"--insecure"}), "accepted");
}

}  // namespace
}  // namespace stagecraft::worker::testing
