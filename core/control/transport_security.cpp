#include "control/transport_security.h"

#include <cstdlib>
#include <mutex>

#include "control/cluster_token.h"
#include "io/error.h"

namespace stagecraft::control {
namespace {

constexpr std::size_t kMaxPemBytes = 64 * 1024;

std::mutex g_mutex;
std::optional<TlsMaterial> g_client;

std::string readPem(const std::string& path, const std::string& flag, bool secret, const char* marker) {
  const std::string what = flag + " '" + path + "'";
  std::string text = readSmallFile(path, what, kMaxPemBytes, secret);
  if (text.find("-----BEGIN ") == std::string::npos || text.find(marker) == std::string::npos) {
    throw Error(what + ": not a PEM " + (secret ? "private key" : "certificate"));
  }
  return text;
}

}  // namespace

TlsFiles tlsFilesOrEnvironment(TlsFiles given) {
  const auto fill = [](std::string& value, const char* variable) {
    if (!value.empty()) return;
    if (const char* env = std::getenv(variable)) value = env;
  };
  fill(given.cert, kTlsCertVariable);
  fill(given.key, kTlsKeyVariable);
  fill(given.ca, kTlsCaVariable);
  return given;
}

std::optional<TlsMaterial> readTlsFiles(const TlsFiles& files, const std::string& flag_prefix) {
  if (files.empty()) return std::nullopt;
  const std::string cert = flag_prefix + "cert", key = flag_prefix + "key", ca = flag_prefix + "ca";
  if (files.cert.empty() || files.key.empty() || files.ca.empty()) {
    throw Error("TLS needs all of " + cert + ", " + key + " and " + ca + " (missing: " +
                (files.cert.empty() ? cert + " " : "") + (files.key.empty() ? key + " " : "") +
                (files.ca.empty() ? ca : "") + ")");
  }
  TlsMaterial m;
  m.cert_pem = readPem(files.cert, cert, false, "CERTIFICATE-----");
  m.key_pem = readPem(files.key, key, true, "PRIVATE KEY-----");
  m.ca_pem = readPem(files.ca, ca, false, "CERTIFICATE-----");
  return m;
}

void setClientTls(std::optional<TlsMaterial> material) {
  std::lock_guard lock(g_mutex);
  g_client = std::move(material);
}

bool clientTlsEnabled() {
  std::lock_guard lock(g_mutex);
  return g_client.has_value();
}

std::shared_ptr<grpc::ChannelCredentials> workerChannelCredentials() {
  std::lock_guard lock(g_mutex);
  if (!g_client) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = g_client->ca_pem;
  options.pem_private_key = g_client->key_pem;
  options.pem_cert_chain = g_client->cert_pem;
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::ServerCredentials> workerServerCredentials(const std::optional<TlsMaterial>& material) {
  if (!material) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = material->ca_pem;
  options.pem_key_cert_pairs.push_back({material->key_pem, material->cert_pem});
  return grpc::SslServerCredentials(options);
}

}  // namespace stagecraft::control
