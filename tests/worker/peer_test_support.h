#pragma once
// For tests of what peers send each other: what a receiver (a Push stream, a tensor
// channel) was handed, a gRPC server on loopback, a port held on loopback.

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "peer_outbox.h"

namespace stagecraft::worker {

/// `service` served on 127.0.0.1 at a port the system picks (`address` set to it), with
/// the worker's message limit.
inline std::unique_ptr<grpc::Server> serveOnLoopback(grpc::Service& service, std::string& address) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  if (!server || port == 0) throw std::runtime_error("cannot start a server on 127.0.0.1");
  address = "127.0.0.1:" + std::to_string(port);
  return server;
}

/// A TCP socket bound to 127.0.0.1 at a port the system picks (listening, or only held so
/// that nobody else listens there), closed with the object.
class HeldPort {
 public:
  explicit HeldPort(bool listening) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof at;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 || (listening && ::listen(fd_, 1) != 0) ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&at), &length) != 0) {
      ::close(fd_);
      throw std::runtime_error("cannot hold a port on 127.0.0.1");
    }
    port_ = ntohs(at.sin_port);
  }
  ~HeldPort() { ::close(fd_); }
  HeldPort(const HeldPort&) = delete;
  HeldPort& operator=(const HeldPort&) = delete;
  int port() const { return port_; }

 private:
  int fd_;
  int port_ = 0;
};

template <class T>
class Received {
 public:
  void add(T item) {
    std::lock_guard lock(mutex_);
    got_.push_back(std::move(item));
    arrived_.notify_all();
  }
  /// What came, once `count` have (or after 30 s, whatever came by then).
  std::vector<T> waitFor(size_t count) {
    std::unique_lock lock(mutex_);
    arrived_.wait_for(lock, std::chrono::seconds(30), [&] { return got_.size() >= count; });
    return got_;
  }
  size_t size() const {
    std::lock_guard lock(mutex_);
    return got_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<T> got_;
};

}  // namespace stagecraft::worker
