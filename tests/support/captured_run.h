#pragma once

// Runs a program the way a user would and keeps what it printed: the harness of the
// tests that pin a command-line contract (exit status, stdout, one-line stderr).

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

namespace stagecraft::test_support {

struct CapturedRun {
  int exit_code = -1;  ///< -1 when it could not be spawned or did not exit normally
  std::string out;
  std::string err;
  double seconds = 0;  ///< wall time from spawn to exit
};

/// Runs `program` with `args` (argv[0] is the program), waits for it, and returns its
/// exit status and what it wrote; stdout and stderr go through files in `scratch`.
CapturedRun runCaptured(const std::string& program, const std::vector<std::string>& args,
                        const std::filesystem::path& scratch);

/// The whole file as bytes; empty when it cannot be read.
std::string slurp(const std::filesystem::path& path);
/// `text` split at newlines, without them.
std::vector<std::string> linesOf(const std::string& text);
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Whether process `pid` has ended (control::processRunning: gone, a zombie or dead),
/// looking every 50 ms for up to `timeout`.
bool waitUntilEnded(int pid, std::chrono::milliseconds timeout);

}  // namespace stagecraft::test_support
