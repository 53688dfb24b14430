#pragma once
// Mutual TLS between everyone who talks to workers: a cluster CA signs one certificate per
// device (and one per coordinator); each side shows its own and checks the other's against
// the CA. packaging/make-certs makes them. The cluster token still rides on every call;
// TLS adds encryption and proof of who is at the other end.
//
// One setting per process: the CLI, the console and a worker each talk TLS with every peer
// or with none, so the client side is set once, before the first channel is made.
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <optional>
#include <string>

namespace stagecraft::control {

/// Environment variables the CLI and the console take the three files from.
inline constexpr const char* kTlsCertVariable = "STAGECRAFT_TLS_CERT";
inline constexpr const char* kTlsKeyVariable = "STAGECRAFT_TLS_KEY";
inline constexpr const char* kTlsCaVariable = "STAGECRAFT_TLS_CA";

/// The paths of this side's certificate, its private key and the cluster CA's certificate.
struct TlsFiles {
  std::string cert;
  std::string key;
  std::string ca;
  /// None of the three given.
  bool empty() const { return cert.empty() && key.empty() && ca.empty(); }
};

/// The PEM texts of a TlsFiles.
struct TlsMaterial {
  std::string cert_pem;
  std::string key_pem;
  std::string ca_pem;
};

/// `given`, each path that is empty taken from its environment variable.
TlsFiles tlsFilesOrEnvironment(TlsFiles given);

/// Reads the three files: all three or none (nullopt). Throws Error naming the flag when one
/// is missing, not a regular file, larger than 64 KiB, not PEM, or (the key) readable by
/// others. `flag_prefix` names them in errors: "--tls-" gives "--tls-key".
std::optional<TlsMaterial> readTlsFiles(const TlsFiles& files, const std::string& flag_prefix = "--tls-");

/// Makes every channel this process opens afterwards use mutual TLS with `material`, or
/// plain TCP with nullopt (the default).
void setClientTls(std::optional<TlsMaterial> material);
/// Whether setClientTls() turned TLS on.
bool clientTlsEnabled();
/// The credentials for a channel to a worker or a peer: TLS when set, else insecure.
std::shared_ptr<grpc::ChannelCredentials> workerChannelCredentials();

/// A worker's listening credentials: mutual TLS (callers must show a certificate the CA
/// signed) with `material`, insecure without.
std::shared_ptr<grpc::ServerCredentials> workerServerCredentials(const std::optional<TlsMaterial>& material);

}  // namespace stagecraft::control
