#include <chrono>
#include <cmath>
#include <iostream>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "control/discovery.h"
#include "io/error.h"

namespace stagecraft::cli {
namespace {

double positiveSeconds(const ParsedArguments& parsed) {
  const std::string text = parsed.value("seconds");
  std::size_t used = 0;
  double seconds = 0;
  try {
    seconds = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(seconds) || seconds <= 0 || seconds > 3600) {
    throw Error("--seconds: '" + text + "' is not a number of seconds in (0, 3600]");
  }
  return seconds;
}

}  // namespace

int runDiscover(std::span<const std::string> args) {
  ArgumentParser parser("discover",
                        "Listens for the UDP beacons of stagecraft-worker processes on the LAN (and of\n"
                        "`cluster up` workers on this machine) and lists the workers heard, one per address.");
  parser.option("port", "P", "UDP port to listen on", std::to_string(control::kDefaultBeaconPort));
  parser.option("seconds", "S", "how long to listen", "3");
  parser.flag("json", "print a stagecraft.v1.BeaconList as JSON");
  const ParsedArguments parsed = parser.parse(args);
  const int port = parsed.positiveInt("port");
  if (port > 65535) throw Error("--port: " + std::to_string(port) + " is not a port");
  const auto window = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(positiveSeconds(parsed)));

  control::BeaconListener listener(port);
  std::vector<control::HeardBeacon> heard;
  const auto deadline = std::chrono::steady_clock::now() + window;
  for (auto now = std::chrono::steady_clock::now(); now < deadline; now = std::chrono::steady_clock::now()) {
    auto got = listener.poll(std::chrono::ceil<std::chrono::milliseconds>(deadline - now));
    heard.insert(heard.end(), std::make_move_iterator(got.begin()), std::make_move_iterator(got.end()));
  }
  const auto workers = control::uniqueByAddress(heard);

  if (parsed.flag("json")) {
    v1::BeaconList list;
    for (const auto& w : workers) *list.add_beacons() = w.beacon;
    printJson(list);
    return kExitOk;
  }
  if (workers.empty()) {
    std::cout << "no workers heard on UDP port " << port << " within " << parsed.value("seconds") << " s\n";
    return kExitOk;
  }
  TextTable table({{"name", TextTable::Align::Left},
                   {"tier", TextTable::Align::Left},
                   {"address", TextTable::Align::Left},
                   {"state", TextTable::Align::Left},
                   {"GFLOP/s"},
                   {"memory (MB)"},
                   {"job", TextTable::Align::Left},
                   {"callers", TextTable::Align::Left}});
  int insecure = 0;
  for (const auto& w : workers) {
    const auto& b = w.beacon;
    insecure += b.insecure() ? 1 : 0;
    table.addRow({b.name(), b.tier(), b.address(), b.state(), fixed(b.measured_gflops(), 1), fixed(b.memory_mb(), 0),
                  b.job(), b.insecure() ? "anyone (--insecure)" : "with the token"});
  }
  for (const auto& line : table.lines()) std::cout << line << "\n";
  if (insecure > 0) {
    std::cerr << "warning: " << insecure << (insecure == 1 ? " worker answers" : " workers answer")
              << " every caller (--insecure): anyone who reaches them can deploy, train, read or overwrite their "
                 "model; start them with --token-file\n";
  }
  return kExitOk;
}

}  // namespace stagecraft::cli
