// Which BLAS LibTorch's matrix products run in, and its thread control.
#include <gtest/gtest.h>

#include <filesystem>
#include <system_error>

#include "blas_probe.h"

namespace stagecraft::worker {
namespace {

namespace fs = std::filesystem;

/// What Debian's alternatives system says libblas.so.3 is, read from the file system rather
/// than from the symbols the probe looks at; empty where there is no such alternative.
std::string alternativeTarget() {
  std::error_code ec;
  const fs::path link = "/etc/alternatives/libblas.so.3-x86_64-linux-gnu";
  const fs::path target = fs::canonical(link, ec);
  return ec ? std::string() : target.string();
}

TEST(BlasProbe, NamesTheLibraryThatServesDgemm) {
  const BlasInfo info = detectBlas();
  ASSERT_FALSE(info.library.empty()) << "no dgemm_ in this process: LibTorch should have loaded a BLAS";
  EXPECT_NE(info.kind, BlasInfo::Kind::Unknown) << info.summary();
  EXPECT_NE(info.summary().find(info.library), std::string::npos);
}

TEST(BlasProbe, AgreesWithDebiansAlternative) {
  const std::string target = alternativeTarget();
  if (target.empty()) GTEST_SKIP() << "no libblas.so.3 alternative on this machine";
  const BlasInfo info = detectBlas();
  if (target.find("openblas") != std::string::npos) {
    EXPECT_EQ(info.kind, BlasInfo::Kind::OpenBlas) << target << " vs " << info.summary();
  } else if (target.find("/blas/libblas.so") != std::string::npos) {
    EXPECT_EQ(info.kind, BlasInfo::Kind::Reference) << target << " vs " << info.summary();
    EXPECT_FALSE(blasWarning(info).empty());
  }
}

// packaging/bootstrap installs OpenBLAS; a test run set up by it must not train on the
// reference BLAS, which is 10-30x slower and skews every measured figure.
TEST(BlasProbe, TheProjectsSetUpInstalledAnOptimizedBlas) {
  const BlasInfo info = detectBlas();
  EXPECT_TRUE(info.optimized()) << info.summary() << "\n" << blasWarning(info);
  EXPECT_TRUE(blasWarning(info).empty());
}

TEST(BlasProbe, ThreadCountFollowsTheSetting) {
  if (detectBlas().kind != BlasInfo::Kind::OpenBlas) GTEST_SKIP() << "thread control checked on OpenBLAS";
  ASSERT_TRUE(setBlasThreads(1));
  EXPECT_EQ(detectBlas().threads, 1);
  EXPECT_NE(detectBlas().summary().find("(1 thread)"), std::string::npos);
  ASSERT_TRUE(setBlasThreads(2));
  EXPECT_EQ(detectBlas().threads, 2);
  ASSERT_TRUE(setBlasThreads(0));  // clamped to one thread, never zero
  EXPECT_EQ(detectBlas().threads, 1);
}

}  // namespace
}  // namespace stagecraft::worker
