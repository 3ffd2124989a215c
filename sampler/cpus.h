// How many CPUs this process may use: the default size of a ThreadPool
// (scatterd's --threads=0, and scatter tiles --local's).
//
// std::thread::hardware_concurrency() is the machine's CPU count. In a
// container limited to 2 CPUs on a 64-core node that is 64 CPU-bound
// threads sharing 2 CPUs of time, and ScatterTiles reserves generator
// memory per thread, so calls were refused for memory the pod never used.

#ifndef SCATTER_SAMPLER_CPUS_H_
#define SCATTER_SAMPLER_CPUS_H_

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

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_CPUS_H_
