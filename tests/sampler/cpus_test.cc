#include "sampler/cpus.h"

#include <sched.h>

#include <climits>
#include <thread>

#include "gtest/gtest.h"
#include "sampler/tiles.h"

namespace scatter::sampler {
namespace {

TEST(CpusTest, CpuMaxWithoutAQuotaSetsNoLimit) {
  EXPECT_EQ(CpusOfCpuMax("max 100000\n"), 0);
  EXPECT_EQ(CpusOfCpuMax("max"), 0);
}

TEST(CpusTest, CpuMaxIsTheQuotaOverThePeriodRoundedUp) {
  EXPECT_EQ(CpusOfCpuMax("200000 100000\n"), 2);
  EXPECT_EQ(CpusOfCpuMax("100000 100000"), 1);
  EXPECT_EQ(CpusOfCpuMax("150000 100000\n"), 2);
  EXPECT_EQ(CpusOfCpuMax("50000 100000\n"), 1);  // 500m: one thread.
  EXPECT_EQ(CpusOfCpuMax("1000 100000\n"), 1);
  EXPECT_EQ(CpusOfCpuMax("6400000 100000\n"), 64);
  EXPECT_EQ(CpusOfCpuMax("  300000   50000 \n"), 6);
}

TEST(CpusTest, CpuMaxThatIsNotAQuotaAndAPeriodSetsNoLimit) {
  EXPECT_EQ(CpusOfCpuMax(""), 0);
  EXPECT_EQ(CpusOfCpuMax("200000"), 0);
  EXPECT_EQ(CpusOfCpuMax("200000 100000 7"), 0);
  EXPECT_EQ(CpusOfCpuMax("2e5 100000"), 0);
  EXPECT_EQ(CpusOfCpuMax("200000 0"), 0);
  EXPECT_EQ(CpusOfCpuMax("0 100000"), 0);
  EXPECT_EQ(CpusOfCpuMax("-1 100000"), 0);
  EXPECT_EQ(CpusOfCpuMax("99999999999999999999 100000"), 0);
}

TEST(CpusTest, AHugeQuotaIsAtMostIntMax) {
  EXPECT_EQ(CpusOfCpuMax("9223372036854775807 1"), INT_MAX);
}

TEST(CpusTest, CfsQuotaOfMinusOneSetsNoLimit) {
  EXPECT_EQ(CpusOfCfsQuota("-1\n", "100000\n"), 0);
  EXPECT_EQ(CpusOfCfsQuota("", ""), 0);
}

TEST(CpusTest, CfsQuotaIsTheQuotaOverThePeriodRoundedUp) {
  EXPECT_EQ(CpusOfCfsQuota("250000\n", "100000\n"), 3);
  EXPECT_EQ(CpusOfCfsQuota("100000\n", "100000\n"), 1);
}

TEST(CpusTest, MemoryMaxIsItsBytesOrNoLimit) {
  EXPECT_EQ(BytesOfMemoryMax("4294967296\n"), std::uint64_t{4} << 30);
  EXPECT_EQ(BytesOfMemoryMax("max\n"), 0u);  // cgroup v2: no limit.
  // cgroup v1's "no limit": the largest page count, in bytes.
  EXPECT_EQ(BytesOfMemoryMax("9223372036854771712\n"), 0u);
  EXPECT_EQ(BytesOfMemoryMax(""), 0u);
  EXPECT_EQ(BytesOfMemoryMax("-1"), 0u);
  // Whatever this machine sets, no limit reads as 0, never as a tiny one.
  const std::uint64_t limit = CgroupMemoryLimit();
  EXPECT_TRUE(limit == 0 || limit >= (std::uint64_t{1} << 20)) << limit;
}

TEST(CpusTest, AllowedCpusIsAtLeastOneAndAtMostTheAffinity) {
  const int cpus = AllowedCpus();
  EXPECT_GE(cpus, 1);
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_LE(cpus, CPU_COUNT(&set));
}

TEST(CpusTest, AllowedCpusFollowsTheAffinity) {
  // Run on one CPU only, from a thread of its own so the test process
  // keeps its affinity.
  int cpus = 0;
  std::thread([&cpus] {
    cpu_set_t one;
    CPU_ZERO(&one);
    cpu_set_t all;
    ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &all)) {
        CPU_SET(c, &one);
        break;
      }
    }
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    cpus = AllowedCpus();
  }).join();
  EXPECT_EQ(cpus, 1);
}

TEST(CpusTest, AThreadPoolOfZeroThreadsHasOnePerAllowedCpu) {
  ThreadPool pool(0);
  EXPECT_EQ(pool.threads(), AllowedCpus());
}

}  // namespace
}  // namespace scatter::sampler
