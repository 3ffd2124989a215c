// Throughput, memory and quality of Sampler::Run for each method, in the unit
// square and the unit cube. See bench/README.md for what each counter means.

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "sampler/box.h"
#include "sampler/huge_pages.h"
#include "sampler/quality.h"
#include "sampler/sampler.h"
#include "sampler/simd.h"

namespace {

// Heap accounting for heap_bytes_per_point. Every operator new below goes
// through Allocate and every delete through Release, so live bytes are known
// at all times; a benchmark resets the peak before its timed loop. Sizes are
// malloc_usable_size (glibc), which covers the unsized deletes and includes
// malloc's rounding but not its per-block header.
std::atomic<std::int64_t> live_bytes{0};
std::atomic<std::int64_t> peak_bytes{0};

void NoteAllocated(void* p) {
  const auto size = static_cast<std::int64_t>(malloc_usable_size(p));
  const std::int64_t live =
      live_bytes.fetch_add(size, std::memory_order_relaxed) + size;
  std::int64_t peak = peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !peak_bytes.compare_exchange_weak(
                            peak, live, std::memory_order_relaxed)) {
  }
}

void* Allocate(std::size_t size, std::size_t alignment) {
  if (size == 0) size = 1;  // new must return a unique pointer even for 0.
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(size);
  } else if (posix_memalign(&p, alignment, size) != 0) {
    p = nullptr;
  }
  if (p != nullptr) NoteAllocated(p);
  return p;
}

// The throwing forms: the bench cannot go on without memory, and we don't
// throw, so stop here instead of raising std::bad_alloc.
void* AllocateOrDie(std::size_t size, std::size_t alignment) {
  void* p = Allocate(size, alignment);
  if (p == nullptr) {
    std::fputs("sampler_bench: out of memory\n", stderr);
    std::abort();
  }
  return p;
}

void Release(void* p) {
  if (p == nullptr) return;
  live_bytes.fetch_sub(static_cast<std::int64_t>(malloc_usable_size(p)),
                       std::memory_order_relaxed);
  std::free(p);
}

// Restarts the peak at the current live bytes and returns them.
std::int64_t ResetPeak() {
  const std::int64_t live = live_bytes.load(std::memory_order_relaxed);
  peak_bytes.store(live, std::memory_order_relaxed);
  return live;
}

}  // namespace

void* operator new(std::size_t size) {
  return AllocateOrDie(size, alignof(std::max_align_t));
}
void* operator new[](std::size_t size) {
  return AllocateOrDie(size, alignof(std::max_align_t));
}
void* operator new(std::size_t size, std::align_val_t alignment) {
  return AllocateOrDie(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
  return AllocateOrDie(size, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  return Allocate(size, alignof(std::max_align_t));
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
  return Allocate(size, alignof(std::max_align_t));
}
void* operator new(std::size_t size, std::align_val_t alignment,
                   const std::nothrow_t&) noexcept {
  return Allocate(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment,
                     const std::nothrow_t&) noexcept {
  return Allocate(size, static_cast<std::size_t>(alignment));
}
void operator delete(void* p) noexcept { Release(p); }
void operator delete[](void* p) noexcept { Release(p); }
void operator delete(void* p, std::size_t) noexcept { Release(p); }
void operator delete[](void* p, std::size_t) noexcept { Release(p); }
void operator delete(void* p, std::align_val_t) noexcept { Release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { Release(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
  Release(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
  Release(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { Release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { Release(p); }
void operator delete(void* p, std::align_val_t,
                     const std::nothrow_t&) noexcept {
  Release(p);
}
void operator delete[](void* p, std::align_val_t,
                       const std::nothrow_t&) noexcept {
  Release(p);
}

namespace scatter::sampler {
namespace {

// The Poisson radii of the two scenes. Uniform and jittered runs are sized to
// about the point count of the dense Poisson run and are measured for
// coverage against the same radius.
constexpr double kRadius2D = 0.001;
constexpr double kRadius3D = 0.015;
// The dense Poisson counts at those radii with default options (rho ~0.87
// in 2D, ~0.83 in 3D), rounded.
constexpr std::uint64_t kPoints2D = 870000;
constexpr std::uint64_t kPoints3D = 237000;

// Probe counts for uncovered_fraction, in the unit square or cube, so the
// density is the count per unit area or volume: about 11 probes per point in
// 2D and 8 in 3D, enough to resolve the 1e-5 maximality bound of DESIGN.md.
constexpr std::uint64_t kProbes2D = 10'000'000;
constexpr std::uint64_t kProbes3D = 2'000'000;
// Independent of every sampler seed used here.
constexpr std::uint64_t kProbeSeed = 0x5eed0f9b0be5ULL;

struct Case {
  int dims = 2;
  SamplerOptions options;
  // Quality measures cost one more run plus a few hundred milliseconds; the
  // SIMD variants give the same points as the default run, so they skip it.
  bool measure_quality = true;
};

bool IsPoisson(Method method) {
  return method == Method::kPoissonDense || method == Method::kPoissonClassic;
}

void BM_Run(benchmark::State& state, const Case& c) {
  const absl::StatusOr<Box> box = Box::Create(c.dims, {0, 0, 0}, {1, 1, 1});
  if (!box.ok()) {
    state.SkipWithError(box.status().ToString().c_str());
    return;
  }
  const absl::StatusOr<Sampler> sampler = Sampler::Create(*box, c.options);
  if (!sampler.ok()) {
    state.SkipWithError(sampler.status().ToString().c_str());
    return;
  }

  std::uint64_t points = 0;
  // Counts and drops: it allocates nothing, so the heap peak below is the
  // sampler's alone.
  auto count_points = [&points](const PointBatch& batch) {
    points += batch.size();
    return true;
  };

  std::uint64_t total_points = 0;
  std::chrono::steady_clock::duration run_time{};
  // Each run frees what it allocates, so the peak over all iterations is the
  // peak of one run. Scratch blocks kept from earlier runs (huge_pages.h)
  // go first, so the first run allocates all it uses and the peak counts
  // it.
  scatter::sampler::internal::ReleaseScratch();
  const std::int64_t heap_base = ResetPeak();
  for (auto _ : state) {
    points = 0;
    const auto start = std::chrono::steady_clock::now();
    const absl::Status status = sampler->Run(count_points);
    run_time += std::chrono::steady_clock::now() - start;
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      return;
    }
    benchmark::DoNotOptimize(points);
    total_points += points;
  }
  const std::int64_t heap_peak =
      peak_bytes.load(std::memory_order_relaxed) - heap_base;

  const double n = static_cast<double>(points);
  state.SetItemsProcessed(static_cast<std::int64_t>(total_points));
  state.counters["points"] = n;
  state.counters["points_per_s"] = benchmark::Counter(
      static_cast<double>(total_points), benchmark::Counter::kIsRate);
  state.counters["ns_per_point"] =
      std::chrono::duration<double, std::nano>(run_time).count() /
      static_cast<double>(std::max<std::uint64_t>(total_points, 1));
  state.counters["heap_bytes_per_point"] =
      static_cast<double>(heap_peak) / std::max(n, 1.0);

  const Method method = c.options.method;
  const double radius = IsPoisson(method) ? c.options.radius
                        : c.dims == 2     ? kRadius2D
                                          : kRadius3D;
  std::string label =
      absl::StrCat("simd=", SimdLevelName(ResolveSimdLevel(c.options.simd)));
  if (!c.measure_quality) {
    state.SetLabel(label);
    return;
  }

  // Quality, outside the timing: one more run that keeps the points.
  std::vector<double> coords;
  coords.reserve(static_cast<std::size_t>(points) * c.dims);
  const absl::Status status = sampler->Run([&coords](const PointBatch& batch) {
    coords.insert(coords.end(), batch.coords.begin(), batch.coords.end());
    return true;
  });
  if (!status.ok()) {
    state.SkipWithError(status.ToString().c_str());
    return;
  }
  const std::uint64_t probes = c.dims == 2 ? kProbes2D : kProbes3D;
  const absl::StatusOr<CoverageReport> coverage =
      MeasureCoverage(coords, *box, radius, probes, kProbeSeed);
  const absl::StatusOr<MinDistanceReport> spacing =
      CheckMinDistance(coords, c.dims, radius);
  if (!coverage.ok() || !spacing.ok()) {
    state.SkipWithError((coverage.ok() ? spacing.status() : coverage.status())
                            .ToString()
                            .c_str());
    return;
  }
  state.counters["uncovered_fraction"] = coverage->uncovered_fraction();
  state.counters["min_ratio"] = spacing->min_ratio;
  if (IsPoisson(method)) {
    state.counters["rho"] =
        RelativeRadius(coords.size() / c.dims, box->Measure(), c.dims, radius);
  }
  absl::StrAppend(&label, " r=", radius, " probes=", probes, "/unit^", c.dims);
  if (spacing->violations > 0) {
    absl::StrAppend(&label, " pairs<r=", spacing->violations);
  }
  state.SetLabel(label);
}

Case PoissonCase(int dims, Method method, bool fill_gaps) {
  Case c;
  c.dims = dims;
  c.options.method = method;
  c.options.radius = dims == 2 ? kRadius2D : kRadius3D;
  c.options.fill_gaps = fill_gaps;
  return c;
}

Case UniformCase(int dims) {
  Case c;
  c.dims = dims;
  c.options.method = Method::kUniform;
  c.options.count = dims == 2 ? kPoints2D : kPoints3D;
  return c;
}

Case JitteredCase(int dims) {
  Case c;
  c.dims = dims;
  c.options.method = Method::kJitteredGrid;
  // One point per cell, so the side gives about the same count.
  c.options.cell_size = dims == 2
                            ? 1 / std::sqrt(static_cast<double>(kPoints2D))
                            : 1 / std::cbrt(static_cast<double>(kPoints3D));
  return c;
}

void Register(const std::string& name, const Case& c) {
  benchmark::RegisterBenchmark(name.c_str(), BM_Run, c)
      ->Unit(benchmark::kMillisecond);
}

void RegisterAll() {
  for (int dims : {2, 3}) {
    const std::string scene = absl::StrCat(dims, "d");
    for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
      const std::string name = absl::StrCat(MethodName(method), "/", scene);
      Register(name, PoissonCase(dims, method, /*fill_gaps=*/true));
      Register(name + "/no_fill",
               PoissonCase(dims, method, /*fill_gaps=*/false));
    }
    Register(absl::StrCat(MethodName(Method::kUniform), "/", scene),
             UniformCase(dims));
    Register(absl::StrCat(MethodName(Method::kJitteredGrid), "/", scene),
             JitteredCase(dims));
  }
  // A run ten times the size, as the service's load test asks for: its
  // 290 MB grid fits no cache, so memory, not arithmetic, sets the pace.
  Case big = PoissonCase(2, Method::kPoissonDense, /*fill_gaps=*/true);
  big.options.radius = kRadius2D * std::sqrt(kPoints2D / 1e7);
  Register(absl::StrCat(MethodName(Method::kPoissonDense), "/2d/10M"), big);

  // The same points through each compiled kernel. A level this CPU lacks
  // falls back to scalar, and the label shows the level that ran.
  for (SimdLevel level :
       {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kBest}) {
    Case c = PoissonCase(2, Method::kPoissonDense, /*fill_gaps=*/true);
    c.options.simd = level;
    c.measure_quality = false;
    Register(absl::StrCat(MethodName(Method::kPoissonDense),
                          "/2d/simd:", SimdLevelName(level)),
             c);
  }
}

}  // namespace
}  // namespace scatter::sampler

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  scatter::sampler::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
