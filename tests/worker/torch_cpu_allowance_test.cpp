// The CPU a worker may use: cgroup v1 and v2 bandwidth limits read from a folder laid out
// as /proc and /sys/fs/cgroup are, and the share of its threads' speed they leave.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cpu_allowance.h"

namespace stagecraft::worker {
namespace {

namespace fs = std::filesystem;

class CgroupQuota : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "stagecraft-cgroup-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path.substr(1)).parent_path());
    std::ofstream(root_ / path.substr(1)) << text;
  }
  double quota() const { return cgroupQuotaCores(root_.string()); }

  fs::path root_;
};

// cgroup v1 as on Debian 12 with a legacy hierarchy: cpu, cpuacct and cpuset apart.
constexpr const char* kV1Mounts =
    "30 25 0:26 / /sys/fs/cgroup/cpu rw,nosuid,nodev - cgroup cgroup rw,cpu\n"
    "31 25 0:27 / /sys/fs/cgroup/cpuacct rw,nosuid,nodev - cgroup cgroup rw,cpuacct\n"
    "32 25 0:28 / /sys/fs/cgroup/cpuset rw,nosuid,nodev - cgroup cgroup rw,cpuset\n"
    "33 25 0:29 / /sys/fs/cgroup/unified rw,nosuid,nodev shared:9 - cgroup2 cgroup2 rw\n";

TEST_F(CgroupQuota, V1QuotaOverPeriodTheTightestUpTheHierarchy) {
  write("/proc/self/mountinfo", kV1Mounts);
  write("/proc/self/cgroup", "3:cpuset:/\n2:cpuacct:/\n1:cpu:/bench/w0\n0::/\n");
  write("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
  write("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  write("/sys/fs/cgroup/cpu/bench/cpu.cfs_quota_us", "-1\n");
  write("/sys/fs/cgroup/cpu/bench/cpu.cfs_period_us", "100000\n");
  write("/sys/fs/cgroup/cpu/bench/w0/cpu.cfs_quota_us", "25000\n");
  write("/sys/fs/cgroup/cpu/bench/w0/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(quota(), 0.25);
  // A parent's limit holds its children too.
  write("/sys/fs/cgroup/cpu/bench/cpu.cfs_quota_us", "10000\n");
  EXPECT_DOUBLE_EQ(quota(), 0.1);
  // cpuacct's and cpuset's folders are not cpu's, whatever they hold.
  write("/sys/fs/cgroup/cpu/bench/cpu.cfs_quota_us", "-1\n");
  write("/sys/fs/cgroup/cpuacct/bench/w0/cpu.cfs_quota_us", "1000\n");
  write("/sys/fs/cgroup/cpuacct/bench/w0/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(quota(), 0.25);
}

TEST_F(CgroupQuota, V2CpuMaxWithMaxMeaningNoLimit) {
  write("/proc/self/mountinfo", "40 25 0:30 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n");
  write("/proc/self/cgroup", "0::/user.slice/job\n");
  write("/sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
  write("/sys/fs/cgroup/user.slice/job/cpu.max", "150000 100000\n");
  EXPECT_DOUBLE_EQ(quota(), 1.5);
  write("/sys/fs/cgroup/user.slice/job/cpu.max", "max 100000\n");
  EXPECT_DOUBLE_EQ(quota(), 0);
}

TEST_F(CgroupQuota, AMountOfPartOfTheHierarchyIsFollowedFromItsRoot) {
  // A container's view: the mount shows /docker/abc of the hierarchy as its top.
  write("/proc/self/mountinfo", "50 45 0:26 /docker/abc /sys/fs/cgroup/cpu ro - cgroup cgroup rw,cpu,cpuacct\n");
  write("/proc/self/cgroup", "1:cpu,cpuacct:/docker/abc/inner\n");
  write("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "200000\n");
  write("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  write("/sys/fs/cgroup/cpu/inner/cpu.cfs_quota_us", "-1\n");
  write("/sys/fs/cgroup/cpu/inner/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(quota(), 2);
}

TEST_F(CgroupQuota, NothingReadableIsNoLimit) {
  EXPECT_DOUBLE_EQ(quota(), 0);
  write("/proc/self/mountinfo", kV1Mounts);
  write("/proc/self/cgroup", "1:cpu:/gone\n");
  EXPECT_DOUBLE_EQ(quota(), 0);
  write("/sys/fs/cgroup/cpu/gone/cpu.cfs_quota_us", "not a number\n");
  write("/sys/fs/cgroup/cpu/gone/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(quota(), 0);
}

TEST(CpuAllowance, AQuotaSharesItselfOverTheThreadsThatRunAtOnce) {
  EXPECT_DOUBLE_EQ((CpuAllowance{2, 0}).shareOf(1), 1);      // no quota
  EXPECT_DOUBLE_EQ((CpuAllowance{2, 0.25}).shareOf(1), 0.25);
  EXPECT_DOUBLE_EQ((CpuAllowance{2, 0.5}).shareOf(2), 0.25);
  EXPECT_DOUBLE_EQ((CpuAllowance{2, 0.5}).shareOf(8), 0.25);  // two CPUs: two threads run at once
  EXPECT_DOUBLE_EQ((CpuAllowance{0, 0.5}).shareOf(0), 0.5);   // affinity unknown, one thread at least
  EXPECT_DOUBLE_EQ((CpuAllowance{4, 3}).shareOf(2), 1);       // more than the threads use
}

}  // namespace
}  // namespace stagecraft::worker
