#pragma once

// The base of the tests that run the real stagecraft-cli binary: a scratch folder per
// test, removed afterwards, and run() capturing exit status, stdout and stderr.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "captured_run.h"
#include "io/json_io.h"

namespace stagecraft::test_support {

class CliFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "stagecraft-cli-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  /// Runs stagecraft-cli with `args`.
  CapturedRun run(const std::vector<std::string>& args) {
    CapturedRun result = runCaptured(STAGECRAFT_CLI, args, dir_);
    if (result.exit_code < 0) ADD_FAILURE() << result.err;
    return result;
  }

  std::filesystem::path write(const std::string& name, const std::string& text) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  std::filesystem::path writeJson(const std::string& name, const google::protobuf::Message& message) {
    return write(name, io::toJson(message));
  }

  std::filesystem::path dir_;
};

}  // namespace stagecraft::test_support

/// Bad input: status `status` and exactly one `stagecraft-cli: ...` line on stderr.
#define EXPECT_ONE_LINE_FAILURE(result, status)                                         \
  do {                                                                                  \
    const ::stagecraft::test_support::CapturedRun& r_ = (result);                      \
    EXPECT_EQ(r_.exit_code, status) << r_.out << r_.err;                                \
    const auto lines_ = ::stagecraft::test_support::linesOf(r_.err);                   \
    ASSERT_EQ(lines_.size(), 1u) << r_.err;                                             \
    EXPECT_TRUE(lines_[0].starts_with("stagecraft-cli: ")) << lines_[0];                \
  } while (false)
