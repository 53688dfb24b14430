#pragma once

#include <optional>
#include <string>
#include <vector>

#include "control/transport_security.h"

namespace stagecraft::worker {

/// The daemon's command line.
struct WorkerOptions {
  std::string listen;           ///< host:port; port 0 picks a free one
  std::string name;
  std::string tier;             ///< cloud | edge | end
  std::string token_file;       ///< the cluster token's file (mode 0600)
  std::string token;            ///< its contents, read by parseWorkerOptions(); empty only when insecure
  bool insecure = false;        ///< no token: every caller is answered
  control::TlsFiles tls_files;  ///< --tls-cert, --tls-key, --tls-ca: mutual TLS when given
  std::optional<control::TlsMaterial> tls;  ///< their contents, read by parseWorkerOptions()
  std::string data_dir;         ///< the only folder data files are read from; empty: none
  std::string cache_dir;        ///< TorchScript model files by hash; defaulted by parseWorkerOptions()
  int threads = 0;              ///< LibTorch intra-op threads; 0 = the machine's cores
  double slowdown = 1;          ///< compute takes this many times as long
  bool allreduce_overlap = true;  ///< a group's buckets go beside the last backward, not after it
  bool tensor_channel = true;   ///< activations and gradients over a TCP connection of their own (not under TLS)
  int tensor_channel_port = 0;  ///< its port; 0 = one the system picks
  double bandwidth_mbps = 0;    ///< outgoing peer traffic paced to this; 0 = unpaced
  double memory_mb = 0;         ///< memory a stage may use; 0 = the machine's
  double peer_timeout_s = 30;   ///< how long to wait for a peer's tensor or the group
  double lease_s = 10;          ///< a training job nobody watches is stopped after this long; 0 = never
  int beacon_port = 47800;      ///< UDP port of the discovery beacon; 0 = no beacon (control::kDefaultBeaconPort)
  int beacon_interval_ms = 1000;
  std::string beacon_to = "255.255.255.255";  ///< IPv4 address beacons go to (broadcast by default)
  int parent_pid = 0;           ///< end when this process (the one that started the worker) is gone; 0 = never
  bool help = false;
};

/// Parses argv (without argv[0]) and reads the token file. Throws stagecraft::Error with a
/// one-line reason for an unknown flag, a missing value, a value out of range, neither
/// --token-file nor --insecure, a token file that is not private, or TLS files that are
/// incomplete or unreadable.
WorkerOptions parseWorkerOptions(const std::vector<std::string>& args);

/// The --help text.
std::string workerUsage();

}  // namespace stagecraft::worker
