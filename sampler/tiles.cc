#include "sampler/tiles.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <exception>
#include <limits>
#include <queue>
#include <set>
#include <system_error>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "sampler/cpus.h"
#include "sampler/rng.h"

namespace scatter::sampler {
namespace {

// DESIGN.md's margins: a generator samples its tile grown by kGrow R and
// keeps points up to kKeep times its layer's spacing (at most R) beyond its
// border (the ramp).
constexpr double kGrow = 5;
constexpr double kKeep = 3;
// The default tile side and the smallest allowed, in units of R.
constexpr double kDefaultTile = 64;
constexpr double kMinTile = 10;
constexpr double kMaxTile = 1e150;
// Tile indices Serve takes: see TileWorld::Serve.
constexpr std::int64_t kMaxTileIndex = std::int64_t{1} << 31;
// Tiles served per round of generation: few enough that finished tiles
// waiting for a slow sink stay bounded (64 tiles of 3 600 points: 14 MB),
// enough that every core has generators to make (a cold 16 x 16 block ran
// 1.69 to 1.79 times faster on 2 threads than on 1 with 64 or 128; 1.99
// with the whole block at once).
constexpr std::size_t kChunkTiles = 64;

// What GeneratedPoints::bytes() gives for a generator of `points` points
// once done (shrunk to fit, by_tile set): the struct, coordinates, radius,
// yaw and scale, layer, id and by_tile. A generator being made is counted
// at this much for the points it has.
std::size_t DoneBytes(int dims, std::size_t points) {
  return sizeof(GeneratedPoints) +
         points * ((static_cast<std::size_t>(dims) + 3) * sizeof(double) +
                   2 * sizeof(std::uint32_t) + sizeof(std::uint64_t));
}

double Spacing(const SamplerOptions& o) {
  return o.density != nullptr ? o.radius_max : o.radius;
}

// The largest footprint a point of the layer can have.
double MaxFootprint(const SamplerOptions& o) {
  return o.density != nullptr && o.footprint == 0 ? o.radius_max / 2
                                                  : o.footprint;
}

// L-infinity distance in x-y from p to the box [x0, x1) x [y0, y1); 0
// inside.
double OutsideDistance(const double* p, double x0, double x1, double y0,
                       double y1) {
  return std::max({x0 - p[0], p[0] - x1, y0 - p[1], p[1] - y1, 0.0});
}

bool InXY(const double* p, double x0, double x1, double y0, double y1) {
  return p[0] >= x0 && p[0] < x1 && p[1] >= y0 && p[1] < y1;
}

// How far a Poisson front grows in one generation (the points made by the
// visits of the one before), in radii: a strip 200 r long, grown from a
// column of points at one end, took 212 generations dense (k = 12) and 125
// classic (k = 30).
constexpr double kDenseFrontStep = 0.94;
constexpr double kClassicFrontStep = 1.6;

// When a generator's lower neighbours wake (Obstacle::wake_generation):
// growth starts from their points at the tile's edge, not from a seed
// inside, so every border continues a pattern instead of meeting it head
// on. Where neighbours on opposite sides are both lower, their fronts meet
// inside the tile; the later side waits so that they meet at a place
// uniform over the tile, drawn from the tile's own stream. Fronts that met
// at the same place in every tile, as they would with no wait (the middle)
// or with a growth from one side (the far border), lose a little density
// there, and repeated every T that is a peak in the spectrum at m / T.
class FrontWakes {
 public:
  FrontWakes(std::uint64_t seed, const SamplerOptions& o, TileCoord t,
             double tile)
      : t_(t) {
    const double radius = o.density != nullptr
                              ? (o.radius_min + o.radius_max) / 2
                              : o.radius;
    const double step =
        (o.method == Method::kPoissonClassic ? kClassicFrontStep
                                             : kDenseFrontStep) *
        radius;
    CounterRng rng(StreamKey::OfTile(seed, o.layer, t.x, t.y,
                                     Purpose::kTileFronts));
    const int colour = TileColour(t);
    for (int a = 0; a < 2; ++a) {
      bool lower[2];
      for (int side = 0; side < 2; ++side) {
        const std::int64_t d = side == 0 ? -1 : 1;
        lower[side] = TileColour({a == 0 ? t.x + d : t.x,
                                  a == 1 ? t.y + d : t.y}) < colour;
      }
      // The fronts meet at f T from the low side: the high side's wait is
      // (2 f - 1) T of growth, or the low side's the opposite.
      const double f = rng.Uniform01();
      const double lead = (2 * f - 1) * tile / step;
      for (int side = 0; side < 2; ++side) {
        if (!lower[side]) continue;
        const double wait = !lower[1 - side] ? 0
                            : side == 1      ? lead
                                             : -lead;
        // (Tiles over 10^9 fronts' steps wide wait at most that.)
        wake_[a][side] =
            static_cast<std::int32_t>(std::clamp(wait, 0.0, 1e9));
      }
    }
  }

  // The wake generation of a point of the lower neighbour `from`: that of
  // its side, the earlier of two for a corner neighbour.
  std::int32_t For(TileCoord from) const {
    std::int32_t w = std::numeric_limits<std::int32_t>::max();
    const std::int64_t d[2] = {from.x - t_.x, from.y - t_.y};
    for (int a = 0; a < 2; ++a) {
      if (d[a] != 0 && wake_[a][d[a] > 0] >= 0) {
        w = std::min(w, wake_[a][d[a] > 0]);
      }
    }
    return w == std::numeric_limits<std::int32_t>::max() ? 0 : w;
  }

 private:
  TileCoord t_;
  // [axis][0: the low side, 1: the high side]; -1 where that neighbour is
  // not lower.
  std::int32_t wake_[2][2] = {{-1, -1}, {-1, -1}};
};

// An x-y rectangle [x0, x1) x [y0, y1).
struct Rect {
  double x0, y0, x1, y1;
};

// A rectangle holding every part of `r` outside all of `cuts` (found by
// halving r down to `depth` levels, so it may be a little larger), or
// nullopt when the cuts cover r.
std::optional<Rect> UncutBounds(const Rect& r, const std::vector<Rect>& cuts,
                                int depth) {
  bool meets = false;
  for (const Rect& c : cuts) {
    if (r.x0 >= c.x0 && r.x1 <= c.x1 && r.y0 >= c.y0 && r.y1 <= c.y1) {
      return std::nullopt;
    }
    meets |= r.x0 < c.x1 && r.x1 > c.x0 && r.y0 < c.y1 && r.y1 > c.y0;
  }
  if (!meets || depth == 0) return r;
  Rect a = r, b = r;
  if (r.x1 - r.x0 >= r.y1 - r.y0) {
    a.x1 = b.x0 = (r.x0 + r.x1) / 2;
  } else {
    a.y1 = b.y0 = (r.y0 + r.y1) / 2;
  }
  const std::optional<Rect> ua = UncutBounds(a, cuts, depth - 1);
  const std::optional<Rect> ub = UncutBounds(b, cuts, depth - 1);
  if (!ua.has_value()) return ub;
  if (!ub.has_value()) return ua;
  return Rect{std::min(ua->x0, ub->x0), std::min(ua->y0, ub->y0),
              std::max(ua->x1, ub->x1), std::max(ua->y1, ub->y1)};
}

}  // namespace

int TileColour(TileCoord t) {
  // Two's complement: v & 1 is the floor modulo 2, negative v too.
  return static_cast<int>((t.x & 1) + 2 * (t.y & 1));
}

std::size_t GeneratedPoints::bytes() const {
  return sizeof(*this) +
         (coords.capacity() + radius.capacity() + yaw.capacity() +
          scale.capacity()) *
             sizeof(double) +
         (layer.capacity() + by_tile.capacity()) * sizeof(std::uint32_t) +
         id.capacity() * sizeof(std::uint64_t);
}

void GeneratedPoints::Reserve(std::size_t n) {
  // Geometric growth: a run appends batch after batch, and room for just
  // one more batch would copy every array again for each.
  if (n <= id.capacity()) return;
  n = std::max(n, 2 * id.capacity());
  coords.reserve(n * static_cast<std::size_t>(dims));
  radius.reserve(n);
  layer.reserve(n);
  id.reserve(n);
  yaw.reserve(n);
  scale.reserve(n);
}

void GeneratedPoints::ShrinkToFit() {
  coords.shrink_to_fit();
  radius.shrink_to_fit();
  layer.shrink_to_fit();
  id.shrink_to_fit();
  yaw.shrink_to_fit();
  scale.shrink_to_fit();
}

void GeneratedPoints::AppendFrom(const GeneratedPoints& from,
                                 absl::Span<const std::uint32_t> indices) {
  const std::size_t at = size();
  const std::size_t n = at + indices.size();
  const auto d = static_cast<std::size_t>(dims);
  coords.resize(n * d);
  radius.resize(n);
  layer.resize(n);
  id.resize(n);
  yaw.resize(n);
  scale.resize(n);
  std::size_t j = at;
  for (std::uint32_t k : indices) {
    for (std::size_t a = 0; a < d; ++a)
      coords[j * d + a] = from.coords[k * d + a];
    radius[j] = from.radius[k];
    layer[j] = from.layer[k];
    id[j] = from.id[k];
    yaw[j] = from.yaw[k];
    scale[j] = from.scale[k];
    ++j;
  }
}

PointBatch GeneratedPoints::Batch(std::size_t begin, std::size_t end) const {
  const auto d = static_cast<std::size_t>(dims);
  PointBatch b;
  b.dims = dims;
  b.coords = absl::MakeConstSpan(coords).subspan(begin * d, (end - begin) * d);
  b.radius = absl::MakeConstSpan(radius).subspan(begin, end - begin);
  b.layer = absl::MakeConstSpan(layer).subspan(begin, end - begin);
  b.id = absl::MakeConstSpan(id).subspan(begin, end - begin);
  b.yaw = absl::MakeConstSpan(yaw).subspan(begin, end - begin);
  b.scale = absl::MakeConstSpan(scale).subspan(begin, end - begin);
  return b;
}

// --- GeneratorCache -------------------------------------------------------

std::shared_ptr<const GeneratedPoints> GeneratorCache::Find(
    const std::string& world, TileCoord tile) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(Key(world, {tile.x, tile.y}));
  if (it == entries_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.points;
}

void GeneratorCache::Insert(const std::string& world, TileCoord tile,
                            std::shared_ptr<const GeneratedPoints> points) {
  std::lock_guard<std::mutex> lock(mu_);
  Key key(world, {tile.x, tile.y});
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    // Another request made the same generator: same points, keep one.
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return;
  }
  // The key is held twice, in the map and in the list, with a node's
  // links each and the entry. Uncounted, a cache of empty generators (a
  // region's surroundings; 232 bytes each) held about 2.5 times its budget
  // with the server's 72-character keys, by this count.
  const std::size_t bytes = points->bytes() + 2 * (sizeof(Key) + world.size()) +
                            sizeof(Entry) + 6 * sizeof(void*);
  stats_.bytes += bytes;
  lru_.push_front(key);
  entries_.emplace(std::move(key),
                   Entry{std::move(points), lru_.begin(), bytes});
  while (stats_.bytes > budget_ && !lru_.empty()) {
    auto last = entries_.find(lru_.back());
    stats_.bytes -= last->second.bytes;
    entries_.erase(last);
    lru_.pop_back();
    ++stats_.evictions;
  }
}

GeneratorCache::Stats GeneratorCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.entries = entries_.size();
  return s;
}

// --- ThreadPool -----------------------------------------------------------

struct ThreadPool::Job {
  Job(absl::FunctionRef<void(std::size_t)> fn, std::size_t count)
      : f(fn), n(count) {}
  absl::FunctionRef<void(std::size_t)> f;
  const std::size_t n;
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::mutex mu;
  std::condition_variable finished;
  std::exception_ptr thrown;  // The first exception out of f, under mu.
};

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = AllowedCpus();
  // std::thread throws when no thread can be started, and the workers
  // already running would std::terminate the process as the vector let
  // them go: they are stopped instead, and the caller told.
  try {
    for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { Work(); });
  } catch (const std::system_error& e) {
    status_ = absl::ResourceExhaustedError(
        absl::StrCat("cannot start ", threads - 1, " worker threads (",
                     workers_.size(), " started): ", e.what()));
    {
      std::lock_guard<std::mutex> lock(mu_);
      quit_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
    workers_.clear();
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    quit_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

bool ThreadPool::RunOne(Job* job) {
  const std::size_t i = job->next.fetch_add(1);
  if (i >= job->n) return false;
  // Out of a worker's Work() an exception would end the process
  // (std::terminate): ParallelFor's caller gets it instead, once every
  // index has returned.
  try {
    job->f(i);
  } catch (...) {
    std::lock_guard<std::mutex> lock(job->mu);
    if (!job->thrown) job->thrown = std::current_exception();
  }
  if (job->done.fetch_add(1) + 1 == job->n) {
    std::lock_guard<std::mutex> lock(job->mu);
    job->finished.notify_all();
  }
  return true;
}

void ThreadPool::Work() {
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [this] { return quit_ || !jobs_.empty(); });
      if (quit_) return;
      job = jobs_.front();
    }
    if (!RunOne(job.get())) {
      // Every index of this job is taken: make way for the next one.
      std::lock_guard<std::mutex> lock(mu_);
      if (!jobs_.empty() && jobs_.front() == job) jobs_.pop_front();
    }
  }
}

void ThreadPool::ParallelFor(std::size_t n,
                             absl::FunctionRef<void(std::size_t)> f) {
  if (workers_.empty() || n <= 1) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  auto job = std::make_shared<Job>(f, n);
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(job);
  }
  wake_.notify_all();
  while (RunOne(job.get())) {
  }
  std::exception_ptr thrown;
  {
    std::unique_lock<std::mutex> lock(job->mu);
    job->finished.wait(lock, [&] { return job->done.load() == job->n; });
    thrown = job->thrown;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(jobs_.begin(), jobs_.end(), job);
    if (it != jobs_.end()) jobs_.erase(it);
  }
  if (thrown) std::rethrow_exception(thrown);
}

// --- TileWorld ------------------------------------------------------------

absl::StatusOr<std::shared_ptr<const TileWorld>> TileWorld::Create(
    WorldSpec spec) {
  const int dims = spec.region.has_value() ? spec.region->dims() : 2;
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const SamplerOptions& o = spec.layers[i].options;
    if (o.method != Method::kPoissonDense &&
        o.method != Method::kPoissonClassic) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layers[", i,
          "].method: must be poisson_dense or poisson_classic in a tiled "
          "world, got ",
          MethodName(o.method)));
    }
    // Generators always fill their gaps: a tile not maximal would leave
    // holes its neighbours never fill. (It was set on, silently.)
    if (!o.fill_gaps) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layers[", i,
          "].fill_gaps must be true in a tiled world (its tiles are maximal)"));
    }
  }
  if (!(spec.max_planned_points >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_planned_points must be >= 0 (0: no limit), got ",
                     spec.max_planned_points));
  }
  // Each layer's options are checked (and resolved) as LayeredSampler does;
  // a box as wide as the finest spacing stands in for the area, whose
  // limits each generator's runs check for themselves. (A unit box refused
  // a world of spacing 1e-4 for the memory a unit square of it would need,
  // and one of 1e-14 for the coordinate steps near 1, though no generator
  // comes near either.)
  double side = 1;
  for (const LayerSpec& l : spec.layers) {
    const double r =
        l.options.density != nullptr ? l.options.radius_min : l.options.radius;
    if (r >= kMinRadius && r <= kMaxRadius) side = std::min(side, r);
  }
  absl::StatusOr<Box> stand_in =
      Box::Create(dims, {0, 0, 0}, {side, side, side});
  if (!stand_in.ok()) return stand_in.status();
  absl::StatusOr<LayeredSampler> layered = LayeredSampler::Create(
      Region::FromBox(*stand_in), spec.layers, spec.shared, spec.overrides);
  if (!layered.ok()) return layered.status();

  auto world = std::shared_ptr<TileWorld>(new TileWorld(std::move(spec)));
  world->spec_.layers = layered->layers();
  world->order_ = layered->Order();
  world->dims_ = dims;
  double r = 0;
  for (const LayerSpec& a : world->spec_.layers) {
    r = std::max(r, Spacing(a.options));
    for (const LayerSpec& b : world->spec_.layers) {
      r = std::max(r, MaxFootprint(a.options) + MaxFootprint(b.options));
    }
  }
  for (const ClearanceOverride& o : world->spec_.overrides) {
    r = std::max(r, o.clearance);
  }
  world->r_max_ = r;
  // The largest tile keeps a tile's area and every corner of a tile index
  // within 2^63 (times T) finite. So no tile holds a world whose r_max is
  // past kMaxTile / kMinTile, and the default stops at kMaxTile (64 r_max
  // past it refused spacings a tile_size of 1e150 served, found by a review
  // helper).
  if (!(kMinTile * r <= kMaxTile)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "r_max (the largest spacing, footprint sum or clearance): must be at "
        "most ",
        kMaxTile / kMinTile, " in a tiled world (tile_size is at least ",
        kMinTile, " r_max and at most ", kMaxTile, "), got ", r));
  }
  const double t = world->spec_.tile_size == 0
                       ? std::min(kDefaultTile * r, kMaxTile)
                       : world->spec_.tile_size;
  if (!std::isfinite(t) || !(t >= kMinTile * r) || !(t <= kMaxTile)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tile_size: must be finite and in [", kMinTile, " * r_max, ", kMaxTile,
        "] = [", kMinTile * r, ", ", kMaxTile, "] (r_max = ", r,
        ", the largest spacing, footprint sum or clearance), got ", t,
        world->spec_.tile_size == 0 ? " (the default, 64 r_max at most)" : ""));
  }
  world->tile_ = t;
  if (dims == 3) {
    world->z_lo_ = world->spec_.region->bounds().min(2);
    world->z_hi_ = world->spec_.region->bounds().max(2);
  }
  if (world->spec_.cache_key.empty()) {
    static std::atomic<std::uint64_t> next_world{0};
    world->spec_.cache_key = absl::StrCat("world#", next_world.fetch_add(1));
  }
  for (std::size_t l = 0; l < world->spec_.layers.size(); ++l) {
    world->cache_keys_.push_back(
        absl::StrCat(world->spec_.cache_key, "/layer#", l));
  }
  // The world's obstacles stay in spec_.shared alone, indexed: each
  // layer's options held a copy, which every run of a generator copied
  // again (RunLayer) before taking the few near it (NearObstacles).
  for (LayerSpec& layer : world->spec_.layers) {
    std::vector<Obstacle>().swap(layer.options.obstacles);
  }
  world->IndexObstacles();
  return std::shared_ptr<const TileWorld>(std::move(world));
}

// An obstacle keeps a point at most its radius plus the largest footprint
// away (or its radius, as a clearance), within radius + R / 2; a generator
// of tile t samples within 5 R of t. So it takes the obstacles whose
// centres lie within radius + 6 R of t (a margin of R / 2 against
// rounding). Those of a radius up to T lie in the tiles within 2 of t
// (6 R <= 0.6 T).
constexpr std::int64_t kObstacleTiles = 2;

void TileWorld::IndexObstacles() {
  const std::vector<Obstacle>& all = spec_.shared.obstacles;
  std::vector<std::pair<TileCoord, std::uint32_t>> keyed;
  for (std::size_t k = 0; k < all.size(); ++k) {
    const Obstacle& o = all[k];
    const auto index = static_cast<std::uint32_t>(k);
    if (!(o.radius <= tile_)) {
      wide_obstacles_.push_back(index);
    } else {
      keyed.emplace_back(TileOf(o.center[0], o.center[1]), index);
    }
  }
  std::sort(keyed.begin(), keyed.end());
  obstacles_by_tile_.reserve(keyed.size());
  for (const auto& [tile, index] : keyed) {
    if (obstacle_tile_runs_.empty() ||
        obstacle_tile_runs_.back().first != tile) {
      obstacle_tile_runs_.emplace_back(
          tile, static_cast<std::uint32_t>(obstacles_by_tile_.size()));
    }
    obstacles_by_tile_.push_back(index);
  }
}

std::vector<Obstacle> TileWorld::NearObstacles(TileCoord t) const {
  const std::vector<Obstacle>& all = spec_.shared.obstacles;
  const double R = r_max_;
  const double x0 = static_cast<double>(t.x) * tile_;
  const double y0 = static_cast<double>(t.y) * tile_;
  const double x1 = x0 + tile_;
  const double y1 = y0 + tile_;
  std::vector<std::uint32_t> near;
  auto consider = [&](std::uint32_t k) {
    const Obstacle& o = all[k];
    const double reach = o.radius + 6 * R;
    if (o.center[0] >= x0 - reach && o.center[0] <= x1 + reach &&
        o.center[1] >= y0 - reach && o.center[1] <= y1 + reach) {
      near.push_back(k);
    }
  };
  for (std::int64_t y = t.y - kObstacleTiles; y <= t.y + kObstacleTiles; ++y) {
    for (std::int64_t x = t.x - kObstacleTiles; x <= t.x + kObstacleTiles;
         ++x) {
      const TileCoord tile{x, y};
      const auto run = std::lower_bound(
          obstacle_tile_runs_.begin(), obstacle_tile_runs_.end(), tile,
          [](const std::pair<TileCoord, std::uint32_t>& r, TileCoord c) {
            return r.first < c;
          });
      if (run == obstacle_tile_runs_.end() || run->first != tile) continue;
      const std::uint32_t end =
          run + 1 == obstacle_tile_runs_.end()
              ? static_cast<std::uint32_t>(obstacles_by_tile_.size())
              : (run + 1)->second;
      for (std::uint32_t i = run->second; i < end; ++i) {
        consider(obstacles_by_tile_[i]);
      }
    }
  }
  for (const std::uint32_t k : wide_obstacles_) consider(k);
  // In the world's order.
  std::sort(near.begin(), near.end());
  std::vector<Obstacle> out;
  out.reserve(near.size());
  for (const std::uint32_t k : near) out.push_back(all[k]);
  return out;
}

TileCoord TileWorld::TileOf(double x, double y) const {
  // Clamped so that absurd coordinates cannot overflow the cast.
  constexpr double kLimit = 9.0e18;
  auto index = [&](double v) {
    const double f = std::floor(v / tile_);
    if (!(std::abs(f) < 1e15)) {
      return static_cast<std::int64_t>(std::clamp(f, -kLimit, kLimit));
    }
    // The quotient rounds, and so do the bounds' products i T: at a border
    // the floor can name the tile beside the one whose bounds, as the
    // proto states them ([i T, (i + 1) T) in doubles), hold v (with T =
    // 0.1, -1996 T gave -1997). One step mends it.
    auto i = static_cast<std::int64_t>(f);
    if (v < static_cast<double>(i) * tile_) {
      --i;
    } else if (v >= static_cast<double>(i + 1) * tile_) {
      ++i;
    }
    return i;
  };
  return {index(x), index(y)};
}

Box TileWorld::TileBounds(TileCoord t) const {
  // Each side a product, as TileOf compares: x0 + T can round past the
  // next tile's x0, and then the two would overlap by an ulp.
  absl::StatusOr<Box> box =
      Box::Create(dims_,
                  {static_cast<double>(t.x) * tile_,
                   static_cast<double>(t.y) * tile_, z_lo_},
                  {static_cast<double>(t.x + 1) * tile_,
                   static_cast<double>(t.y + 1) * tile_, z_hi_});
  assert(box.ok());
  return *box;
}

bool operator<(GeneratorKey a, GeneratorKey b) {
  if (a.layer != b.layer) return a.layer < b.layer;
  const int ca = TileColour(a.tile), cb = TileColour(b.tile);
  if (ca != cb) return ca < cb;
  return a.tile < b.tile;
}

bool TileWorld::GrownArea(TileCoord t, std::array<double, 4>* area) const {
  const double g = kGrow * r_max_;
  const double x0 = static_cast<double>(t.x) * tile_;
  const double y0 = static_cast<double>(t.y) * tile_;
  std::array<double, 4>& a = *area;
  a = {x0 - g, y0 - g, x0 + tile_ + g, y0 + tile_ + g};
  if (!spec_.region.has_value()) return true;
  // As Region::Clipped bounds Generate's first area.
  const Box& b = spec_.region->bounds();
  a = {std::max(a[0], b.min(0)), std::max(a[1], b.min(1)),
       std::min(a[2], b.max(0)), std::min(a[3], b.max(1))};
  return a[0] < a[2] && a[1] < a[3];
}

absl::Status TileWorld::CheckCoordinateSteps(GeneratorKey key) const {
  std::array<double, 4> a;
  if (!GrownArea(key.tile, &a)) return absl::OkStatus();
  // The bounds of Generate's first area, which hold its border area.
  absl::StatusOr<Box> box =
      Box::Create(dims_, {a[0], a[1], z_lo_}, {a[2], a[3], z_hi_});
  assert(box.ok());
  const SamplerOptions& o =
      spec_.layers[static_cast<std::size_t>(key.layer)].options;
  const bool density = o.density != nullptr;
  const double r = density ? o.radius_min : o.radius;
  const double smallest = SmallestRadiusIn(*box);
  if (r >= smallest) return absl::OkStatus();
  double m = 0;
  for (int i = 0; i < dims_; ++i) {
    m = std::max({m, std::abs(box->min(i)), std::abs(box->max(i))});
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "it needs tile (", key.tile.x, ", ", key.tile.y, ") of layer ", o.layer,
      ", which samples coordinates up to ", m, ", where doubles are ",
      smallest / 1024, " apart, over ", density ? "radius_min" : "radius",
      " / 1024 = ", r / 1024,
      ": ask for tiles nearer the origin or use a smaller tile_size",
      spec_.region.has_value() ? ", or move the region nearer the origin"
                               : ""));
}

std::vector<GeneratorKey> TileWorld::Dependencies(GeneratorKey key) const {
  std::vector<GeneratorKey> deps;
  // Generate makes nothing there and reads nothing: without this, a tile
  // far outside a small region planned a full closure of empty generators
  // (about 11 L^3 for L layers), which the plan's point limit no longer
  // bounds once empty generators count as the nothing they make.
  std::array<double, 4> area;
  if (!GrownArea(key.tile, &area)) return deps;
  for (TileCoord n : LowerNeighbours(key.tile)) deps.push_back({n, key.layer});
  // Every earlier layer, not only the one before: a plan that stops at a
  // cached generator of the layer before must still find (or make) the
  // layers before that, which Generate reads too.
  for (int l = 0; l < key.layer; ++l) {
    for (std::int64_t dy = -1; dy <= 1; ++dy) {
      for (std::int64_t dx = -1; dx <= 1; ++dx) {
        deps.push_back({{key.tile.x + dx, key.tile.y + dy}, l});
      }
    }
  }
  return deps;
}

double TileWorld::EstimatedGeneratorPoints(GeneratorKey key) const {
  const SamplerOptions& o =
      spec_.layers[static_cast<std::size_t>(key.layer)].options;
  // Only what the region's bounds hold is sampled (GrownArea): a tile of a
  // small region was refused for the room its neighbours' grown tiles have
  // outside it, and a tile the region misses for a full plan of them.
  // Grown by r / 2 on every side, as MostServedPoints counts, so that it
  // bounds an area thinner than r too: a slab 1e-3 high was planned at 272
  // points for 475 generators that made 28 073 (found by a review helper).
  std::array<double, 4> a;
  if (!GrownArea(key.tile, &a)) return 0;
  const double r = LeastRadiusIn(o, a[0], a[1], a[2], a[3]);
  return DensestPackingPoints(
      {a[2] - a[0] + r, a[3] - a[1] + r, dims_ == 3 ? z_hi_ - z_lo_ + r : 0},
      dims_, r);
}

double TileWorld::MostServedPoints(TileCoord t) const {
  // Served points lie in the tile and in the region. The whole tile was
  // counted once: a request over a small region was refused for the room
  // of every tile outside it.
  const Box tile = TileBounds(t);
  double lo[3], hi[3];
  for (int a = 0; a < dims_; ++a) {
    lo[a] = tile.min(a);
    hi[a] = tile.max(a);
    if (!spec_.region.has_value()) continue;
    const Box& b = spec_.region->bounds();
    lo[a] = std::max(lo[a], b.min(a));
    hi[a] = std::min(hi[a], b.max(a));
    if (!(lo[a] < hi[a])) return 0;
  }
  if (spec_.region.has_value() &&
      spec_.region->Classify(lo, hi) == Region::Overlap::kOutside) {
    return 0;
  }
  double points = 0;
  for (const LayerSpec& layer : spec_.layers) {
    const double r = LeastRadiusIn(layer.options, lo[0], lo[1], hi[0], hi[1]);
    points += DensestPackingPoints({hi[0] - lo[0] + r, hi[1] - lo[1] + r,
                                    dims_ == 3 ? hi[2] - lo[2] + r : 0},
                                   dims_, r);
  }
  return points;
}

Box TileWorld::WidestGeneratorArea() const {
  const double g = kGrow * r_max_;
  std::array<double, 3> lo = {-g, -g, z_lo_},
                        hi = {tile_ + g, tile_ + g, z_hi_};
  if (spec_.region.has_value()) {
    const Box& b = spec_.region->bounds();
    for (int a = 0; a < 2; ++a) {
      const auto i = static_cast<std::size_t>(a);
      if (b.extent(a) < hi[i] - lo[i]) {
        lo[i] = b.min(a);
        hi[i] = b.max(a);
      }
    }
  }
  absl::StatusOr<Box> box = Box::Create(dims_, lo, hi);
  assert(box.ok());
  return *box;
}

std::vector<GeneratorKey> TileWorld::Readers(TileCoord t) const {
  std::vector<GeneratorKey> keys;
  for (int l = 0; l < static_cast<int>(spec_.layers.size()); ++l) {
    for (std::int64_t dy = -1; dy <= 1; ++dy) {
      for (std::int64_t dx = -1; dx <= 1; ++dx) {
        keys.push_back({{t.x + dx, t.y + dy}, l});
      }
    }
  }
  return keys;
}

std::vector<TileCoord> TileWorld::LowerNeighbours(TileCoord t) {
  std::vector<TileCoord> lower;
  const int colour = TileColour(t);
  for (std::int64_t dy = -1; dy <= 1; ++dy) {
    for (std::int64_t dx = -1; dx <= 1; ++dx) {
      const TileCoord n{t.x + dx, t.y + dy};
      if ((dx != 0 || dy != 0) && TileColour(n) < colour) lower.push_back(n);
    }
  }
  return lower;
}

Obstacle TileWorld::ObstacleFor(std::size_t layer_index,
                                const internal::EarlierLayerObstacles& earlier,
                                const GeneratedPoints& from,
                                std::size_t k) const {
  const SamplerOptions& o = spec_.layers[layer_index].options;
  Vec center = {0, 0, 0};
  for (int a = 0; a < dims_; ++a) {
    center[a] = from.coords[k * static_cast<std::size_t>(dims_) + a];
  }
  if (from.layer[k] == o.layer) {
    Obstacle same{center, from.radius[k]};
    same.same_layer = true;
    return same;
  }
  // The earlier point's footprint: its layer's, or half its own radius for
  // a density layer without one.
  const SamplerOptions* q = nullptr;
  for (const LayerSpec& spec : spec_.layers) {
    if (spec.layer == from.layer[k]) q = &spec.options;
  }
  assert(q != nullptr);
  const double footprint = q->density != nullptr && q->footprint == 0
                               ? from.radius[k] / 2
                               : q->footprint;
  return earlier.For(center, from.layer[k], footprint);
}

absl::Status TileWorld::RunLayer(std::size_t layer_index, const Region& region,
                                 TileCoord t, bool border_pass,
                                 std::vector<Obstacle> obstacles,
                                 absl::FunctionRef<bool()> stop, KeepFn keep,
                                 absl::FunctionRef<bool(std::size_t)> progress,
                                 GeneratedPoints* out) const {
  SamplerOptions o = spec_.layers[layer_index].options;
  o.obstacles = std::move(obstacles);
  // Create checked the caller's obstacles against the limit; the points of
  // neighbouring tiles and earlier layers do not count against it, as in
  // LayeredSampler (a three-layer world of trees, grass and flowers, which
  // one untiled run served, was refused: "1399142 obstacles is over the
  // limit max_obstacles = 1048576").
  o.max_obstacles = std::max(o.max_obstacles, o.obstacles.size());
  o.tile_x = t.x;
  o.tile_y = t.y;
  o.border_pass = border_pass;
  o.fill_gaps = true;
  o.batch_size = 1024;  // Batches are copied out at once; keep them small.
  absl::StatusOr<Sampler> sampler = Sampler::Create(region, o);
  if (!sampler.ok()) {
    return absl::Status(
        sampler.status().code(),
        absl::StrCat("layer ", o.layer,
                     "'s tile generators (each covers its tile grown by a "
                     "margin, and the tiles asked for read those around "
                     "them, through every earlier layer; this one was tile (",
                     t.x, ", ", t.y, ")'s): ", sampler.status().message()));
  }
  const auto d = static_cast<std::size_t>(dims_);
  std::vector<std::size_t> kept;
  return sampler->Run(
      [&](const PointBatch& b) {
        kept.clear();
        for (std::size_t i = 0; i < b.size(); ++i) {
          if (keep(&b.coords[i * d], b.id[i])) kept.push_back(i);
        }
        if (!progress(out->size() + kept.size())) return false;
        out->Reserve(out->size() + kept.size());
        for (std::size_t i : kept) {
          const double* p = &b.coords[i * d];
          out->coords.insert(out->coords.end(), p, p + d);
          out->radius.push_back(b.radius[i]);
          out->layer.push_back(b.layer[i]);
          out->id.push_back(b.id[i]);
          out->yaw.push_back(b.yaw[i]);
          out->scale.push_back(b.scale[i]);
        }
        return true;
      },
      stop);
}

absl::StatusOr<std::shared_ptr<const GeneratedPoints>> TileWorld::Generate(
    GeneratorKey key, absl::Span<const GeneratedPoints* const> lower,
    absl::Span<const GeneratedPoints* const> earlier,
    absl::FunctionRef<bool()> stop) const {
  return Generate(key, lower, earlier, stop, [](std::size_t) { return true; });
}

absl::StatusOr<std::shared_ptr<const GeneratedPoints>> TileWorld::Generate(
    GeneratorKey key, absl::Span<const GeneratedPoints* const> lower,
    absl::Span<const GeneratedPoints* const> earlier,
    absl::FunctionRef<bool()> stop,
    absl::FunctionRef<bool(std::size_t)> progress) const {
  const TileCoord t = key.tile;
  const auto li = static_cast<std::size_t>(key.layer);
  const double R = r_max_;
  const double x0 = static_cast<double>(t.x) * tile_;
  const double y0 = static_cast<double>(t.y) * tile_;
  const double x1 = x0 + tile_;
  const double y1 = y0 + tile_;
  // Boxes in x-y; in 3D they span the world's z extent (cuts a bit more,
  // so a box that touches the top is still within them).
  auto xy_box = [&](double bx0, double by0, double bx1, double by1,
                    double z_pad) {
    absl::StatusOr<Box> box = Box::Create(dims_, {bx0, by0, z_lo_ - z_pad},
                                          {bx1, by1, z_hi_ + z_pad});
    assert(box.ok());
    return *box;
  };
  const double z_pad = dims_ == 3 ? tile_ : 0;

  const Box grown =
      xy_box(x0 - kGrow * R, y0 - kGrow * R, x1 + kGrow * R, y1 + kGrow * R, 0);
  const Region base =
      spec_.region.has_value() ? *spec_.region : Region::FromBox(grown);
  const std::optional<Region> first_area = base.Clipped(grown, {});
  // The border pass: the kept area, less the bands that higher-colour
  // neighbours fill, less the inside of the tile, where the first pass was
  // already maximal and kept every point (a place deeper than R inside is
  // covered by a point within R of it, which is inside the tile).
  std::vector<Box> cuts;
  std::vector<Rect> cut_rects;
  const int colour = TileColour(t);
  for (std::int64_t dy = -1; dy <= 1; ++dy) {
    for (std::int64_t dx = -1; dx <= 1; ++dx) {
      const TileCoord n{t.x + dx, t.y + dy};
      if ((dx == 0 && dy == 0) || TileColour(n) < colour) continue;
      const double nx0 = static_cast<double>(n.x) * tile_;
      const double ny0 = static_cast<double>(n.y) * tile_;
      cut_rects.push_back({nx0 - kKeep * R, ny0 - kKeep * R,
                           nx0 + tile_ + kKeep * R, ny0 + tile_ + kKeep * R});
    }
  }
  const double inner = 1.5 * R;
  cut_rects.push_back({x0 + inner, y0 + inner, x1 - inner, y1 - inner});
  for (const Rect& c : cut_rects) {
    cuts.push_back(xy_box(c.x0, c.y0, c.x1, c.y1, z_pad));
  }
  // Only what the cuts leave of the kept area is sampled (nothing for a
  // colour-0 tile, two strips for colours 1 and 2).
  const std::optional<Rect> uncut = UncutBounds(
      {x0 - kKeep * R, y0 - kKeep * R, x1 + kKeep * R, y1 + kKeep * R},
      cut_rects, 5);
  const std::optional<Region> border_area =
      first_area.has_value() && uncut.has_value()
          ? base.Clipped(xy_box(uncut->x0, uncut->y0, uncut->x1, uncut->y1, 0),
                         std::move(cuts))
          : std::nullopt;

  auto out = std::make_shared<GeneratedPoints>();
  out->tile = t;
  out->layer_index = key.layer;
  out->dims = dims_;
  if (!first_area.has_value()) return out;  // The world misses this tile.

  // Points that can matter: those in the sampled area, of this layer's
  // lower neighbours and of every earlier layer around. (One farther out is
  // more than 2 R from every point kept, which lie within 3 R of the tile;
  // it could only have blocked points that are dropped anyway. The sampled
  // area then holds all of them in its grid.) The border pass keeps all it
  // makes, so it sees every point within R of its area, the kept one; none
  // deep inside the tile reaches it.
  std::vector<std::pair<const GeneratedPoints*, std::size_t>> near;
  std::vector<std::pair<const GeneratedPoints*, std::size_t>> near_border;
  const double g5 = kGrow * R, g4 = (kKeep + 1) * R;
  const double deep = inner + R;
  for (const bool same_layer : {true, false}) {
    for (const GeneratedPoints* g : same_layer ? lower : earlier) {
      for (std::size_t k = 0; k < g->size(); ++k) {
        const double* p = &g->coords[k * static_cast<std::size_t>(dims_)];
        if (!InXY(p, x0 - g5, x1 + g5, y0 - g5, y1 + g5)) continue;
        near.emplace_back(g, k);
        // (Same-layer points join the border pass's grid, deep or not, as
        // they always have; other layers' deep inside cannot matter.)
        if (InXY(p, x0 - g4, x1 + g4, y0 - g4, y1 + g4) &&
            (same_layer ||
             !InXY(p, x0 + deep, x1 - deep, y0 + deep, y1 - deep))) {
          near_border.emplace_back(g, k);
        }
      }
    }
  }

  const SamplerOptions& o = spec_.layers[li].options;
  // The ramp is 3 of the layer's own spacings wide, not 3 R. Where it thins
  // this generator's points in a later tile, that tile fills the holes
  // among them, and a pattern grown around another's thinned points packs
  // a little looser than either: with 3 R, grass (spacing 0.7, R = 2: a
  // band of 8.6 spacings) was 2.5 % short 1 to 4 units into every later
  // tile, rocks 2 %, and the grass's power at 1/T was 4 times the untiled
  // one's. With 3 spacings the band is as wide, in the layer's terms, as
  // a one-layer world's. (It stays within 3 R, where every reader looks.)
  const double keep_band = kKeep * Spacing(o);
  // The world's own, those that may reach this generator's areas.
  const std::vector<Obstacle> world_obstacles = NearObstacles(t);
  std::vector<Obstacle> obstacles = world_obstacles;
  obstacles.reserve(obstacles.size() + near.size());
  // Growth starts from the lower neighbours' points at the tile's edge, on
  // a schedule that puts the meeting of fronts from opposite sides at a
  // random place in the tile (FrontWakes).
  const bool poisson = o.method == Method::kPoissonDense ||
                       o.method == Method::kPoissonClassic;
  const FrontWakes wakes(spec_.shared.seed, o, t, tile_);
  const internal::EarlierLayerObstacles clearances(o, spec_.overrides);
  for (const auto& [g, k] : near) {
    obstacles.push_back(ObstacleFor(li, clearances, *g, k));
    Obstacle& ob = obstacles.back();
    const double* p = &g->coords[k * static_cast<std::size_t>(dims_)];
    if (poisson && ob.same_layer && OutsideDistance(p, x0, x1, y0, y1) < R) {
      ob.wake_generation = wakes.For(g->tile);
    }
  }

  // 1. The grown tile, kept with the soft border's ramp.
  const std::uint64_t keep_key = StreamKey::OfTile(
      spec_.shared.seed, o.layer, t.x, t.y, Purpose::kTileKeep);
  absl::Status status = RunLayer(
      li, *first_area, t, false, std::move(obstacles), stop,
      [&](const double* p, std::uint64_t id) {
        const double d = OutsideDistance(p, x0, x1, y0, y1);
        if (d == 0) return true;
        if (d >= keep_band) return false;
        CounterRng rng(Combine(keep_key, id));
        return rng.Uniform01() * keep_band < keep_band - d;
      },
      progress, out.get());
  if (!status.ok()) return status;
  if (border_area.has_value()) {
    // 2. The gaps the ramp left, outside the higher-colour bands: the
    // world's obstacles, the points above near the kept area, and this
    // generator's own near the border area.
    std::vector<Obstacle> border_obstacles = world_obstacles;
    for (const auto& [g, k] : near_border) {
      border_obstacles.push_back(ObstacleFor(li, clearances, *g, k));
    }
    for (std::size_t k = 0; k < out->size(); ++k) {
      const double* p = &out->coords[k * static_cast<std::size_t>(dims_)];
      if (InXY(p, x0 + deep, x1 - deep, y0 + deep, y1 - deep)) continue;
      border_obstacles.push_back(ObstacleFor(li, clearances, *out, k));
    }
    status = RunLayer(
        li, *border_area, t, true, std::move(border_obstacles), stop,
        [](const double*, std::uint64_t) { return true; }, progress, out.get());
    if (!status.ok()) return status;
  }
  // The cache counts capacity: give back what growth left over.
  out->ShrinkToFit();
  GroupByTile(out.get());
  return out;
}

void TileWorld::GroupByTile(GeneratedPoints* g) const {
  // Membership is TileOf's; the bounds here, with a margin, only spare
  // that call for points clearly inside or outside the generator's tile.
  const double x0 = static_cast<double>(g->tile.x) * tile_;
  const double y0 = static_cast<double>(g->tile.y) * tile_;
  const double x1 = x0 + tile_, y1 = y0 + tile_;
  const double margin = 1e-6 * tile_;
  auto offset = [&](double v, double lo, double hi) {
    if (v < lo - margin) return -1;
    if (v >= hi + margin) return 1;
    if (v > lo + margin && v < hi - margin) return 0;
    return 2;  // Near the border: TileOf decides.
  };
  const auto d = static_cast<std::size_t>(dims_);
  const std::size_t n = g->size();
  std::vector<std::uint8_t> group(n);
  std::array<std::uint32_t, 10> count{};
  for (std::size_t k = 0; k < n; ++k) {
    const double* p = &g->coords[k * d];
    int dx = offset(p[0], x0, x1);
    int dy = offset(p[1], y0, y1);
    if (dx == 2 || dy == 2) {
      const TileCoord at = TileOf(p[0], p[1]);
      dx = static_cast<int>(at.x - g->tile.x);
      dy = static_cast<int>(at.y - g->tile.y);
    }
    // Points lie within 3 R of the tile, and T >= 10 R.
    assert(dx >= -1 && dx <= 1 && dy >= -1 && dy <= 1);
    group[k] = static_cast<std::uint8_t>((dy + 1) * 3 + dx + 1);
    ++count[group[k] + 1u];
  }
  for (std::size_t j = 1; j < count.size(); ++j) count[j] += count[j - 1];
  g->group_begin = count;
  g->by_tile.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    g->by_tile[count[group[k]]++] = static_cast<std::uint32_t>(k);
  }
}

absl::StatusOr<TileWorld::RoundResult> TileWorld::ServeRound(
    absl::Span<const TileCoord> round, const std::vector<GeneratorKey>& list,
    GeneratorMap found, GeneratorCache* cache, ThreadPool* pool,
    absl::FunctionRef<bool(const TilePoints&)> sink,
    absl::FunctionRef<bool()> stop, HoldFn hold) const {
  // Generators [0, n) are the list's, to make; the rest were found in the
  // cache.
  const std::size_t n = list.size();
  std::vector<GeneratorKey> keys = list;
  std::vector<std::shared_ptr<const GeneratedPoints>> alive(n);
  for (auto& entry : found) {
    keys.push_back(entry.first);
    alive.push_back(std::move(entry.second));
  }
  found.clear();
  // Setting the round up takes seconds for a plan of 10^5 generators and
  // more (deep stacks of layers), so it polls `stop` too.
  std::size_t since_poll = 0;
  auto set_up_stopped = [&] {
    if (++since_poll < 1024) return false;
    since_poll = 0;
    return stop();
  };
  const absl::Status stopped_status =
      absl::CancelledError("tiles stopped by the caller");
  absl::flat_hash_map<GeneratorKey, std::size_t> index;
  index.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (set_up_stopped()) return stopped_status;
    index[keys[i]] = i;
  }
  // Each generator waits for those it reads that are in the list. uses[j]:
  // the generators still to make and the tiles still to send that read
  // generator j; at 0 the round lets it go, and only the cache keeps it.
  std::vector<int> uses(keys.size(), 0);
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<std::size_t>> dependents(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (set_up_stopped()) return stopped_status;
    for (GeneratorKey v : Dependencies(list[i])) {
      const std::size_t j = index.at(v);
      ++uses[j];
      if (j < n) {
        ++waiting[i];
        dependents[j].push_back(i);
      }
    }
  }
  // need[i]: the first tile of the round that needs generator i, itself or
  // through a lower neighbour. Ready generators run in that order, so the
  // round's first tile is done first rather than with the last.
  std::vector<std::size_t> need(n, round.size());
  // Per tile, how many of its 3 x 3 tiles' generators are still to be
  // made, and per generator, the tiles waiting for it.
  std::vector<int> missing(round.size(), 0);
  std::vector<std::vector<std::size_t>> readers(n);
  for (std::size_t k = 0; k < round.size(); ++k) {
    std::vector<GeneratorKey> pending;
    for (GeneratorKey u : Readers(round[k])) {
      const std::size_t j = index.at(u);
      ++uses[j];
      if (j >= n) continue;
      ++missing[k];
      readers[j].push_back(k);
      pending.push_back(u);
    }
    while (!pending.empty()) {
      if (set_up_stopped()) return stopped_status;
      const std::size_t j = index.at(pending.back());
      pending.pop_back();
      if (j >= n || need[j] <= k) continue;
      need[j] = k;
      for (GeneratorKey v : Dependencies(list[j])) pending.push_back(v);
    }
  }
  using Ready = std::pair<std::size_t, std::size_t>;  // need, generator.
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
  for (std::size_t i = 0; i < n; ++i) {
    if (waiting[i] == 0) ready.push({need[i], i});
  }

  std::mutex mu;
  std::condition_variable changed;
  std::size_t done = 0, running = 0;
  bool quit = false;  // Make no more generators: the sender gave up, or over.
  absl::Status failed;
  RoundResult result;
  // What the round holds of each generator (its bytes(), or for one being
  // made DoneBytes of its points so far), and in all.
  std::vector<std::size_t> counted(keys.size(), 0);
  std::size_t held = 0, peak = 0;
  const std::size_t budget = cache->budget_bytes();
  // With mu held: the round goes over. A round of several tiles stops
  // (Serve goes on with fewer tiles a round); a round of one tile fails,
  // since what it holds is what that tile needs alive at once.
  auto over = [&](absl::Status refused) {
    if (round.size() == 1) {
      failed = std::move(refused);
    } else {
      result.over = quit = true;
    }
    changed.notify_all();
  };
  // With mu held: the round is to hold `bytes` of generator i. A fall is
  // made at once. A growth past the budget, or one `hold` refuses, is over,
  // and not made: returns false (the generator's run stops before adding
  // the points). A generator found or done (`exists`) is counted all the
  // same.
  auto count = [&](std::size_t i, std::size_t bytes, bool exists) {
    const std::size_t next = held - counted[i] + bytes;
    if (bytes <= counted[i]) {
      hold(next).IgnoreError();  // A fall is never refused.
    } else if (quit || !failed.ok()) {
      // The round is ending: make no more, but count what is there.
      if (!exists) return false;
      hold(next).IgnoreError();
    } else {
      absl::Status refused;
      if (next > budget) {
        std::size_t generators = 1;  // i, whatever it held so far.
        for (std::size_t j = 0; j < counted.size(); ++j) {
          generators += j != i && counted[j] > 0 ? 1 : 0;
        }
        refused = absl::ResourceExhaustedError(absl::StrCat(
            "tile (", round[0].x, ", ", round[0].y,
            "): the generators it needs alive at once (every layer of its "
            "3 x 3 tiles, and what those being made read) would reach ",
            next, " bytes in ", generators,
            generators == 1 ? " generator (" : " generators (", done,
            " made so far), over the tile cache budget of ", budget,
            " bytes; use a smaller tile_size",
            spec_.layers.size() > 1 ? " or fewer layers" : ""));
      } else if (absl::Status allowed = hold(next); !allowed.ok()) {
        refused = absl::Status(
            allowed.code(), absl::StrCat("tile (", round[0].x, ", ", round[0].y,
                                         "): ", allowed.message()));
      }
      if (!refused.ok()) {
        over(std::move(refused));
        if (!exists) return false;
        hold(next).IgnoreError();
      }
    }
    held = next;
    counted[i] = bytes;
    peak = std::max(peak, held);
    return true;
  };
  // With mu held: one reader of generator j fewer.
  auto release = [&](std::size_t j) {
    if (--uses[j] > 0) return;
    count(j, 0, true);
    alive[j].reset();
  };
  {
    std::lock_guard<std::mutex> lock(mu);
    for (std::size_t j = n; j < keys.size(); ++j) {
      count(j, alive[j]->bytes(), true);
    }
  }

  auto stopped = [&] {
    if (stop()) return true;
    std::lock_guard<std::mutex> lock(mu);
    return quit || !failed.ok();
  };
  absl::Status status;  // How the sender ended, when it ended early.
  bool sender_done = false;
  const std::thread::id caller = std::this_thread::get_id();
  // On this thread only, with `lock` held (released while the tile is
  // collected and sent): sends the next tile if its generators are done.
  // Returns whether it sent one.
  auto try_send = [&](std::unique_lock<std::mutex>& lock) {
    if (sender_done || !failed.ok()) return false;
    const std::size_t k = result.sent;
    if (k == round.size()) {
      sender_done = true;
      return false;
    }
    if (missing[k] != 0) return false;
    // Alive until released below.
    const std::vector<GeneratorKey> sources_keys = Readers(round[k]);
    std::vector<const GeneratedPoints*> sources;
    for (GeneratorKey u : sources_keys) {
      sources.push_back(alive[index.at(u)].get());
    }
    lock.unlock();
    absl::Status sent;
    std::optional<TilePoints> tile;
    if (stop()) {
      sent = absl::CancelledError("tiles stopped by the caller");
    } else {
      tile = Collect(round[k], std::move(sources));
    }
    lock.lock();
    if (sent.ok()) {
      // The tile has its points: a slow sink holds no generator.
      for (GeneratorKey u : sources_keys) release(index.at(u));
      lock.unlock();
      if (!sink(*tile))
        sent = absl::CancelledError("tiles stopped by the sink");
      lock.lock();
    }
    if (!sent.ok()) {
      status = sent;
      sender_done = quit = true;
      changed.notify_all();
      return false;
    }
    ++result.sent;
    return true;
  };
  // Every pool thread, the caller's included, makes whatever generator is
  // ready first in the round's order (none waits at a colour's end for the
  // slowest of it), and the caller's thread sends each tile as soon as its
  // generators are done. The others leave when nothing is left to make,
  // so a slow sink holds up no pool thread.
  auto make_and_send = [&](std::unique_lock<std::mutex>& lock) {
    const bool sender = std::this_thread::get_id() == caller;
    for (;;) {
      if (sender && try_send(lock)) continue;
      if (quit || !failed.ok() || done == n ||
          (ready.empty() && running == 0)) {
        return;
      }
      if (ready.empty()) {
        changed.wait(lock);
        continue;
      }
      const std::size_t i = ready.top().second;
      ready.pop();
      ++running;
      // What it reads stays alive until it is done.
      const GeneratorKey key = list[i];
      const std::vector<GeneratorKey> inputs = Dependencies(key);
      const std::size_t lowers = LowerNeighbours(key.tile).size();
      std::vector<const GeneratedPoints*> lower, earlier;
      for (std::size_t r = 0; r < inputs.size(); ++r) {
        (r < lowers ? lower : earlier)
            .push_back(alive[index.at(inputs[r])].get());
      }
      lock.unlock();
      absl::StatusOr<std::shared_ptr<const GeneratedPoints>> g =
          Generate(key, lower, earlier, stopped, [&](std::size_t points) {
            std::lock_guard<std::mutex> guard(mu);
            return count(i, DoneBytes(dims_, points), false);
          });
      if (g.ok()) {
        cache->Insert(cache_keys_[static_cast<std::size_t>(key.layer)],
                      key.tile, *g);
      }
      lock.lock();
      --running;
      if (g.ok()) {
        ++done;
        generated_.fetch_add(1);
        alive[i] = *std::move(g);
        count(i, alive[i]->bytes(), true);
        for (GeneratorKey v : inputs) release(index.at(v));
        for (std::size_t d : dependents[i]) {
          if (--waiting[d] == 0) ready.push({need[d], d});
        }
        for (std::size_t k : readers[i]) --missing[k];
      } else {
        count(i, 0, true);
        if (failed.ok() && !quit) failed = g.status();
      }
      changed.notify_all();
    }
  };
  // An exception out of a thread's work (std::bad_alloc, from Generate,
  // Collect or the sink) ends the round: the others leave at their next
  // look, and the caller gets it once all have. Out of a pool thread it
  // would end the process; out of ParallelFor before the others leave, it
  // would free what they still use.
  std::exception_ptr thrown;
  auto guarded =
      [&](absl::FunctionRef<void(std::unique_lock<std::mutex>&)> body) {
        std::unique_lock<std::mutex> lock(mu);
        try {
          body(lock);
        } catch (...) {
          if (!lock.owns_lock()) lock.lock();
          if (!thrown) thrown = std::current_exception();
          quit = sender_done = true;
          changed.notify_all();
        }
      };
  if (n > 0) {
    pool->ParallelFor(static_cast<std::size_t>(pool->threads()),
                      [&](std::size_t) { guarded(make_and_send); });
  }
  // The tiles still to send: all their generators are done now, unless
  // the work stopped.
  guarded([&](std::unique_lock<std::mutex>& lock) {
    while (try_send(lock)) {
    }
  });
  {
    std::lock_guard<std::mutex> lock(mu);
    quit = true;
    if (status.ok() && !failed.ok()) status = failed;
  }
  // The round lets go of everything: only the cache keeps it now.
  alive.clear();
  hold(0).IgnoreError();  // A fall is never refused.
  std::size_t before = peak_held_.load();
  while (before < peak && !peak_held_.compare_exchange_weak(before, peak)) {
  }
  if (thrown) std::rethrow_exception(thrown);
  if (!status.ok()) return status;
  if (result.sent < round.size() && !result.over) {
    return absl::CancelledError("tiles stopped by the caller");
  }
  return result;
}

TilePoints TileWorld::Collect(
    TileCoord t, std::vector<const GeneratedPoints*> sources) const {
  // Canonical order: layer (placement order), generator colour, then its
  // tile (x, then y).
  std::sort(sources.begin(), sources.end(),
            [](const GeneratedPoints* a, const GeneratedPoints* b) {
              if (a->layer_index != b->layer_index) {
                return a->layer_index < b->layer_index;
              }
              const int ca = TileColour(a->tile), cb = TileColour(b->tile);
              if (ca != cb) return ca < cb;
              return a->tile.x != b->tile.x ? a->tile.x < b->tile.x
                                            : a->tile.y < b->tile.y;
            });
  TilePoints served;
  served.tile = t;
  served.points.tile = t;
  served.points.dims = dims_;
  // Each source's group for t, whole (see GroupByTile).
  std::size_t total = 0;
  std::vector<absl::Span<const std::uint32_t>> groups(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const GeneratedPoints& g = *sources[i];
    const auto j = static_cast<std::size_t>((t.y - g.tile.y + 1) * 3 +
                                            (t.x - g.tile.x + 1));
    groups[i] = absl::MakeConstSpan(g.by_tile).subspan(
        g.group_begin[j], g.group_begin[j + 1] - g.group_begin[j]);
    total += groups[i].size();
  }
  served.points.Reserve(total);
  for (std::size_t i = 0; i < sources.size(); ++i) {
    served.points.AppendFrom(*sources[i], groups[i]);
  }
  return served;
}

absl::Status TileWorld::Serve(absl::Span<const TileCoord> tiles,
                              GeneratorCache* cache, ThreadPool* pool,
                              absl::FunctionRef<bool(const TilePoints&)> sink,
                              absl::FunctionRef<bool()> stop) const {
  return Serve(tiles, cache, pool, sink, stop,
               [](std::size_t) { return absl::OkStatus(); });
}

absl::Status TileWorld::Serve(absl::Span<const TileCoord> tiles,
                              GeneratorCache* cache, ThreadPool* pool,
                              absl::FunctionRef<bool(const TilePoints&)> sink,
                              absl::FunctionRef<bool()> stop,
                              HoldFn hold) const {
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    const TileCoord t = tiles[i];
    if (t.x < -kMaxTileIndex || t.x >= kMaxTileIndex || t.y < -kMaxTileIndex ||
        t.y >= kMaxTileIndex) {
      return absl::InvalidArgumentError(
          absl::StrCat("tiles[", i, "] = (", t.x, ", ", t.y,
                       "): tile indices must be in [-2^31, 2^31)"));
    }
  }
  std::size_t chunk = kChunkTiles;
  for (std::size_t begin = 0; begin < tiles.size();) {
    const std::size_t end = std::min(tiles.size(), begin + chunk);
    if (stop()) return absl::CancelledError("tiles stopped by the caller");
    GeneratorMap have;
    // What to generate, by layer and colour: every generator the chunk's
    // tiles read that the cache lacks, and what those read in turn.
    std::set<GeneratorKey> todo;
    std::vector<GeneratorKey> pending;
    for (std::size_t i = begin; i < end; ++i) {
      for (GeneratorKey u : Readers(tiles[i])) pending.push_back(u);
    }
    // Every layer reads the one before over 3 x 3 tiles, so deep stacks of
    // layers plan many generators: their estimated points are bounded, and
    // the loop polls `stop`.
    double planned = 0;
    const double limit = spec_.max_planned_points;
    // A generator too far out for its spacing, found before any is made:
    // its run would fail in the middle of the round, naming a tile deep in
    // the plan.
    absl::Status coarse;
    std::size_t since_poll = 0;
    while (!pending.empty()) {
      if (++since_poll == 1024) {
        since_poll = 0;
        if (stop()) return absl::CancelledError("tiles stopped by the caller");
      }
      const GeneratorKey u = pending.back();
      pending.pop_back();
      if (have.count(u) || todo.count(u)) continue;
      if (auto found = cache->Find(cache_keys_[static_cast<std::size_t>(u.layer)],
                                   u.tile)) {
        have.emplace(u, std::move(found));
        continue;
      }
      todo.insert(u);
      coarse = CheckCoordinateSteps(u);
      if (!coarse.ok()) break;
      if (limit > 0) {
        planned += EstimatedGeneratorPoints(u);
        if (!(planned <= limit)) break;
      }
      for (GeneratorKey v : Dependencies(u)) pending.push_back(v);
    }
    if (!coarse.ok()) {
      if (end - begin > 1) {
        chunk = 1;  // The tiles before it are served.
        continue;
      }
      return absl::InvalidArgumentError(
          absl::StrCat("tiles[", begin, "] = (", tiles[begin].x, ", ",
                       tiles[begin].y, "): ", coarse.message()));
    }
    if (limit > 0 && !(planned <= limit)) {
      if (end - begin > 1) {
        chunk = 1;  // The chunk's tiles one at a time: each may fit.
        continue;
      }
      return absl::ResourceExhaustedError(absl::StrCat(
          "tile (", tiles[begin].x, ", ", tiles[begin].y, ") needs ",
          todo.size(), " generators or more (", spec_.layers.size(),
          " layers: each reads the layer before over the 3 x 3 tiles around "
          "it), which could make ",
          planned, " points or more (",
          dims_ == 2 ? "2 / (sqrt(3) r^2) per unit area"
                     : "sqrt(2) / r^3 per unit volume",
          " over each grown tile, with r / 2 more on each side), over the "
          "limit max_planned_points = ",
          limit < 0x1p64 ? absl::StrCat(static_cast<std::uint64_t>(limit))
                         : absl::StrCat(limit),
          spec_.layers.size() > 1 ? "; use fewer layers or a smaller tile_size"
                                  : "; use a smaller tile_size"));
    }
    const std::vector<GeneratorKey> list(todo.begin(), todo.end());
    absl::StatusOr<RoundResult> served =
        ServeRound(tiles.subspan(begin, end - begin), list, std::move(have),
                   cache, pool, sink, stop, hold);
    if (!served.ok()) return served.status();
    if (served->over) {
      // What the round held passed the budget (or the hold): half as many
      // tiles a round from the first one not sent, down to one.
      chunk = std::max<std::size_t>(1, (end - begin) / 2);
    }
    begin += served->sent;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TileCoord>> ShardTiles(std::int64_t x0,
                                                  std::int64_t x1,
                                                  std::int64_t y0,
                                                  std::int64_t y1, int i,
                                                  int n) {
  if (!(x0 < x1) || !(y0 < y1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tile rectangle must have x0 < x1 and y0 < y1, got x ", x0,
                     ":", x1, ", y ", y0, ":", y1));
  }
  if (n < 1 || i < 0 || i >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard must be i/n with 0 <= i < n, got ", i, "/", n));
  }
  // Unsigned differences: x1 - x0 cannot overflow that way.
  const std::uint64_t w =
      static_cast<std::uint64_t>(x1) - static_cast<std::uint64_t>(x0);
  const std::uint64_t h =
      static_cast<std::uint64_t>(y1) - static_cast<std::uint64_t>(y0);
  constexpr std::uint64_t kMaxTiles = std::uint64_t{1} << 31;
  if (w > kMaxTiles || h > kMaxTiles || w * h > kMaxTiles) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tile rectangle holds ", w, " x ", h, " tiles, over 2^31"));
  }
  const std::uint64_t total = w * h;
  const auto shards = static_cast<std::uint64_t>(n);
  const std::uint64_t first = static_cast<std::uint64_t>(i) * total / shards;
  const std::uint64_t last =
      (static_cast<std::uint64_t>(i) + 1) * total / shards;
  // Strips of about the side of a square band; one band is the rectangle
  // row by row.
  const double side = std::round(
      std::sqrt(static_cast<double>(total) / static_cast<double>(shards)));
  const std::uint64_t strip =
      n == 1
          ? w
          : std::clamp<std::uint64_t>(static_cast<std::uint64_t>(side), 1, w);
  std::vector<TileCoord> out;
  out.reserve(last - first);
  for (std::uint64_t k = first; k < last; ++k) {
    // Every strip before k's is whole: strip x h tiles. Strips go up and
    // down in turn, so a band that runs on into the next strip goes on
    // beside where it left the last.
    const std::uint64_t index = k / (strip * h);
    const std::uint64_t left = index * strip;
    const std::uint64_t width = std::min(strip, w - left);
    const std::uint64_t in_strip = k - left * h;
    const std::uint64_t row = in_strip / width;
    out.push_back(
        {x0 + static_cast<std::int64_t>(left + in_strip % width),
         y0 + static_cast<std::int64_t>(index % 2 == 0 ? row : h - 1 - row)});
  }
  return out;
}

}  // namespace scatter::sampler
