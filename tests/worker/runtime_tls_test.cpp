// Mutual TLS with real handshakes: certificates from packaging/make-certs, two workers
// started with --tls-*, and the CLI as a user runs it. The right CA trains (peers push
// activations to each other over TLS too); a wrong CA, a client certificate another CA
// signed, or plain TCP is refused with exit status 4 and a line that says TLS.
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "captured_run.h"
#include "io/json_io.h"
#include "runtime_test_driver.h"
#include "stagecraft/v1/report.pb.h"

namespace stagecraft::worker::testing {
namespace {

namespace fs = std::filesystem;
using test_support::contains;

const fs::path kMakeCerts = fs::path(STAGECRAFT_TEST_CLUSTERS).parent_path().parent_path() / "packaging" / "make-certs";

class RuntimeTls : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) GTEST_SKIP() << "openssl is not installed";
    dir_ = fs::temp_directory_path() / ("stagecraft-tls-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    make("good", "ca");
    for (const char* who : {"t0", "t1", "cli"}) make("good", std::string("device ") + who);
    make("rogue", "ca");
    make("rogue", "device cli");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  void make(const std::string& ca, const std::string& what) {
    const std::string command = "'" + kMakeCerts.string() + "' '" + (dir_ / ca).string() + "' " + what + " >/dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  std::string file(const std::string& ca, const std::string& name) const { return (dir_ / ca / name).string(); }
  /// --tls-* with `who`'s certificate from `cert_ca`, checking the other side against `trust_ca`.
  std::vector<std::string> tls(const std::string& who, const std::string& cert_ca, const std::string& trust_ca) const {
    return {"--tls-cert", file(cert_ca, who + ".pem"), "--tls-key", file(cert_ca, who + ".key"), "--tls-ca",
            file(trust_ca, "ca.pem")};
  }
  test_support::CapturedRun cli(std::vector<std::string> args) {
    return test_support::runCaptured(STAGECRAFT_CLI, args, dir_);
  }

  fs::path dir_;
};

TEST_F(RuntimeTls, TheClustersCaTrainsAndAnythingElseIsRefused) {
  const TokenFile token;
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  for (const std::string name : {"t0", "t1"}) {
    std::vector<std::string> flags = token.flags();
    for (const auto& f : tls(name, "good", "good")) flags.push_back(f);
    workers.push_back(std::make_unique<WorkerProcess>(name, flags, false));
  }
  for (auto& w : workers) w->waitReady();
  const std::string cluster = (dir_ / "tls.json").string();
  std::ofstream(cluster) << io::toJson(clusterProtoOf(workers, "tls"));
  const auto status = [&](const std::vector<std::string>& security) {
    std::vector<std::string> args{"cluster", "status", "--cluster", cluster, "--token-file", token.path()};
    args.insert(args.end(), security.begin(), security.end());
    return cli(args);
  };

  const auto right = status(tls("cli", "good", "good"));
  EXPECT_EQ(right.exit_code, 0) << right.err;
  EXPECT_TRUE(contains(right.out, "t0") && contains(right.out, "t1")) << right.out;

  // The workers' certificates are not the rogue CA's: this side will not trust them.
  const auto wrong_ca = status(tls("cli", "good", "rogue"));
  EXPECT_EQ(wrong_ca.exit_code, 4) << wrong_ca.err;
  EXPECT_TRUE(contains(wrong_ca.err, "TLS")) << wrong_ca.err;

  // A certificate the cluster's CA did not sign: the workers will not take it.
  const auto stranger = status(tls("cli", "rogue", "good"));
  EXPECT_EQ(stranger.exit_code, 4) << stranger.err;

  // Plain TCP to a TLS worker.
  const auto plain = status({});
  EXPECT_EQ(plain.exit_code, 4) << plain.err;

  // A pipeline over both: activations and gradients go from worker to worker over TLS.
  const std::string model = (dir_ / "mlp-128.json").string();
  std::ofstream(model) << io::toJson(smallMlp());
  std::vector<std::string> run{"run", "--cluster", cluster, "--token-file", token.path(), "--model", model,
                               "--steps", "2", "--batch", "8", "--microbatches", "2", "--planner", "gpipe",
                               "--no-profile", "--json"};
  for (const auto& f : tls("cli", "good", "good")) run.push_back(f);
  const auto trained = cli(run);
  ASSERT_EQ(trained.exit_code, 0) << trained.err;
  v1::RunReport report;
  io::parseJson(trained.out, report, "run --json");
  EXPECT_EQ(report.losses_size(), 2);
  ASSERT_EQ(report.final_plan().stages_size(), 2) << "both workers, one stage each, so they push to each other";
}

TEST_F(RuntimeTls, AWorkerRefusesToStartOnIncompleteOrUnsafeTlsFiles) {
  const TokenFile token;
  const auto start = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{"--listen", "127.0.0.1:0", "--name", "t0", "--tier", "edge",
                                  "--beacon-port", "0", "--token-file", token.path()};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return test_support::runCaptured(STAGECRAFT_WORKER, argv, dir_);
  };
  const auto partial = start({"--tls-cert", file("good", "t0.pem")});
  EXPECT_EQ(partial.exit_code, 2);
  EXPECT_TRUE(contains(partial.err, "--tls-key")) << partial.err;
  fs::permissions(file("good", "t0.key"), fs::perms::group_read | fs::perms::others_read, fs::perm_options::add);
  const auto readable = start(tls("t0", "good", "good"));
  EXPECT_EQ(readable.exit_code, 2);
  EXPECT_TRUE(contains(readable.err, "chmod 600")) << readable.err;
  const auto not_pem = start({"--tls-cert", token.path(), "--tls-key", file("good", "cli.key"), "--tls-ca",
                              file("good", "ca.pem")});
  EXPECT_EQ(not_pem.exit_code, 2);
  EXPECT_TRUE(contains(not_pem.err, "not a PEM certificate")) << not_pem.err;
}

}  // namespace
}  // namespace stagecraft::worker::testing
