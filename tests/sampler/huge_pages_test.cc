#include "sampler/huge_pages.h"

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace scatter::sampler::internal {
namespace {

bool HugeAligned(const void* p) {
  return reinterpret_cast<std::uintptr_t>(p) % kHugePageBytes == 0;
}

// The VmFlags line of the /proc/self/smaps entry holding `p`, or "" when
// there is none.
std::string VmFlagsAt(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    std::uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-' &&
        line.find(':') > line.find(' ')) {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return "";
}

TEST(HugePagesTest, LargeBlocksAreHugeAlignedAndKeepTheirValues) {
  HugePageVector<double> v(100, 1.5);  // 800 bytes: plain operator new.
  // Growing across the threshold frees the small block and later a large
  // one, each with its own form of delete (ASan checks the pairing).
  v.resize(kHugePageBytes / sizeof(double) + 7, 2.5);
  EXPECT_TRUE(HugeAligned(v.data()));
  EXPECT_EQ(v[99], 1.5);
  EXPECT_EQ(v[100], 2.5);
  EXPECT_EQ(v.back(), 2.5);
  v.assign(3 * kHugePageBytes / sizeof(double), -1.0);
  EXPECT_TRUE(HugeAligned(v.data()));
  EXPECT_EQ(v[12345], -1.0);
  v.assign(10, 0.0);  // Reuses the large block.
  v.shrink_to_fit();
  EXPECT_EQ(v.size(), 10u);
}

TEST(HugePagesTest, LargeBlocksAreAdvisedForHugePages) {
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  HugePageVector<std::uint8_t> v(4 * kHugePageBytes, 1);
  const std::string flags = VmFlagsAt(v.data() + kHugePageBytes);
  ASSERT_FALSE(flags.empty()) << "no smaps entry holds the block";
  // "hg": the range carries MADV_HUGEPAGE.
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

}  // namespace
}  // namespace scatter::sampler::internal
