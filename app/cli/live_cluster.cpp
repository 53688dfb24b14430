#include "live_cluster.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <charconv>
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>

#include "command_support.h"
#include "control/cluster_token.h"
#include "control/transport_security.h"
#include "io/error.h"

namespace stagecraft::cli {

std::string executablePath() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

LiveCluster openCluster(const std::string& name_or_path, const std::string& token_file) {
  LiveCluster live;
  live.argument = name_or_path;
  live.path = resolveClusterPath(name_or_path);
  const Cluster file = Cluster::load(live.path);
  live.cluster = file;
  if (auto local = control::LocalCluster::find(file.name()); local && local->anyAlive()) {
    live.cluster = local->apply(file);
    live.local = std::move(local);
  }
  live.token = tokenFrom(token_file);
  if (live.token.empty() && live.local && !live.local->state().token_file().empty()) {
    live.token = live.local->token();
  }
  return live;
}

std::string tokenFrom(const std::string& token_file) {
  if (!token_file.empty()) return control::readTokenFile(token_file);
  if (const char* from_environment = std::getenv(control::kTokenFileVariable); from_environment && *from_environment) {
    return control::readTokenFile(from_environment);
  }
  return {};
}

void useTlsOptions(const ParsedArguments& parsed) {
  // Before the first channel: every call of this process then shows the certificate.
  control::setClientTls(control::readTlsFiles(control::tlsFilesOrEnvironment(
      {parsed.value("tls-cert"), parsed.value("tls-key"), parsed.value("tls-ca")})));
}

LiveCluster openCluster(const std::string& name_or_path, const ParsedArguments& parsed) {
  useTlsOptions(parsed);
  return openCluster(name_or_path, parsed.value("token-file"));
}

ArgumentParser& addTokenOption(ArgumentParser& parser) {
  return parser
      .option("token-file", "PATH",
              std::string("the cluster token the workers ask for (a private file, mode 0600); default $") +
                  control::kTokenFileVariable + ", else the one `cluster up` made for its workers")
      .option("tls-cert", "PEM",
              std::string("this side's certificate, signed by the cluster CA, for workers started with --tls-*; "
                          "default $") +
                  control::kTlsCertVariable)
      .option("tls-key", "PEM",
              std::string("the certificate's private key (mode 0600); default $") + control::kTlsKeyVariable)
      .option("tls-ca", "PEM",
              std::string("the cluster CA's certificate, which signed the workers' certificates; default $") +
                  control::kTlsCaVariable);
}

void warnAboutSlowBlas(const std::vector<v1::WorkerInfo>& infos, std::ostream& out) {
  std::vector<std::string> slow;
  for (const auto& info : infos) {
    if (info.blas_kind() == "reference") slow.push_back(info.name());
  }
  if (slow.empty()) return;
  std::string names;
  for (const auto& n : slow) names += (names.empty() ? "" : ", ") + n;
  out << "warning: " << slow.size() << (slow.size() == 1 ? " worker uses" : " workers use")
      << " the reference BLAS (" << names
      << "): training runs 10-30x slower than these machines allow; install an optimized BLAS there "
         "(Debian: apt-get install libopenblas0-pthread) and restart the workers\n";
}

std::string clusterUpHint(const std::string& cluster_argument) {
  return "run `stagecraft-cli cluster up --cluster " + cluster_argument + "` first";
}

std::vector<v1::WorkerInfo> describeAll(control::Coordinator& coordinator, const std::string& hint) {
  try {
    std::vector<v1::WorkerInfo> infos = coordinator.describe();
    warnAboutSlowBlas(infos, std::cerr);
    return infos;
  } catch (const control::WorkerError& e) {
    // The hint is for workers that are not running; a refusal says what to fix itself.
    if (std::string_view(e.what()).find("is not reachable") == std::string_view::npos) throw;
    const std::string message = std::string(e.what()) + "; " + hint;
    if (e.grpcCode() >= 0) throw control::WorkerError(e.worker(), message, e.grpcCode());
    throw control::WorkerError(e.worker(), message, e.kind());
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; " + hint, e.kind());
  }
}

v1::ClusterStatusReport statusReport(const LiveCluster& live, const std::vector<control::WorkerProbe>& probes) {
  v1::ClusterStatusReport report;
  report.set_cluster(live.cluster.name());
  if (live.local) report.set_state_path(live.local->statePath());
  for (const auto& p : probes) {
    auto* w = report.add_workers();
    w->set_device(p.endpoint.name);
    w->set_address(p.endpoint.address);
    w->set_reachable(p.reachable);
    w->set_error(p.error);
    if (p.reachable) *w->mutable_info() = p.info;
    if (live.local) {
      for (const auto& lw : live.local->state().workers()) {
        if (lw.device() == p.endpoint.name) w->set_pid(lw.pid());
      }
    }
  }
  return report;
}

std::vector<std::string> workerTable(const v1::ClusterStatusReport& report) {
  TextTable table({{"device", TextTable::Align::Left},
                   {"address", TextTable::Align::Left},
                   {"pid"},
                   {"state", TextTable::Align::Left},
                   {"tier", TextTable::Align::Left},
                   {"cores"},
                   {"memory MB"},
                   {"GFLOP/s"},
                   {"slowdown"},
                   {"BLAS", TextTable::Align::Left},
                   {"job", TextTable::Align::Left}});
  for (const auto& w : report.workers()) {
    const auto& info = w.info();
    const std::string pid = w.pid() > 0 ? std::to_string(w.pid()) : "-";
    if (!w.reachable()) {
      table.addRow({w.device(), w.address().empty() ? "-" : w.address(), pid, "unreachable"});
      continue;
    }
    table.addRow({w.device(), w.address(), pid, info.state().empty() ? "?" : info.state(), info.tier(),
                  std::to_string(info.cores()), fixed(info.memory_mb(), 0), fixed(info.measured_gflops(), 1),
                  info.emulation().slowdown() > 0 ? fixed(info.emulation().slowdown(), 2) : "-",
                  info.blas_kind().empty() ? "?" : info.blas_kind(), info.job().empty() ? "-" : info.job()});
  }
  return table.lines();
}

std::vector<int> parsePositiveList(const std::string& flag, const std::string& text) {
  std::vector<int> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    int value = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size() || value <= 0) {
      throw Error("--" + flag + " must be positive integers separated by commas, got '" + text + "'");
    }
    out.push_back(value);
  }
  if (out.empty()) throw Error("--" + flag + " names no size");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::chrono::milliseconds secondsFlag(const std::string& flag, const std::string& text) {
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(seconds) || seconds <= 0) {
    throw Error("--" + flag + " must be a positive number of seconds, got '" + text + "'");
  }
  return std::chrono::milliseconds(static_cast<long long>(std::ceil(seconds * 1000)));
}

}  // namespace stagecraft::cli
