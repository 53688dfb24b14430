// UDP beacon discovery: the wire format, and listeners and senders on loopback.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>

#include "control/discovery.h"
#include "io/error.h"

namespace stagecraft::control {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

v1::Beacon sampleBeacon(const std::string& name = "jetson-1", const std::string& address = "10.0.0.7:50051") {
  v1::Beacon b;
  b.set_name(name);
  b.set_tier("edge");
  b.set_address(address);
  b.set_version("0.1.0");
  b.set_state("training");
  b.set_job("mlp-1");
  b.set_cores(4);
  b.set_memory_mb(3900);
  b.set_measured_gflops(21.5);
  b.set_sequence(17);
  b.set_interval_ms(1000);
  return b;
}

/// Everything `listener` hears until `done` says enough or `timeout` passes.
std::vector<HeardBeacon> listenUntil(BeaconListener& listener, const std::function<bool(const HeardBeacon&)>& done,
                                     std::chrono::milliseconds timeout) {
  std::vector<HeardBeacon> heard;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    for (auto& h : listener.poll(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()))) {
      heard.push_back(h);
      if (done(heard.back())) return heard;
    }
  }
  return heard;
}

TEST(Discovery, BeaconSurvivesEncodeAndDecode) {
  const v1::Beacon sent = sampleBeacon();
  const std::string datagram = encodeBeacon(sent);
  EXPECT_EQ(datagram.substr(0, kBeaconMagic.size()), kBeaconMagic);
  const auto got = decodeBeacon(datagram);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->SerializeAsString(), sent.SerializeAsString());
}

TEST(Discovery, JunkOnThePortIsRejected) {
  const std::string good = encodeBeacon(sampleBeacon());
  EXPECT_FALSE(decodeBeacon(""));
  EXPECT_FALSE(decodeBeacon("SCB"));
  EXPECT_FALSE(decodeBeacon("hello, world"));
  EXPECT_FALSE(decodeBeacon(good.substr(kBeaconMagic.size())));                 // no magic
  EXPECT_FALSE(decodeBeacon("XCB1" + good.substr(kBeaconMagic.size())));        // wrong magic
  EXPECT_FALSE(decodeBeacon(good.substr(0, good.size() - 1)));                  // cut mid-varint
  EXPECT_FALSE(decodeBeacon(std::string(kBeaconMagic) + "\xff\xff\xff\xff"));  // not protobuf
  EXPECT_FALSE(decodeBeacon(good + std::string(kMaxBeaconBytes, '\0')));        // oversize
  EXPECT_FALSE(decodeBeacon(encodeBeacon(sampleBeacon(""))));                   // no name
  EXPECT_FALSE(decodeBeacon(encodeBeacon(sampleBeacon("a", "10.0.0.7"))));      // no port
  EXPECT_FALSE(decodeBeacon(encodeBeacon(sampleBeacon("a", "10.0.0.7:http"))));
  EXPECT_FALSE(decodeBeacon(encodeBeacon(sampleBeacon("a", "10.0.0.7:70000"))));
  EXPECT_TRUE(decodeBeacon(encodeBeacon(sampleBeacon("a", "0.0.0.0:5"))));
  EXPECT_TRUE(decodeBeacon(encodeBeacon(sampleBeacon("a", ":5"))));
}

TEST(Discovery, ForgedOrImpossibleValuesAreRejected) {
  const auto with = [](const std::function<void(v1::Beacon&)>& change) {
    v1::Beacon b = sampleBeacon();
    change(b);
    return decodeBeacon(encodeBeacon(b)).has_value();
  };
  EXPECT_TRUE(with([](v1::Beacon&) {}));
  EXPECT_FALSE(with([](v1::Beacon& b) { b.set_name("\x1b[2Jhacked"); }));   // clears a terminal
  EXPECT_FALSE(with([](v1::Beacon& b) { b.set_job("mlp\r\nfake-row"); }));  // forges a row
  EXPECT_FALSE(with([](v1::Beacon& b) { b.set_name(std::string(200, 'n')); }));
  EXPECT_FALSE(with([](v1::Beacon& b) { b.set_tier("moon"); }));
  EXPECT_FALSE(with([](v1::Beacon& b) { b.set_measured_gflops(std::nan("")); }));
  EXPECT_FALSE(with([](v1::Beacon& b) { b.set_measured_gflops(-1); }));
  EXPECT_FALSE(with([](v1::Beacon& b) { b.set_memory_mb(std::numeric_limits<double>::infinity()); }));
  EXPECT_FALSE(with([](v1::Beacon& b) { b.set_cores(-4); }));
  EXPECT_FALSE(with([](v1::Beacon& b) { b.set_interval_ms(-1); }));
  EXPECT_TRUE(with([](v1::Beacon& b) { b.set_name("边缘-1"); }));  // UTF-8 names are fine
}

TEST(Discovery, AnUnspecifiedHostIsTheSender) {
  EXPECT_EQ(resolveBeaconAddress("0.0.0.0:50051", "192.168.1.9"), "192.168.1.9:50051");
  EXPECT_EQ(resolveBeaconAddress(":50051", "192.168.1.9"), "192.168.1.9:50051");
  EXPECT_EQ(resolveBeaconAddress("10.0.0.7:50051", "192.168.1.9"), "10.0.0.7:50051");
  EXPECT_EQ(resolveBeaconAddress("box.lan:50051", "192.168.1.9"), "box.lan:50051");
}

TEST(Discovery, ListenerHearsASenderOnLoopbackAndFillsInItsAddress) {
  BeaconListener listener(0);
  ASSERT_GT(listener.port(), 0);
  BeaconSender sender("127.0.0.1", listener.port());
  ASSERT_TRUE(sender.send(sampleBeacon("w", "0.0.0.0:6001"))) << sender.lastError();
  const auto heard = listenUntil(listener, [](const HeardBeacon&) { return true; }, 5s);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_EQ(heard[0].beacon.name(), "w");
  EXPECT_EQ(heard[0].sender_ip, "127.0.0.1");
  EXPECT_EQ(heard[0].beacon.address(), "127.0.0.1:6001");
}

TEST(Discovery, ListenerDropsJunkAndKeepsTheBeaconsAround) {
  BeaconListener listener(0);
  BeaconSender sender("127.0.0.1", listener.port());
  // A raw datagram of junk between two beacons: only the beacons come out.
  ASSERT_TRUE(sender.send(sampleBeacon("first", "127.0.0.1:1")));
  {
    v1::Beacon junk;  // no name: decodes as junk
    junk.set_address("127.0.0.1:2");
    ASSERT_TRUE(sender.send(junk));
  }
  ASSERT_TRUE(sender.send(sampleBeacon("second", "127.0.0.1:3")));
  const auto heard = listenUntil(listener, [](const HeardBeacon& h) { return h.beacon.name() == "second"; }, 5s);
  ASSERT_EQ(heard.size(), 2u);
  EXPECT_EQ(heard[0].beacon.name(), "first");
  EXPECT_EQ(heard[1].beacon.name(), "second");
}

TEST(Discovery, TwoListenersOnOnePortBothHearTheLoopbackBroadcast) {
  BeaconListener console(0);
  BeaconListener cli(console.port());  // SO_REUSEADDR + SO_REUSEPORT
  BeaconSender sender("127.255.255.255", console.port());
  ASSERT_TRUE(sender.send(sampleBeacon("shared", "127.0.0.1:7"))) << sender.lastError();
  const auto named = [](const HeardBeacon& h) { return h.beacon.name() == "shared"; };
  EXPECT_EQ(listenUntil(console, named, 5s).size(), 1u);
  EXPECT_EQ(listenUntil(cli, named, 5s).size(), 1u);
}

TEST(Discovery, PollReturnsEmptyAfterItsTimeoutWhenNothingArrives) {
  BeaconListener listener(0);
  const auto start = Clock::now();
  EXPECT_TRUE(listener.poll(50ms).empty());
  EXPECT_GE(Clock::now() - start, 40ms);
}

TEST(Discovery, UniqueByAddressKeepsTheLatestBeaconOfEachWorker) {
  std::vector<HeardBeacon> heard(3);
  heard[0].beacon = sampleBeacon("a", "127.0.0.1:1");
  heard[1].beacon = sampleBeacon("b", "127.0.0.1:2");
  heard[2].beacon = sampleBeacon("a", "127.0.0.1:1");
  heard[2].beacon.set_state("idle");
  const auto unique = uniqueByAddress(heard);
  ASSERT_EQ(unique.size(), 2u);
  EXPECT_EQ(unique[0].beacon.name(), "a");
  EXPECT_EQ(unique[0].beacon.state(), "idle");
  EXPECT_EQ(unique[1].beacon.name(), "b");
}

TEST(Discovery, SenderRefusesAHostThatIsNotIpv4) {
  EXPECT_THROW(BeaconSender("box.lan", 47800), Error);
  EXPECT_THROW(BeaconSender("127.0.0.1", 0), Error);
}

}  // namespace
}  // namespace stagecraft::control
