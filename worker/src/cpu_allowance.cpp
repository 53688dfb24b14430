#include "cpu_allowance.h"

#include <sched.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

namespace stagecraft::worker {
namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

std::string firstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

/// The number `text` holds, or `fallback` when it holds none.
double number(const std::string& text, double fallback) {
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() ? value : fallback;
}

/// A cgroup hierarchy that carries the cpu controller, as mounted here.
struct CpuMount {
  std::string root;   ///< the hierarchy's folder the mount shows, e.g. "/"
  std::string point;  ///< where it is mounted, e.g. /sys/fs/cgroup/cpu
  bool v2 = false;
};

/// From /proc/self/mountinfo: "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - TYPE SOURCE SUPER".
std::vector<CpuMount> cpuMounts(const std::string& root) {
  std::vector<CpuMount> mounts;
  std::ifstream in(root + "/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string word; fields >> word;) f.push_back(word);
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string& type = dash[1];
    if (type == "cgroup2") {
      mounts.push_back({f[3], f[4], true});
    } else if (type == "cgroup" && has(split(dash[3], ','), "cpu")) {
      mounts.push_back({f[3], f[4], false});
    }
  }
  return mounts;
}

/// The limit set in one cgroup's folder, in cores; 0 for none.
double limitIn(const std::string& dir, bool v2) {
  if (v2) {
    const auto parts = split(firstLine(dir + "/cpu.max"), ' ');
    if (parts.size() != 2 || parts[0] == "max") return 0;
    const double quota = number(parts[0], 0), period = number(parts[1], 0);
    return quota > 0 && period > 0 ? quota / period : 0;
  }
  const double quota = number(firstLine(dir + "/cpu.cfs_quota_us"), -1);
  const double period = number(firstLine(dir + "/cpu.cfs_period_us"), 0);
  return quota > 0 && period > 0 ? quota / period : 0;
}

}  // namespace

double CpuAllowance::shareOf(int threads) const {
  if (quota_cores <= 0) return 1;
  int running = std::max(threads, 1);
  if (affinity_cpus > 0) running = std::min(running, affinity_cpus);
  return std::min(1.0, quota_cores / running);
}

double cgroupQuotaCores(const std::string& root) {
  // /proc/self/cgroup: "ID:CONTROLLERS:PATH", one line per v1 hierarchy (naming its
  // controllers) and "0::PATH" for the v2 one.
  std::string v1_path, v2_path;
  std::ifstream in(root + "/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (controllers.empty() && line.compare(0, first, "0") == 0) {
      v2_path = path;
    } else if (has(split(controllers, ','), "cpu")) {
      v1_path = path;
    }
  }
  double tightest = 0;
  for (const CpuMount& mount : cpuMounts(root)) {
    std::string path = mount.v2 ? v2_path : v1_path;
    if (path.empty()) continue;
    // The path is the hierarchy's; the mount shows the part below its own root.
    if (mount.root != "/") {
      if (path.compare(0, mount.root.size(), mount.root) != 0) continue;
      path = path.substr(mount.root.size());
    }
    const std::string top = root + mount.point;
    std::string dir = top + (path == "/" ? "" : path);
    // Every level up to the mounted root: a parent's limit holds its children too.
    while (true) {
      const double limit = limitIn(dir, mount.v2);
      if (limit > 0) tightest = tightest > 0 ? std::min(tightest, limit) : limit;
      if (dir.size() <= top.size()) break;
      dir = dir.substr(0, dir.rfind('/'));
    }
  }
  return tightest;
}

CpuAllowance readCpuAllowance() {
  CpuAllowance allowance;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) allowance.affinity_cpus = CPU_COUNT(&set);
  allowance.quota_cores = cgroupQuotaCores();
  return allowance;
}

}  // namespace stagecraft::worker
