#include "control/cluster_token.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/error.h"

namespace stagecraft::control {

namespace {

constexpr std::size_t kMaxTokenBytes = 4096;

std::string octal(unsigned mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode & 07777);
  return text;
}

}  // namespace

std::string readSmallFile(const std::string& path, const std::string& what, std::size_t max_bytes,
                          bool must_be_private) {
  // O_NONBLOCK: a FIFO named as the file must not hang the process.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw Error("cannot read " + what + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(what + " is not a regular file");
  }
  if (must_be_private && (st.st_mode & 077) != 0) {
    ::close(fd);
    throw Error(what + " has mode " + octal(st.st_mode) + ": others may read it; make it private (chmod 600 '" +
                path + "')");
  }
  const std::string too_large = what + " is larger than " + std::to_string(max_bytes / 1024) + " KiB";
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw Error(too_large);
  }
  std::string text(max_bytes + 1, '\0');
  std::size_t got = 0;
  for (;;) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
    if (got == text.size()) break;
  }
  ::close(fd);
  text.resize(got);
  if (got > max_bytes) throw Error(too_large);  // it grew while we read
  return text;
}

std::string readTokenFile(const std::string& path) {
  const std::string what = "token file '" + path + "'";
  std::string token = readSmallFile(path, what, kMaxTokenBytes, true);
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  if (token.empty()) throw Error(what + " is empty");
  for (const char c : token) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      throw Error(what + " holds whitespace or control characters: a token is one word");
    }
  }
  return token;
}

std::string makeTokenFile(const std::string& path) {
  unsigned char random[32];
  const int source = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (source < 0) throw environmentError(std::string("cannot open /dev/urandom: ") + std::strerror(errno));
  std::size_t got = 0;
  while (got < sizeof random) {
    const ssize_t n = ::read(source, random + got, sizeof random - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(source);
  if (got != sizeof random) throw environmentError("cannot read 32 random bytes from /dev/urandom");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token;
  for (const unsigned char b : random) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  // A fresh file made private before the token is in it; an old one is replaced whole.
  const std::string temporary = path + ".new";
  ::unlink(temporary.c_str());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw environmentError("cannot write token file '" + path + "': " + std::strerror(errno));
  const std::string line = token + "\n";
  const bool written = ::fchmod(fd, 0600) == 0 &&
                       ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed || ::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    ::unlink(temporary.c_str());
    throw environmentError("cannot write token file '" + path + "': " + reason);
  }
  return token;
}

bool tokensMatch(std::string_view given, std::string_view expected) {
  // Every byte of the longer one is looked at whatever the contents.
  const std::size_t n = std::max(given.size(), expected.size());
  unsigned char differ = given.size() == expected.size() ? 0 : 1;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char a = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    const unsigned char b = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    differ |= a ^ b;
  }
  return differ == 0;
}

const char* tokenRefusal(std::optional<std::string_view> given, std::string_view expected) {
  if (expected.empty()) return nullptr;
  if (!given) return "this worker needs the cluster token (--token-file)";
  if (!tokensMatch(*given, expected)) return "wrong cluster token";
  return nullptr;
}

}  // namespace stagecraft::control
