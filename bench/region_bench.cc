// Point-in-region cost: the inside test a region adds to every candidate.
//   ./build/release/bench/region_bench

#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "sampler/box.h"
#include "sampler/layers.h"
#include "sampler/region.h"
#include "sampler/rng.h"
#include "sampler/sampler.h"
#include "tests/sampler/shapes.h"

namespace scatter::sampler {
namespace {

using test::kPi;
using test::Star;

// A 10 000-vertex ring (radius 900-1000) with 20 lakes of 100 vertices.
std::vector<Ring> Coast() {
  std::vector<Ring> rings = {Star(0, 0, 900, 1000, 10000, 5, false)};
  for (int h = 0; h < 20; ++h) {
    const double t = 2 * kPi * h / 20;
    rings.push_back(
        Star(500 * std::cos(t), 500 * std::sin(t), 40, 80, 100, 100 + h, true));
  }
  return rings;
}

// A ring around (cx, cy) whose radius is radius * (1 + f(angle)), f a
// periodic fractal profile: midpoint displacement over the n vertices (n a
// power of two), uniform in +-amplitude at the coarsest split and `decay`
// times that at each finer one. |f| stays below amplitude / (1 - decay),
// so the ring is star-shaped and simple while that is below 1.
Ring FractalRing(double cx, double cy, double radius, int n, double amplitude,
                 double decay, std::uint64_t seed, bool clockwise) {
  std::vector<double> f(static_cast<std::size_t>(n), 0.0);
  CounterRng rng(seed);
  double a = amplitude;
  for (int step = n; step > 1; step /= 2) {
    for (int i = 0; i < n; i += step) {
      const double left = f[static_cast<std::size_t>(i)];
      const double right = f[static_cast<std::size_t>((i + step) % n)];
      f[static_cast<std::size_t>(i + step / 2)] =
          (left + right) / 2 + a * (2 * rng.Uniform01() - 1);
    }
    a *= decay;
  }
  Ring ring;
  for (int k = 0; k < n; ++k) {
    const double t = 2 * kPi * k / n * (clockwise ? -1 : 1);
    const double r = radius * (1 + f[static_cast<std::size_t>(k)]);
    ring.push_back({cx + r * std::cos(t), cy + r * std::sin(t)});
  }
  return ring;
}

// A coastline as a map draws it: an island of radius about 1000 whose shore
// is rough at every scale down to its vertex spacing (8 192 vertices, so
// edges about 0.8 long), 40 islets of 32 vertices offshore and 20 lakes of
// 32 vertices: 10 112 vertices. Coast() above is the stress case instead:
// its 10 000 edges are spikes up to 100 long, 0.6 apart, and they fill a
// band 100 wide where no place is farther than 0.3 from an edge.
std::vector<Ring> FractalCoast() {
  std::vector<Ring> rings = {
      FractalRing(0, 0, 1000, 8192, 0.15, 0.62, 11, false)};
  for (int i = 0; i < 40; ++i) {
    const double t = 2 * kPi * (i + 0.5) / 40;
    const double d = 1600 + 50 * (i % 3);
    rings.push_back(FractalRing(d * std::cos(t), d * std::sin(t),
                                20 + (i % 5) * 5, 32, 0.2, 0.62, 300 + i,
                                false));
  }
  for (int h = 0; h < 20; ++h) {
    const double t = 2 * kPi * h / 20;
    rings.push_back(FractalRing(450 * std::cos(t), 450 * std::sin(t),
                                30 + (h % 3) * 10, 32, 0.2, 0.62, 500 + h,
                                true));
  }
  return rings;
}

// Queries at random points of the region's bounds, as candidates would be.
void RunQueries(benchmark::State& state, const Region& region) {
  const Box& b = region.bounds();
  std::vector<double> points;
  CounterRng rng(1);
  for (int i = 0; i < 1 << 16; ++i) {
    points.push_back(b.min(0) + rng.Uniform01() * b.extent(0));
    points.push_back(b.min(1) + rng.Uniform01() * b.extent(1));
  }
  std::size_t inside = 0;
  std::size_t i = 0;
  for (auto _ : state) {
    inside += region.Contains(&points[i]);
    i = (i + 2) & ((2 << 16) - 1);
  }
  benchmark::DoNotOptimize(inside);
  state.SetItemsProcessed(state.iterations());
}

void BM_BoxContains(benchmark::State& state) {
  RunQueries(state, Region::FromBox(
                        *Box::Create(2, {-1000, -1000, 0}, {1000, 1000, 0})));
}
BENCHMARK(BM_BoxContains);

// The coast (12 000 edges).
void BM_PolygonContains(benchmark::State& state) {
  absl::StatusOr<Region> region = Region::Polygons(Coast());
  if (!region.ok()) {
    state.SkipWithError(region.status().ToString().c_str());
    return;
  }
  RunQueries(state, *region);
}
BENCHMARK(BM_PolygonContains);

void BM_PolygonBuild(benchmark::State& state) {
  std::vector<Ring> rings = {
      Star(0, 0, 900, 1000, static_cast<int>(state.range(0)), 5, false)};
  for (auto _ : state) {
    benchmark::DoNotOptimize(Region::Polygons(rings));
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_PolygonBuild)
    ->Arg(10000)
    ->Arg(100000)
    ->Unit(benchmark::kMillisecond);

// A star polygon {n / m}, m = (n - 1) / 2: every edge nearly a diameter,
// so each crosses a line of index cells (the worst case for the index's
// size; see Region::IndexBytes). Reports the index's bytes per edge.
void BM_PolygonBuildStarOfDiameters(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const std::int64_t m = (n - 1) / 2;
  Ring ring;
  for (std::int64_t k = 0; k < n; ++k) {
    const double t =
        2 * M_PI * static_cast<double>((k * m) % n) / static_cast<double>(n);
    ring.push_back({1000 * std::cos(t), 1000 * std::sin(t)});
  }
  std::size_t bytes = 0;
  for (auto _ : state) {
    absl::StatusOr<Region> region = Region::Polygons({ring});
    bytes = region.ok() ? region->IndexBytes() : 0;
    benchmark::DoNotOptimize(region);
  }
  state.counters["index_bytes_per_edge"] =
      static_cast<double>(bytes) / static_cast<double>(n);
}
BENCHMARK(BM_PolygonBuildStarOfDiameters)
    ->Arg(20001)
    ->Arg(80001)
    ->Unit(benchmark::kMillisecond);

double RingArea(const Ring& ring) {
  double a2 = 0;
  for (std::size_t k = 0; k < ring.size(); ++k) {
    const auto& a = ring[k];
    const auto& b = ring[(k + 1) % ring.size()];
    a2 += a[0] * b[1] - b[0] * a[1];
  }
  return a2 / 2;  // Negative for clockwise rings: lakes subtract.
}

// Dense Poisson sampling at r = 2.75 (~300 000 points) in the polygon and
// in a box of the same area: the per-point time ratio is what a region
// costs. Reported per point produced.
void SampleWith(benchmark::State& state, const Region& region,
                const SamplerOptions& options) {
  absl::StatusOr<Sampler> sampler = Sampler::Create(region, options);
  if (!sampler.ok()) {
    state.SkipWithError(sampler.status().ToString().c_str());
    return;
  }
  std::uint64_t points = 0;
  for (auto _ : state) {
    const absl::Status status = sampler->Run([&](const PointBatch& batch) {
      points += batch.size();
      return true;
    });
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
  }
  state.counters["points"] =
      static_cast<double>(points) / static_cast<double>(state.iterations());
  state.counters["points_per_s"] = benchmark::Counter(
      static_cast<double>(points), benchmark::Counter::kIsRate);
}

void SampleIn(benchmark::State& state, const Region& region,
              double radius = 2.75) {
  SamplerOptions options;
  options.radius = radius;
  SampleWith(state, region, options);
}

void SamplePolygon(benchmark::State& state, const std::vector<Ring>& rings) {
  absl::StatusOr<Region> region = Region::Polygons(rings);
  if (!region.ok()) {
    state.SkipWithError(region.status().ToString().c_str());
    return;
  }
  SampleIn(state, *region);
}

void SampleBoxOfTheArea(benchmark::State& state,
                        const std::vector<Ring>& rings) {
  double area = 0;
  for (const Ring& ring : rings) area += RingArea(ring);
  const double side = std::sqrt(area);
  SampleIn(state, Region::FromBox(*Box::Create(2, {0, 0, 0}, {side, side, 0})));
}

void BM_SampleCoastPolygon(benchmark::State& state) {
  SamplePolygon(state, Coast());
}
BENCHMARK(BM_SampleCoastPolygon)->Unit(benchmark::kMillisecond);

void BM_SampleBoxOfTheSameArea(benchmark::State& state) {
  SampleBoxOfTheArea(state, Coast());
}
BENCHMARK(BM_SampleBoxOfTheSameArea)->Unit(benchmark::kMillisecond);

// The coast shrunk 1e5 times (0.02 across) and sampled at 2.75e-5, around
// the origin (Arg 0) and moved to (10^Arg, 10^Arg): about as many points
// as BM_SampleCoastPolygon, at about its cost a point wherever it lies.
// (The index's edge test once kept a margin of 2^-40 of the coordinates
// for rounding, half a cell at 1e7, where this took 100 times longer.)
void BM_SampleSmallCoastFarAway(benchmark::State& state) {
  const double offset =
      state.range(0) == 0 ? 0
                          : std::pow(10.0, static_cast<double>(state.range(0)));
  std::vector<Ring> rings = Coast();
  for (Ring& ring : rings) {
    for (std::array<double, 2>& v : ring) {
      v = {offset + 1e-5 * v[0], offset + 1e-5 * v[1]};
    }
  }
  absl::StatusOr<Region> region = Region::Polygons(rings);
  if (!region.ok()) {
    state.SkipWithError(region.status().ToString().c_str());
    return;
  }
  SampleIn(state, *region, 2.75e-5);
}
BENCHMARK(BM_SampleSmallCoastFarAway)
    ->Arg(0)
    ->Arg(5)
    ->Arg(6)
    ->Arg(7)
    ->Unit(benchmark::kMillisecond);

void BM_SampleFractalCoastPolygon(benchmark::State& state) {
  SamplePolygon(state, FractalCoast());
}
BENCHMARK(BM_SampleFractalCoastPolygon)->Unit(benchmark::kMillisecond);

void BM_SampleBoxOfTheFractalCoastsArea(benchmark::State& state) {
  SampleBoxOfTheArea(state, FractalCoast());
}
BENCHMARK(BM_SampleBoxOfTheFractalCoastsArea)->Unit(benchmark::kMillisecond);

// Obstacles: 100 000 of radius 0.1 at random in a 300 x 300 box, sampled
// at r = 1, without (Arg 0) and with (Arg 1) one more of radius 75 at a
// corner. The obstacle index keeps obstacles of very different reach in
// grids of their own: with one grid of cells as wide as the largest, each
// cell listed thousands and Arg 1 took 24 s against 0.3 s.
void BM_SampleAmongObstacles(benchmark::State& state) {
  SamplerOptions options;
  options.radius = 1;
  CounterRng rng(7);
  for (int k = 0; k < 100000; ++k) {
    options.obstacles.push_back(
        {{300 * rng.Uniform01(), 300 * rng.Uniform01(), 0}, 0.1});
  }
  if (state.range(0) == 1) options.obstacles.push_back({{0, 0, 0}, 75});
  SampleWith(state, Region::FromBox(*Box::Create(2, {0, 0, 0}, {300, 300, 0})),
             options);
}
BENCHMARK(BM_SampleAmongObstacles)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace scatter::sampler

BENCHMARK_MAIN();

namespace scatter::sampler {
namespace {

// The three layers over a 250 m x 250 m polygon with a 40 m lake:
// trees spacing 8 footprint 2, rocks 3 / 0.75, grass 0.6 / 0.1. Reports
// points per layer, points/s per layer (each layer's own time) and the
// total time.
void BM_ThreeLayers(benchmark::State& state) {
  const Region park = *Region::Polygons(
      {test::Square(0, 0, 250, 250), test::Circle(125, 125, 40, 128)});
  auto layer = [](std::uint32_t id, double spacing, double footprint) {
    LayerSpec spec;
    spec.layer = id;
    spec.options.radius = spacing;
    spec.options.footprint = footprint;
    return spec;
  };
  SamplerOptions shared;
  absl::StatusOr<LayeredSampler> sampler = LayeredSampler::Create(
      park, {layer(1, 8, 2), layer(2, 3, 0.75), layer(3, 0.6, 0.1)}, shared);
  if (!sampler.ok()) {
    state.SkipWithError(sampler.status().ToString().c_str());
    return;
  }
  double count[4] = {0, 0, 0, 0};
  double seconds[4] = {0, 0, 0, 0};
  for (auto _ : state) {
    auto last = std::chrono::steady_clock::now();
    const absl::Status status = sampler->Run([&](const PointBatch& batch) {
      const std::uint32_t l = batch.layer[0];
      const auto now = std::chrono::steady_clock::now();
      seconds[l] += std::chrono::duration<double>(now - last).count();
      last = now;
      count[l] += static_cast<double>(batch.size());
      return true;
    });
    if (!status.ok()) state.SkipWithError(status.ToString().c_str());
  }
  const double runs = static_cast<double>(state.iterations());
  const char* names[4] = {"", "trees", "rocks", "grass"};
  for (int l = 1; l <= 3; ++l) {
    state.counters[std::string(names[l]) + "_points"] = count[l] / runs;
    state.counters[std::string(names[l]) + "_points_per_s"] =
        seconds[l] > 0 ? count[l] / seconds[l] : 0;
  }
}
BENCHMARK(BM_ThreeLayers)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace scatter::sampler
