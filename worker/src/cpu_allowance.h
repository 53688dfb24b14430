#pragma once

#include <string>

namespace stagecraft::worker {

/// How much CPU this process may use at once, from its affinity mask and its cgroups'
/// CPU bandwidth limits: what the speed a short benchmark measures is scaled by, since a
/// quota lets a process run at full speed for part of each period and stops it for the rest.
struct CpuAllowance {
  int affinity_cpus = 0;   ///< CPUs in the affinity mask; 0: not known
  double quota_cores = 0;  ///< CPU time per wall-clock time the cgroups allow; 0: no limit

  /// The share of `threads` threads' full speed this allowance sustains: 1 without a
  /// quota, else the quota over the threads that can run at once (at most 1).
  double shareOf(int threads) const;
};

/// The tightest CPU bandwidth limit on this process's cgroups, in cores, from the cgroup
/// itself up to its hierarchy's root: cgroup v2 `cpu.max` ("max" or "QUOTA PERIOD"), v1
/// `cpu.cfs_quota_us` over `cpu.cfs_period_us` (-1: none). 0 when nothing limits it or the
/// files cannot be read. `root` prefixes every path read (/proc/self/cgroup,
/// /proc/self/mountinfo and the cgroup files): a test's folder, or "" for this machine.
double cgroupQuotaCores(const std::string& root = "");

/// This process's allowance on this machine.
CpuAllowance readCpuAllowance();

}  // namespace stagecraft::worker
