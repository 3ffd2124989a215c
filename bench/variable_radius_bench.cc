// Variable radius (a density raster) against constant radius, per point
// produced, in one run. See bench/README.md ("Variable radius").
//
// Scenes: the unit square with r_min = 0.001 (2D) and the unit cube with
// r_min = 0.015 (3D), the constant-radius scenes of sampler_bench, and
// r_max = 10 r_min or 50 r_min over a smooth raster (a gradient with
// ripples). Each variable-radius benchmark reports vs_constant: its
// points/s over that of the constant-radius run of the same method and
// scene, which runs first in the same process. Rates are per second of
// this thread's CPU time.

#include <time.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "sampler/box.h"
#include "sampler/quality.h"
#include "sampler/raster.h"
#include "sampler/region.h"
#include "sampler/sampler.h"

namespace scatter::sampler {
namespace {

constexpr double kRMin2D = 0.001;
constexpr double kRMin3D = 0.015;

// 256 x 256 f32 over the unit square: density rises from 0 at x = 0 to 1
// at x = 1, with ripples of +-0.15 (clamped), so every radius in
// [r_min, r_max] occurs and the field is smooth at the scale of r_max.
std::shared_ptr<const Raster> RippleRaster() {
  constexpr std::uint32_t kSide = 256;
  std::vector<std::uint8_t> bytes(kSide * kSide * 4);
  for (std::uint32_t j = 0; j < kSide; ++j) {
    for (std::uint32_t i = 0; i < kSide; ++i) {
      const double x = (i + 0.5) / kSide;
      const double y = 1 - (j + 0.5) / kSide;
      double v = x + 0.15 * std::sin(9 * x + 2) * std::sin(7 * y);
      v = v < 0 ? 0 : (v > 1 ? 1 : v);
      const float f = static_cast<float>(v);
      std::memcpy(&bytes[(j * kSide + i) * 4], &f, 4);
    }
  }
  absl::StatusOr<Raster> raster = Raster::FromRaw(
      RasterFormat::kF32, kSide, kSide, bytes, RasterRect{}, 1 << 20);
  return std::make_shared<const Raster>(*std::move(raster));
}

// 256 x 256 f32 over the unit square, 0 and 1 in squares of 8 x 8 pixels
// (32 a side, each 1/32 wide): r jumps between r_min and r_max within a
// pixel along every edge, as in a forest mask. Before the gap search
// bounded r by the interpolation over small pieces (Raster::PatchBounds),
// such a field at r_max / r_min of 10 or more all but stalled.
std::shared_ptr<const Raster> CheckerRaster() {
  constexpr std::uint32_t kSide = 256;
  std::vector<std::uint8_t> bytes(kSide * kSide * 4);
  for (std::uint32_t j = 0; j < kSide; ++j) {
    for (std::uint32_t i = 0; i < kSide; ++i) {
      const float f = ((i / 8 + j / 8) % 2) != 0 ? 1.0f : 0.0f;
      std::memcpy(&bytes[(j * kSide + i) * 4], &f, 4);
    }
  }
  absl::StatusOr<Raster> raster = Raster::FromRaw(
      RasterFormat::kF32, kSide, kSide, bytes, RasterRect{}, 1 << 20);
  return std::make_shared<const Raster>(*std::move(raster));
}

// Points per second of the constant-radius run of each (method, scene).
// A raster of one density everywhere: density 1 gives r = r_min at every
// place, the constant run's radius, so a variable run over it makes about
// as many points as the constant run (dense 2D: the same number), and
// what it costs more per point is the variable engine's own overhead, not
// the field's variation.
std::shared_ptr<const Raster> FlatRaster(float density) {
  constexpr std::uint32_t kSide = 4;
  std::vector<std::uint8_t> bytes(kSide * kSide * 4);
  for (std::uint32_t i = 0; i < kSide * kSide; ++i) {
    std::memcpy(&bytes[i * 4], &density, 4);
  }
  absl::StatusOr<Raster> raster = Raster::FromRaw(
      RasterFormat::kF32, kSide, kSide, bytes, RasterRect{}, 1 << 20);
  return std::make_shared<const Raster>(*std::move(raster));
}

std::map<std::string, double>& ConstantRate() {
  static auto* rates = new std::map<std::string, double>();
  return *rates;
}

// This thread's CPU time in seconds: the machine is shared, and wall time
// would count other processes' turns.
double ThreadSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Case {
  int dims = 2;
  SamplerOptions options;
  std::string reference;  // Key into ConstantRate().
  bool is_constant = false;
};

void BM_Run(benchmark::State& state, const Case& c) {
  const absl::StatusOr<Box> box = Box::Create(c.dims, {0, 0, 0}, {1, 1, 1});
  const absl::StatusOr<Sampler> sampler = Sampler::Create(*box, c.options);
  if (!sampler.ok()) {
    state.SkipWithError(sampler.status().ToString().c_str());
    return;
  }
  std::uint64_t points = 0;
  std::uint64_t total = 0;
  double seconds = 0;
  for (auto _ : state) {
    points = 0;
    const double start = ThreadSeconds();
    const absl::Status status = sampler->Run([&](const PointBatch& batch) {
      points += batch.size();
      return true;
    });
    seconds += ThreadSeconds() - start;
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      return;
    }
    total += points;
  }
  const double rate = static_cast<double>(total) / seconds;
  state.counters["points"] = static_cast<double>(points);
  state.counters["points_per_s"] = rate;
  state.counters["ns_per_point"] = 1e9 / rate;
  if (c.is_constant) {
    ConstantRate()[c.reference] = rate;
    return;
  }
  if (ConstantRate().count(c.reference) != 0) {
    state.counters["vs_constant"] = rate / ConstantRate()[c.reference];
  }
  // Quality, outside the timing, on the points of one more run: pairs
  // closer than max(r_a, r_b) and probes (1e6 per unit area, 2e5 per unit
  // volume) with no point closer than max(r(probe), r_s).
  std::vector<double> coords, radii;
  const absl::Status status = sampler->Run([&](const PointBatch& batch) {
    coords.insert(coords.end(), batch.coords.begin(), batch.coords.end());
    radii.insert(radii.end(), batch.radius.begin(), batch.radius.end());
    return true;
  });
  const SamplerOptions& o = c.options;
  const absl::StatusOr<MinDistanceReport> spacing =
      CheckMinDistanceVariable(coords, radii, c.dims);
  const absl::StatusOr<CoverageReport> coverage = MeasureCoverageVariable(
      coords, radii, Region::FromBox(*box),
      [&](const double* p) {
        const double r = o.radius_min + (o.radius_max - o.radius_min) *
                                            (1 - o.density->Sample(p[0], p[1]));
        return r < o.radius_min ? o.radius_min
                                : (r > o.radius_max ? o.radius_max : r);
      },
      c.dims == 2 ? 1000000 : 200000, /*probe_seed=*/0x5eed0f9b0be5ULL);
  if (!status.ok() || !spacing.ok() || !coverage.ok()) {
    state.SkipWithError("quality run failed");
    return;
  }
  state.counters["pairs_too_close"] = static_cast<double>(spacing->violations);
  state.counters["uncovered_fraction"] = coverage->uncovered_fraction();
}

// A world-sized density map and a small request: a 4096 x 4096 u8 raster
// laid over a 4096 x 4096 world (one pixel per unit), and one 64 x 64 box
// of it sampled at radii 0.5 to 2 (about 6 500 points), as a streamer asks
// for one tile after another. The raster's block bounds are built by the
// first run and kept (Raster::BlockLevels), so this measures the steady
// state: the per-run cost that does not scale with the box.
std::shared_ptr<const Raster> WorldRaster() {
  constexpr std::uint32_t kSide = 4096;
  std::vector<std::uint8_t> bytes(std::size_t{kSide} * kSide);
  for (std::uint32_t j = 0; j < kSide; ++j) {
    for (std::uint32_t i = 0; i < kSide; ++i) {
      const double v =
          0.5 + 0.25 * std::sin(i * 0.013) + 0.25 * std::sin(j * 0.021 + 1);
      bytes[std::size_t{j} * kSide + i] = static_cast<std::uint8_t>(v * 255);
    }
  }
  absl::StatusOr<Raster> raster =
      Raster::FromRaw(RasterFormat::kU8, kSide, kSide, bytes,
                      RasterRect{0, 0, kSide, kSide}, std::size_t{1} << 28);
  return std::make_shared<const Raster>(*std::move(raster));
}

void BM_TileOfAWorldRaster(benchmark::State& state) {
  static const auto* raster = new std::shared_ptr<const Raster>(WorldRaster());
  const absl::StatusOr<Box> box =
      Box::Create(2, {1000, 1000, 0}, {1064, 1064, 0});
  SamplerOptions options;
  options.density = *raster;
  options.radius_min = 0.5;
  options.radius_max = 2;
  const absl::StatusOr<Sampler> sampler = Sampler::Create(*box, options);
  if (!sampler.ok()) {
    state.SkipWithError(sampler.status().ToString().c_str());
    return;
  }
  std::uint64_t points = 0;
  for (auto _ : state) {
    points = 0;
    const absl::Status status = sampler->Run([&](const PointBatch& batch) {
      points += batch.size();
      return true;
    });
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      return;
    }
  }
  state.counters["points"] = static_cast<double>(points);
}

void RegisterAll() {
  benchmark::RegisterBenchmark("tile_of_a_world_raster", BM_TileOfAWorldRaster)
      ->Unit(benchmark::kMillisecond);
  const auto raster = RippleRaster();
  const auto checker = CheckerRaster();
  for (int dims : {2, 3}) {
    const double r_min = dims == 2 ? kRMin2D : kRMin3D;
    for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
      const std::string key = absl::StrCat(MethodName(method), "/", dims, "d");
      Case constant;
      constant.dims = dims;
      constant.options.method = method;
      constant.options.radius = r_min;
      constant.reference = key;
      constant.is_constant = true;
      benchmark::RegisterBenchmark((key + "/constant").c_str(), BM_Run,
                                   constant)
          ->Unit(benchmark::kMillisecond);
      Case flat;
      flat.dims = dims;
      flat.options.method = method;
      flat.options.density = FlatRaster(1);
      flat.options.radius_min = r_min;
      flat.options.radius_max = r_min * 10;
      flat.reference = key;
      benchmark::RegisterBenchmark((key + "/flat_ratio:10").c_str(), BM_Run,
                                   flat)
          ->Unit(benchmark::kMillisecond);
      for (int ratio : {10, 50}) {
        Case var;
        var.dims = dims;
        var.options.method = method;
        var.options.density = raster;
        var.options.radius_min = r_min;
        var.options.radius_max = r_min * ratio;
        var.reference = key;
        benchmark::RegisterBenchmark(
            absl::StrCat(key, "/ratio:", ratio).c_str(), BM_Run, var)
            ->Unit(benchmark::kMillisecond);
        // 2D only: in 3D (r_min 0.015, four pixels) a run takes about a
        // minute, nearly all of it gathering the small points within
        // r_max of each candidate near an edge (bench/README.md).
        if (dims == 3) continue;
        Case sharp = var;
        sharp.options.density = checker;
        benchmark::RegisterBenchmark(
            absl::StrCat(key, "/sharp_ratio:", ratio).c_str(), BM_Run, sharp)
            ->Unit(benchmark::kMillisecond);
      }
    }
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
