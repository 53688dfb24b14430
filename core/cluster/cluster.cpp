#include "cluster/cluster.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "io/error.h"
#include "io/json_io.h"

namespace stagecraft {
namespace {

constexpr double kDefaultLatencyMs = 0.5;

Tier parseTier(const std::string& text) {
  if (text == "cloud") return Tier::Cloud;
  if (text == "edge") return Tier::Edge;
  if (text == "end") return Tier::End;
  return Tier::Invalid;
}

bool positive(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

std::string_view tierName(Tier tier) {
  switch (tier) {
    case Tier::Cloud: return "cloud";
    case Tier::Edge: return "edge";
    case Tier::End: return "end";
    case Tier::Invalid: break;
  }
  return "invalid";
}

Cluster Cluster::fromProto(const v1::Cluster& proto) {
  Cluster c;
  c.name_ = proto.name();
  c.description_ = proto.description();
  if (proto.default_latency_ms() < 0) throw Error("cluster: default_latency_ms must not be negative");
  c.default_latency_ms_ = proto.default_latency_ms() > 0 ? proto.default_latency_ms() : kDefaultLatencyMs;
  if (proto.devices().empty()) throw Error("cluster: has no devices");
  for (int i = 0; i < proto.devices_size(); ++i) {
    const auto& p = proto.devices(i);
    const std::string where = "device " + std::to_string(i) + " '" + p.name() + "'";
    if (p.name().empty()) throw Error("device " + std::to_string(i) + ": has no name");
    if (c.find(p.name())) throw Error(where + ": name used twice");
    Device d;
    d.name = p.name();
    d.tier = parseTier(p.tier());
    if (d.tier == Tier::Invalid) {
      throw Error(where + ": tier must be cloud, edge or end, got '" + p.tier() + "'");
    }
    if (!positive(p.gflops())) throw Error(where + ": gflops must be positive");
    if (!positive(p.memory_mb())) throw Error(where + ": memory_mb must be positive");
    if (!positive(p.bandwidth_mbps())) throw Error(where + ": bandwidth_mbps must be positive");
    d.gflops = p.gflops();
    d.memory_mb = p.memory_mb();
    d.bandwidth_mbps = p.bandwidth_mbps();
    d.address = p.address();
    c.devices_.push_back(std::move(d));
  }
  const int n = c.size();
  c.bandwidth_mbps_.assign(n * n, 0);
  c.latency_ms_.assign(n * n, 0);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      c.bandwidth_mbps_[a * n + b] = std::min(c.devices_[a].bandwidth_mbps, c.devices_[b].bandwidth_mbps);
      c.latency_ms_[a * n + b] = c.default_latency_ms_;
    }
  }
  for (int i = 0; i < proto.links_size(); ++i) {
    const auto& l = proto.links(i);
    const std::string where = "link " + std::to_string(i) + " (" + l.a() + " - " + l.b() + ")";
    const auto a = c.find(l.a());
    const auto b = c.find(l.b());
    if (!a) throw Error(where + ": unknown device '" + l.a() + "'");
    if (!b) throw Error(where + ": unknown device '" + l.b() + "'");
    if (*a == *b) throw Error(where + ": joins a device to itself");
    if (!positive(l.bandwidth_mbps())) throw Error(where + ": bandwidth_mbps must be positive");
    if (l.latency_ms() < 0 || !std::isfinite(l.latency_ms())) throw Error(where + ": latency_ms must not be negative");
    for (auto [x, y] : {std::pair{*a, *b}, std::pair{*b, *a}}) {
      c.bandwidth_mbps_[x * n + y] = l.bandwidth_mbps();
      c.latency_ms_[x * n + y] = l.latency_ms();
    }
    c.links_.push_back(l);
  }
  return c;
}

Cluster Cluster::load(const std::string& path) {
  v1::Cluster proto;
  io::readJsonFile(path, proto);
  try {
    Cluster c = fromProto(proto);
    if (c.name_.empty()) {
      const auto slash = path.find_last_of('/');
      std::string base = path.substr(slash == std::string::npos ? 0 : slash + 1);
      if (base.size() > 5 && base.ends_with(".json")) base.resize(base.size() - 5);
      c.name_ = base;
    }
    return c;
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

v1::Cluster Cluster::toProto() const {
  v1::Cluster p;
  p.set_name(name_);
  p.set_description(description_);
  p.set_default_latency_ms(default_latency_ms_);
  for (const auto& d : devices_) {
    auto* out = p.add_devices();
    out->set_name(d.name);
    out->set_tier(std::string(tierName(d.tier)));
    out->set_gflops(d.gflops);
    out->set_memory_mb(d.memory_mb);
    out->set_bandwidth_mbps(d.bandwidth_mbps);
    out->set_address(d.address);
  }
  for (const auto& l : links_) *p.add_links() = l;
  return p;
}

std::string machineOf(const Device& device) {
  std::string_view host = device.address;
  if (host.starts_with('[')) {
    host = host.substr(1, host.find(']') == std::string_view::npos ? host.npos : host.find(']') - 1);
  } else if (const auto colon = host.rfind(':'); colon != host.npos && host.find(':') == colon) {
    host = host.substr(0, colon);
  }
  if (host == "localhost" || host == "::1" || host.starts_with("127.")) return "loopback";
  std::string key(host);
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  return key;
}

std::optional<int> Cluster::find(std::string_view name) const {
  for (int i = 0; i < size(); ++i) {
    if (devices_[i].name == name) return i;
  }
  return std::nullopt;
}

}  // namespace stagecraft
