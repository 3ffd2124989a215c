#include "sampler/huge_pages.h"

#include <cstdint>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

TEST(HugePagesTest, ScratchBlocksAreReusedBySize) {
  ReleaseScratch();
  const std::size_t n = (kScratchMinBytes + 4096) / sizeof(double);
  const double* first = nullptr;
  {
    HugePageVector<double> v(n, 1.0);
    first = v.data();
    EXPECT_EQ(ScratchBlocksHeld(), 0u);
  }
  EXPECT_EQ(ScratchBlocksHeld(), 1u);
  {
    // Another size does not take it.
    HugePageVector<double> other(n + 512, 2.0);
    EXPECT_NE(other.data(), first);
    // The same size does, and holds the new values.
    HugePageVector<double> again(n, 3.0);
    EXPECT_EQ(again.data(), first);
    EXPECT_EQ(again[n - 1], 3.0);
    EXPECT_EQ(ScratchBlocksHeld(), 0u);
  }
  EXPECT_EQ(ScratchBlocksHeld(), 2u);
  // Below the scratch size, and from the huge page size on, nothing is
  // kept.
  { HugePageVector<std::uint8_t> small(kScratchMinBytes - 1, 0); }
  { HugePageVector<std::uint8_t> huge(kHugePageBytes, 0); }
  EXPECT_EQ(ScratchBlocksHeld(), 2u);
  ReleaseScratch();
  EXPECT_EQ(ScratchBlocksHeld(), 0u);
}

TEST(HugePagesTest, TheScratchCacheIsBounded) {
  ReleaseScratch();
  // More blocks than it keeps, freed one after another: it keeps the
  // newest kScratchMaxBlocks.
  std::vector<HugePageVector<std::uint8_t>> blocks;
  for (int i = 0; i < 2 * kScratchMaxBlocks; ++i) {
    blocks.emplace_back(kScratchMinBytes + 4096 * static_cast<std::size_t>(i),
                        std::uint8_t{1});
  }
  blocks.clear();
  EXPECT_EQ(ScratchBlocksHeld(), static_cast<std::size_t>(kScratchMaxBlocks));
  // Blocks near the huge page size: the byte bound holds first.
  const std::size_t big_bytes = kHugePageBytes - 4096;
  std::vector<HugePageVector<std::uint8_t>> big;
  for (int i = 0; i < kScratchMaxBlocks; ++i) {
    big.emplace_back(big_bytes, std::uint8_t{1});
  }
  big.clear();
  EXPECT_EQ(ScratchBlocksHeld(), kScratchMaxBytes / big_bytes);
  ReleaseScratch();
}

TEST(HugePagesTest, ThreadsShareTheScratchCache) {
  ReleaseScratch();
  const std::size_t n = kScratchMinBytes + 8192;
  const std::uint8_t* freed = nullptr;
  std::thread([&] {
    HugePageVector<std::uint8_t> v(n, 7);
    freed = v.data();
  }).join();
  EXPECT_EQ(ScratchBlocksHeld(), 1u);
  // Another thread's block of the same size comes back here; concurrent
  // use keeps every block whole (ASan and TSan builds check the rest).
  HugePageVector<std::uint8_t> mine(n, 9);
  EXPECT_EQ(mine.data(), freed);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([n] {
      for (int i = 0; i < 200; ++i) {
        HugePageVector<std::uint8_t> v(n + 4096 * static_cast<std::size_t>(i % 3),
                                       static_cast<std::uint8_t>(i));
        ASSERT_EQ(v.front(), static_cast<std::uint8_t>(i));
        ASSERT_EQ(v.back(), static_cast<std::uint8_t>(i));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(ScratchBlocksHeld(), static_cast<std::size_t>(kScratchMaxBlocks));
  ReleaseScratch();
}

TEST(HugePagesTest, ZeroedBlocksAreZeroAlignedAndAdvisedOnlyWhereAsked) {
  // Small: calloc.
  auto* small = static_cast<std::uint8_t*>(AllocateZeroed(1000));
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(small[i], 0) << i;
  small[999] = 7;
  FreeZeroed(small, 1000);
  // Large, not a whole number of pages: mapped, aligned, zero, writable to
  // its last byte.
  const std::size_t bytes = 3 * kHugePageBytes + 12345;
  auto* large = static_cast<std::uint8_t*>(AllocateZeroed(bytes));
  EXPECT_TRUE(HugeAligned(large));
  for (std::size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(large[i], 0) << i;
  EXPECT_EQ(large[bytes - 1], 0);
  large[0] = 1;
  large[bytes - 1] = 2;
  if (std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled")) {
    // Advice for the second huge page only.
    AdviseHugePages(large + kHugePageBytes, kHugePageBytes);
    const std::string advised = VmFlagsAt(large + kHugePageBytes);
    const std::string plain = VmFlagsAt(large);
    ASSERT_FALSE(advised.empty() || plain.empty());
    EXPECT_NE(advised.find(" hg"), std::string::npos) << advised;
    EXPECT_EQ(plain.find(" hg"), std::string::npos) << plain;
  }
  FreeZeroed(large, bytes);
  FreeZeroed(nullptr, bytes);
}

// Out of memory, a zeroed block throws std::bad_alloc as operator new does
// (it called std::abort, and a variable-radius run over too big a grid
// took scatterd down with every call in flight; scatterd turns the
// exception into RESOURCE_EXHAUSTED for the one call).
TEST(HugePagesTest, AZeroedBlockThatCannotBeHadThrowsBadAlloc) {
  // More than any address space: mmap fails.
  EXPECT_THROW(AllocateZeroed(std::size_t{1} << 62), std::bad_alloc);
  // So large that the mapping's extra huge page would wrap around.
  EXPECT_THROW(AllocateZeroed(~std::size_t{0} - 5), std::bad_alloc);
  // And the next block is had as before.
  void* p = AllocateZeroed(kHugePageBytes);
  EXPECT_NE(p, nullptr);
  FreeZeroed(p, kHugePageBytes);
}

}  // namespace
}  // namespace scatter::sampler::internal
