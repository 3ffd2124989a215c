#include "sampler/huge_pages.h"

#include <cstdint>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
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

// One thread's kept blocks, oldest first.
struct ScratchCache {
  struct Block {
    void* p;
    std::size_t bytes;
  };
  Block blocks[kScratchMaxBlocks];
  int count = 0;
  std::size_t held = 0;

  ~ScratchCache();

  void Drop(int i) {
    ::operator delete(blocks[i].p, blocks[i].bytes);
    held -= blocks[i].bytes;
    for (int j = i + 1; j < count; ++j) blocks[j - 1] = blocks[j];
    --count;
  }
};

// Set once this thread's cache is destroyed: blocks freed later (by other
// thread-local objects) go straight back to the heap.
thread_local bool t_cache_gone = false;

ScratchCache& Cache() {
  thread_local ScratchCache cache;
  return cache;
}

ScratchCache::~ScratchCache() {
  while (count > 0) Drop(count - 1);
  t_cache_gone = true;
}

}  // namespace

void* AllocateScratch(std::size_t bytes) {
  if (!t_cache_gone) {
    ScratchCache& cache = Cache();
    // Newest first: the block most likely still in the caches.
    for (int i = cache.count - 1; i >= 0; --i) {
      if (cache.blocks[i].bytes != bytes) continue;
      void* p = cache.blocks[i].p;
      cache.held -= bytes;
      for (int j = i + 1; j < cache.count; ++j) {
        cache.blocks[j - 1] = cache.blocks[j];
      }
      --cache.count;
      return p;
    }
  }
  return ::operator new(bytes);
}

void FreeScratch(void* p, std::size_t bytes) {
  if (t_cache_gone || bytes > kScratchMaxBytes) {
    ::operator delete(p, bytes);
    return;
  }
  ScratchCache& cache = Cache();
  while (cache.count > 0 && (cache.count == kScratchMaxBlocks ||
                             cache.held + bytes > kScratchMaxBytes)) {
    cache.Drop(0);
  }
  cache.blocks[cache.count++] = {p, bytes};
  cache.held += bytes;
}

std::size_t ScratchBlocksHeld() {
  return t_cache_gone ? 0 : static_cast<std::size_t>(Cache().count);
}

}  // namespace scatter::sampler::internal
