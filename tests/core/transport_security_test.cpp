// The TLS files a CLI, console or worker is given: all three or none, each a PEM of the
// right kind, the key private; and the process-wide client setting.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "control/transport_security.h"
#include "io/error.h"

namespace stagecraft::control {
namespace {

namespace fs = std::filesystem;

class TransportSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("stagecraft-tlsfiles-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    setClientTls(std::nullopt);
    fs::remove_all(dir_);
  }
  std::string write(const std::string& name, const std::string& text, unsigned mode) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  std::string refusal(const TlsFiles& files) {
    try {
      readTlsFiles(files);
    } catch (const Error& e) {
      return e.what();
    }
    return "accepted";
  }

  fs::path dir_;
};

constexpr const char* kCert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
constexpr const char* kKey = "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE KEY-----\n";

TEST_F(TransportSecurityTest, AllThreeFilesOrNone) {
  EXPECT_FALSE(readTlsFiles({}).has_value()) << "no TLS";
  const std::string cert = write("a.pem", kCert, 0644), key = write("a.key", kKey, 0600);
  const std::string ca = write("ca.pem", kCert, 0644);
  const std::string missing = refusal({cert, "", ca});
  EXPECT_NE(missing.find("missing: --tls-key"), std::string::npos) << missing;
  const auto read = readTlsFiles({cert, key, ca});
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->key_pem, kKey);
  EXPECT_EQ(read->ca_pem, kCert);
}

TEST_F(TransportSecurityTest, AKeyOthersCanReadOrAFileOfTheWrongKindIsRefused) {
  const std::string cert = write("a.pem", kCert, 0644), ca = write("ca.pem", kCert, 0644);
  const std::string shared = refusal({cert, write("shared.key", kKey, 0644), ca});
  EXPECT_NE(shared.find("chmod 600"), std::string::npos) << shared;
  const std::string swapped = refusal({write("k.pem", kKey, 0644), write("c.key", kCert, 0600), ca});
  EXPECT_NE(swapped.find("--tls-cert"), std::string::npos) << swapped;
  EXPECT_NE(swapped.find("not a PEM certificate"), std::string::npos) << swapped;
  const std::string nothing = refusal({cert, write("e.key", "", 0600), ca});
  EXPECT_NE(nothing.find("not a PEM private key"), std::string::npos) << nothing;
  const std::string huge = refusal({write("huge.pem", std::string(70 * 1024, 'x'), 0644), write("b.key", kKey, 0600), ca});
  EXPECT_NE(huge.find("larger than 64 KiB"), std::string::npos) << huge;
  const std::string absent = refusal({(dir_ / "none.pem").string(), write("d.key", kKey, 0600), ca});
  EXPECT_NE(absent.find("cannot read --tls-cert"), std::string::npos) << absent;
}

TEST_F(TransportSecurityTest, EnvironmentFillsOnlyWhatWasNotGiven) {
  ::setenv(kTlsCertVariable, "/env/cert.pem", 1);
  ::setenv(kTlsCaVariable, "/env/ca.pem", 1);
  const TlsFiles files = tlsFilesOrEnvironment({"", "/flag/key.pem", "/flag/ca.pem"});
  ::unsetenv(kTlsCertVariable);
  ::unsetenv(kTlsCaVariable);
  EXPECT_EQ(files.cert, "/env/cert.pem");
  EXPECT_EQ(files.key, "/flag/key.pem");
  EXPECT_EQ(files.ca, "/flag/ca.pem");
}

TEST_F(TransportSecurityTest, ClientTlsIsOneSettingForTheProcess) {
  EXPECT_FALSE(clientTlsEnabled());
  setClientTls(TlsMaterial{kCert, kKey, kCert});
  EXPECT_TRUE(clientTlsEnabled());
  EXPECT_NE(workerChannelCredentials(), nullptr);
  setClientTls(std::nullopt);
  EXPECT_FALSE(clientTlsEnabled());
}

}  // namespace
}  // namespace stagecraft::control
