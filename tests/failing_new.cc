#include "tests/failing_new.h"

#include <cstddef>
#include <cstdlib>
#include <new>

namespace scatter::testing {

thread_local long allocations_before_failure = -1;
thread_local std::size_t failing_allocation_bytes = 0;
thread_local bool pool_worker = false;
std::atomic<bool> pool_worker_fails{false};

}  // namespace scatter::testing

void* operator new(std::size_t size) {
  using scatter::testing::allocations_before_failure;
  if (scatter::testing::pool_worker &&
      scatter::testing::pool_worker_fails.exchange(false)) {
    throw std::bad_alloc();
  }
  if (size >= scatter::testing::failing_allocation_bytes) {
    if (allocations_before_failure == 0) {
      allocations_before_failure = -1;
      throw std::bad_alloc();
    }
    if (allocations_before_failure > 0) --allocations_before_failure;
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  try {
    return ::operator new(size);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return ::operator new(size, std::nothrow);
}
// All of them, so that a sanitizer's own never frees what malloc gave.
// GCC sees free() inlined where a `new` result is deleted and warns of a
// mismatch: here operator new is malloc.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
#pragma GCC diagnostic pop
