// Internal: an allocator for the samplers' large arrays (grids, occupancy
// and cover marks), which a big run touches all over.
//
// A block of kHugePageBytes or more comes from operator new aligned to
// kHugePageBytes, and the kernel is asked (madvise MADV_HUGEPAGE) to back it
// with transparent huge pages before anything touches it. One page fault
// then maps 2 MiB instead of 4 KiB, and each TLB entry covers as much. A
// 10 M-point run's 290 MB grid took 70 000 faults of 4 KiB, about 0.8 s of
// its 3.7 s on the guest bench/README.md describes ("Huge pages"). Where
// transparent huge pages are off ("never") or madvise is missing, the
// advice does nothing and the memory is ordinary.
//
// Only for arrays written whole: a huge page is backed as soon as one byte
// of it is touched, so an array left sparse on purpose (variable radius's
// fine levels) would cost up to 2 MiB per touched place. Those come from
// AllocateZeroed, and take the advice only over the parts the run will
// touch densely (VariableRun::AdviseWhereLevelLands).
//
// Memory still comes from operator new, so heap accounting (the benches'
// heap_bytes_per_point) sees it; smaller blocks are plain operator new.
//
// Blocks from kScratchMinBytes up to kHugePageBytes are scratch: a freed
// one is kept (up to kScratchMaxBlocks blocks and kScratchMaxBytes for the
// whole process) for the next allocation of the same size. Tile generators
// run one small sampler after another with the same grid sizes, and malloc
// handed each grid back to the kernel only to fault it in again (a fifth
// to a quarter fewer page faults in a cold tile block; bench/README.md,
// "Tiles"). A kept block is still live to heap accounting.

#ifndef SCATTER_SAMPLER_HUGE_PAGES_H_
#define SCATTER_SAMPLER_HUGE_PAGES_H_

#include <cstddef>
#include <new>
#include <vector>

namespace scatter::sampler::internal {

inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;

// Scratch blocks: their size range, and what the process keeps at most.
inline constexpr std::size_t kScratchMinBytes = std::size_t{64} << 10;
inline constexpr std::size_t kScratchMaxBytes = std::size_t{16} << 20;
inline constexpr int kScratchMaxBlocks = 32;

// Advises [p, p + bytes) for huge pages, rounded inward to whole huge pages.
void AdviseHugePages(void* p, std::size_t bytes);

// A block of `bytes` (kScratchMinBytes <= bytes < kHugePageBytes): a kept
// one of that size, else operator new. Thread-safe.
void* AllocateScratch(std::size_t bytes);
// Keeps p for a later AllocateScratch(bytes), dropping the oldest kept
// blocks to stay within the bounds. Thread-safe.
void FreeScratch(void* p, std::size_t bytes);
// How many blocks are kept.
std::size_t ScratchBlocksHeld();
// Deletes every kept block.
void ReleaseScratch();

// Zero-filled memory for an array a run touches sparsely on purpose
// (variable radius's level grids): pages nothing touches cost nothing.
// Blocks of kHugePageBytes or more come straight from the kernel, aligned
// to kHugePageBytes, so that the parts a run will touch densely can be
// advised for huge pages (AdviseHugePages) and the rest left as it is;
// smaller ones come from calloc. Not seen by operator new (heap accounting).
// Throws std::bad_alloc when out of memory, as operator new does.
void* AllocateZeroed(std::size_t bytes);
// AllocateZeroed, but with `guard` set a block of kHugePageBytes or more
// starts with every page closed: a read or a write there faults until
// OpenZeroed opens it. For an array a run fills only in part on purpose
// (the constant-radius grid over a region much smaller than its bounds),
// so that a test in a build that guards (PoissonRun: those without
// NDEBUG) crashes where the run would read a place it never filled.
void* AllocateZeroed(std::size_t bytes, bool guard);
// Opens bytes [begin, end) of the block p of AllocateZeroed(bytes, true),
// rounded out to whole pages. When the kernel refuses (each closed stretch
// is a mapping of its own, and a process has a few tens of thousands), the
// whole block opens. Does nothing to other blocks.
void OpenZeroed(void* p, std::size_t bytes, std::size_t begin, std::size_t end);
// Frees a block of AllocateZeroed(bytes) or AllocateZeroed(bytes, guard).
void FreeZeroed(void* p, std::size_t bytes);

template <class T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding.

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kScratchMinBytes) {
      return static_cast<T*>(::operator new(bytes));
    }
    if (bytes < kHugePageBytes) {
      return static_cast<T*>(AllocateScratch(bytes));
    }
    void* p = ::operator new(bytes, std::align_val_t{kHugePageBytes});
    AdviseHugePages(p, bytes);
    return static_cast<T*>(p);
  }

  void deallocate(T* p, std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kScratchMinBytes) {
      ::operator delete(p, bytes);
    } else if (bytes < kHugePageBytes) {
      FreeScratch(p, bytes);
    } else {
      ::operator delete(p, bytes, std::align_val_t{kHugePageBytes});
    }
  }

  template <class U>
  bool operator==(const HugePageAllocator<U>&) const {
    return true;
  }
  template <class U>
  bool operator!=(const HugePageAllocator<U>&) const {
    return false;
  }
};

// A vector whose large buffers are huge-page backed.
template <class T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_HUGE_PAGES_H_
