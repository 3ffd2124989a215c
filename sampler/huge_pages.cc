#include "sampler/huge_pages.h"

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace scatter::sampler::internal {

void AdviseHugePages(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first =
      (begin + kHugePageBytes - 1) & ~(std::uintptr_t{kHugePageBytes} - 1);
  const std::uintptr_t last =
      (begin + bytes) & ~(std::uintptr_t{kHugePageBytes} - 1);
  if (last <= first) return;
  // Advice only: a kernel without transparent huge pages refuses it, and
  // the memory works as it is.
  madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

namespace {

// The kept blocks, oldest first. One cache for the process, so that what
// it holds is bounded however many threads sample (a server's handler
// threads come and go); a generator takes and returns a few blocks, so the
// lock is cheap.
struct ScratchCache {
  struct Block {
    void* p;
    std::size_t bytes;
  };
  std::mutex mu;
  Block blocks[kScratchMaxBlocks];
  int count = 0;
  std::size_t held = 0;

  // Removes block i (mu held) and returns it.
  void* Take(int i) {
    void* p = blocks[i].p;
    held -= blocks[i].bytes;
    for (int j = i + 1; j < count; ++j) blocks[j - 1] = blocks[j];
    --count;
    return p;
  }
};

// Never destroyed: blocks freed during static destruction still find it,
// and what it holds stays reachable.
ScratchCache& Cache() {
  static ScratchCache* const cache = new ScratchCache;
  return *cache;
}

}  // namespace

void* AllocateScratch(std::size_t bytes) {
  ScratchCache& cache = Cache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    // Newest first: the block most likely still in a CPU cache.
    for (int i = cache.count - 1; i >= 0; --i) {
      if (cache.blocks[i].bytes == bytes) return cache.Take(i);
    }
  }
  return ::operator new(bytes);
}

void FreeScratch(void* p, std::size_t bytes) {
  static_assert(kHugePageBytes <= kScratchMaxBytes,
                "any scratch block must fit in the cache");
  ScratchCache& cache = Cache();
  void* evicted[kScratchMaxBlocks];
  std::size_t evicted_bytes[kScratchMaxBlocks];
  int n_evicted = 0;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    while (cache.count > 0 && (cache.count == kScratchMaxBlocks ||
                               cache.held + bytes > kScratchMaxBytes)) {
      evicted_bytes[n_evicted] = cache.blocks[0].bytes;
      evicted[n_evicted++] = cache.Take(0);
    }
    cache.blocks[cache.count++] = {p, bytes};
    cache.held += bytes;
  }
  for (int i = 0; i < n_evicted; ++i) {
    ::operator delete(evicted[i], evicted_bytes[i]);
  }
}

void* AllocateZeroed(std::size_t bytes) { return AllocateZeroed(bytes, false); }

void* AllocateZeroed(std::size_t bytes, bool guard) {
#if defined(__linux__)
  if (bytes >= kHugePageBytes) {
    // Map a huge page more than asked, and give back what lies before the
    // first aligned address and after the block.
    if (bytes > std::numeric_limits<std::size_t>::max() - kHugePageBytes) {
      throw std::bad_alloc();
    }
    const std::size_t mapped = bytes + kHugePageBytes;
    // No reserve: a run over a region much smaller than its bounds
    // touches a small part of its grid, and the kernel's guess at
    // overcommit would refuse a mapping larger than the machine's memory.
    void* p = mmap(nullptr, mapped, guard ? PROT_NONE : PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    // As operator new does: scatterd turns it into RESOURCE_EXHAUSTED for
    // the call (it aborted, and took every call in flight with it).
    if (p == MAP_FAILED) throw std::bad_alloc();
    const auto begin = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t aligned =
        (begin + kHugePageBytes - 1) & ~(std::uintptr_t{kHugePageBytes} - 1);
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t kept_end = (aligned + bytes + page - 1) & ~(page - 1);
    const std::uintptr_t end = begin + mapped;
    if (aligned > begin) munmap(p, aligned - begin);
    if (end > kept_end) {
      munmap(reinterpret_cast<void*>(kept_end), end - kept_end);
    }
    return reinterpret_cast<void*>(aligned);
  }
#else
  (void)guard;
#endif
  void* p = std::calloc(bytes == 0 ? 1 : bytes, 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void OpenZeroed(void* p, std::size_t bytes, std::size_t begin,
                std::size_t end) {
#if defined(__linux__)
  // Blocks below kHugePageBytes come from calloc, never closed.
  if (bytes < kHugePageBytes || begin >= end) return;
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (base + begin) & ~(page - 1);
  const std::uintptr_t last = (base + end + page - 1) & ~(page - 1);
  if (mprotect(reinterpret_cast<void*>(first), last - first,
               PROT_READ | PROT_WRITE) != 0) {
    const std::uintptr_t whole = (bytes + page - 1) & ~(page - 1);
    if (mprotect(p, whole, PROT_READ | PROT_WRITE) != 0) throw std::bad_alloc();
  }
#else
  (void)p;
  (void)bytes;
  (void)begin;
  (void)end;
#endif
}

void FreeZeroed(void* p, std::size_t bytes) {
  if (p == nullptr) return;
#if defined(__linux__)
  if (bytes >= kHugePageBytes) {
    munmap(p, bytes);
    return;
  }
#endif
  std::free(p);
}

std::size_t ScratchBlocksHeld() {
  ScratchCache& cache = Cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  return static_cast<std::size_t>(cache.count);
}

void ReleaseScratch() {
  ScratchCache& cache = Cache();
  std::lock_guard<std::mutex> lock(cache.mu);
  while (cache.count > 0) {
    const std::size_t bytes = cache.blocks[cache.count - 1].bytes;
    ::operator delete(cache.Take(cache.count - 1), bytes);
  }
}

}  // namespace scatter::sampler::internal
