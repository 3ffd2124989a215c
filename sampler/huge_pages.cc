#include "sampler/huge_pages.h"

#include <cstdint>

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

}  // namespace scatter::sampler::internal
