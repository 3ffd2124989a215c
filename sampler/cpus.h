// What this process's cgroup allows it. How many CPUs it may use: the
// default size of a ThreadPool (scatterd's --threads=0, and scatter tiles
// --local's). And how much memory: scatterd warns at start when its memory
// flags add up to more than the container's limit.
//
// std::thread::hardware_concurrency() is the machine's CPU count. In a
// container limited to 2 CPUs on a 64-core node that is 64 CPU-bound
// threads sharing 2 CPUs of time, and ScatterTiles reserves generator
// memory per thread, so calls were refused for memory the pod never used.

#ifndef SCATTER_SAMPLER_CPUS_H_
#define SCATTER_SAMPLER_CPUS_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace scatter::sampler {

// The CPUs a cgroup v2 `cpu.max` file allows, from its contents "QUOTA
// PERIOD" (microseconds of CPU time per period): QUOTA / PERIOD rounded up
// ("150000 100000": 2). 0 when it sets no limit ("max 100000") or is not
// a quota and a period > 0.
int CpusOfCpuMax(absl::string_view contents);

// The same for cgroup v1's cpu.cfs_quota_us and cpu.cfs_period_us contents;
// a quota of -1 sets no limit (0).
int CpusOfCfsQuota(absl::string_view quota, absl::string_view period);

// The CPUs this process may run on (sched_getaffinity; the machine's count
// where that fails), fewer when its cgroup's CPU quota allows fewer:
// cgroup v2 cpu.max of its cgroup and each parent, or else cgroup v1
// cpu.cfs_quota_us. At least 1. Reads /proc and /sys on each call.
int AllowedCpus();

// The bytes a cgroup v2 `memory.max` or v1 `memory.limit_in_bytes` file
// allows; 0 for "max", v1's "no limit" (2^62 or more) or anything else.
std::uint64_t BytesOfMemoryMax(absl::string_view contents);

// The memory limit of this process's cgroup and its parents (the least),
// v2 or else v1, in bytes; 0 when none is set. Reads /proc and /sys.
std::uint64_t CgroupMemoryLimit();

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_CPUS_H_
