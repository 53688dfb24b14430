#include <gtest/gtest.h>

#include <algorithm>

#include "cluster/cluster.h"
#include "cluster/cluster_catalog.h"
#include "io/error.h"
#include "io/json_io.h"

namespace stagecraft {
namespace {

v1::Cluster parse(const std::string& json) {
  v1::Cluster c;
  io::parseJson(json, c, "test");
  return c;
}

const char* kTwoDevices = R"({"devices":[
  {"name":"a","tier":"cloud","gflops":100,"memory_mb":1000,"bandwidth_mbps":1000},
  {"name":"b","tier":"end","gflops":10,"memory_mb":500,"bandwidth_mbps":100}]})";

TEST(Cluster, DefaultLinkIsTheSlowerNic) {
  const Cluster c = Cluster::fromProto(parse(kTwoDevices));
  EXPECT_EQ(c.bandwidthMbps(0, 1), 100);
  EXPECT_EQ(c.bandwidthMbps(1, 0), 100);
  EXPECT_EQ(c.latencyMs(0, 1), 0.5);
}

TEST(Cluster, ExplicitLinkOverridesBothDirections) {
  v1::Cluster p = parse(kTwoDevices);
  auto* l = p.add_links();
  l->set_a("b");
  l->set_b("a");
  l->set_bandwidth_mbps(20);
  l->set_latency_ms(7);
  const Cluster c = Cluster::fromProto(p);
  EXPECT_EQ(c.bandwidthMbps(0, 1), 20);
  EXPECT_EQ(c.bandwidthMbps(1, 0), 20);
  EXPECT_EQ(c.latencyMs(0, 1), 7);
}

TEST(Cluster, AcceptsLowerCamelCaseFields) {
  const Cluster c = Cluster::fromProto(parse(R"({"devices":[
    {"name":"a","tier":"edge","gflops":1,"memoryMb":64,"bandwidthMbps":10}]})"));
  EXPECT_EQ(c.device(0).memory_mb, 64);
  EXPECT_EQ(c.device(0).tier, Tier::Edge);
}

void expectError(const v1::Cluster& p, const std::string& fragment) {
  try {
    Cluster::fromProto(p);
    FAIL() << "accepted, expected an error with: " << fragment;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Cluster, RejectsBadDevicesNamingThem) {
  v1::Cluster p = parse(kTwoDevices);
  p.mutable_devices(1)->set_name("a");
  expectError(p, "used twice");
  p = parse(kTwoDevices);
  p.mutable_devices(1)->set_tier("fog");
  expectError(p, "'b': tier");
  p = parse(kTwoDevices);
  p.mutable_devices(0)->set_gflops(0);
  expectError(p, "'a': gflops");
  p = parse(kTwoDevices);
  auto* l = p.add_links();
  l->set_a("a");
  l->set_b("zz");
  l->set_bandwidth_mbps(1);
  expectError(p, "unknown device 'zz'");
  expectError(v1::Cluster(), "no devices");
}

TEST(Cluster, UnknownJsonFieldIsAnError) {
  v1::Cluster c;
  EXPECT_THROW(io::parseJson(R"({"devices":[],"colour":"red"})", c, "x"), Error);
}

/// The message parseJson throws for `json`.
std::string jsonError(const std::string& json) {
  v1::Cluster c;
  try {
    io::parseJson(json, c, "cluster.json");
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

TEST(Cluster, JsonErrorsNameTheLineAndColumn) {
  // A missing comma on line 3: where the next field starts.
  const std::string missing_comma = "{\n  \"name\": \"lab\"\n  \"devices\": []\n}";
  EXPECT_NE(jsonError(missing_comma).find("line 3, column 3"), std::string::npos) << jsonError(missing_comma);
  EXPECT_NE(jsonError(missing_comma).find("',' or '}'"), std::string::npos) << jsonError(missing_comma);
  // Cut off in the middle.
  EXPECT_NE(jsonError("{\"devices\": [\n  {\"name\": \"a\"").find("line 2"), std::string::npos);
  // Well-formed, but a field the format does not have: its own line and column.
  const std::string unknown = "{\n  \"devices\": [],\n    \"colour\": \"red\"\n}";
  EXPECT_NE(jsonError(unknown).find("line 3, column 5"), std::string::npos) << jsonError(unknown);
  EXPECT_NE(jsonError(unknown).find("colour"), std::string::npos) << jsonError(unknown);
  // Nested without end: refused before protobuf recurses into it.
  const std::string deep = "{\"devices\": " + std::string(10000, '[') + std::string(10000, ']') + "}";
  EXPECT_NE(jsonError(deep).find("nested deeper than"), std::string::npos) << jsonError(deep);
  // Exactly the limit is fine; one level more is not.
  const auto nested = [](int levels) {
    return "{\"devices\": " + std::string(levels - 1, '[') + std::string(levels - 1, ']') + "}";
  };
  EXPECT_EQ(jsonError(nested(io::kMaxJsonDepth)).find("nested deeper"), std::string::npos);
  EXPECT_NE(jsonError(nested(io::kMaxJsonDepth + 1)).find("nested deeper"), std::string::npos);
  // A malformed number is placed too.
  const std::string bad_number = "{\"devices\": [],\n \"default_latency_ms\": 1-2}";
  EXPECT_NE(jsonError(bad_number).find("line 2"), std::string::npos) << jsonError(bad_number);
  // Valid JSON parses as before.
  EXPECT_EQ(jsonError(R"({"name": "lab", "devices": [{"name": "a", "tier": "edge", "gflops": 1, "memory_mb": 1,
    "bandwidth_mbps": 1}]})"), "");
}

TEST(Cluster, ShippedExamplesLoadAndRoundTrip) {
  for (const char* name : {"cloud-edge-end", "jetson-edge"}) {
    const Cluster c = Cluster::load(std::string(STAGECRAFT_TEST_CLUSTERS) + "/" + name + ".json");
    EXPECT_EQ(c.name(), name);
    EXPECT_GE(c.size(), 6);
    const Cluster back = Cluster::fromProto(c.toProto());
    ASSERT_EQ(back.size(), c.size());
    for (int a = 0; a < c.size(); ++a) {
      EXPECT_EQ(back.device(a).name, c.device(a).name);
      for (int b = 0; b < c.size(); ++b) {
        if (a != b) EXPECT_EQ(back.bandwidthMbps(a, b), c.bandwidthMbps(a, b));
      }
    }
    v1::Cluster reparsed;
    io::parseJson(io::toJson(c.toProto()), reparsed, "round trip");
    EXPECT_EQ(reparsed.SerializeAsString(), c.toProto().SerializeAsString());
  }
}

TEST(Cluster, CloudEdgeEndHasAThinWan) {
  const Cluster c = Cluster::load(std::string(STAGECRAFT_TEST_CLUSTERS) + "/cloud-edge-end.json");
  const int cloud = *c.find("cloud-gpu"), edge = *c.find("edge-1"), edge2 = *c.find("edge-2");
  EXPECT_EQ(c.bandwidthMbps(cloud, edge), 100);
  EXPECT_EQ(c.bandwidthMbps(edge, edge2), 1000);
}

TEST(Cluster, MissingFileNamesThePath) {
  try {
    Cluster::load("/nonexistent/c.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/c.json"), std::string::npos);
  }
}

TEST(ClusterCatalog, ShippedExamplesResolveByName) {
  const auto names = exampleClusterNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "jetson-edge"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "cloud-edge-end"), names.end());
  EXPECT_TRUE(resolveClusterPath("jetson-edge").ends_with("/jetson-edge.json"));
  EXPECT_EQ(loadCluster("jetson-edge").name(), Cluster::load(resolveClusterPath("jetson-edge")).name());
  // A path is taken as a path, even when it does not exist: Cluster::load names it.
  EXPECT_EQ(resolveClusterPath("/nowhere/x.json"), "/nowhere/x.json");
}

TEST(ClusterCatalog, UnknownNameListsTheExamples) {
  try {
    resolveClusterPath("no-such-cluster");
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown cluster 'no-such-cluster'"), std::string::npos) << what;
    EXPECT_NE(what.find("jetson-edge"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace stagecraft
