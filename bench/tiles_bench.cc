// Tiled worlds (sampler/tiles.h): throughput, parallel speedup, steady-state
// cost of a long sweep against untiled sampling, the latency of one tile,
// and the memory a sweep holds. See bench/README.md ("Tiles").
//
// Every world is one dense layer of r = 1 with tiles of the default side
// T = 64 r (about 3 560 points per tile). Rates are per second of wall
// time (UseRealTime), since the block benchmark runs on several threads.

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "sampler/box.h"
#include "sampler/sampler.h"
#include "sampler/tiles.h"

namespace scatter::sampler {
namespace {

constexpr std::size_t kCacheBytes = std::size_t{512} << 20;  // scatterd's.

std::shared_ptr<const TileWorld> World(Method method) {
  WorldSpec spec;
  LayerSpec layer;
  layer.layer = 1;
  layer.options.radius = 1;
  layer.options.method = method;
  spec.layers.push_back(layer);
  spec.shared.seed = 1;
  absl::StatusOr<std::shared_ptr<const TileWorld>> world =
      TileWorld::Create(spec);
  if (!world.ok()) std::abort();
  return *world;
}

// The w x h tiles from (x0, y0), row-major.
std::vector<TileCoord> Block(std::int64_t x0, std::int64_t y0, std::int64_t w,
                             std::int64_t h) {
  return *ShardTiles(x0, x0 + w, y0, y0 + h, 0, 1);
}

// Serves `tiles`; returns the points served.
std::uint64_t Serve(const TileWorld& world, const std::vector<TileCoord>& tiles,
                    GeneratorCache* cache, ThreadPool* pool) {
  std::uint64_t points = 0;
  const absl::Status status = world.Serve(
      tiles, cache, pool,
      [&](const TilePoints& t) {
        points += t.points.size();
        return true;
      },
      [] { return false; });
  if (!status.ok()) std::abort();
  return points;
}

// This process's resident set, from /proc/self/statm.
double ResidentMegabytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<double>(resident) *
         static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// Points per second of untiled sampling of a square of side `side` r on
// this thread (best of `reps`): what tiles are compared with.
double UntiledRate(Method method, double side, int reps) {
  absl::StatusOr<Box> box = Box::Create(2, {0, 0, 0}, {side, side, 0});
  SamplerOptions o;
  o.radius = 1;
  o.method = method;
  o.seed = 1;
  o.max_memory_bytes = std::uint64_t{8} << 30;
  absl::StatusOr<Sampler> sampler = Sampler::Create(*box, o);
  if (!sampler.ok()) std::abort();
  double best = 0;
  for (int rep = 0; rep < reps; ++rep) {
    std::uint64_t n = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const absl::Status status = sampler->Run([&](const PointBatch& b) {
      n += b.size();
      return true;
    });
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (!status.ok()) std::abort();
    best = std::max(best, static_cast<double>(n) / s);
  }
  return best;
}

// A cold 16 x 16 block (fresh cache each time) on 1 or 2 threads.
void BM_Block16(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  std::shared_ptr<const TileWorld> world = World(Method::kPoissonDense);
  ThreadPool pool(threads);
  const std::vector<TileCoord> tiles = Block(0, 0, 16, 16);
  std::uint64_t points = 0;
  for (auto _ : state) {
    auto cache = std::make_unique<GeneratorCache>(kCacheBytes);
    points += Serve(*world, tiles, cache.get(), &pool);
    state.PauseTiming();  // Freeing the cache is not serving.
    cache.reset();
    state.ResumeTiming();
  }
  state.counters["tiles/s"] =
      benchmark::Counter(static_cast<double>(tiles.size() * state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["points/s"] = benchmark::Counter(static_cast<double>(points),
                                                  benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Block16)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MinTime(2);

// A 100 x 100 sweep in row order on one thread with scatterd's cache
// budget: the marginal cost per served point, as a share of untiled
// points/s measured first in the same process, generators per tile, and
// the memory held (cache bytes at the end, peak RSS). Two untiled
// references: about a million points (a 1 100 r square, whose grid fits
// the caches: vs_untiled_1M) and the sweep's whole area in one run (6 400 r
// square, 35 M points: vs_untiled_same_area), which is what tiles replace.
// The untiled runs come after the sweep, so peak RSS is the sweep's.
void BM_Sweep100(benchmark::State& state) {
  const Method method = static_cast<Method>(state.range(0));
  std::shared_ptr<const TileWorld> world = World(method);
  ThreadPool pool(1);
  const std::vector<TileCoord> tiles = Block(0, 0, 100, 100);
  std::uint64_t points = 0;
  std::uint64_t generated = 0;
  std::size_t cache_bytes = 0;
  double rss_mb = 0;
  double seconds = 0;
  for (auto _ : state) {
    GeneratorCache cache(kCacheBytes);
    const std::uint64_t before = world->generated();
    const auto t0 = std::chrono::steady_clock::now();
    points += Serve(*world, tiles, &cache, &pool);
    seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    generated += world->generated() - before;
    cache_bytes = cache.stats().bytes;
    // Resident memory with the cache still alive, before the untiled runs
    // (whose grids are larger).
    rss_mb = ResidentMegabytes();
  }
  const double rate = static_cast<double>(points) / seconds;

  const double untiled = UntiledRate(method, 1100, 3);
  const double untiled_area = UntiledRate(method, 6400, 1);
  state.counters["points/s"] = rate;
  state.counters["untiled_1M_points/s"] = untiled;
  state.counters["vs_untiled_1M"] = rate / untiled;
  state.counters["untiled_area_points/s"] = untiled_area;
  state.counters["vs_untiled_same_area"] = rate / untiled_area;
  state.counters["gens/tile"] =
      static_cast<double>(generated) /
      static_cast<double>(tiles.size() * state.iterations());
  state.counters["cache_MB"] = static_cast<double>(cache_bytes) / (1 << 20);
  state.counters["rss_MB"] = rss_mb;
}
BENCHMARK(BM_Sweep100)
    ->Arg(static_cast<int>(Method::kPoissonDense))
    ->Arg(static_cast<int>(Method::kPoissonClassic))
    ->Unit(benchmark::kSecond)
    ->UseRealTime()
    ->Iterations(1);

// The latency of one tile, (0) cold: nothing cached, so it computes its
// 3 x 3 neighbours' generators and their lower-colour closure; (1) warm:
// every generator but its own is cached, as for a streamer whose player
// walks into a tile next to ones already served.
void BM_OneTile(benchmark::State& state) {
  const bool warm = state.range(0) == 1;
  std::shared_ptr<const TileWorld> world = World(Method::kPoissonDense);
  ThreadPool pool(1);
  const TileCoord target{10, 7};
  GeneratorCache full(kCacheBytes);
  Serve(*world, Block(6, 3, 9, 9), &full, &pool);
  std::uint64_t generated = 0;
  for (auto _ : state) {
    state.PauseTiming();
    GeneratorCache cache(kCacheBytes);
    if (warm) {
      for (TileCoord t : Block(6, 3, 9, 9)) {
        if (t == target) continue;
        for (std::size_t l = 0; l < world->layer_order().size(); ++l) {
          const std::string& key = world->layer_cache_key(l);
          if (auto g = full.Find(key, t)) cache.Insert(key, t, g);
        }
      }
    }
    const std::uint64_t before = world->generated();
    state.ResumeTiming();
    Serve(*world, {target}, &cache, &pool);
    generated += world->generated() - before;
  }
  state.counters["generators"] =
      static_cast<double>(generated) / static_cast<double>(state.iterations());
}
BENCHMARK(BM_OneTile)
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A streamer's first frame: a cold 8 x 8 block on 2 threads, timed to its
// first tile and to its last. The time is the whole block's; the counters
// give the first tile's arrival and the generators made by then.
void BM_FirstTileOfABlock(benchmark::State& state) {
  std::shared_ptr<const TileWorld> world = World(Method::kPoissonDense);
  ThreadPool pool(2);
  double first_ms = 0;
  double generated_by_first = 0;
  double generated = 0;
  for (auto _ : state) {
    state.PauseTiming();
    GeneratorCache cache(kCacheBytes);
    const std::uint64_t before = world->generated();
    state.ResumeTiming();
    const auto start = std::chrono::steady_clock::now();
    bool first = true;
    const absl::Status status = world->Serve(
        Block(-4, -4, 8, 8), &cache, &pool,
        [&](const TilePoints&) {
          if (first) {
            first_ms += std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - start)
                            .count();
            generated_by_first +=
                static_cast<double>(world->generated() - before);
            first = false;
          }
          return true;
        },
        [] { return false; });
    if (!status.ok()) std::abort();
    generated += static_cast<double>(world->generated() - before);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["first_tile_ms"] = first_ms / n;
  state.counters["generators_by_first"] = generated_by_first / n;
  state.counters["generators"] = generated / n;
}
BENCHMARK(BM_FirstTileOfABlock)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace scatter::sampler

BENCHMARK_MAIN();
