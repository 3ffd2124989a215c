#ifndef SCATTER_SAMPLER_SAMPLER_H_
#define SCATTER_SAMPLER_SAMPLER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/box.h"
#include "sampler/raster.h"
#include "sampler/region.h"
#include "sampler/simd.h"

namespace scatter::sampler {
namespace internal {
class ObstacleIndex;
}

enum class Method {
  // Martin Roberts' variant of Bridson: one pass per active point, k
  // candidates on evenly stepped directions at r(1 + epsilon) from a random
  // start. Packs tighter (rho ~0.87 at k = 12 in 2D) and runs fastest.
  kPoissonDense,
  // Bridson's algorithm: candidates uniform in the annulus (shell in 3D)
  // [r, 2r]; an active point retires after k candidates in a row fail.
  // rho ~0.77 in 2D (~0.81 in 3D): the look the seeds describe.
  kPoissonClassic,
  // One point uniform in each cell of a grid of side `cell_size`; cells that
  // stick out of the box drop their point when it falls outside. No minimum
  // distance.
  kJitteredGrid,
  // `count` points uniform in the region. No minimum distance.
  kUniform,
};

// Returns "poisson_dense", "poisson_classic", "jittered_grid" or "uniform".
const char* MethodName(Method method);

// The radii a Poisson run takes. Distances are compared squared, and past
// these the squares leave the normal doubles: at r = 1e199, r^2 and every
// squared distance over 1.3e154 were inf, no pair conflicted, and a run
// in a box of side 1e200 streamed points without end.
inline constexpr double kMinRadius = 1e-150;
inline constexpr double kMaxRadius = 1e150;

// An existing object the new points keep clear of.
struct Obstacle {
  Vec center = {0, 0, 0};  // z ignored in 2D.
  double radius = 0;       // The object's own radius, >= 0.
  // When true, new points keep exactly `radius` clear of the centre, without
  // adding their footprint (LayeredSampler uses it for clearance overrides
  // against a layer whose footprint varies per point).
  bool radius_is_clearance = false;
  // A point of the run's own layer placed before it (a neighbouring tile's):
  // `radius` is that point's spacing radius, and a new point of radius r
  // keeps max(radius, r) from it and counts a place within that as covered,
  // exactly as two points of one run do; the Poisson methods also grow
  // from it when it lies in the region's bounds (it wakes as an active
  // point once a new point lands within 3 radii of it), so the run
  // continues the existing pattern rather than meeting it as a wall.
  // radius_is_clearance is ignored.
  bool same_layer = false;
  // A same-layer point may also wake on a schedule: with wake_generation
  // >= 0, the run first grows from the scheduled points with the smallest
  // value, before it looks for any gap, and wakes each other scheduled one
  // when its growth has gone that many generations further (a generation:
  // the points made by the visits of the one before), whether or not a new
  // point came near. Tiled worlds use it to choose where fronts from
  // opposite sides meet. -1 (the default): it wakes only when a new point
  // lands near it. Any other value, or >= 0 without same_layer, is
  // InvalidArgument.
  std::int32_t wake_generation = -1;
};

struct SamplerOptions {
  Method method = Method::kPoissonDense;
  // Poisson methods: no two points closer than this, in the box's units.
  // Smaller radii give more points: about 0.7 / r^2 per unit area in 2D.
  // In [kMinRadius, kMaxRadius].
  double radius = 1;
  // Variable radius (Poisson methods only). When `density` is set, each
  // point's radius is r(x) = radius_min + (radius_max - radius_min) *
  // (1 - density(x)), with density(x) the raster's bilinear value in [0, 1]
  // at x (clamped to the edge outside its rectangle; in 3D at (x, y)), and
  // `radius` is ignored. Two points conflict when closer than max(r_a, r_b),
  // each taken at the point's own position. Bright pixels give small radii
  // (more points). Unset (the default): the constant `radius` above.
  std::shared_ptr<const Raster> density;
  // With `density`: kMinRadius <= radius_min <= radius_max <= kMaxRadius,
  // in the box's units. radius_max / radius_min of 50 and more is fine.
  double radius_min = 0;
  double radius_max = 0;
  // Poisson methods: candidates per active point, 1 to 1024; 0 picks the
  // method's usual value (30 classic, 12 dense). More attempts pack tighter
  // and run slower. Classic: a point stays active until k candidates in a
  // row fail. Dense: k evenly stepped directions, tried once.
  int max_attempts = 0;
  // Dense packing: candidates sit at radius * (1 + dense_epsilon) from their
  // parent; in [1e-10, 1]. Smaller packs tighter; the floor keeps rounding
  // from ever bringing a candidate inside the radius of its parent.
  double dense_epsilon = 1e-7;
  // Poisson methods: after the active list empties, scan every cell and
  // seed each place still uncovered, growing Bridson from it, so the set is
  // maximal (DESIGN.md, Maximal fill) down to pieces 1/64 of a cell wide in
  // 2D and 1/16 in 3D. The run starts from the scan as well (the first seed
  // is the first cell's), so output with the fill off is not a prefix of
  // output with it on. Turning it off is for measuring Bridson alone: one
  // seed, at the first place clear of the region's edge, the obstacles and
  // any same-layer points, and its growth.
  bool fill_gaps = true;
  // Existing objects: every new point stays at least obstacle.radius +
  // footprint from each centre (all methods). Up to max_obstacles of them.
  std::vector<Obstacle> obstacles;
  // More obstacles is ResourceExhausted naming this limit. LayeredSampler
  // checks the caller's obstacles against it; the points of earlier layers
  // it adds as obstacles do not count (max_points bounds them).
  std::size_t max_obstacles = std::size_t{1} << 20;
  // The new points' own radius when keeping clear of obstacles, >= 0; 0
  // means half the Poisson radius (half the cell size for a jittered grid;
  // uniform points have no size). With a density raster, 0 means half of
  // each point's own radius r(x) / 2, and stays 0 in the resolved options.
  double footprint = 0;
  // Jittered grid: the side of a grid cell, finite and > 0.
  double cell_size = 0;
  // Uniform: how many points, >= 1.
  std::uint64_t count = 0;
  // How many of `obstacles`, at the end of the list, are the points of
  // layers placed before this one (LayeredSampler sets it), at most
  // obstacles.size(). Changes no point: a uniform run that finds no room
  // says those points leave none, not the caller's obstacles.
  std::size_t earlier_layer_obstacles = 0;

  // Range of the per-point scale attribute; scale_min <= scale_max, both
  // finite and > 0. Changing it changes no position or id.
  double scale_min = 1;
  double scale_max = 1;

  std::uint64_t seed = 0;   // Same inputs and seed, same points.
  std::uint32_t layer = 0;  // Keys the random streams and the point ids.
  // Tiled worlds (sampler/tiles.h) key the Poisson streams by the tile that
  // runs them too, and draw the pass that fills a tile's border from its own
  // purposes. Untiled runs leave them at tile (0, 0), first pass. Point ids
  // never depend on them.
  std::int64_t tile_x = 0;
  std::int64_t tile_y = 0;
  bool border_pass = false;
  std::size_t batch_size = 4096;  // Points per sink call, 1 to 1 << 20.

  // Refuse (ResourceExhausted) a run whose acceleration grid (coordinates,
  // occupancy bits, coverage bytes and, in 2D Poisson runs that keep them,
  // taken marks: about 45 bytes per point in 2D) needs more bytes than
  // this, before allocating it. Not counted: the
  // density raster's block bounds, which its first variable-radius run
  // builds and the raster keeps (Raster::BlockLevelsBytes, about 2.7 bytes
  // a pixel), shared by every later run over it.
  std::uint64_t max_memory_bytes = std::uint64_t{1} << 30;
  // Refuse (ResourceExhausted) a run expected to produce more points than
  // this, before starting it; and end a run that reaches it with
  // ResourceExhausted, after the sink has received exactly this many.
  std::uint64_t max_points = std::uint64_t{1} << 32;

  // Which compiled SIMD path to run. Every path gives bit-identical points;
  // tests force each one. kBest picks the widest the CPU supports.
  SimdLevel simd = SimdLevel::kBest;
};

// One batch of points as structure of arrays, laid out as on the wire, so
// the adapter's packing is a copy. Views are valid during the sink call only.
struct PointBatch {
  int dims = 2;
  absl::Span<const double> coords;  // dims values per point, interleaved.
  // The point's spacing radius: the Poisson radius (with a density raster,
  // r at the point's own position), 0 for the methods that guarantee no
  // spacing (uniform, jittered grid).
  absl::Span<const double> radius;
  absl::Span<const std::uint32_t> layer;
  // Stable id from (seed, layer, coordinate bits): survives re-generation.
  absl::Span<const std::uint64_t> id;
  // Placement attributes drawn from a stream keyed by the id, so they
  // never move a point and survive re-generation with it: yaw in radians
  // in [0, 2 pi), scale in [scale_min, scale_max].
  absl::Span<const double> yaw;
  absl::Span<const double> scale;
  std::size_t size() const { return radius.size(); }
};

// Receives batches in generation order. Returning false stops the run.
using BatchSink = absl::FunctionRef<bool(const PointBatch&)>;

// Fills a region with points by one of the methods above. Immutable; Run()
// may be called from several threads at once.
class Sampler {
 public:
  // A box region: see Create(const Region&, ...).
  static absl::StatusOr<Sampler> Create(const Box& box,
                                        SamplerOptions options) {
    return Create(Region::FromBox(box), std::move(options));
  }

  // InvalidArgument naming the field and the rule when an option is out of
  // range (non-finite or <= 0 radius, max_attempts < 0, a density raster
  // with a non-Poisson method or radius_min / radius_max not finite with
  // 0 < radius_min <= radius_max, ...);
  // ResourceExhausted naming the limit when the run would need more memory
  // than max_memory_bytes or more points than max_points. Nothing large is
  // allocated before these checks.
  // Memory and point limits are judged on the region's bounding box (with a
  // density raster: the expected count integrates 2 / (sqrt(3) r(x)^2)
  // over it, sqrt(2) / r^3 in 3D).
  // Options passed as an rvalue are moved, obstacles and all (a layered
  // run passes every earlier layer's point as one).
  static absl::StatusOr<Sampler> Create(const Region& region,
                                        SamplerOptions options);

  // OK when the region is filled; Cancelled if the sink returned false or
  // `stop` returned true; ResourceExhausted when max_points was reached;
  // InvalidArgument when same-layer obstacles are closer than the radius
  // (as points of one layer never are), or when the uniform method finds no
  // room for `count` points in the region. `stop`
  // is polled inside every long loop: after about every 4096 candidates
  // (at the end of the candidate, or of the visit, that reaches the
  // count), and every few thousand cells of the gap scan. Points arrive in
  // generation order.
  absl::Status Run(BatchSink sink, absl::FunctionRef<bool()> stop) const;
  // The same, never stopped from outside.
  absl::Status Run(BatchSink sink) const {
    return Run(sink, [] { return false; });
  }

  const Region& region() const { return region_; }
  const SamplerOptions& options() const { return options_; }

 private:
  Sampler(const Region& region, SamplerOptions options,
          std::shared_ptr<const internal::ObstacleIndex> obstacles)
      : region_(region),
        options_(std::move(options)),
        obstacles_(std::move(obstacles)) {}

  // Whether no place in the region's bounds can take a point, as far as
  // cheap tests tell: the bounds lie inside one obstacle's clearance, or
  // the mask is dark over all of them.
  bool NothingToPlace() const;

  Region region_;
  SamplerOptions options_;
  std::shared_ptr<const internal::ObstacleIndex>
      obstacles_;  // Defaults resolved: max_attempts > 0, simd set.
};

// The smallest radius (radius_min with a density raster) a Poisson run in
// `box` may have: where the box's coordinates reach m, doubles are about
// m * 2^-52 apart, and a run needs them radius / 1024 apart or closer.
// Sampler::Create refuses a smaller one with InvalidArgument.
double SmallestRadiusIn(const Box& box);

// The bytes a run of `options` over `box` holds at its peak, by the
// estimate the max_memory_bytes check uses: a Poisson run's grid, occupancy
// bits and cover marks; with a density raster, its grids and points. 0 for
// the methods that hold nothing per point (uniform, jittered grid). The
// options must be valid (Sampler::Create accepts them); a huge box gives a
// huge figure, not an overflow.
double EstimatedRunBytes(const Box& box, const SamplerOptions& options);

// As EstimatedRunBytes, for a run over a box of these sides anywhere in
// the world: with a density raster, the points are counted at the radius
// of its brightest pixel all over the box (outside its rectangle a raster
// continues its edge, so no place is brighter), not at the raster under
// `box`. The same as EstimatedRunBytes without one. Reads the raster's
// block bounds (Raster::BlockLevels), built once per raster.
double MostRunBytes(const Box& box, const SamplerOptions& options);

// The most points spacing r can hold in a box of these sides (the first
// `dims` count): the densest packing, hexagonal in 2D (2 / (sqrt(3) r^2)
// per unit area), FCC in 3D (sqrt(2) / r^3 per unit volume). Side over r
// axis by axis, so a huge box at a huge spacing gives its count: measure
// times density was inf * 0 = NaN for a box of 1e200 at spacing 1e199.
double DensestPackingPoints(const Vec& sides, int dims, double r);

// The least spacing radius a Poisson layer can have over the x-y box
// [x0, x1] x [y0, y1]: `radius`, or with a density raster the radius of
// its brightest pixel there (radius_min when the box covers too many
// pixels to look at).
double LeastRadiusIn(const SamplerOptions& options, double x0, double y0,
                     double x1, double y1);

// The stable id of a point: a hash of (seed, layer, coordinate bits), with
// -0.0 folded into 0.0. Attribute streams are keyed by it.
std::uint64_t PointId(std::uint64_t seed, std::uint32_t layer,
                      const double* coords, int dims);

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_SAMPLER_H_
