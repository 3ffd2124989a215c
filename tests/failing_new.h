#ifndef SCATTER_TESTS_FAILING_NEW_H_
#define SCATTER_TESTS_FAILING_NEW_H_

// A replacement of the global operator new (failing_new.cc) that a test
// can make fail once, on one thread, as it would in a process at its
// memory limit. A binary that links it allocates through malloc; link it
// into a test binary of its own, so no other test runs with it.

#include <atomic>
#include <cstddef>

namespace scatter::testing {

// Allocations on this thread before one fails: 0 fails the next, a
// negative count none. Only allocations of at least
// `failing_allocation_bytes` count (and fail).
extern thread_local long allocations_before_failure;
extern thread_local std::size_t failing_allocation_bytes;

// Whether this thread is one of a tile pool's workers (a test marks them),
// and whether the next allocation on any of them fails.
extern thread_local bool pool_worker;
extern std::atomic<bool> pool_worker_fails;

}  // namespace scatter::testing

#endif  // SCATTER_TESTS_FAILING_NEW_H_
