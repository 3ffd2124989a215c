#include "sampler/cpus.h"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace scatter::sampler {
namespace {

// ceil(quota / period), or 0 unless both are > 0.
int CpusOfQuota(std::int64_t quota, std::int64_t period) {
  if (quota <= 0 || period <= 0) return 0;
  const std::int64_t cpus = quota / period + (quota % period != 0 ? 1 : 0);
  return static_cast<int>(std::min<std::int64_t>(cpus, INT_MAX));
}

// The file's contents, or "" when it cannot be read.
std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The least of the limits > 0 (0 when there is none).
template <typename T>
T Least(T a, T b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

// The tightest limit cpus_of finds in the cgroup `path` (as
// /proc/self/cgroup names it) under `mount` and in each of its parents.
// Inside a container's cgroup namespace the path is "/" and the mount is
// the container's own cgroup; without one the path names the cgroup below
// the host's root, or, where only the container's cgroup is mounted, no
// directory until the walk reaches the mount.
template <typename LimitOf>
auto TightestUp(const std::string& mount, std::string path, LimitOf limit_of) {
  path = std::string(absl::StripSuffix(path, "/"));
  decltype(limit_of(mount)) cpus = 0;
  while (true) {
    cpus = Least(cpus, limit_of(mount + path));
    if (path.empty()) break;
    const std::size_t slash = path.rfind('/');
    path.resize(slash == std::string::npos ? 0 : slash);
  }
  return cpus;
}

// The process's cgroup v2 path, and its cgroup v1 path for `controller`,
// from /proc/self/cgroup ("" where it lists none).
struct CgroupPaths {
  std::string v2;
  std::string v1;
};
CgroupPaths PathsOf(absl::string_view controller_v1) {
  CgroupPaths paths;
  for (absl::string_view line :
       absl::StrSplit(ReadFile("/proc/self/cgroup"), '\n')) {
    // "ID:CONTROLLERS:PATH"; cgroup v2 lists no controllers.
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3) continue;
    if (fields[1].empty()) paths.v2 = std::string(fields[2]);
    for (absl::string_view controller : absl::StrSplit(fields[1], ',')) {
      if (controller == controller_v1) paths.v1 = std::string(fields[2]);
    }
  }
  return paths;
}

// The CPU quota of the process's cgroup: cgroup v2's cpu.max, or else
// cgroup v1's cpu.cfs_quota_us; 0 when neither sets one.
int CgroupCpus() {
  const CgroupPaths paths = PathsOf("cpu");
  const std::string& v2_path = paths.v2;
  const std::string& v1_path = paths.v1;
  const int v2 =
      TightestUp("/sys/fs/cgroup", v2_path, [](const std::string& dir) {
        return CpusOfCpuMax(ReadFile(dir + "/cpu.max"));
      });
  if (v2 != 0) return v2;
  return TightestUp("/sys/fs/cgroup/cpu", v1_path, [](const std::string& dir) {
    return CpusOfCfsQuota(ReadFile(dir + "/cpu.cfs_quota_us"),
                          ReadFile(dir + "/cpu.cfs_period_us"));
  });
}

}  // namespace

int CpusOfCpuMax(absl::string_view contents) {
  const std::vector<absl::string_view> fields = absl::StrSplit(
      absl::StripAsciiWhitespace(contents), ' ', absl::SkipEmpty());
  std::int64_t quota = 0, period = 0;
  if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &quota) ||
      !absl::SimpleAtoi(fields[1], &period)) {
    return 0;  // "max PERIOD", or not a cpu.max.
  }
  return CpusOfQuota(quota, period);
}

int CpusOfCfsQuota(absl::string_view quota, absl::string_view period) {
  std::int64_t q = 0, p = 0;
  if (!absl::SimpleAtoi(quota, &q) || !absl::SimpleAtoi(period, &p)) return 0;
  return CpusOfQuota(q, p);
}

std::uint64_t BytesOfMemoryMax(absl::string_view contents) {
  std::uint64_t bytes = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(contents), &bytes)) {
    return 0;  // "max", or not a limit.
  }
  // cgroup v1 says "no limit" with the largest page count it keeps, about
  // 2^63 bytes.
  return bytes >= (std::uint64_t{1} << 62) ? 0 : bytes;
}

std::uint64_t CgroupMemoryLimit() {
  const CgroupPaths paths = PathsOf("memory");
  const std::uint64_t v2 =
      TightestUp("/sys/fs/cgroup", paths.v2, [](const std::string& dir) {
        return BytesOfMemoryMax(ReadFile(dir + "/memory.max"));
      });
  if (v2 != 0) return v2;
  return TightestUp(
      "/sys/fs/cgroup/memory", paths.v1, [](const std::string& dir) {
        return BytesOfMemoryMax(ReadFile(dir + "/memory.limit_in_bytes"));
      });
}

int AllowedCpus() {
  int cpus = static_cast<int>(std::thread::hardware_concurrency());
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  return std::max(1, Least<int>(cpus, CgroupCpus()));
}

}  // namespace scatter::sampler
