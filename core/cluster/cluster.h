#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stagecraft/v1/cluster.pb.h"

namespace stagecraft {

enum class Tier { Invalid = 0, Cloud, Edge, End };

std::string_view tierName(Tier tier);

struct Device {
  std::string name;
  Tier tier = Tier::Invalid;
  double gflops = 0;
  double memory_mb = 0;
  double bandwidth_mbps = 0;
  std::string address;
};

/// The machine a device's worker runs on, as far as its address tells: the address's host,
/// "loopback" for every loopback name (localhost, 127.x, ::1); empty without an address
/// (a machine of its own). Devices of one machine share its CPU and memory bandwidth.
std::string machineOf(const Device& device);

/// Devices and the links between them. A pair without an explicit link gets the slower
/// of the two NICs and the cluster's default latency.
class Cluster {
 public:
  /// Validates names (unique, non-empty), tiers, positive speeds and link endpoints.
  /// Throws Error naming the offending device or link.
  static Cluster fromProto(const v1::Cluster& proto);
  /// Reads a cluster JSON file; errors name the path.
  static Cluster load(const std::string& path);

  v1::Cluster toProto() const;

  const std::string& name() const { return name_; }
  int size() const { return static_cast<int>(devices_.size()); }
  const Device& device(int i) const { return devices_[i]; }
  const std::vector<Device>& devices() const { return devices_; }
  std::optional<int> find(std::string_view name) const;

  double bandwidthMbps(int a, int b) const { return bandwidth_mbps_[a * size() + b]; }
  double latencyMs(int a, int b) const { return latency_ms_[a * size() + b]; }

 private:
  std::string name_;
  std::string description_;
  double default_latency_ms_ = 0.5;
  std::vector<Device> devices_;
  std::vector<v1::Link> links_;
  std::vector<double> bandwidth_mbps_;  // size() x size()
  std::vector<double> latency_ms_;
};

}  // namespace stagecraft
