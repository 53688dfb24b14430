// The cluster token file: made private with a fresh random token, read back only when it
// is a private regular file holding one word.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "control/cluster_token.h"
#include "io/error.h"

namespace stagecraft::control {
namespace {

namespace fs = std::filesystem;

class ClusterTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "stagecraft-token-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  /// `text` in a file of mode `mode`.
  std::string write(const std::string& name, const std::string& text, mode_t mode = 0600) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  /// What readTokenFile says about `path`.
  static std::string refusal(const std::string& path) {
    try {
      readTokenFile(path);
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  }
  fs::path dir_;
};

TEST_F(ClusterTokenTest, AMadeTokenIsPrivateFreshAndReadsBack) {
  const std::string path = (dir_ / "cluster.token").string();
  const std::string first = makeTokenFile(path);
  EXPECT_EQ(first.size(), 64u);
  EXPECT_EQ(first.find_first_not_of("0123456789abcdef"), std::string::npos) << first;
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(readTokenFile(path), first);
  // Made again: another token replaces it, and nothing else is left in the folder.
  const std::string second = makeTokenFile(path);
  EXPECT_NE(second, first);
  EXPECT_EQ(readTokenFile(path), second);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(ClusterTokenTest, OnlyAPrivateRegularFileWithOneWordIsAToken) {
  EXPECT_EQ(readTokenFile(write("crlf", "s3cret\r\n")), "s3cret");
  EXPECT_EQ(refusal(write("readonly", "s3cret", 0400)), "accepted");

  const std::string shared = refusal(write("shared", "s3cret", 0644));
  EXPECT_NE(shared.find("has mode 0644"), std::string::npos) << shared;
  EXPECT_NE(shared.find("chmod 600"), std::string::npos) << shared;
  EXPECT_NE(refusal(write("group", "s3cret", 0640)).find("mode 0640"), std::string::npos);
  EXPECT_NE(refusal((dir_ / "missing").string()).find("cannot read token file"), std::string::npos);
  EXPECT_NE(refusal(dir_.string()).find("not a regular file"), std::string::npos);
  EXPECT_NE(refusal("/dev/zero").find("not a regular file"), std::string::npos);
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(refusal(fifo).find("not a regular file"), std::string::npos);  // and no hang
  EXPECT_NE(refusal(write("empty", "\n")).find("is empty"), std::string::npos);
  EXPECT_NE(refusal(write("two", "one two")).find("one word"), std::string::npos);
  EXPECT_NE(refusal(write("nul", std::string("a\0b", 3))).find("one word"), std::string::npos);
  EXPECT_NE(refusal(write("huge", std::string(5000, 'x'))).find("larger than 4 KiB"), std::string::npos);
  // Every refusal is one line.
  EXPECT_EQ(refusal(write("two-lines", "a\nb")).find('\n'), std::string::npos);
}

TEST(ClusterToken, TokensMatchOnlyWhenEqual) {
  EXPECT_TRUE(tokensMatch("abc", "abc"));
  EXPECT_FALSE(tokensMatch("abd", "abc"));
  EXPECT_FALSE(tokensMatch("ab", "abc"));
  EXPECT_FALSE(tokensMatch("abcd", "abc"));
  EXPECT_FALSE(tokensMatch("", "abc"));
  EXPECT_TRUE(tokensMatch("", ""));
  EXPECT_FALSE(tokensMatch(std::string_view("ab\0", 3), "ab"));
}

TEST(ClusterToken, AWorkerRefusesACallWithoutItsTokenAndAnInsecureOneNone) {
  EXPECT_EQ(tokenRefusal("abc", "abc"), nullptr);
  EXPECT_STREQ(tokenRefusal("abd", "abc"), "wrong cluster token");
  EXPECT_STREQ(tokenRefusal(std::nullopt, "abc"), "this worker needs the cluster token (--token-file)");
  EXPECT_EQ(tokenRefusal(std::nullopt, ""), nullptr);
  EXPECT_EQ(tokenRefusal("anything", ""), nullptr);
}

}  // namespace
}  // namespace stagecraft::control
