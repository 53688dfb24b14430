#include "control/model_import.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "control/local_cluster.h"
#include "io/error.h"
#include "io/json_io.h"
#include "model/zoo.h"

extern char** environ;

namespace stagecraft::control {
namespace {

namespace fs = std::filesystem;

struct Finished {
  int status = -1;  ///< exit status, or -1 when killed by a signal
  std::string out, err;
};

/// Runs `binary args...` to its end with stdin from /dev/null, collecting stdout and
/// stderr. Throws an environment error when it cannot be started.
Finished runToEnd(const std::string& binary, const std::vector<std::string>& args) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw environmentError(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    throw environmentError(std::string("pipe: ") + std::strerror(errno));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<std::string> storage{binary};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    throw environmentError("cannot start " + binary + ": " + std::strerror(rc));
  }
  Finished done;
  std::array<pollfd, 2> fds{pollfd{out_pipe[0], POLLIN, 0}, pollfd{err_pipe[0], POLLIN, 0}};
  std::array<std::string*, 2> sinks{&done.out, &done.err};
  int open = 2;
  std::array<char, 1 << 16> buffer{};
  while (open > 0) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (n > 0) {
        sinks[i]->append(buffer.data(), static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  done.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return done;
}

/// The worker's reason: its last "stagecraft-worker: ..." line (LibTorch may warn first),
/// without the prefix; the status when it printed none.
std::string reason(const Finished& run) {
  constexpr std::string_view kPrefix = "stagecraft-worker: ";
  std::string found;
  std::size_t begin = 0;
  while (begin < run.err.size()) {
    const std::size_t end = std::min(run.err.find('\n', begin), run.err.size());
    const std::string line = run.err.substr(begin, end - begin);
    if (line.rfind(kPrefix, 0) == 0) found = line.substr(kPrefix.size());
    begin = end + 1;
  }
  if (!found.empty()) return found;
  return "stagecraft-worker ended with status " + std::to_string(run.status) +
         (run.err.empty() ? std::string() : ": " + run.err.substr(0, run.err.find('\n')));
}

std::string workerOrFound(const std::string& worker_binary) {
  return worker_binary.empty() ? findWorkerBinary({}, currentExecutable()) : worker_binary;
}

}  // namespace

bool isTorchScriptPath(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".pt" || ext == ".pth" || ext == ".ts";
}

std::string currentExecutable() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : self.string();
}

v1::Model importTorchScript(const std::string& path, const std::string& input_shape, const std::string& worker_binary) {
  if (input_shape.empty()) {
    throw Error(path + ": a TorchScript model needs --input-shape (C,H,W for images, D for vectors, T for tokens)");
  }
  const Finished run = runToEnd(workerOrFound(worker_binary), {"inspect-model", path, "--input-shape", input_shape});
  if (run.status != 0) throw Error(reason(run));
  v1::Model model;
  io::parseJson(run.out, model, "the shape probe of " + path);
  return model;
}

ModelSpec loadModelOrScript(const std::string& name_or_path, const std::string& input_shape,
                            const std::string& worker_binary) {
  if (!isTorchScriptPath(name_or_path)) {
    if (!input_shape.empty()) {
      throw Error("--input-shape is for TorchScript models (FILE.pt); '" + name_or_path + "' has its own shapes");
    }
    return loadModel(name_or_path);
  }
  return ModelSpec::fromProto(importTorchScript(name_or_path, input_shape, worker_binary));
}

void exportTorchScript(const std::string& checkpoint_dir, const std::string& out, const std::string& worker_binary) {
  const Finished run = runToEnd(workerOrFound(worker_binary), {"export-model", checkpoint_dir, "--out", out});
  if (run.status != 0) throw Error(reason(run));
}

}  // namespace stagecraft::control
