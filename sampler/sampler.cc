#include "sampler/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "sampler/batch_writer.h"
#include "sampler/grid_common.h"
#include "sampler/methods.h"
#include "sampler/obstacles.h"
#include "sampler/rng.h"
#include "sampler/variable_poisson.h"

namespace scatter::sampler {
namespace {

constexpr int kMaxAttempts = 1024;
constexpr std::size_t kMaxBatchSize = std::size_t{1} << 20;
constexpr double kMinDenseEpsilon = 1e-10;

bool IsPoisson(Method method) {
  return method == Method::kPoissonDense || method == Method::kPoissonClassic;
}

// The options every Poisson run shares: attempts (default resolved) and
// the dense epsilon.
absl::Status ValidateCandidates(SamplerOptions* o) {
  if (o->max_attempts < 0 || o->max_attempts > kMaxAttempts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_attempts must be in [1, ", kMaxAttempts,
        "] (0 picks the method's default), got ", o->max_attempts));
  }
  if (o->max_attempts == 0) {
    o->max_attempts = o->method == Method::kPoissonDense ? 12 : 30;
  }
  if (o->method == Method::kPoissonDense &&
      (!std::isfinite(o->dense_epsilon) ||
       !(o->dense_epsilon >= kMinDenseEpsilon) || !(o->dense_epsilon <= 1))) {
    return absl::InvalidArgumentError(
        absl::StrCat("dense_epsilon must be in [", kMinDenseEpsilon,
                     ", 1], got ", o->dense_epsilon));
  }
  return absl::OkStatus();
}

// Doubles are 2^-52 of their magnitude apart: where the box's coordinates
// reach m, a point can only move by steps of that size. Poisson runs need
// steps far finer than the radius (the gap search splits cells into 64ths;
// a candidate rounds by a step), so coordinates must stay under
// radius * 2^43, where steps are radius / 1024 (at 2^46 a dense run put
// points on the box's far face and pairs 2 % closer than r).
absl::Status CheckCoordinateSteps(const Box& box, double r,
                                  absl::string_view radius_name) {
  const double smallest = SmallestRadiusIn(box);
  if (r >= smallest) return absl::OkStatus();
  double m = 0;
  for (int a = 0; a < box.dims(); ++a) {
    m = std::max({m, std::abs(box.min(a)), std::abs(box.max(a))});
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "the region's coordinates reach ", m, ", where doubles are ",
      smallest / 1024, " apart, over ", radius_name, " / 1024 = ", r / 1024,
      ": move the region nearer the origin, or use a larger ", radius_name));
}

// What a memory refusal adds for a region that is not its bounds: the
// grid spans the bounds, so a road or a river across a map asks for the
// whole map's, and tiles each take their own part.
const char* BoundsHint(bool region_is_box) {
  return region_is_box
             ? ""
             : " (the grid spans the region's bounds; a region much smaller "
               "than them, as a road or a river, can be sampled in tiles)";
}

// What the estimates below are over: "over the region's bounds, 120 x 80"
// (the box of a region, a tile's grown box). They said "in this box" of a
// polygon, or of a neighbouring tile the caller never named.
std::string OverBounds(const Box& box) {
  std::string out = absl::StrCat("over the region's bounds, ", box.extent(0),
                                 " x ", box.extent(1));
  if (box.dims() == 3) absl::StrAppend(&out, " x ", box.extent(2));
  return out;
}

// A byte or point estimate as a whole number, rounded up (it is a bound).
std::string Whole(double estimate) {
  return absl::StrFormat("%.0f", std::ceil(estimate));
}

absl::Status ValidatePoisson(const Box& box, bool region_is_box,
                             SamplerOptions* o) {
  if (!(o->radius >= kMinRadius && o->radius <= kMaxRadius)) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius must be in [", kMinRadius, ", ", kMaxRadius,
                     "] (its square a normal double), got ", o->radius));
  }
  absl::Status candidates = ValidateCandidates(o);
  if (!candidates.ok()) return candidates;
  absl::Status steps = CheckCoordinateSteps(box, o->radius, "radius");
  if (!steps.ok()) return steps;
  const double grid_bytes = EstimatedRunBytes(box, *o);
  if (grid_bytes > static_cast<double>(o->max_memory_bytes)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("radius ", o->radius, " ", OverBounds(box), " needs a ",
                     Whole(grid_bytes),
                     "-byte sampling grid, over the limit max_memory_bytes = ",
                     o->max_memory_bytes, BoundsHint(region_is_box)));
  }
  // The densest packings bound the count, over the box grown by r / 2 on
  // each side (a segment of length L holds L / r + 1 points: a box 1000 x
  // 0.01 at r = 1, counted 9 points, made 906, and a max_points between
  // the two cut the run off midway).
  const double r = o->radius;
  const double bound =
      DensestPackingPoints({box.extent(0) + r, box.extent(1) + r,
                            box.dims() == 3 ? box.extent(2) + r : 0},
                           box.dims(), r);
  // Real sets reach rho ~0.9 at most, rho^D of the bound.
  const double expected = bound * (box.dims() == 2 ? 0.81 : 0.73);
  if (expected > static_cast<double>(o->max_points)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("radius ", o->radius, " ", OverBounds(box),
                     " gives about ", Whole(expected),
                     " points, over the limit max_points = ", o->max_points));
  }
  return absl::OkStatus();
}

// Variable radius: the bounds, then the limits from the estimate of
// EstimateVariablePoisson (which reads the raster, never allocates).
absl::Status ValidateVariable(const Box& box, bool region_is_box,
                              SamplerOptions* o) {
  if (!IsPoisson(o->method)) {
    return absl::InvalidArgumentError(
        absl::StrCat("density needs method poisson_dense or poisson_classic, "
                     "got ",
                     MethodName(o->method)));
  }
  if (!(o->radius_min >= kMinRadius && o->radius_min <= kMaxRadius)) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius_min must be in [", kMinRadius, ", ", kMaxRadius,
                     "] (its square a normal double), got ", o->radius_min));
  }
  if (!(o->radius_max >= o->radius_min && o->radius_max <= kMaxRadius)) {
    return absl::InvalidArgumentError(
        absl::StrCat("radius_max must be in [radius_min, ", kMaxRadius,
                     "] = [", o->radius_min, ", ", kMaxRadius, "], got ",
                     o->radius_max));
  }
  absl::Status candidates = ValidateCandidates(o);
  if (!candidates.ok()) return candidates;
  absl::Status steps = CheckCoordinateSteps(box, o->radius_min, "radius_min");
  if (!steps.ok()) return steps;
  const internal::VariableEstimate e = internal::EstimateVariablePoisson(
      box, *o->density, o->radius_min, o->radius_max);
  if (e.bytes > static_cast<double>(o->max_memory_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "radius_min ", o->radius_min, " and radius_max ", o->radius_max, " ",
        OverBounds(box), " need about ", Whole(e.bytes),
        " bytes of grids and points, over the limit max_memory_bytes = ",
        o->max_memory_bytes, BoundsHint(region_is_box)));
  }
  if (e.points > static_cast<double>(o->max_points)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "radius_min ", o->radius_min, " and radius_max ", o->radius_max,
        " with this density ", OverBounds(box), " give about ", Whole(e.points),
        " points, over the limit max_points = ", o->max_points));
  }
  return absl::OkStatus();
}

// Checks the obstacles and resolves the footprint's default.
absl::Status ValidateObstacles(int dims, SamplerOptions* o) {
  if (o->obstacles.size() > o->max_obstacles) {
    return absl::ResourceExhaustedError(
        absl::StrCat(o->obstacles.size(),
                     " obstacles is over the limit max_obstacles = ",
                     o->max_obstacles));
  }
  for (std::size_t k = 0; k < o->obstacles.size(); ++k) {
    const Obstacle& ob = o->obstacles[k];
    for (int a = 0; a < dims; ++a) {
      if (!std::isfinite(ob.center[a])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "obstacles[", k, "].center must be finite, got ", ob.center[a]));
      }
    }
    if (!(ob.radius >= 0 && ob.radius <= kMaxRadius)) {
      return absl::InvalidArgumentError(
          absl::StrCat("obstacles[", k, "].radius must be in [0, ", kMaxRadius,
                       "] (distances are compared squared), got ", ob.radius));
    }
    if (ob.same_layer) {
      // A point of this layer: its radius is one the layer can have.
      const bool fits = o->density != nullptr ? ob.radius >= o->radius_min &&
                                                    ob.radius <= o->radius_max
                                              : ob.radius == o->radius;
      if (!IsPoisson(o->method) || !fits) {
        return absl::InvalidArgumentError(absl::StrCat(
            "obstacles[", k,
            "]: a same-layer obstacle needs a Poisson method and the "
            "layer's radius (or one in [radius_min, radius_max]), got ",
            ob.radius));
      }
    }
    if (ob.wake_generation < -1 ||
        (ob.wake_generation >= 0 && !ob.same_layer)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "obstacles[", k,
          "].wake_generation must be -1, or >= 0 for a same-layer obstacle, "
          "got ",
          ob.wake_generation));
    }
  }
  if (o->earlier_layer_obstacles > o->obstacles.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "earlier_layer_obstacles must be at most the ", o->obstacles.size(),
        " obstacles, got ", o->earlier_layer_obstacles));
  }
  if (!(o->footprint >= 0 && o->footprint <= kMaxRadius)) {
    return absl::InvalidArgumentError(
        absl::StrCat("footprint must be in [0, ", kMaxRadius,
                     "] (distances are compared squared), got ", o->footprint));
  }
  // With a density raster, 0 stays: each point's footprint is r(x) / 2.
  if (o->footprint == 0 && o->density == nullptr) {
    if (IsPoisson(o->method)) o->footprint = o->radius / 2;
    if (o->method == Method::kJitteredGrid) o->footprint = o->cell_size / 2;
  }
  return absl::OkStatus();
}

}  // namespace

double DensestPackingPoints(const Vec& sides, int dims, double r) {
  double n = dims == 2 ? 2 / std::sqrt(3.0) : std::sqrt(2.0);
  for (int a = 0; a < dims; ++a) n *= sides[static_cast<std::size_t>(a)] / r;
  return n;
}

double LeastRadiusIn(const SamplerOptions& options, double x0, double y0,
                     double x1, double y1) {
  if (options.density == nullptr) return options.radius;
  double least = 0, most = 1;
  if (!options.density->Bounds(x0, y0, x1, y1, &least, &most)) {
    most = 1;  // Too many pixels to look at: assume the brightest.
  }
  return options.radius_min + (options.radius_max - options.radius_min) *
                                  (1 - std::clamp(most, 0.0, 1.0));
}

double SmallestRadiusIn(const Box& box) {
  double lo[3], hi[3];
  for (int a = 0; a < box.dims(); ++a) {
    lo[a] = box.min(a);
    hi[a] = box.max(a);
  }
  return 1024 * internal::CoordinateStep(lo, hi, box.dims());
}

double EstimatedRunBytes(const Box& box, const SamplerOptions& options) {
  if (options.density != nullptr) {
    return internal::EstimateVariablePoisson(box, *options.density,
                                             options.radius_min,
                                             options.radius_max)
        .bytes;
  }
  if (!IsPoisson(options.method)) return 0;
  return internal::PoissonGridBytes(box, options);
}

double MostRunBytes(const Box& box, const SamplerOptions& options) {
  if (options.density == nullptr) return EstimatedRunBytes(box, options);
  // Sample() interpolates between pixels, so no place is brighter than the
  // brightest pixel: the one block of the coarsest level holds it.
  const Raster& density = *options.density;
  const std::vector<Raster::BlockLevel>& levels = density.BlockLevels();
  const double brightest =
      levels.empty() ? density.Pixel(0, 0) : levels.back().hi[0];
  const double r =
      options.radius_min + (options.radius_max - options.radius_min) *
                               (1 - std::clamp(brightest, 0.0, 1.0));
  return internal::EstimateVariablePoissonAt(box, r, options.radius_min,
                                             options.radius_max)
      .bytes;
}

const char* MethodName(Method method) {
  switch (method) {
    case Method::kPoissonDense:
      return "poisson_dense";
    case Method::kPoissonClassic:
      return "poisson_classic";
    case Method::kJitteredGrid:
      return "jittered_grid";
    case Method::kUniform:
      return "uniform";
  }
  return "unknown";
}

absl::StatusOr<Sampler> Sampler::Create(const Region& region,
                                        SamplerOptions options) {
  const Box& box = region.bounds();
  SamplerOptions o = std::move(options);
  if (!std::isfinite(o.scale_min) || !std::isfinite(o.scale_max) ||
      !(o.scale_min > 0) || !(o.scale_min <= o.scale_max)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scale_min and scale_max must be finite with 0 < scale_min <= "
        "scale_max, got ",
        o.scale_min, " and ", o.scale_max));
  }
  if (o.batch_size < 1 || o.batch_size > kMaxBatchSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch_size must be in [1, ", kMaxBatchSize, "], got ", o.batch_size));
  }
  switch (o.density != nullptr ? Method::kPoissonDense : o.method) {
    case Method::kPoissonDense:
    case Method::kPoissonClassic: {
      absl::Status s = o.density != nullptr
                           ? ValidateVariable(box, region.IsBox(), &o)
                           : ValidatePoisson(box, region.IsBox(), &o);
      if (!s.ok()) return s;
      break;
    }
    case Method::kJitteredGrid: {
      // The footprint a jittered point takes by default is half its cell,
      // and footprints are compared squared: at most kMaxRadius.
      if (!(o.cell_size > 0 && o.cell_size <= 2 * kMaxRadius)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cell_size must be > 0 and at most ", 2 * kMaxRadius,
            " (half of it is the default footprint, and distances are "
            "compared squared), got ",
            o.cell_size));
      }
      const double cells = internal::JitteredCellCount(box, o.cell_size);
      if (cells > static_cast<double>(o.max_points)) {
        return absl::ResourceExhaustedError(
            absl::StrCat("cell_size ", o.cell_size, " ", OverBounds(box),
                         " gives ", Whole(cells),
                         " cells, over the limit max_points = ", o.max_points));
      }
      break;
    }
    case Method::kUniform:
      if (o.count < 1) {
        return absl::InvalidArgumentError("count must be >= 1, got 0");
      }
      if (o.count > o.max_points) {
        return absl::ResourceExhaustedError(
            absl::StrCat("count ", o.count,
                         " is over the limit max_points = ", o.max_points));
      }
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("method must be one of poisson_dense, poisson_classic, "
                       "jittered_grid, uniform, got ",
                       static_cast<int>(o.method)));
  }
  switch (o.simd) {
    case SimdLevel::kBest:
    case SimdLevel::kScalar:
    case SimdLevel::kAvx2:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "simd must be best, scalar or avx2, got ", static_cast<int>(o.simd)));
  }
  o.simd = ResolveSimdLevel(o.simd);
  absl::Status obstacles = ValidateObstacles(box.dims(), &o);
  if (!obstacles.ok()) return obstacles;
  // A per-point footprint (density, footprint 0) reaches up to r_max / 2;
  // same-layer obstacles keep the point's own radius, fixed or up to r_max.
  const bool variable = o.density != nullptr;
  const double max_extra = variable && o.footprint == 0 ? o.radius_max / 2 : 0;
  const double own_radius = variable ? 0 : IsPoisson(o.method) ? o.radius : 0;
  // The Poisson runs keep same-layer obstacles in their bounds in their own
  // grids; obstacles that cannot reach the bounds are left out.
  auto index = std::make_shared<const internal::ObstacleIndex>(
      o.obstacles, o.footprint, box.dims(), max_extra, own_radius,
      variable ? o.radius_max : 0, IsPoisson(o.method) ? &box : nullptr, &box);
  return Sampler(region, std::move(o), std::move(index));
}

bool Sampler::NothingToPlace() const {
  const Box& box = region_.bounds();
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
  for (int a = 0; a < box.dims(); ++a) {
    lo[a] = box.min(a);
    hi[a] = box.max(a);
  }
  // Reading the mask's pixels over the bounds costs less than the run's
  // grid would, up to a few million of them.
  constexpr std::size_t kMaxMaskPixels = std::size_t{1} << 22;
  return obstacles_->Holds(lo, hi) ||
         region_.MaskExcludes(lo, hi, kMaxMaskPixels);
}

absl::Status Sampler::Run(BatchSink sink,
                          absl::FunctionRef<bool()> stop) const {
  internal::BatchWriter out(region_.dims(), options_, sink);
  // Nothing to fill: no grid to allocate and scan (a 5 000 x 5 000 box
  // under a mask dark everywhere took 4 s to give no point, a 10 000 x
  // 10 000 box inside one obstacle's clearance 13 s). Not for the uniform
  // method, which promises `count` points and says so when there is no
  // room for them.
  if (options_.method != Method::kUniform && NothingToPlace()) {
    return absl::OkStatus();
  }
  absl::Status status;
  if (options_.density != nullptr) {
    status = internal::RunVariablePoisson(region_, *obstacles_, options_, &out,
                                          stop);
  } else if (IsPoisson(options_.method)) {
    status = internal::RunPoisson(region_, *obstacles_, options_, &out, stop);
  } else if (options_.method == Method::kUniform) {
    status = internal::RunUniform(region_, *obstacles_, options_, &out, stop);
  } else {
    status =
        internal::RunJitteredGrid(region_, *obstacles_, options_, &out, stop);
  }
  if (!status.ok()) {
    // Points made before a point cap still reach the sink, so the caller
    // can say how many were sent.
    if (absl::IsResourceExhausted(status)) out.Flush();
    return status;
  }
  if (!out.Flush()) return out.StopStatus();
  return absl::OkStatus();
}

std::uint64_t PointId(std::uint64_t seed, std::uint32_t layer,
                      const double* coords, int dims) {
  return internal::PointIdFromKey(internal::PointIdKey(seed, layer), coords,
                                  dims);
}

}  // namespace scatter::sampler
