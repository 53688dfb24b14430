#include <chrono>
#include <cmath>
#include <iostream>

#include "arguments.h"
#include "command_support.h"
#include "commands.h"
#include "control/discovery.h"
#include "control/worker_client.h"
#include "control/worker_status.h"
#include "io/error.h"
#include "live_cluster.h"

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

/// Whether the worker at the beacon's address answers Describe, with `token`, under the
/// beacon's name.
v1::BeaconCheck verifyBeacon(const v1::Beacon& beacon, const std::string& token) {
  v1::BeaconCheck check;
  check.set_address(beacon.address());
  try {
    const v1::WorkerInfo info =
        control::WorkerClient({beacon.name(), beacon.address(), token}).describe(std::chrono::milliseconds(2000));
    if (info.name() != beacon.name()) {
      check.set_reason("the worker there is named '" + control::oneLine(info.name()) + "'");
    } else {
      check.set_verified(true);
    }
  } catch (const control::WorkerError& e) {
    check.set_reason(e.what());
  }
  return check;
}

}  // namespace

int runDiscover(std::span<const std::string> args) {
  ArgumentParser parser("discover",
                        "Listens for the UDP beacons of stagecraft-worker processes on the LAN (and of\n"
                        "`cluster up` workers on this machine) and lists the workers heard, one per address.");
  parser.option("port", "P", "UDP port to listen on", std::to_string(control::kDefaultBeaconPort));
  parser.option("seconds", "S", "how long to listen", "3");
  parser.flag("json", "print a stagecraft.v1.BeaconList as JSON");
  parser.flag("no-verify", "list what the beacons say without asking each worker (Describe) to confirm it");
  addTokenOption(parser);
  parser.epilog(
      "A beacon is a hint anyone on the LAN can send: each worker heard is asked Describe, with the cluster\n"
      "token (and TLS) the other commands use, and the 'verified' column says whether it answered with the\n"
      "name its beacon gave.");
  const ParsedArguments parsed = parser.parse(args);
  useTlsOptions(parsed);
  const std::string token = tokenFrom(parsed.value("token-file"));
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
  std::vector<v1::BeaconCheck> checks;
  if (!parsed.flag("no-verify")) {
    for (const auto& w : workers) checks.push_back(verifyBeacon(w.beacon, token));
  }

  if (parsed.flag("json")) {
    v1::BeaconList list;
    for (const auto& w : workers) *list.add_beacons() = w.beacon;
    for (auto& c : checks) *list.add_checks() = std::move(c);
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
                   {"callers", TextTable::Align::Left},
                   {"verified", TextTable::Align::Left}});
  int insecure = 0;
  for (size_t i = 0; i < workers.size(); ++i) {
    const auto& b = workers[i].beacon;
    insecure += b.insecure() ? 1 : 0;
    const std::string verified =
        checks.empty() ? "not asked" : checks[i].verified() ? "yes" : "no: " + checks[i].reason();
    table.addRow({b.name(), b.tier(), b.address(), b.state(), fixed(b.measured_gflops(), 1), fixed(b.memory_mb(), 0),
                  b.job(), b.insecure() ? "anyone (--insecure)" : "with the token", verified});
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
