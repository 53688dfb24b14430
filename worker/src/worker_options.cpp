#include "worker_options.h"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "control/cluster_token.h"
#include "io/error.h"

namespace stagecraft::worker {
namespace {

double parseNumber(const std::string& flag, const std::string& text, double min, bool inclusive) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) {
    throw Error(flag + ": '" + text + "' is not a number");
  }
  if (inclusive ? value < min : value <= min) {
    char bound[32];
    std::snprintf(bound, sizeof bound, "%g", min);
    throw Error(flag + ": " + text + " must be " + (inclusive ? "at least " : "greater than ") + bound);
  }
  return value;
}

}  // namespace

std::string workerUsage() {
  return "usage: stagecraft-worker --listen HOST:PORT --name NAME --tier cloud|edge|end\n"
         "                         (--token-file PATH | --insecure) [--data-dir DIR] [--cache-dir DIR]\n"
         "                         [--tls-cert PEM --tls-key PEM --tls-ca PEM]\n"
         "                         [--threads T] [--slowdown F] [--bandwidth-mbps B]\n"
         "                         [--no-allreduce-overlap] [--no-tensor-channel | --tensor-channel-port P]\n"
         "                         [--memory-mb M] [--peer-timeout-s S] [--lease-s S]\n"
         "                         [--beacon-port P] [--beacon-interval-ms I] [--beacon-to ADDR]\n"
         "                         [--parent-pid PID]\n"
         "\n"
         "Serves the stagecraft.v1.Worker gRPC service: runs one pipeline stage of a model in\n"
         "LibTorch, moves activations and gradients to its neighbours, all-reduces gradients\n"
         "inside its stage group. Prints 'listening on HOST:PORT' once it accepts calls\n"
         "(with port 0, the port the system picked).\n"
         "\n"
         "  --listen HOST:PORT     address to serve on (port 0: any free port)\n"
         "  --name NAME            this worker's name in clusters and plans\n"
         "  --tier TIER            cloud, edge or end\n"
         "  --token-file PATH      the cluster token (a private file, mode 0600): every call,\n"
         "                         a peer's included, must carry it\n"
         "  --insecure             answer every caller without a token (a trusted network only)\n"
         "  --tls-cert PEM         this worker's certificate, signed by the cluster CA; with\n"
         "  --tls-key PEM          its private key (mode 0600) and\n"
         "  --tls-ca PEM           the CA's certificate: mutual TLS, callers and peers must show a\n"
         "                         certificate the CA signed (packaging/make-certs makes them)\n"
         "  --data-dir DIR         the only folder Deploy may name data in (MNIST, CIFAR-10, images);\n"
         "                         without it only synthetic data trains\n"
         "  --cache-dir DIR        where TorchScript models sent by coordinators are kept, by hash\n"
         "                         (default $XDG_CACHE_HOME/stagecraft/models or\n"
         "                         ~/.cache/stagecraft/models)\n"
         "  --threads T            LibTorch threads (default: all cores)\n"
         "  --slowdown F           emulate a device F times slower (default 1)\n"
         "  --bandwidth-mbps B     pace outgoing peer traffic to B Mbit/s (default: unpaced)\n"
         "  --no-allreduce-overlap a stage group all-reduces its gradients after the whole\n"
         "                         backward, not bucket by bucket beside it (for comparison;\n"
         "                         the planner prices the overlap)\n"
         "  --no-tensor-channel    activations and gradients over gRPC's Push only, neither taken\n"
         "                         nor sent on a TCP connection of their own (a second port,\n"
         "                         picked by the system, that peers connect to; one copy of\n"
         "                         every byte fewer; never under TLS)\n"
         "  --tensor-channel-port P the tensor channel's port (default 0: one the system picks;\n"
         "                         name one to open it in a firewall beside the --listen port)\n"
         "  --memory-mb M          memory a stage may use (default: the machine's)\n"
         "  --peer-timeout-s S     wait at most S seconds for a peer (default 30)\n"
         "  --lease-s S            stop a training job whose coordinator is gone (no telemetry\n"
         "                         stream, no call) for S seconds, ready for a new Deploy\n"
         "                         (default 10; 0: never)\n"
         "  --beacon-port P        announce this worker on UDP port P (default 47800; 0: off)\n"
         "  --beacon-interval-ms I one beacon every I ms (default 1000)\n"
         "  --beacon-to ADDR       IPv4 address the beacons go to (default 255.255.255.255,\n"
         "                         the LAN broadcast; 127.0.0.1 for this machine only)\n"
         "  --parent-pid PID       PID is the process that started this worker: end, as on SIGTERM,\n"
         "                         once it is gone (a worker `stagecraft-cli run --local` or the\n"
         "                         console starts for itself does not outlive them, killed or not)\n"
         "  --help                 this text\n";
}

WorkerOptions parseWorkerOptions(const std::vector<std::string>& args) {
  WorkerOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i];
    std::string value;
    bool has_value = false;
    if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      has_value = true;
    }
    if (flag == "--help" || flag == "-h") {
      o.help = true;
      continue;
    }
    auto next = [&]() -> const std::string& {
      if (!has_value) {
        if (i + 1 >= args.size()) throw Error(flag + ": needs a value");
        value = args[++i];
      }
      return value;
    };
    if (flag == "--listen") {
      o.listen = next();
      const auto colon = o.listen.rfind(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == o.listen.size()) {
        throw Error("--listen: '" + o.listen + "' is not HOST:PORT");
      }
      const double port = parseNumber("--listen port", o.listen.substr(colon + 1), 0, true);
      if (port > 65535 || port != std::floor(port)) throw Error("--listen: bad port in '" + o.listen + "'");
    } else if (flag == "--name") {
      o.name = next();
      if (o.name.empty()) throw Error("--name: must not be empty");
    } else if (flag == "--tier") {
      o.tier = next();
      if (o.tier != "cloud" && o.tier != "edge" && o.tier != "end") {
        throw Error("--tier: '" + o.tier + "' is not cloud, edge or end");
      }
    } else if (flag == "--token-file") {
      o.token_file = next();
      if (o.token_file.empty()) throw Error("--token-file: must not be empty");
    } else if (flag == "--insecure") {
      o.insecure = true;
    } else if (flag == "--tls-cert") {
      o.tls_files.cert = next();
    } else if (flag == "--tls-key") {
      o.tls_files.key = next();
    } else if (flag == "--tls-ca") {
      o.tls_files.ca = next();
    } else if (flag == "--data-dir") {
      o.data_dir = next();
      struct stat st {};
      if (::stat(o.data_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        throw Error("--data-dir: '" + o.data_dir + "' is not a folder");
      }
    } else if (flag == "--cache-dir") {
      o.cache_dir = next();
      if (o.cache_dir.empty()) throw Error("--cache-dir: must not be empty");
    } else if (flag == "--threads") {
      const double t = parseNumber(flag, next(), 1, true);
      if (t != std::floor(t) || t > 1024) throw Error("--threads: '" + value + "' is not a thread count");
      o.threads = static_cast<int>(t);
    } else if (flag == "--slowdown") {
      o.slowdown = parseNumber(flag, next(), 1, true);
    } else if (flag == "--no-allreduce-overlap") {
      o.allreduce_overlap = false;
    } else if (flag == "--no-tensor-channel") {
      o.tensor_channel = false;
    } else if (flag == "--tensor-channel-port") {
      const double port = parseNumber(flag, next(), 0, true);
      if (port > 65535 || port != std::floor(port)) throw Error("--tensor-channel-port: '" + value + "' is not a port");
      o.tensor_channel_port = static_cast<int>(port);
    } else if (flag == "--bandwidth-mbps") {
      o.bandwidth_mbps = parseNumber(flag, next(), 0, false);
    } else if (flag == "--memory-mb") {
      o.memory_mb = parseNumber(flag, next(), 0, false);
    } else if (flag == "--peer-timeout-s") {
      o.peer_timeout_s = parseNumber(flag, next(), 0, false);
    } else if (flag == "--lease-s") {
      o.lease_s = parseNumber(flag, next(), 0, true);
    } else if (flag == "--beacon-port") {
      const double p = parseNumber(flag, next(), 0, true);
      if (p != std::floor(p) || p > 65535) throw Error("--beacon-port: '" + value + "' is not a port");
      o.beacon_port = static_cast<int>(p);
    } else if (flag == "--beacon-interval-ms") {
      const double ms = parseNumber(flag, next(), 10, true);
      if (ms != std::floor(ms) || ms > 3'600'000) throw Error("--beacon-interval-ms: '" + value + "' is out of range");
      o.beacon_interval_ms = static_cast<int>(ms);
    } else if (flag == "--beacon-to") {
      o.beacon_to = next();
      unsigned a, b, c, d;
      char tail;
      if (std::sscanf(o.beacon_to.c_str(), "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) != 4 || a > 255 || b > 255 ||
          c > 255 || d > 255) {
        throw Error("--beacon-to: '" + o.beacon_to + "' is not an IPv4 address");
      }
    } else if (flag == "--parent-pid") {
      const double pid = parseNumber(flag, next(), 1, true);
      if (pid != std::floor(pid) || pid > 4'194'304) throw Error("--parent-pid: '" + value + "' is not a process id");
      o.parent_pid = static_cast<int>(pid);
    } else {
      throw Error("unknown flag '" + args[i] + "' (see --help)");
    }
  }
  if (o.help) return o;
  if (o.listen.empty()) throw Error("--listen HOST:PORT is required");
  if (o.name.empty()) throw Error("--name is required");
  if (o.tier.empty()) throw Error("--tier is required (cloud, edge or end)");
  if (o.insecure && !o.token_file.empty()) throw Error("--insecure and --token-file exclude each other");
  if (!o.insecure && o.token_file.empty()) {
    throw Error("--token-file PATH is required: the cluster token every caller must give (or --insecure to "
                "answer anyone)");
  }
  if (!o.token_file.empty()) o.token = control::readTokenFile(o.token_file);
  if (o.cache_dir.empty()) {
    if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
      o.cache_dir = std::string(xdg) + "/stagecraft/models";
    } else if (const char* home = std::getenv("HOME"); home && *home) {
      o.cache_dir = std::string(home) + "/.cache/stagecraft/models";
    }
  }
  o.tls = control::readTlsFiles(o.tls_files);
  return o;
}

}  // namespace stagecraft::worker
