#ifndef SCATTER_SAMPLER_TILES_H_
#define SCATTER_SAMPLER_TILES_H_

// Seamless, deterministic tiles of an unbounded world (DESIGN.md: Per-tile
// seeds, Seamless tiles by colouring, with soft borders).
//
// The plane is cut into square tiles of side T: tile (i, j) holds
// [i T, (i + 1) T) x [j T, (j + 1) T) (in 3D, that column over the world's z
// extent). Tile colour is (i mod 2) + 2 (j mod 2), floor modulo. A
// *generator* makes one layer of one tile. It is a pure function of the
// world spec, the tile, the same layer's generators of its lower-colour
// neighbours (of the 8 around it) and the earlier layers' generators of the
// 3 x 3 tiles around it: every tile's trees come before any tile's rocks,
// as in an untiled run, where every tree comes before any rock. (DESIGN.md
// runs all layers of a tile in one generator; then a tile's trees had to
// keep clear of its lower neighbours' rocks and grass, and ran 20 % short
// near borders: see bench/README.md, Seams.) A generator
//   1. samples its tile grown by 5 R (R = TileWorld::r_max()), with those
//      generators' points as fixed obstacles (same-layer points conflict by
//      max(r_a, r_b), others by footprint_a + footprint_b or the override).
//      Growth starts from the lower neighbours' same-layer points within R
//      of the tile, on a schedule (Obstacle::wake_generation): where the
//      neighbours on opposite sides are both lower, one side waits so that
//      the two fronts meet at a place uniform over the tile, drawn from
//      the stream (seed, layer, tile, kTileFronts). (DESIGN.md grows from
//      a seed inside; fronts then met the same border of every tile, a
//      density dip repeated every T: see bench/README.md, Seams.)
//   2. keeps the points inside its tile, and those at L-infinity distance
//      d <= 3 s beyond its border with probability (3 s - d) / (3 s), drawn
//      from the stream (seed, layer, tile, kTileKeep) at the point's id,
//      where s <= R is the layer's spacing (radius_max with a density
//      raster). (DESIGN.md says 3 R; for a layer much finer than R the
//      later tile then filled a band of many of its spacings around the
//      thinned points, and packed it about 2.5 % looser: see
//      bench/README.md, Seams.)
//   3. fills the gaps left in its tile grown by 3 R, except within 3 R of a
//      higher-colour neighbour's tile: that neighbour comes later, sees
//      these points and fills the rest.
// The points served for a tile are those of every layer's generators of
// the tile and its 8 neighbours that lie in the tile's half-open bounds,
// ordered by (layer in placement order, generator colour, generator tile
// (x, then y), generation index). So every point belongs to exactly one
// tile, and a tile is bit-identical however, wherever and in whatever
// company it was computed.

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/layers.h"
#include "sampler/region.h"
#include "sampler/sampler.h"

namespace scatter::sampler {

// A tile's integer coordinates: tile (x, y) covers [x T, (x + 1) T) along x
// and [y T, (y + 1) T) along y.
struct TileCoord {
  std::int64_t x = 0;
  std::int64_t y = 0;
  friend bool operator==(TileCoord a, TileCoord b) {
    return a.x == b.x && a.y == b.y;
  }
  friend bool operator!=(TileCoord a, TileCoord b) { return !(a == b); }
  // Row-major: y, then x.
  friend bool operator<(TileCoord a, TileCoord b) {
    return a.y != b.y ? a.y < b.y : a.x < b.x;
  }
};

// A generator: one layer (its index in placement order) of one tile.
struct GeneratorKey {
  TileCoord tile;
  int layer = 0;
  friend bool operator==(GeneratorKey a, GeneratorKey b) {
    return a.tile == b.tile && a.layer == b.layer;
  }
  // By layer, then colour, then tile: every generator after those it
  // reads.
  friend bool operator<(GeneratorKey a, GeneratorKey b);
  template <typename H>
  friend H AbslHashValue(H h, GeneratorKey k) {
    return H::combine(std::move(h), k.tile.x, k.tile.y, k.layer);
  }
};

// (x mod 2) + 2 (y mod 2) with a floor modulo: 0 to 3, negative tiles too.
int TileColour(TileCoord t);

// What a tiled world is made of. Poisson methods only (dense or classic),
// constant radius or a density raster.
struct WorldSpec {
  // The layers, each with its own spacing, footprint and density raster
  // (the raster's world rectangle may span many tiles). As LayeredSampler.
  std::vector<LayerSpec> layers;
  // Seed, SIMD level, limits (max_points and max_memory_bytes apply to each
  // generator's run of a layer) and the world's obstacles.
  SamplerOptions shared;
  std::vector<ClearanceOverride> overrides;
  // Where points may go. Unset: the whole plane (2D only). A 3D world needs
  // one: its z extent is every column's.
  std::optional<Region> region;
  // Tile side T in world units. 0 means 64 R; otherwise finite and
  // >= 10 R, so a generator depends on its immediate neighbours only, and
  // <= 1e150, so areas and tile corners stay finite.
  double tile_size = 0;
  // Names this spec in a GeneratorCache shared by several worlds: two
  // worlds with the same non-empty key must have the same spec (the server
  // uses a digest of the request). Empty: a key unique to this world.
  std::string cache_key;
  // The points the generators one tile needs may make at most, by estimate
  // (EstimatedGeneratorPoints summed over every generator the tile reads,
  // directly or through others, that the cache lacks). Every layer reads
  // the layer before over the 3 x 3 tiles around, and the same layer of
  // the lower-colour neighbours, so a tile not cached needs (32 L^3 + 54
  // L^2 + 25 L) / 3 generators for L layers (37 for 1, 6 680 for 8, 2.9
  // million for 64), the first
  // layer's over about (6L)^2 tiles. Past the limit Serve gives
  // ResourceExhausted before making any. 0: no limit; below 0 or NaN is
  // InvalidArgument.
  double max_planned_points = 0;
};

// The points one generator made, in generation order, as structure of
// arrays (the layout of PointBatch).
struct GeneratedPoints {
  TileCoord tile;
  int layer_index = 0;  // In placement order.
  int dims = 2;
  std::vector<double> coords;  // dims per point, interleaved.
  std::vector<double> radius;  // The spacing radius at the point.
  std::vector<std::uint32_t> layer;
  std::vector<std::uint64_t> id;
  std::vector<double> yaw;
  std::vector<double> scale;
  // The points grouped by the tile of the 3 x 3 around `tile` they lie in
  // (group (dy + 1) * 3 + dx + 1 for the tile at offset (dx, dy)), each
  // group in generation order: by_tile[group_begin[j], group_begin[j + 1]).
  // Set once the generator is finished; Collect copies a group whole.
  std::vector<std::uint32_t> by_tile;
  std::array<std::uint32_t, 10> group_begin{};

  std::size_t size() const { return radius.size(); }
  // Bytes held (this struct and its arrays, by_tile too), for the cache
  // budget.
  std::size_t bytes() const;
  // Room for n points in every array, growing geometrically.
  void Reserve(std::size_t n);
  // Capacity down to size.
  void ShrinkToFit();
  // Appends the points of `from` that `indices` names, in that order.
  void AppendFrom(const GeneratedPoints& from,
                  absl::Span<const std::uint32_t> indices);
  // Views of points [begin, end) as a batch.
  PointBatch Batch(std::size_t begin, std::size_t end) const;
};

// The points served for one tile, in canonical order.
struct TilePoints {
  TileCoord tile;
  GeneratedPoints points;  // points.tile == tile.
};

// Finished generators, shared by requests (and threads): least recently
// used first out, bounded in bytes (each entry's GeneratedPoints::bytes()
// and what holding it costs: its key, stored twice, and the links).
// Thread-safe.
class GeneratorCache {
 public:
  explicit GeneratorCache(std::size_t budget_bytes) : budget_(budget_bytes) {}
  GeneratorCache(const GeneratorCache&) = delete;
  GeneratorCache& operator=(const GeneratorCache&) = delete;

  std::size_t budget_bytes() const { return budget_; }
  // Null when absent; a hit becomes the most recently used.
  std::shared_ptr<const GeneratedPoints> Find(const std::string& world,
                                              TileCoord tile);
  // Stores, then evicts least recently used entries while over budget.
  void Insert(const std::string& world, TileCoord tile,
              std::shared_ptr<const GeneratedPoints> points);

  struct Stats {
    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t evictions = 0;
    std::size_t entries = 0;
    std::size_t bytes = 0;
  };
  Stats stats() const;

 private:
  using Key = std::pair<std::string, std::pair<std::int64_t, std::int64_t>>;
  struct Entry {
    std::shared_ptr<const GeneratedPoints> points;
    std::list<Key>::iterator lru;
    std::size_t bytes = 0;  // As counted in stats_.bytes.
  };

  const std::size_t budget_;
  mutable std::mutex mu_;
  std::map<Key, Entry> entries_;
  std::list<Key> lru_;  // Front: most recently used.
  Stats stats_;
};

// A fixed set of worker threads running index loops; several callers may
// use it at once. The caller of ParallelFor works too, so a pool of one
// thread has no workers.
class ThreadPool {
 public:
  // threads <= 0: one per CPU the process may use (AllowedCpus: its CPU
  // affinity and its cgroup's CPU quota, rounded up). When the process
  // cannot start them all (a system limit of threads, or of address space
  // for their stacks), the pool keeps none and status() says so;
  // ParallelFor then runs on its caller alone.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // OK, or ResourceExhausted when the workers could not be started: "cannot
  // start 1023 worker threads (412 started): Resource temporarily
  // unavailable".
  const absl::Status& status() const { return status_; }
  // Calls f(0) ... f(n - 1), in any order and on any of the threads, and
  // returns when all have returned. An exception out of f is rethrown here,
  // on the caller's thread, once no thread runs f any more (the first one
  // thrown; the indices after it may not run): out of a worker thread it
  // would end the process.
  void ParallelFor(std::size_t n, absl::FunctionRef<void(std::size_t)> f);

 private:
  struct Job;
  void Work();
  static bool RunOne(Job* job);

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool quit_ = false;
  std::vector<std::thread> workers_;
  absl::Status status_;
};

class TileWorld {
 public:
  // InvalidArgument naming the field and the rule for a bad layer (as
  // LayeredSampler says it, "layers[i]: ..."), a non-Poisson method or
  // fill_gaps off ("layers[i].method ...", "layers[i].fill_gaps ..."), a 3D
  // world without a region, a tile_size that is not finite or outside
  // [10 R, 1e150] ("tile_size: must be finite and in [10 * r_max, 1e+150]
  // = ...") or a max_planned_points below 0 or NaN.
  static absl::StatusOr<std::shared_ptr<const TileWorld>> Create(
      WorldSpec spec);

  int dims() const { return dims_; }
  double tile_size() const { return tile_; }
  // R: the largest spacing radius, footprint sum and clearance override
  // of any layers.
  double r_max() const { return r_max_; }
  const std::string& cache_key() const { return spec_.cache_key; }
  // The key under which a GeneratorCache holds the generators of one layer
  // (its index in placement order).
  const std::string& layer_cache_key(std::size_t layer) const {
    return cache_keys_[layer];
  }
  // Layer numbers in placement order.
  const std::vector<std::uint32_t>& layer_order() const { return order_; }

  // The tile holding x-y position (x, y): the (i, j) whose bounds, as
  // TileBounds gives them, hold it; floor(x / T), floor(y / T) but where
  // that quotient rounds across a border.
  TileCoord TileOf(double x, double y) const;
  // The tile's bounds (half-open): [i T, (i + 1) T) x [j T, (j + 1) T),
  // each product rounded once, so neighbours' bounds meet without gap or
  // overlap; in 3D over the world's z extent. Tile
  // indices must be in [-2^31, 2^31), as Serve checks: far past that a
  // tile's corners stop being distinct doubles.
  Box TileBounds(TileCoord t) const;

  // The generator of one layer of a tile, given the same layer's
  // generators of the tile's lower-colour neighbours, in the order
  // LowerNeighbours lists them, and the generators of every earlier layer
  // of the tile and its 8 neighbours (any order). `stop` may be called from
  // this thread only; Cancelled when it says stop.
  absl::StatusOr<std::shared_ptr<const GeneratedPoints>> Generate(
      GeneratorKey key, absl::Span<const GeneratedPoints* const> lower,
      absl::Span<const GeneratedPoints* const> earlier,
      absl::FunctionRef<bool()> stop) const;

  // The generators `key` reads directly, as Generate takes them: its layer
  // of the lower-colour neighbours (in the order LowerNeighbours lists
  // them), then every earlier layer of the 3 x 3 tiles around it. None
  // when its grown tile misses the bounds of the world's region: it makes
  // nothing then.
  std::vector<GeneratorKey> Dependencies(GeneratorKey key) const;

  // The lower-colour tiles among t's 8 neighbours, in a fixed order.
  static std::vector<TileCoord> LowerNeighbours(TileCoord t);

  // The most points generator `key` can make: the densest packing
  // (2 / (sqrt(3) r^2) per unit area, sqrt(2) / r^3 per unit volume) over
  // its grown tile within the bounds of the world's region (0 where they
  // miss), at the least radius the layer's raster allows there.
  double EstimatedGeneratorPoints(GeneratorKey key) const;

  // The most points tile t can serve, summed over layers: per layer, the
  // densest packing at the least radius r the layer can have there, over
  // the tile within the bounds of the world's region (in 3D, over the
  // world's height) with r / 2 more on each side. 0 when the region misses
  // the tile (its bounds, or as Region::Classify can tell). The margin
  // makes it a bound however thin that part is (a strip narrower than r
  // still holds a row of points): in 2D, Oler's inequality (at most
  // 2 A / (sqrt(3) r^2) + P / (2 r) + 1 points r apart in a convex set of
  // area A and perimeter P) is below it.
  double MostServedPoints(TileCoord t) const;

  // A box holding, axis by axis, as wide a span as any generator samples
  // (its tile grown by 5 R within the bounds of the world's region): the
  // region's bounds along an axis where they are narrower than a grown
  // tile, the grown tile (0, 0) elsewhere. With a density raster the
  // raster over it is that of one place, not the brightest any generator
  // sees: MostRunBytes over it bounds them all.
  Box WidestGeneratorArea() const;

  // Serves `tiles` in the order given (repeats allowed): computes the
  // generators each needs that `cache` does not hold, in parallel on `pool`
  // (each as soon as its lower neighbours are done, those of earlier tiles
  // first), and calls sink(tile) for each tile as soon as its generators
  // are done: always on the caller's thread, in the order of `tiles`, while
  // the pool goes on with the later tiles' generators. Tile indices must be
  // in [-2^31, 2^31) (else InvalidArgument naming the tile): every
  // coordinate stays within 2^31 T, where a double still resolves T / 2^21.
  // A tile that needs a generator where doubles are coarser than its
  // layer's radius (radius_min) / 1024 is InvalidArgument naming the tile,
  // before any of its generators is made (the tiles before it are sent).
  // Tiles are computed in rounds of at most 64, so finished tiles
  // waiting for a slow sink stay bounded; a sink returning false stops the work
  // (Cancelled). `stop` is polled by every thread in every long loop (it must
  // be thread-safe). ResourceExhausted when the generators one tile needs
  // could make more points than WorldSpec::max_planned_points (before
  // making any).
  //
  // What a call holds: a round keeps alive the generators it found in
  // `cache` when it was planned and those it makes, each only until no
  // generator still to make and no tile still to send reads it (then only
  // the cache keeps it, if it has room), and the points of the generators
  // being made. Every generator made goes into `cache` as soon as it is
  // done. These bytes (GeneratedPoints::bytes(); for a generator being
  // made, what it will hold once done for the points it has so far) never
  // pass the cache's budget: a growth that would, asked before each batch
  // of points is added, stops the round (the tiles whose generators are
  // done are sent first) and Serve goes on with rounds of half as many
  // tiles. In a round of one tile it is ResourceExhausted at once, naming
  // the tile and "the tile cache budget of" that many bytes: that tile
  // needs more alive at once as its generators are made, in order of
  // layer, then colour (near the budget the pool's threads finishing in
  // another order can move the figure by about a generator). `hold`, when
  // given, is asked in the same way before the bytes grow, and told when
  // they fall (under a lock of the call's, from any of its threads, every
  // 1 024 points or so while a generator runs): a status other than OK
  // refuses a growth as the budget does (a round of one tile fails with
  // it, prefixed with the tile); a fall is never refused. Pass a hold that
  // is quick.
  //
  // An exception out of the work on any of the pool's threads
  // (std::bad_alloc from a generator, or one out of `sink`, `stop` or
  // `hold`) stops the round, and is rethrown here, on the caller's thread,
  // once every thread has left the round: as with a pool of one thread.
  using HoldFn = absl::FunctionRef<absl::Status(std::size_t bytes)>;
  absl::Status Serve(absl::Span<const TileCoord> tiles, GeneratorCache* cache,
                     ThreadPool* pool,
                     absl::FunctionRef<bool(const TilePoints&)> sink,
                     absl::FunctionRef<bool()> stop, HoldFn hold) const;
  absl::Status Serve(absl::Span<const TileCoord> tiles, GeneratorCache* cache,
                     ThreadPool* pool,
                     absl::FunctionRef<bool(const TilePoints&)> sink,
                     absl::FunctionRef<bool()> stop) const;

  // How many generators (layers of tiles) were computed (not found in a
  // cache) by Serve, over this world's life: for benchmarks and tests.
  std::uint64_t generated() const { return generated_.load(); }
  // The most bytes one round of Serve held at once (as Serve counts them),
  // over this world's life: for tests.
  std::size_t peak_held_bytes() const { return peak_held_.load(); }

 private:
  explicit TileWorld(WorldSpec spec) : spec_(std::move(spec)) {}

  // Runs one layer's sampler over `region` with `obstacles`, appending the
  // points keep(p, id) accepts, in generation order, to *out. Before each
  // batch is added, progress(the points *out will then have) is asked:
  // false stops the run (Cancelled).
  using KeepFn = absl::FunctionRef<bool(const double*, std::uint64_t)>;
  absl::Status RunLayer(std::size_t layer_index, const Region& region,
                        TileCoord t, bool border_pass,
                        std::vector<Obstacle> obstacles,
                        absl::FunctionRef<bool()> stop, KeepFn keep,
                        absl::FunctionRef<bool(std::size_t)> progress,
                        GeneratedPoints* out) const;
  // Sets g->by_tile and g->group_begin.
  void GroupByTile(GeneratedPoints* g) const;
  // The obstacle keeping a point of layer `layer_index` clear of point k of
  // `from`; `earlier` resolves the layer's clearances to other layers.
  Obstacle ObstacleFor(std::size_t layer_index,
                       const internal::EarlierLayerObstacles& earlier,
                       const GeneratedPoints& from, std::size_t k) const;
  using GeneratorMap =
      std::map<GeneratorKey, std::shared_ptr<const GeneratedPoints>>;
  struct RoundResult {
    std::size_t sent = 0;  // Tiles given to the sink, from the first.
    // Stopped: what the round held passed the cache's budget, or `hold`
    // refused it. Serve goes on with fewer tiles a round.
    bool over = false;
  };
  // One round of Serve: makes the generators of `list` (each of its
  // Dependencies in the list or in `found`) on every thread of `pool`, each
  // as soon as those are done, the first tiles' first, puts each into
  // `cache` when done, and sends each tile of `round` from this thread, in
  // order, as soon as its generators are done. Keeps each generator only
  // while the round still reads it, and what it keeps within the cache's
  // budget and `hold` as Serve says (over, or for a round of one tile
  // ResourceExhausted or hold's status).
  absl::StatusOr<RoundResult> ServeRound(
      absl::Span<const TileCoord> round, const std::vector<GeneratorKey>& list,
      GeneratorMap found, GeneratorCache* cache, ThreadPool* pool,
      absl::FunctionRef<bool(const TilePoints&)> sink,
      absl::FunctionRef<bool()> stop, HoldFn hold) const;
  // Generate, asking progress(the points the generator will then have)
  // before each batch it adds: false stops it (Cancelled).
  absl::StatusOr<std::shared_ptr<const GeneratedPoints>> Generate(
      GeneratorKey key, absl::Span<const GeneratedPoints* const> lower,
      absl::Span<const GeneratedPoints* const> earlier,
      absl::FunctionRef<bool()> stop,
      absl::FunctionRef<bool(std::size_t)> progress) const;
  // The points served for tile t, from every layer's generators of its
  // 3 x 3 tiles (in any order).
  TilePoints Collect(TileCoord t,
                     std::vector<const GeneratedPoints*> sources) const;
  // The generators of every layer of the 3 x 3 tiles around t.
  std::vector<GeneratorKey> Readers(TileCoord t) const;
  // Sets *area to the x-y box {x0, y0, x1, y1} of tile t grown by 5 R
  // within the bounds of the world's region, where a generator of t
  // samples first. False when they miss: the generator makes nothing.
  bool GrownArea(TileCoord t, std::array<double, 4>* area) const;
  // InvalidArgument when the doubles where generator `key` samples are too
  // coarse for its layer's radius (its runs would be refused), saying what
  // to change; else OK.
  absl::Status CheckCoordinateSteps(GeneratorKey key) const;

  // Indexes the world's obstacles (IndexObstacles); the generator of t
  // takes those that may reach its area, in the world's order (NearObstacles).
  void IndexObstacles();
  std::vector<Obstacle> NearObstacles(TileCoord t) const;

  // Layers sorted into placement order, options resolved; the world's
  // obstacles in spec_.shared alone (see obstacles_by_tile_).
  WorldSpec spec_;
  // The world's obstacles (indices into spec_.shared.obstacles; the
  // layers' options hold none) by the tile their centre lies in: sorted by
  // that tile, with the first position of each tile's run, so a generator
  // reads the few tiles around its own. Those of a radius over the tile
  // size are listed apart, and every generator tests each. A generator
  // that copied every obstacle of a big world spent most of its time on
  // those far away.
  std::vector<std::uint32_t> obstacles_by_tile_;
  std::vector<std::pair<TileCoord, std::uint32_t>> obstacle_tile_runs_;
  std::vector<std::uint32_t> wide_obstacles_;
  // Per layer: the key of its generators in a GeneratorCache.
  std::vector<std::string> cache_keys_;
  std::vector<std::uint32_t> order_;
  int dims_ = 2;
  double tile_ = 0;
  double r_max_ = 0;
  double z_lo_ = 0;
  double z_hi_ = 0;
  mutable std::atomic<std::uint64_t> generated_{0};
  mutable std::atomic<std::size_t> peak_held_{0};
};

// The i-th of n compact bands of the tiles x0 <= x < x1, y0 <= y < y1
// (0 <= i < n). The N tiles are listed column strip by column strip, left
// to right, each strip s tiles wide (the last one narrower) and listed row
// by row, up the even strips (the first is 0) and down the odd ones, with
// s = round(sqrt(N / n)) in [1, x1 - x0]; band i holds list entries
// [floor(i N / n), floor((i + 1) N / n)). For n = 1, s = x1 - x0: the
// rectangle row by row (y, then x). So a band is about s x s tiles, and
// one that runs on into the next strip goes on beside where it left the
// last (with every strip upwards, it jumped from the top of one to the
// bottom of the next; found by a review helper). Compact bands, not every
// n-th tile nor whole rows, since a tile needs the generators of the tiles
// around it made too: 16 bands of a 16 x 16 world took 36 s of CPU as
// blocks, 48 s as rows. InvalidArgument for an empty rectangle, a
// rectangle of more than 2^31 tiles, n < 1 or i outside [0, n).
absl::StatusOr<std::vector<TileCoord>> ShardTiles(std::int64_t x0,
                                                  std::int64_t x1,
                                                  std::int64_t y0,
                                                  std::int64_t y1, int i,
                                                  int n);

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_TILES_H_
