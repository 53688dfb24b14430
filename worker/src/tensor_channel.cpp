#include "tensor_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "peer_inbox.h"
#include "status_mapping.h"
#include "worker_error.h"

namespace stagecraft::worker {

namespace {

constexpr std::size_t kTicketBytes = 16;
constexpr std::size_t kFrameHead = 16;    // magic, header bytes, data bytes
constexpr std::size_t kRefusalHead = 12;  // magic, status code, message bytes
constexpr std::uint32_t kMaxRefusalBytes = 64 << 10;
/// Tickets issued and not yet used or expired, at most (a worker has a few neighbours).
constexpr std::size_t kMaxTickets = 1024;
/// Tensor bytes read per call: small enough that the finite check reads them from cache.
constexpr std::size_t kReadChunk = 256 << 10;

void putU32(unsigned char* at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<unsigned char>(v >> (8 * i));
}
void putU64(unsigned char* at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) at[i] = static_cast<unsigned char>(v >> (8 * i));
}
std::uint32_t getU32(const unsigned char* at) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | at[i];
  return v;
}
std::uint64_t getU64(const unsigned char* at) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | at[i];
  return v;
}

/// Reads up to `size` bytes; fewer only at the end of the stream or on an error.
std::size_t readFull(int fd, void* into, std::size_t size) {
  auto* at = static_cast<char*>(into);
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::recv(fd, at + got, size - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;
    }
  }
  return got;
}

/// Writes every byte of `iov` (advanced in place). False when the connection broke.
bool writeAll(int fd, iovec* iov, int count) {
  while (count > 0) {
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t n = ::sendmsg(fd, &message, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    auto left = static_cast<std::size_t>(n);
    while (count > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return true;
}

/// Receives `size` bytes into the end of `into` (left as it was before on failure), checking
/// the float32 words among them with `finite` when not null, each chunk straight after it
/// lands. False when the stream ended first.
bool receiveInto(int fd, std::string& into, std::size_t size, bool* finite) {
  const std::size_t base = into.size();
  bool complete = false;
  auto fill = [&](char* data, std::size_t) {
    char* at = data + base;
    std::size_t got = 0, checked = 0;
    while (got < size) {
      const ssize_t n = ::recv(fd, at + got, std::min(size - got, kReadChunk), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return base;
      got += static_cast<std::size_t>(n);
      if (finite && *finite) {
        const std::size_t whole = got & ~std::size_t{3};
        if (whole > checked) *finite = allFiniteFloats(std::string_view(at + checked, whole - checked));
        checked = std::max(checked, whole);
      }
    }
    complete = true;
    return base + size;
  };
#if defined(__cpp_lib_string_resize_and_overwrite)
  into.resize_and_overwrite(base + size, fill);  // no zeroing of bytes about to be received
#else
  into.resize(base + size);
  into.resize(fill(into.data(), into.size()));
#endif
  return complete;
}

void setReceiveTimeout(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

void noDelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

addrinfo* resolve(const std::string& host, int port, bool passive, const std::string& what) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0 || !found) {
    throw WorkerError(ErrorCode::Unavailable, what + ": cannot resolve '" + host + "': " + ::gai_strerror(rc));
  }
  return found;
}

std::string errnoText() { return std::strerror(errno); }

/// A status frame: OK for a ticket taken and for a stream taken to its end, else a refusal.
void writeStatus(int fd, const grpc::Status& status) {
  const std::string message = status.error_message().substr(0, kMaxRefusalBytes);
  unsigned char head[kRefusalHead];
  std::memcpy(head, "SCTE", 4);
  putU32(head + 4, static_cast<std::uint32_t>(status.error_code()));
  putU32(head + 8, static_cast<std::uint32_t>(message.size()));
  iovec iov[2] = {{head, sizeof head}, {const_cast<char*>(message.data()), message.size()}};
  writeAll(fd, iov, message.empty() ? 1 : 2);
}

}  // namespace

std::string hostOf(const std::string& address) {
  const auto colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host;
}

// --- receiving end ---

TensorChannelServer::TensorChannelServer(const std::string& host, PushReceiver receive, std::size_t max_bytes,
                                         int port)
    : receive_(std::move(receive)), max_bytes_(max_bytes) {
  const std::string what = "tensor channel on " + host + ":" + std::to_string(port);
  addrinfo* found = resolve(host, port, true, what);
  listen_fd_ = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  const bool ok = listen_fd_ >= 0 && ::bind(listen_fd_, found->ai_addr, found->ai_addrlen) == 0 &&
                  ::listen(listen_fd_, 16) == 0;
  ::freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  if (!ok || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
    const std::string why = errnoText();
    if (listen_fd_ >= 0) ::close(listen_fd_);
    throw WorkerError(ErrorCode::Unavailable, what + ": cannot listen: " + why);
  }
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  acceptor_ = std::thread([this] { acceptLoop(); });
}

TensorChannelServer::~TensorChannelServer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    for (auto& c : connections_) ::shutdown(c.fd, SHUT_RDWR);
  }
  ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
  acceptor_.join();
  for (auto& c : connections_) {
    c.thread.join();
    ::close(c.fd);
  }
  ::close(listen_fd_);
}

std::string TensorChannelServer::issue(const std::string& sender, std::chrono::milliseconds valid) {
  std::string ticket(kTicketBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(ticket.data()), static_cast<int>(ticket.size())) != 1) {
    throw WorkerError(ErrorCode::Internal, "no random bytes for a tensor channel ticket");
  }
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  for (auto it = tickets_.begin(); it != tickets_.end();) it = it->second.expires < now ? tickets_.erase(it) : ++it;
  if (tickets_.size() >= kMaxTickets) {
    throw WorkerError(ErrorCode::ResourceExhausted, "too many tensor channel tickets outstanding");
  }
  tickets_[ticket] = {sender, now + valid};
  return ticket;
}

int TensorChannelServer::admitted() const {
  std::lock_guard lock(mutex_);
  return admitted_;
}

std::string TensorChannelServer::redeem(const std::string& ticket) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  // Compared in constant time, every held ticket, so a guess learns nothing from timing.
  auto match = tickets_.end();
  for (auto it = tickets_.begin(); it != tickets_.end(); ++it) {
    if (CRYPTO_memcmp(it->first.data(), ticket.data(), kTicketBytes) == 0) match = it;
  }
  if (match == tickets_.end()) return {};
  const bool valid = match->second.expires >= now;
  std::string sender = match->second.sender.empty() ? "(unnamed)" : match->second.sender;
  tickets_.erase(match);  // good once
  if (!valid) return {};
  ++admitted_;
  return sender;
}

void TensorChannelServer::acceptLoop() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    const int error = fd < 0 ? errno : 0;
    std::unique_lock lock(mutex_);
    if (stopping_) {
      if (fd >= 0) ::close(fd);
      return;
    }
    if (fd < 0) {
      if (error == EBADF || error == EINVAL || error == ENOTSOCK) return;  // the socket is gone
      if (error != EINTR && error != ECONNABORTED) {
        // Out of descriptors or memory for now: senders that cannot get in meanwhile push
        // over gRPC; try again shortly.
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      continue;
    }
    // Connections that ended: their threads joined, their descriptors closed.
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!it->done) {
        ++it;
        continue;
      }
      it->thread.join();
      ::close(it->fd);
      it = connections_.erase(it);
    }
    Connection& c = connections_.emplace_back();
    c.fd = fd;
    c.thread = std::thread([this, &c] { serve(c); });
  }
}

void TensorChannelServer::serve(Connection& c) {
  const int fd = c.fd;
  // A caller without a valid ticket within five seconds is shut out, unanswered.
  setReceiveTimeout(fd, std::chrono::seconds(5));
  std::string ticket(kTicketBytes, '\0');
  const std::string sender = readFull(fd, ticket.data(), ticket.size()) == ticket.size() ? redeem(ticket) : "";
  if (!sender.empty()) {
    setReceiveTimeout(fd, std::chrono::milliseconds(0));
    noDelay(fd);
    writeStatus(fd, grpc::Status::OK);  // the ticket taken
    try {
      for (;;) {
        unsigned char head[kFrameHead];
        const std::size_t got = readFull(fd, head, sizeof head);
        if (got == 0) {  // the sender closed its side between tensors: all of them taken
          writeStatus(fd, grpc::Status::OK);
          break;
        }
        if (got < sizeof head) break;  // broken off inside a tensor, which goes with it
        const std::uint32_t header_bytes = getU32(head + 4);
        const std::uint64_t data_bytes = getU64(head + 8);
        if (std::memcmp(head, "SCT1", 4) != 0) {
          throw WorkerError(ErrorCode::InvalidArgument, "a tensor channel frame without its mark");
        }
        if (header_bytes > kMaxTensorHeaderBytes || data_bytes > max_bytes_) {
          throw WorkerError(ErrorCode::InvalidArgument,
                            "a tensor channel frame of " + std::to_string(header_bytes) + " + " +
                                std::to_string(data_bytes) + " bytes, over the limit");
        }
        std::string header(header_bytes, '\0');
        if (readFull(fd, header.data(), header.size()) < header.size()) break;
        v1::PeerTensor tensor;
        if (!tensor.ParseFromString(header)) {
          throw WorkerError(ErrorCode::InvalidArgument, "a tensor channel header that is not a PeerTensor");
        }
        if (!tensor.tensor().data().empty() || tensor.data_offset() != 0 || tensor.data_bytes() != 0) {
          throw WorkerError(ErrorCode::InvalidArgument, "a tensor channel header with tensor bytes or a piece in it");
        }
        bool finite = true;
        const bool float32 = tensor.tensor().dtype() == "float32";
        if (!receiveInto(fd, *tensor.mutable_tensor()->mutable_data(), data_bytes, float32 ? &finite : nullptr)) break;
        receive_(std::move(tensor), finite);
      }
    } catch (...) {
      // The refusal, then this side closed: the sender raises it at its next write or close
      // (and reports it); this worker's log says it too.
      const grpc::Status refusal = toStatus(std::current_exception());
      std::fprintf(stderr, "stagecraft-worker: refused a tensor from '%s' on the tensor channel: %s\n", sender.c_str(),
                   refusal.error_message().c_str());
      writeStatus(fd, refusal);
      ::shutdown(fd, SHUT_WR);
      // What the sender wrote meanwhile is read and dropped, so that its writes do not
      // block before it sees the refusal, until it closes (or the server stops).
      char drop[64 << 10];
      while (::recv(fd, drop, sizeof drop, 0) > 0) {
      }
    }
  }
  ::shutdown(fd, SHUT_RDWR);
  std::lock_guard lock(mutex_);
  c.done = true;
}

// --- sending end ---

TensorChannelClient::TensorChannelClient(const std::string& host, int port, const std::string& ticket,
                                         std::chrono::milliseconds timeout, std::string what)
    : what_(std::move(what)) {
  addrinfo* found = resolve(host, port, false, what_);
  std::string why = "no address";
  for (addrinfo* a = found; a && fd_ < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int error = ETIMEDOUT;
      socklen_t length = sizeof error;
      if (::poll(&p, 1, static_cast<int>(timeout.count())) == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
      errno = error;
      rc = error == 0 ? 0 : -1;
    }
    if (rc == 0) {
      fd_ = fd;
    } else {
      why = errnoText();
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (fd_ < 0) {
    throw WorkerError(ErrorCode::Unavailable,
                      what_ + ": cannot connect to its tensor channel at port " + std::to_string(port) + ": " + why);
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  noDelay(fd_);
  iovec iov{const_cast<char*>(ticket.data()), ticket.size()};
  bool taken = false;
  if (ticket.size() == kTicketBytes && writeAll(fd_, &iov, 1)) {
    try {
      taken = readStatus(timeout);  // OK; a receiver that does not take it closes unanswered
    } catch (const WorkerError&) {
    }
  }
  if (!taken) {
    ::close(fd_);
    throw WorkerError(ErrorCode::Unavailable, what_ + ": its tensor channel did not take the ticket");
  }
}

TensorChannelClient::~TensorChannelClient() { ::close(fd_); }

void TensorChannelClient::abort() { ::shutdown(fd_, SHUT_RDWR); }

bool TensorChannelClient::readStatus(std::chrono::milliseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
  unsigned char head[kRefusalHead];
  const std::size_t got = readFull(fd_, head, sizeof head);
  if (got == sizeof head && std::memcmp(head, "SCTE", 4) == 0) {
    const auto code = static_cast<grpc::StatusCode>(getU32(head + 4));
    if (code == grpc::StatusCode::OK) return true;
    std::string message(std::min(getU32(head + 8), kMaxRefusalBytes), '\0');
    message.resize(readFull(fd_, message.data(), message.size()));
    throw fromStatus(grpc::Status(code, message), what_);
  }
  throw WorkerError(ErrorCode::Unavailable, what_ + ": the receiver closed the tensor channel");
}

void TensorChannelClient::write(const v1::PeerTensor& header, const char* data, std::size_t size) {
  readStatus(std::chrono::milliseconds(0));  // a refusal already sent ends the stream here
  const std::string head = header.SerializeAsString();
  unsigned char prefix[kFrameHead];
  std::memcpy(prefix, "SCT1", 4);
  putU32(prefix + 4, static_cast<std::uint32_t>(head.size()));
  putU64(prefix + 8, size);
  iovec iov[3] = {{prefix, sizeof prefix},
                  {const_cast<char*>(head.data()), head.size()},
                  {const_cast<char*>(data), size}};
  if (!writeAll(fd_, iov, size > 0 ? 3 : 2)) {
    const std::string why = errnoText();
    readStatus(std::chrono::seconds(1));
    throw WorkerError(ErrorCode::Unavailable, what_ + ": the tensor channel broke (" + why + ")");
  }
}

void TensorChannelClient::close(std::chrono::milliseconds timeout) {
  ::shutdown(fd_, SHUT_WR);
  if (!readStatus(timeout)) {
    throw WorkerError(ErrorCode::DeadlineExceeded,
                      what_ + ": the receiver did not confirm the last tensors within " +
                          std::to_string(timeout.count()) + " ms");
  }
}

}  // namespace stagecraft::worker
