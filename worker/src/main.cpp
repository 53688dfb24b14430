// stagecraft-worker: serves the Worker gRPC service until SIGINT or SIGTERM (with
// --parent-pid, also until the process that started it ends).
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "allocator_settings.h"
#include "beacon_announcer.h"
#include "blas_probe.h"
#include "io/error.h"
#include "peer_outbox.h"
#include "script_tool.h"
#include "status_mapping.h"
#include "worker_node.h"
#include "worker_options.h"
#include "worker_service.h"

using namespace stagecraft;
using namespace stagecraft::worker;

namespace {

int g_signal_pipe[2] = {-1, -1};

extern "C" void onTerminate(int signal) {
  const unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] const auto written = ::write(g_signal_pipe[1], &byte, 1);  // async-signal-safe
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && isModelCommand(argv[1])) return runModelCommand(std::vector<std::string>(argv + 1, argv + argc));
  useHugePagesForTheHeap(argv);
  keepFreedMemory();
  WorkerOptions options;
  try {
    options = parseWorkerOptions(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const Error& e) {
    std::fprintf(stderr, "stagecraft-worker: %s\n", e.what());
    return 2;
  }
  if (options.help) {
    std::fputs(workerUsage().c_str(), stdout);
    return 0;
  }
  if (options.parent_pid > 0 && ::getppid() != options.parent_pid) {
    std::fprintf(stderr, "stagecraft-worker: --parent-pid %d: the process that started this worker has already ended\n",
                 options.parent_pid);
    return 2;
  }

  // SIGINT and SIGTERM end the worker through a pipe the main thread reads. Blocking them
  // and waiting in sigwait is not enough: threads that exist before main (OpenBLAS starts
  // its pool when the library loads) do not inherit a mask set here, and a signal the kernel
  // hands to one of them would kill the process outright.
  if (::pipe2(g_signal_pipe, O_CLOEXEC) != 0) {
    std::perror("stagecraft-worker: pipe");
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = onTerminate;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  // A write to a connection the other end has closed must fail with EPIPE, not kill the
  // worker: Gloo writes to its group partners with plain writev, so without this a partner
  // SIGKILLed mid all-reduce took the survivor down with it (seen as two devices lost).
  ::signal(SIGPIPE, SIG_IGN);

  try {
    WorkerNode node(options);
    WorkerService service(node, options.token);
    // Peers' tensors over a connection of their own (tensor_channel.h), on the host the
    // service listens on; not under TLS, which only gRPC's Push carries.
    std::unique_ptr<TensorChannelServer> tensor_channel;
    if (options.tensor_channel && !options.tls) {
      try {
        tensor_channel = std::make_unique<TensorChannelServer>(
            hostOf(options.listen), [&node](v1::PeerTensor tensor, bool finite) { node.receive(std::move(tensor), finite); },
            static_cast<std::size_t>(kMaxMessageBytes), options.tensor_channel_port);
        service.setTensorChannel(tensor_channel.get());
      } catch (const WorkerError& error) {
        // A port asked for by name is a promise to the firewall: not having it is an error.
        if (options.tensor_channel_port != 0) {
          std::fprintf(stderr, "stagecraft-worker: %s\n", error.what());
          return 1;
        }
        std::fprintf(stderr, "stagecraft-worker: warning: %s; peers push over gRPC\n", error.what());
      }
    }
    GroupStoreService group_store(node, options.token);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    grpc::ServerBuilder builder;
    int port = 0;
    // One worker per port: with gRPC's default SO_REUSEPORT a second process could bind the
    // same port and silently take half of the connections.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    // With --tls-*: mutual TLS for callers, and the same certificate for calls to peers.
    control::setClientTls(options.tls);
    builder.AddListeningPort(options.listen, control::workerServerCredentials(options.tls), &port);
    builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
    builder.SetMaxSendMessageSize(kMaxMessageBytes);
    builder.RegisterService(&service);
    builder.RegisterService(&group_store);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (!server || port == 0) {
      std::fprintf(stderr, "stagecraft-worker: cannot listen on %s\n", options.listen.c_str());
      return 1;
    }
    const std::string address = options.listen.substr(0, options.listen.rfind(':')) + ":" + std::to_string(port);
    node.setAddress(address);
    std::unique_ptr<BeaconAnnouncer> beacon;
    if (options.beacon_port > 0) {
      beacon = std::make_unique<BeaconAnnouncer>([&node] { return node.describe(); }, options.beacon_to,
                                                 options.beacon_port,
                                                 std::chrono::milliseconds(options.beacon_interval_ms));
    }
    if (const std::string warning = blasWarning(node.blas()); !warning.empty()) {
      std::fprintf(stderr, "stagecraft-worker: warning: %s\n", warning.c_str());
    }
    if (options.insecure) {
      std::fprintf(stderr, "stagecraft-worker: warning: --insecure: anyone who reaches %s can deploy, train, read and "
                           "overwrite this worker's model\n", address.c_str());
    }
    if (options.tls) {
      std::fprintf(stderr, "stagecraft-worker: mutual TLS: callers and peers must show a certificate signed by %s\n",
                   options.tls_files.ca.c_str());
    }
    if (tensor_channel) {
      std::fprintf(stderr, "stagecraft-worker: peers' tensors also come in on port %d (--no-tensor-channel: gRPC only)\n",
                   tensor_channel->port());
    }
    std::printf("listening on %s\n", address.c_str());
    std::fflush(stdout);

    // Until SIGINT or SIGTERM; with --parent-pid, also until that process is gone (this
    // worker is then another's child: the kernel hands orphans to init or a subreaper),
    // looked at four times a second.
    const bool watch_parent = options.parent_pid > 0;
    std::string reason;
    while (reason.empty()) {
      pollfd wake{g_signal_pipe[0], POLLIN, 0};
      const int ready = ::poll(&wake, 1, watch_parent ? 250 : -1);
      unsigned char signal = 0;
      if (ready > 0 && ::read(g_signal_pipe[0], &signal, 1) == 1) {
        reason = signal == SIGINT ? "SIGINT" : "SIGTERM";
      } else if (ready < 0 && errno != EINTR) {
        std::perror("stagecraft-worker: poll");
        reason = "an error waiting for signals";
      } else if (watch_parent && ::getppid() != options.parent_pid) {
        reason = "the process that started it (pid " + std::to_string(options.parent_pid) + ") has ended";
      }
    }
    std::fprintf(stderr, "stagecraft-worker: %s, shutting down\n", reason.c_str());
    beacon.reset();  // gone before the service stops answering the address it announces
    node.shutdown();
    server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server->Wait();
    tensor_channel.reset();
  } catch (...) {
    std::fprintf(stderr, "stagecraft-worker: %s\n", describeError(std::current_exception()).c_str());
    return 1;
  }
  return 0;
}
