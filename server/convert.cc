#include "server/convert.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "sampler/methods.h"
#include "sampler/spline.h"
#include "sampler/version.h"

namespace scatter::server {
namespace {

// The most points one run makes of a uniform layer, or cells of a jittered
// grid: the bound ToJob gives the sampler as its max_points (the server's
// own limit is enforced by the estimate and the stream's cap).
constexpr std::uint64_t kMostRunPoints =
    std::numeric_limits<std::uint32_t>::max() * std::uint64_t{4096};

using sampler::Method;

absl::Status Invalid(absl::string_view field, absl::string_view rule) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", rule));
}

// The sampler names its own fields; prefix the request's path to them.
absl::Status Prefixed(absl::string_view path, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat(path, ": ", status.message()));
}

bool FinitePositive(double v) { return std::isfinite(v) && v > 0; }

// Poisson spacings and radii: squared, they must stay normal doubles.
bool InRadiusRange(double v) {
  return v >= sampler::kMinRadius && v <= sampler::kMaxRadius;
}
std::string RadiusRangeRule(double v) {
  return absl::StrCat("must be in [", sampler::kMinRadius, ", ",
                      sampler::kMaxRadius,
                      "] (distances are compared squared), got ", v);
}
// Footprints, obstacle radii and clearances: 0 is allowed.
bool InLengthRange(double v) { return v >= 0 && v <= sampler::kMaxRadius; }
std::string LengthRangeRule(double v) {
  return absl::StrCat("must be in [0, ", sampler::kMaxRadius,
                      "] (distances are compared squared), got ", v);
}

using Pinned = std::vector<std::shared_ptr<const sampler::Raster>>;

// What PutRaster returns: 64 lower-case hex digits. Anything else names no
// raster on any server, so it is the request's fault, not a cache miss.
bool IsDigest(absl::string_view digest) {
  return digest.size() == 64 &&
         std::all_of(digest.begin(), digest.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

absl::StatusOr<std::shared_ptr<const sampler::Raster>> ResolveRaster(
    absl::string_view field, const v1::RasterInput& input, const Limits& limits,
    RasterCache& rasters, Pinned* pinned) {
  std::shared_ptr<const sampler::Raster> cached;
  switch (input.source_case()) {
    case v1::RasterInput::kData: {
      const v1::RasterData& data = input.data();
      absl::StatusOr<RasterCache::Entry> entry =
          rasters.Put(absl::StrCat(field, ".data"), data.format(), data.width(),
                      data.height(), data.pixels(), limits.max_raster_bytes);
      if (!entry.ok()) return entry.status();
      cached = entry->raster;
      break;
    }
    case v1::RasterInput::kDigest:
      if (!IsDigest(input.digest())) {
        return Invalid(
            absl::StrCat(field, ".digest"),
            absl::StrCat(
                "must be 64 lower-case hex digits (a RasterRef.digest "
                "from PutRaster), got ",
                input.digest().size() == 64
                    ? absl::StrCat("\"", input.digest(), "\"")
                    : absl::StrCat(input.digest().size(), " characters")));
      }
      cached = rasters.Get(input.digest());
      if (cached == nullptr) {
        return absl::NotFoundError(absl::StrCat(
            field, ".digest: no raster ", input.digest(),
            " on this server (never uploaded here, or evicted); upload it "
            "with PutRaster or send it inline"));
      }
      break;
    default:
      return Invalid(field, "needs data or digest");
  }
  pinned->push_back(cached);
  absl::StatusOr<sampler::Raster> placed = cached->WithRect(
      sampler::RasterRect{input.x0(), input.y0(), input.x1(), input.y1()});
  if (!placed.ok()) return Prefixed(field, placed.status());
  return std::make_shared<const sampler::Raster>(*std::move(placed));
}

absl::StatusOr<sampler::Ring> ToRing(
    absl::string_view field,
    const google::protobuf::RepeatedField<double>& xy) {
  if (xy.size() % 2 != 0) {
    return Invalid(field, absl::StrCat("needs x, y pairs (an even count), got ",
                                       xy.size(), " values"));
  }
  // Here, where the value's index in xy is known: the sampler counts
  // vertices (and a spline's "points").
  for (int i = 0; i < xy.size(); ++i) {
    if (!std::isfinite(xy[i])) {
      return Invalid(absl::StrCat(field, "[", i, "]"),
                     absl::StrCat("must be finite, got ", xy[i]));
    }
  }
  sampler::Ring ring(static_cast<std::size_t>(xy.size() / 2));
  for (std::size_t i = 0; i < ring.size(); ++i) {
    ring[i] = {xy[static_cast<int>(2 * i)], xy[static_cast<int>(2 * i + 1)]};
  }
  return ring;
}

absl::StatusOr<sampler::Region> ToShape(const v1::Region& region,
                                        double smallest_spacing,
                                        const Limits& limits,
                                        absl::FunctionRef<bool()> stop,
                                        IndexHoldFn hold_index) {
  switch (region.shape_case()) {
    case v1::Region::kBox: {
      const v1::Box& box = region.box();
      if (box.min_size() != 2 && box.min_size() != 3) {
        return Invalid("region.box.min",
                       absl::StrCat("needs 2 (2D) or 3 (3D) values, got ",
                                    box.min_size()));
      }
      if (box.max_size() != box.min_size()) {
        return Invalid("region.box.max",
                       absl::StrCat("needs as many values as min (",
                                    box.min_size(), "), got ", box.max_size()));
      }
      sampler::Vec lo = {0, 0, 0}, hi = {0, 0, 0};
      for (int i = 0; i < box.min_size(); ++i) {
        lo[static_cast<std::size_t>(i)] = box.min(i);
        hi[static_cast<std::size_t>(i)] = box.max(i);
      }
      absl::StatusOr<sampler::Box> made =
          sampler::Box::Create(box.min_size(), lo, hi);
      if (!made.ok()) return Prefixed("region.box", made.status());
      return sampler::Region::FromBox(*made);
    }
    case v1::Region::kCircle: {
      const v1::Circle& c = region.circle();
      absl::StatusOr<sampler::Region> made =
          sampler::Region::Circle(c.center_x(), c.center_y(), c.radius());
      if (!made.ok()) return Prefixed("region.circle", made.status());
      return made;
    }
    case v1::Region::kSphere: {
      const v1::Sphere& s = region.sphere();
      absl::StatusOr<sampler::Region> made = sampler::Region::Sphere(
          {s.center_x(), s.center_y(), s.center_z()}, s.radius());
      if (!made.ok()) return Prefixed("region.sphere", made.status());
      return made;
    }
    case v1::Region::kPolygons: {
      const v1::Polygons& polygons = region.polygons();
      std::vector<sampler::Ring> rings;
      // Every ring has 3 vertices or more, so max_polygon_vertices bounds
      // their count; the message's count alone reserved 0.8 GB for 33
      // million empty rings (a 66 MB request).
      rings.reserve(
          std::min(static_cast<std::size_t>(polygons.rings_size()) +
                       static_cast<std::size_t>(polygons.splines_size()),
                   limits.max_polygon_vertices / 3 + 1));
      std::size_t vertices = 0;
      for (int i = 0; i < polygons.rings_size(); ++i) {
        // Refused here, before the next ring is converted (the sampler
        // says the same of a ring of fewer distinct vertices): rings of
        // no vertices count none against max_polygon_vertices.
        if (polygons.rings(i).xy_size() < 6 &&
            polygons.rings(i).xy_size() % 2 == 0) {
          return Invalid(absl::StrCat("region.polygons.rings[", i, "]"),
                         absl::StrCat("a ring needs at least 3 distinct "
                                      "vertices, got ",
                                      polygons.rings(i).xy_size() / 2));
        }
        vertices += static_cast<std::size_t>(polygons.rings(i).xy_size() / 2);
        if (vertices > limits.max_polygon_vertices) {
          return absl::ResourceExhaustedError(absl::StrCat(
              "region.polygons.rings: more than max_polygon_vertices = ",
              limits.max_polygon_vertices, " vertices"));
        }
        absl::StatusOr<sampler::Ring> ring =
            ToRing(absl::StrCat("region.polygons.rings[", i, "].xy"),
                   polygons.rings(i).xy());
        if (!ring.ok()) return ring.status();
        rings.push_back(*std::move(ring));
      }
      double tolerance = polygons.spline_tolerance();
      if (tolerance == 0) tolerance = smallest_spacing / 100;
      if (!FinitePositive(tolerance)) {
        return Invalid("region.polygons.spline_tolerance",
                       absl::StrCat("must be finite and >= 0, got ",
                                    polygons.spline_tolerance()));
      }
      for (int i = 0; i < polygons.splines_size(); ++i) {
        const std::string field =
            absl::StrCat("region.polygons.splines[", i, "]");
        const v1::Spline& spline = polygons.splines(i);
        absl::StatusOr<sampler::Ring> points =
            ToRing(absl::StrCat(field, ".xy"), spline.xy());
        if (!points.ok()) return points.status();
        // Here, where the value's index in xy is known (the sampler names
        // the control point).
        for (int k = 0; k < spline.xy_size(); ++k) {
          if (!(std::abs(spline.xy(k)) <= sampler::kSplineLargestCoordinate)) {
            return Invalid(absl::StrCat(field, ".xy[", k, "]"),
                           absl::StrCat("must be within +-2^500 (",
                                        sampler::kSplineLargestCoordinate,
                                        "), got ", spline.xy(k)));
          }
        }
        if (!v1::SplineKind_IsValid(spline.kind())) {
          return Invalid(absl::StrCat(field, ".kind"),
                         absl::StrCat("unknown spline kind ", spline.kind()));
        }
        sampler::Spline curve;
        curve.kind = spline.kind() == v1::SPLINE_KIND_BEZIER
                         ? sampler::SplineKind::kBezier
                         : sampler::SplineKind::kCatmullRom;
        curve.points = *std::move(points);
        const std::size_t left = limits.max_polygon_vertices - vertices;
        absl::StatusOr<sampler::Ring> ring =
            sampler::FlattenSpline(curve, tolerance, left);
        if (absl::IsResourceExhausted(ring.status())) {
          // The sampler names its own parameter, given what is left.
          return absl::ResourceExhaustedError(absl::StrCat(
              field, ": flattened within spline_tolerance = ", tolerance,
              polygons.spline_tolerance() == 0
                  ? " (the default, 1/100 of the smallest spacing)"
                  : "",
              " it needs more than the ", left,
              " vertices left of the limit max_polygon_vertices = ",
              limits.max_polygon_vertices,
              "; give a larger region.polygons.spline_tolerance"));
        }
        if (!ring.ok()) {
          // The sampler calls the control points "points"; the request
          // calls them xy.
          absl::string_view message = ring.status().message();
          if (absl::ConsumePrefix(&message, "points: ")) {
            return absl::Status(ring.status().code(),
                                absl::StrCat(field, ".xy: ", message));
          }
          return Prefixed(field, ring.status());
        }
        vertices += ring->size();
        rings.push_back(*std::move(ring));
      }
      if (!v1::FillRule_IsValid(polygons.fill_rule())) {
        return Invalid(
            "region.polygons.fill_rule",
            absl::StrCat("unknown fill rule ", polygons.fill_rule()));
      }
      const sampler::FillRule rule =
          polygons.fill_rule() == v1::FILL_RULE_NONZERO
              ? sampler::FillRule::kNonZero
              : sampler::FillRule::kEvenOdd;
      // The sampler counts rings alone ("rings must hold at least one
      // ring"); here splines are outlines too.
      if (rings.empty()) {
        return Invalid("region.polygons",
                       "rings or splines must hold at least one outline");
      }
      // The index is held before it is built: a request of 166 bytes (a
      // spline of 8 points at a fine tolerance) built hundreds of MB of
      // index, and only then was refused for them.
      const absl::Status held =
          hold_index(static_cast<double>(vertices) * kIndexBytesPerVertex);
      if (!held.ok()) return held;
      absl::StatusOr<sampler::Region> made = sampler::Region::Polygons(
          rings, rule, limits.max_polygon_vertices, stop);
      if (!made.ok()) {
        // The sampler says "rings[i]: ..." over the rings and then the
        // flattened splines; name the request's field instead.
        const absl::string_view message = made.status().message();
        std::size_t index = 0;
        const std::size_t close = message.find("]");
        if (absl::StartsWith(message, "rings[") && close != message.npos &&
            absl::SimpleAtoi(message.substr(6, close - 6), &index)) {
          const auto given = static_cast<std::size_t>(polygons.rings_size());
          const std::string field =
              index < given ? absl::StrCat("region.polygons.rings[", index, "]")
                            : absl::StrCat("region.polygons.splines[",
                                           index - given, "]");
          return absl::Status(made.status().code(),
                              absl::StrCat(field, message.substr(close + 1)));
        }
        return Prefixed("region.polygons", made.status());
      }
      return made;
    }
    default:
      // A mask lies on a shape: the whole plane is none (a world without
      // a region is the plane, and has no mask).
      return Invalid("region",
                     region.has_mask()
                         ? "needs one of box, circle, sphere or polygons "
                           "for its mask to lie on: give a box around the "
                           "mask's world rectangle"
                         : "needs one of box, circle, sphere or polygons");
  }
}

Method ToMethod(v1::Method method) {
  switch (method) {
    case v1::METHOD_POISSON_CLASSIC:
      return Method::kPoissonClassic;
    case v1::METHOD_JITTERED_GRID:
      return Method::kJitteredGrid;
    case v1::METHOD_UNIFORM:
      return Method::kUniform;
    default:
      return Method::kPoissonDense;
  }
}

bool IsPoisson(v1::Method method) {
  return method == v1::METHOD_POISSON_DENSE ||
         method == v1::METHOD_POISSON_CLASSIC;
}

absl::StatusOr<sampler::LayerSpec> ToLayer(
    int index, const v1::Layer& layer, const Limits& limits,
    RasterCache& rasters, const sampler::SamplerOptions& shared,
    Pinned* pinned) {
  const std::string path = absl::StrCat("layers[", index, "]");
  if (!v1::Method_IsValid(layer.method())) {
    return Invalid(absl::StrCat(path, ".method"),
                   absl::StrCat("unknown method ", layer.method()));
  }
  sampler::LayerSpec spec;
  spec.layer = layer.id();
  sampler::SamplerOptions& o = spec.options;
  o = shared;
  o.method = ToMethod(layer.method());
  if (layer.has_density()) {
    if (!IsPoisson(layer.method())) {
      return Invalid(absl::StrCat(path, ".density"),
                     "variable radius needs METHOD_POISSON_DENSE or "
                     "METHOD_POISSON_CLASSIC");
    }
    if (!FinitePositive(layer.radius_min())) {
      return Invalid(
          absl::StrCat(path, ".radius_min"),
          absl::StrCat("must be finite and > 0 with a density raster, got ",
                       layer.radius_min()));
    }
    if (!InRadiusRange(layer.radius_min())) {
      return Invalid(absl::StrCat(path, ".radius_min"),
                     RadiusRangeRule(layer.radius_min()));
    }
    if (!std::isfinite(layer.radius_max()) ||
        layer.radius_max() < layer.radius_min()) {
      return Invalid(
          absl::StrCat(path, ".radius_max"),
          absl::StrCat("must be finite and >= radius_min (", layer.radius_min(),
                       "), got ", layer.radius_max()));
    }
    if (!InRadiusRange(layer.radius_max())) {
      return Invalid(absl::StrCat(path, ".radius_max"),
                     RadiusRangeRule(layer.radius_max()));
    }
    absl::StatusOr<std::shared_ptr<const sampler::Raster>> density =
        ResolveRaster(absl::StrCat(path, ".density"), layer.density(), limits,
                      rasters, pinned);
    if (!density.ok()) return density.status();
    o.density = *std::move(density);
    o.radius_min = layer.radius_min();
    o.radius_max = layer.radius_max();
    o.radius = layer.radius_max();
  } else if (layer.radius_min() != 0 || layer.radius_max() != 0) {
    // Without a raster the bounds meant nothing, and were dropped without a
    // word (found by a review helper: inverted ones too).
    return Invalid(
        absl::StrCat(path,
                     layer.radius_min() != 0 ? ".radius_min" : ".radius_max"),
        absl::StrCat(
            "bounds a variable radius, which needs a density "
            "raster (",
            path, ".density)",
            IsPoisson(layer.method())
                ? absl::StrCat("; a constant one is ", path, ".spacing")
                : " and a Poisson method"));
  } else if (IsPoisson(layer.method())) {
    if (!FinitePositive(layer.spacing())) {
      return Invalid(
          absl::StrCat(path, ".spacing"),
          absl::StrCat("must be finite and > 0 for Poisson methods, got ",
                       layer.spacing()));
    }
    if (!InRadiusRange(layer.spacing())) {
      return Invalid(absl::StrCat(path, ".spacing"),
                     RadiusRangeRule(layer.spacing()));
    }
    o.radius = layer.spacing();
  }
  if (IsPoisson(layer.method())) {
    if (layer.max_attempts() > 1024) {
      return Invalid(absl::StrCat(path, ".max_attempts"),
                     absl::StrCat("must be 0 (default) to 1024, got ",
                                  layer.max_attempts()));
    }
    o.max_attempts = static_cast<int>(layer.max_attempts());
  }
  // At most twice the largest radius: half a cell is a jittered point's
  // default footprint, which distances compare squared.
  if (layer.method() == v1::METHOD_JITTERED_GRID &&
      !(layer.cell_size() > 0 &&
        layer.cell_size() <= 2 * sampler::kMaxRadius)) {
    return Invalid(absl::StrCat(path, ".cell_size"),
                   absl::StrCat("must be > 0 and at most ",
                                2 * sampler::kMaxRadius,
                                " for a jittered grid (half a cell is the "
                                "default footprint, and distances are "
                                "compared squared), got ",
                                layer.cell_size()));
  }
  if (layer.method() == v1::METHOD_UNIFORM && layer.count() == 0) {
    return Invalid(absl::StrCat(path, ".count"),
                   "must be >= 1 for uniform points");
  }
  o.cell_size = layer.cell_size();
  o.count = layer.count();
  if (!InLengthRange(layer.footprint())) {
    return Invalid(absl::StrCat(path, ".footprint"),
                   LengthRangeRule(layer.footprint()));
  }
  o.footprint = layer.footprint();
  if (layer.scale_min() != 0 || layer.scale_max() != 0) {
    // Named by the field that breaks the rule: scale_min when it is not a
    // finite positive number, else scale_max.
    if (!FinitePositive(layer.scale_min()) ||
        !FinitePositive(layer.scale_max()) ||
        layer.scale_min() > layer.scale_max()) {
      return Invalid(
          absl::StrCat(path, FinitePositive(layer.scale_min()) ? ".scale_max"
                                                               : ".scale_min"),
          absl::StrCat("needs finite 0 < scale_min <= scale_max, got ",
                       layer.scale_min(), " and ", layer.scale_max()));
    }
    o.scale_min = layer.scale_min();
    o.scale_max = layer.scale_max();
  }
  return spec;
}

// The cells of a 64 x 64 (16^3 in 3D) grid over the region's bounds that
// meet the region: an upper bound of where points can go.
struct CoverCells {
  std::vector<std::array<double, 6>> boxes;  // lo x, y, z, hi x, y, z
  std::array<double, 3> step = {0, 0, 0};  // A cell's sides.
  std::array<double, 3> sides = {0, 0, 0};  // The bounds' sides.
};

CoverCells MeetingCells(const sampler::Region& region) {
  const sampler::Box& box = region.bounds();
  const int dims = box.dims();
  const int n = dims == 2 ? 64 : 16;
  const double step[3] = {box.extent(0) / n, box.extent(1) / n,
                          dims == 3 ? box.extent(2) / n : 0};
  CoverCells out;
  out.step = {step[0], step[1], step[2]};
  out.sides = {box.extent(0), box.extent(1), dims == 3 ? box.extent(2) : 0};
  for (int k = 0; k < (dims == 3 ? n : 1); ++k) {
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < n; ++i) {
        const double lo[3] = {box.min(0) + i * step[0],
                              box.min(1) + j * step[1],
                              dims == 3 ? box.min(2) + k * step[2] : 0};
        const double hi[3] = {lo[0] + step[0], lo[1] + step[1],
                              lo[2] + step[2]};
        if (region.Classify(lo, hi) != sampler::Region::Overlap::kOutside) {
          out.boxes.push_back({lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]});
        }
      }
    }
  }
  return out;
}

// How many cubes (squares in 2D) of this side a box of these sides holds,
// side over side axis by axis (as sampler::DensestPackingPoints counts).
double Cubes(const std::array<double, 3>& sides, int dims, double side) {
  double n = 1;
  for (int a = 0; a < dims; ++a) n *= sides[static_cast<std::size_t>(a)] / side;
  return n;
}

// The sides grown by `margin` on every axis.
std::array<double, 3> Grown(const std::array<double, 3>& sides, int dims,
                            double margin) {
  std::array<double, 3> grown = sides;
  for (int a = 0; a < dims; ++a) grown[static_cast<std::size_t>(a)] += margin;
  return grown;
}

// A bound on the points a box of these sides holds r apart: the densest
// packing over the box grown by r / 2 on each side, where the points'
// disks of radius r / 2 lie (as the tiles' estimate counts). Over the box
// alone, a strip thinner than r (1300 x 0.3 at spacing 1) was estimated at
// 450 points and made 1254 (found by a review helper).
double PackingBound(const std::array<double, 3>& sides, int dims, double r) {
  return sampler::DensestPackingPoints(Grown(sides, dims, r), dims, r);
}

// A bound on a layer's points: over the meeting cells, each grown as
// PackingBound grows it, or over the region's bounds grown once (less for
// a region thinner than the cells' margins), whichever is less. With a
// density raster, each cell at the smallest radius its pixels allow
// (Raster::Greatest; reading five places a cell missed a raster bright
// between them, finer than the cells: a review helper's was estimated at
// 18 919 points and made 904 720), and the bounds at the least of those.
double EstimatePoints(const sampler::SamplerOptions& o, int dims,
                      const CoverCells& cells) {
  const auto count = static_cast<double>(cells.boxes.size());
  switch (o.method) {
    case Method::kPoissonDense:
    case Method::kPoissonClassic: {
      if (o.density == nullptr) {
        return std::min(count * PackingBound(cells.step, dims, o.radius),
                        PackingBound(cells.sides, dims, o.radius));
      }
      double sum = 0;
      double least = o.radius_max;
      for (const auto& c : cells.boxes) {
        const double bright =
            std::clamp(o.density->Greatest(c[0], c[1], c[3], c[4]), 0.0, 1.0);
        const double r =
            o.radius_min + (o.radius_max - o.radius_min) * (1 - bright);
        sum += PackingBound(cells.step, dims, r);
        least = std::min(least, r);
      }
      return std::min(sum, PackingBound(cells.sides, dims, least));
    }
    case Method::kJitteredGrid: {
      // A cell of the grid that a box meets starts within cell_size before
      // it: one per cell_size of the box grown by cell_size, per axis.
      const double grid = o.cell_size;
      return std::min(count * Cubes(Grown(cells.step, dims, grid), dims, grid),
                      Cubes(Grown(cells.sides, dims, grid), dims, grid));
    }
    case Method::kUniform:
      return static_cast<double>(o.count);
  }
  return 0;
}


// How EstimatePoints() counted, for the methods of `layers`.
std::string EstimateRule(const std::vector<sampler::LayerSpec>& layers,
                         int dims) {
  bool poisson = false, grid = false, uniform = false;
  for (const sampler::LayerSpec& layer : layers) {
    switch (layer.options.method) {
      case Method::kPoissonDense:
      case Method::kPoissonClassic:
        poisson = true;
        break;
      case Method::kJitteredGrid:
        grid = true;
        break;
      case Method::kUniform:
        uniform = true;
        break;
    }
  }
  std::vector<std::string> rules;
  if (poisson) {
    rules.push_back(dims == 2 ? "2 / (sqrt(3) r^2) per unit area, with r / 2 "
                                "more on each side, for Poisson layers"
                              : "sqrt(2) / r^3 per unit volume, with r / 2 "
                                "more on each side, for Poisson layers");
  }
  if (grid) {
    rules.push_back(absl::StrCat("one per cell (cell_size^", dims,
                                 "), with a cell more on each axis, for "
                                 "jittered-grid layers"));
  }
  if (uniform) rules.push_back("count for uniform layers");
  return absl::StrJoin(rules, ", ");
}

template <typename T>
void Append(google::protobuf::RepeatedField<T>* field,
            absl::Span<const T> values, std::size_t n) {
  field->Add(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n));
}

}  // namespace

void PackBatch(const sampler::PointBatch& batch, std::size_t n,
               const v1::Fields& fields, v1::PointBatch* points) {
  points->set_dims(static_cast<std::uint32_t>(batch.dims));
  Append(points->mutable_coords(), batch.coords,
         n * static_cast<std::size_t>(batch.dims));
  if (!fields.omit_radius()) Append(points->mutable_radius(), batch.radius, n);
  if (!fields.omit_layer()) Append(points->mutable_layer(), batch.layer, n);
  if (!fields.omit_id()) {
    // fixed64 is google::protobuf::uint64, which may be another type of the
    // same size than std::uint64_t.
    auto* ids = points->mutable_id();
    ids->Reserve(ids->size() + static_cast<int>(n));
    for (std::size_t i = 0; i < n; ++i) ids->AddAlreadyReserved(batch.id[i]);
  }
  if (!fields.omit_yaw()) Append(points->mutable_yaw(), batch.yaw, n);
  if (!fields.omit_scale()) Append(points->mutable_scale(), batch.scale, n);
}

std::size_t ClampBatchSize(std::uint32_t requested, int dims) {
  // dims coordinates, radius, yaw, scale (8 bytes), id (8), layer (<= 5),
  // plus tags and length prefixes: 8 * (dims + 4) + 5 bytes per point is a
  // safe bound for packed fields.
  const std::size_t per_point = 8 * (static_cast<std::size_t>(dims) + 4) + 5;
  const std::size_t most = (kMaxBatchBytes - 1024) / per_point;
  const std::size_t want = requested == 0 ? kDefaultBatchSize : requested;
  return std::min(want, most);
}

namespace {

// What Scatter and ScatterTiles requests both carry (seed, layers,
// clearances, obstacles, batch size), converted the same way: the two
// request messages have these fields under the same names.
template <typename Request>
absl::Status CheckLayerCount(const Request& request, const Limits& limits) {
  if (request.layers_size() == 0) {
    return Invalid("layers", "at least one layer is required");
  }
  if (static_cast<std::size_t>(request.layers_size()) > limits.max_layers) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "layers: ", request.layers_size(),
        " layers, over the limit max_layers = ", limits.max_layers));
  }
  return absl::OkStatus();
}

// The smallest length any layer gives (a Poisson spacing or radius_min, a
// jittered grid's cell_size; 1 when none does): the default spline
// tolerance is a fraction of it.
template <typename Request>
double SmallestSpacing(const Request& request) {
  double smallest = std::numeric_limits<double>::infinity();
  for (const v1::Layer& layer : request.layers()) {
    // With a density raster, `spacing` is ignored.
    // Lengths out of range are left to the layer's own check, which names
    // them (a spacing of 1e-300 set a tolerance the spline could not meet,
    // and the request was refused for the spline).
    if (IsPoisson(layer.method()) && !layer.has_density() &&
        InRadiusRange(layer.spacing())) {
      smallest = std::min(smallest, layer.spacing());
    }
    if (layer.has_density() && InRadiusRange(layer.radius_min())) {
      smallest = std::min(smallest, layer.radius_min());
    }
    // A grid's cell is its length: a spline flattened at 1/100 of 1 would
    // be a polygon through its control points in a world 0.01 wide.
    if (layer.method() == v1::METHOD_JITTERED_GRID &&
        FinitePositive(layer.cell_size())) {
      smallest = std::min(smallest, layer.cell_size());
    }
  }
  return std::isfinite(smallest) ? smallest : 1;
}

// The region's shape with its mask applied.
absl::StatusOr<sampler::Region> ToRegion(const v1::Region& proto,
                                         double smallest_spacing,
                                         const Limits& limits,
                                         RasterCache& rasters, Pinned* pinned,
                                         absl::FunctionRef<bool()> stop,
                                         IndexHoldFn hold_index) {
  if (!proto.has_mask() && !(proto.mask_threshold() >= 0 &&
                             proto.mask_threshold() <= 1)) {
    // Checked with a mask only, so a NaN passed without one. (Before the
    // shape, whose index may take a while.)
    return Invalid("region.mask_threshold",
                   absl::StrCat("must be in [0, 1], got ",
                                proto.mask_threshold()));
  }
  absl::StatusOr<sampler::Region> region =
      ToShape(proto, smallest_spacing, limits, stop, hold_index);
  if (!region.ok()) return region.status();
  if (proto.has_mask()) {
    absl::StatusOr<std::shared_ptr<const sampler::Raster>> mask =
        ResolveRaster("region.mask", proto.mask(), limits, rasters, pinned);
    if (!mask.ok()) return mask.status();
    region = region->Masked(*mask, proto.mask_threshold());
    if (!region.ok()) return Prefixed("region.mask_threshold", region.status());
  }
  return region;
}

// Seed, batch size and obstacles into the options every layer starts from;
// dims is the region's.
template <typename Request>
absl::StatusOr<sampler::SamplerOptions> ToShared(const Request& request,
                                                 int dims,
                                                 const Limits& limits) {
  sampler::SamplerOptions shared;
  shared.seed = request.seed();
  shared.batch_size = ClampBatchSize(request.batch_size(), dims);
  shared.max_memory_bytes = limits.max_grid_bytes;
  shared.max_obstacles = limits.max_obstacles;
  if (static_cast<std::size_t>(request.obstacles_size()) >
      limits.max_obstacles) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "obstacles: ", request.obstacles_size(),
        " obstacles, over the limit max_obstacles = ", limits.max_obstacles));
  }
  shared.obstacles.reserve(static_cast<std::size_t>(request.obstacles_size()));
  for (int i = 0; i < request.obstacles_size(); ++i) {
    const v1::Obstacle& o = request.obstacles(i);
    // z is ignored in 2D, whatever it holds.
    const double z = dims == 3 ? o.z() : 0;
    for (const auto& [axis, v] :
         {std::pair{".x", o.x()}, std::pair{".y", o.y()}, std::pair{".z", z}}) {
      if (!std::isfinite(v)) {
        return Invalid(absl::StrCat("obstacles[", i, "]", axis),
                       absl::StrCat("must be finite, got ", v));
      }
    }
    if (!InLengthRange(o.radius())) {
      return Invalid(absl::StrCat("obstacles[", i, "].radius"),
                     LengthRangeRule(o.radius()));
    }
    shared.obstacles.push_back({{o.x(), o.y(), z}, o.radius()});
  }
  return shared;
}

// The layers (unique ids) and the clearances between them.
// The layers take every shared option but the obstacles, which their runs
// add from `shared` (LayeredSampler, TileWorld): a copy in each layer cost
// up to 2^20 obstacles' bytes a layer, which no estimate counted.
template <typename Request>
absl::Status ToLayers(const Request& request, const Limits& limits,
                      RasterCache& rasters, sampler::SamplerOptions* shared,
                      Pinned* pinned, std::vector<sampler::LayerSpec>* layers,
                      std::vector<sampler::ClearanceOverride>* overrides) {
  std::vector<sampler::Obstacle> obstacles;
  obstacles.swap(shared->obstacles);
  const absl::Cleanup restore = [&] { shared->obstacles.swap(obstacles); };
  absl::flat_hash_set<std::uint32_t> ids;
  for (int i = 0; i < request.layers_size(); ++i) {
    absl::StatusOr<sampler::LayerSpec> layer =
        ToLayer(i, request.layers(i), limits, rasters, *shared, pinned);
    if (!layer.ok()) return layer.status();
    if (!ids.insert(layer->layer).second) {
      return Invalid(absl::StrCat("layers[", i, "].id"),
                     absl::StrCat("layer ", layer->layer,
                                  " appears twice; ids must be unique"));
    }
    layers->push_back(*std::move(layer));
  }
  for (int i = 0; i < request.clearances_size(); ++i) {
    const v1::Clearance& c = request.clearances(i);
    const std::string path = absl::StrCat("clearances[", i, "]");
    if (!ids.contains(c.layer_a())) {
      return Invalid(
          absl::StrCat(path, ".layer_a"),
          absl::StrCat("names no layer of the request: ", c.layer_a()));
    }
    if (!ids.contains(c.layer_b())) {
      return Invalid(
          absl::StrCat(path, ".layer_b"),
          absl::StrCat("names no layer of the request: ", c.layer_b()));
    }
    if (c.layer_a() == c.layer_b()) {
      // A layer's own points keep its spacing; a clearance could only be
      // ignored.
      return Invalid(absl::StrCat(path, ".layer_b"),
                     absl::StrCat("a clearance is between two layers; layer ",
                                  c.layer_a(), " keeps its own spacing"));
    }
    if (!InLengthRange(c.clearance())) {
      return Invalid(absl::StrCat(path, ".clearance"),
                     LengthRangeRule(c.clearance()));
    }
    for (std::size_t j = 0; j < overrides->size(); ++j) {
      const sampler::ClearanceOverride& o = (*overrides)[j];
      if ((o.a == c.layer_a() && o.b == c.layer_b()) ||
          (o.a == c.layer_b() && o.b == c.layer_a())) {
        return Invalid(path, absl::StrCat("layers ", c.layer_a(), " and ",
                                          c.layer_b(), " already have a clearance (clearances[",
                                          j, "])"));
      }
    }
    overrides->push_back({c.layer_a(), c.layer_b(), c.clearance()});
  }
  return absl::OkStatus();
}

// Tile indices stay in [-2^31, 2^31), so tile corners (index times T) keep
// far more precision than any spacing needs.
constexpr std::int64_t kTileIndexLimit = std::int64_t{1} << 31;

absl::Status CheckTileIndex(absl::string_view field, std::int64_t v,
                            std::int64_t hi) {
  if (v < -kTileIndexLimit || v > hi) {
    return Invalid(
        field, absl::StrCat("must be in [-2^31, 2^31",
                            hi == kTileIndexLimit ? "]" : ")", ", got ", v));
  }
  return absl::OkStatus();
}

// The tiles a ScatterTiles request asks for, in serving order; the count
// limit is checked before the list is built.
absl::StatusOr<std::vector<sampler::TileCoord>> ToTiles(
    const v1::ScatterTilesRequest& request, const Limits& limits) {
  const std::size_t most = limits.max_tiles_per_request;
  if (request.has_rect() && request.tiles_size() > 0) {
    return Invalid("rect", "give tiles or rect, not both");
  }
  if (request.has_rect()) {
    const v1::TileRange& r = request.rect();
    for (const auto& [field, v, hi] :
         {std::tuple{"rect.x0", r.x0(), kTileIndexLimit - 1},
          std::tuple{"rect.x1", r.x1(), kTileIndexLimit},
          std::tuple{"rect.y0", r.y0(), kTileIndexLimit - 1},
          std::tuple{"rect.y1", r.y1(), kTileIndexLimit}}) {
      absl::Status in_range = CheckTileIndex(field, v, hi);
      if (!in_range.ok()) return in_range;
    }
    if (r.x1() <= r.x0()) {
      return Invalid("rect.x1", absl::StrCat("must be > rect.x0 = ", r.x0(),
                                             " (half-open), got ", r.x1()));
    }
    if (r.y1() <= r.y0()) {
      return Invalid("rect.y1", absl::StrCat("must be > rect.y0 = ", r.y0(),
                                             " (half-open), got ", r.y1()));
    }
    // Each side is at most 2^32, so the product of two full sides (2^64)
    // does not fit in 64 bits: compare by division instead.
    const std::uint64_t wide =
        static_cast<std::uint64_t>(static_cast<std::int64_t>(r.x1()) - r.x0());
    const std::uint64_t high =
        static_cast<std::uint64_t>(static_cast<std::int64_t>(r.y1()) - r.y0());
    if (wide > most || high > most / wide) {
      const std::string count =
          high <= std::numeric_limits<std::uint64_t>::max() / wide
              ? absl::StrCat(wide * high)
              : absl::StrCat(wide, " x ", high);
      return absl::ResourceExhaustedError(absl::StrCat(
          "rect: ", count,
          " tiles, over the limit max_tiles_per_request = ", most));
    }
    return sampler::ShardTiles(r.x0(), r.x1(), r.y0(), r.y1(), 0, 1);
  }
  if (request.tiles_size() == 0) {
    return Invalid("tiles", "needs tiles or rect: which tiles to send");
  }
  if (static_cast<std::size_t>(request.tiles_size()) > most) {
    return absl::ResourceExhaustedError(
        absl::StrCat("tiles: ", request.tiles_size(),
                     " tiles, over the limit max_tiles_per_request = ", most));
  }
  std::vector<sampler::TileCoord> tiles;
  tiles.reserve(static_cast<std::size_t>(request.tiles_size()));
  for (int i = 0; i < request.tiles_size(); ++i) {
    const v1::TileCoord& t = request.tiles(i);
    for (const auto& [axis, v] :
         {std::pair{".x", t.x()}, std::pair{".y", t.y()}}) {
      absl::Status in_range = CheckTileIndex(
          absl::StrCat("tiles[", i, "]", axis), v, kTileIndexLimit - 1);
      if (!in_range.ok()) return in_range;
    }
    tiles.push_back({t.x(), t.y()});
  }
  return tiles;
}

}  // namespace

absl::StatusOr<ScatterJob> ToJob(const v1::ScatterRequest& request,
                                 const Limits& limits, RasterCache& rasters,
                                 absl::FunctionRef<bool()> stop,
                                 IndexHoldFn hold_index) {
  absl::Status counted = CheckLayerCount(request, limits);
  if (!counted.ok()) return counted;
  Pinned pinned;
  absl::StatusOr<sampler::Region> region =
      ToRegion(request.region(), SmallestSpacing(request), limits, rasters,
               &pinned, stop, hold_index);
  if (!region.ok()) return region.status();
  const int dims = region->dims();
  absl::StatusOr<sampler::SamplerOptions> shared =
      ToShared(request, dims, limits);
  if (!shared.ok()) return shared.status();
  // The estimate below and the stream's cap enforce max_points; the
  // sampler's own bounding-box estimate must not refuse first.
  shared->max_points = kMostRunPoints;

  ScatterJob job{
      *std::move(region), {}, *std::move(shared), {}, std::move(pinned), 0, 0,
      kDefaultBatchSize};
  job.batch_size = job.shared.batch_size;
  absl::Status layers = ToLayers(request, limits, rasters, &job.shared,
                                 &job.pinned, &job.layers, &job.overrides);
  if (!layers.ok()) return layers;
  const CoverCells cells = MeetingCells(job.region);
  // Sampling memory: every layer's grid (with a density raster, grids and
  // points), and the points a layered run keeps as obstacles for the
  // layers after theirs: every layer's but the last placed, which has the
  // smallest placement spacing (a uniform layer's is 0; of those that tie,
  // count the one with fewest).
  std::size_t last = 0;
  std::vector<double> points(job.layers.size());
  for (std::size_t i = 0; i < job.layers.size(); ++i) {
    const sampler::SamplerOptions& o = job.layers[i].options;
    points[i] = EstimatePoints(o, dims, cells);
    job.estimated_points += points[i];
    job.estimated_bytes += sampler::EstimatedRunBytes(job.region.bounds(), o);
    const double s = sampler::PlacementSpacing(o);
    const double least = sampler::PlacementSpacing(job.layers[last].options);
    if (s < least || (s == least && points[i] < points[last])) last = i;
  }
  if (job.layers.size() > 1) {
    // A request's own cap bounds the points kept too.
    double kept = job.estimated_points - points[last];
    if (request.max_points() != 0) {
      kept = std::min(kept, static_cast<double>(request.max_points()));
    }
    job.estimated_bytes += kept * kKeptPointBytes;
  }
  // The polygon index, held for the call's life.
  job.estimated_bytes += static_cast<double>(job.region.IndexBytes());
  // Compared in double (a NaN estimate is refused too); see WholeFigure().
  // A request that caps its own points below the limit cannot reach it:
  // its run stops at the cap (found by a review helper: maxPoints 10 was
  // refused as "could make 2886 points" against a limit of 1000).
  const bool own_cap_fits =
      request.max_points() != 0 && request.max_points() <= limits.max_points;
  if (!own_cap_fits &&
      !(job.estimated_points <= static_cast<double>(limits.max_points))) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the request could make ", WholeFigure(job.estimated_points),
        " points (over the region, summed over layers: ",
        EstimateRule(job.layers, dims),
        "), over the limit max_points = ", limits.max_points));
  }
  // Far from the origin, doubles are too coarse for a small spacing. The
  // sampler refuses that too, but names its own option (radius), not the
  // request's field. (After the estimate: a region too big to sample is
  // told so first.)
  // A jittered grid's cell and a uniform layer's mean spacing (the
  // bounds' measure over count, to the 1 / D) meet the same rule: where
  // coordinates are coarser, points fell on the same doubles, so on the
  // same ids (found by a review helper: at 2^50, 16 384 uniform points in a
  // 64 x 64 box took 14 516 places).
  const sampler::Box& bounds = job.region.bounds();
  const double smallest = sampler::SmallestRadiusIn(bounds);
  for (std::size_t i = 0; i < job.layers.size(); ++i) {
    const sampler::SamplerOptions& o = job.layers[i].options;
    const bool density = o.density != nullptr;
    double r = density ? o.radius_min : o.radius;
    const char* field = density ? "].radius_min" : "].spacing";
    const char* length = "spacing";
    if (o.method == Method::kJitteredGrid) {
      r = o.cell_size;
      field = "].cell_size";
      length = "cell size";
    } else if (o.method == Method::kUniform) {
      // Axis by axis, so the measure cannot overflow.
      r = 1;
      for (int a = 0; a < dims; ++a) {
        r *= std::pow(bounds.extent(a), 1.0 / dims);
      }
      r /= std::pow(static_cast<double>(o.count), 1.0 / dims);
      field = "].count";
      length = "mean spacing (the bounds' measure over count)";
    }
    if (r >= smallest) continue;
    if (o.method == Method::kUniform) {
      return Invalid(
          absl::StrCat("layers[", i, field),
          absl::StrCat("gives a mean spacing of ", r,
                       " in this region, where doubles are ", smallest / 1024,
                       " apart, and points need them 1/1024 of their mean "
                       "spacing apart or closer (points would share places "
                       "and ids); move the region nearer the origin or ask "
                       "for fewer, got ",
                       o.count));
    }
    return Invalid(
        absl::StrCat("layers[", i, field),
        // %.17g: the bound is a power of 2, which 6 digits would round
        // below.
        absl::StrCat("must be at least ", absl::StrFormat("%.17g", smallest),
                     " in this region: its coordinates reach far enough from "
                     "the origin that doubles there are ",
                     smallest / 1024,
                     " apart, and a run needs them 1/1024 of the ", length,
                     " apart or closer; move the region nearer the origin or "
                     "use a larger ",
                     length, ", got ", r));
  }
  // The sampler refuses a uniform count or a jittered grid's cells past
  // the bound it is given, kMostRunPoints, naming it max_points: a
  // request with its own cap gets past the estimate, and was told of a
  // limit max_points = 17592186040320 that is neither the server's nor its
  // own. Said here of the request's field.
  for (std::size_t i = 0; i < job.layers.size(); ++i) {
    const sampler::SamplerOptions& o = job.layers[i].options;
    double made = 0;
    const char* field = "";
    if (o.method == Method::kUniform) {
      made = static_cast<double>(o.count);
      field = "].count";
    } else if (o.method == Method::kJitteredGrid) {
      made = sampler::internal::JitteredCellCount(bounds, o.cell_size);
      field = "].cell_size";
    } else {
      continue;
    }
    if (!(made <= static_cast<double>(kMostRunPoints))) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "layers[", i, field, ": gives ", WholeFigure(made),
          o.method == Method::kUniform ? " points"
                                       : " cells in the region's bounds",
          ", more than one run makes (", kMostRunPoints,
          ", whatever max_points says)"));
    }
  }
  job.point_cap = limits.max_points;
  if (request.max_points() != 0) {
    job.point_cap =
        std::min<std::uint64_t>(job.point_cap, request.max_points());
  }
  // The cap is applied where batches leave the sampler: under a batch, a
  // run waited for a whole one first (maxPoints 10 of a uniform layer that
  // obstacles leave little room made 4 096 points for minutes; found by a
  // review helper). Batches no larger than the cap end it at the cap.
  if (job.point_cap < job.shared.batch_size) {
    job.shared.batch_size =
        static_cast<std::size_t>(std::max<std::uint64_t>(1, job.point_cap));
    job.batch_size = job.shared.batch_size;
  }
  return job;
}

absl::Status CheckTilesEstimate(const TilesJob& job,
                                const sampler::TileWorld& world,
                                const Limits& limits) {
  double estimate = 0;
  std::size_t counted = 0;
  for (const sampler::TileCoord& tile : job.tiles) {
    estimate += world.MostServedPoints(tile);
    ++counted;
    if (!(estimate <= static_cast<double>(limits.max_points))) break;
  }
  if (!(estimate <= static_cast<double>(limits.max_points))) {
    // The sum stops once past the limit: then it is the first tiles', and
    // the whole call's is more. (The client's hint looks for "the tiles
    // could hold ".)
    const bool partial = counted < job.tiles.size();
    return absl::ResourceExhaustedError(absl::StrCat(
        "the tiles could hold ", partial ? "at least " : "",
        WholeFigure(estimate), " points (",
        partial ? absl::StrCat("the first ", counted, " of the ",
                               job.tiles.size(), " tiles alone, at ")
                : "",
        job.dims == 2 ? "2 / (sqrt(3) r^2) per unit area"
                      : "sqrt(2) / r^3 per unit volume",
        " over each tile",
        job.world.region.has_value() ? " within the region's bounds" : "",
        ", with r / 2 more on each side, per layer), over the limit "
        "max_points = ",
        limits.max_points));
  }
  return absl::OkStatus();
}

absl::Status CheckThreadsStarted(const sampler::ThreadPool& pool, int threads) {
  if (pool.status().ok()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "--threads=", threads, threads <= 0 ? " (one per CPU allowed)" : "",
      ": ", pool.status().message(), "; ask for fewer with --threads"));
}

// Past 2^64 converting to an integer is undefined, so large figures are
// given in floating point.
std::string WholeFigure(double n) {
  if (n >= 0 && n < 0x1p64) {
    return absl::StrCat(static_cast<std::uint64_t>(n));
  }
  if (std::isinf(n)) return "more than 1.8e308";
  return absl::StrCat(n);
}

double GeneratorBytes(const TilesJob& job, const sampler::TileWorld& world) {
  // Over a small region a generator samples only the region's bounds; the
  // whole grown tile reserved many times what it used.
  const sampler::Box area = world.WidestGeneratorArea();
  // Generators run all over the density raster: counted at its brightest,
  // not at the raster around tile (0, 0) (a raster dark there and bright
  // elsewhere, radius 0.5 to 5, was held at 36.7 MB for generators whose
  // own estimate is 51.8 MB).
  // A generator is one layer's (its runs one after the other): the
  // largest layer's bytes, not every layer's together, which held 64
  // layers' grids for each thread of a 64-layer world.
  double bytes = 0;
  for (const sampler::LayerSpec& layer : job.world.layers) {
    bytes = std::max(bytes, sampler::MostRunBytes(area, layer.options));
  }
  return bytes;
}

std::string WorldKey(const v1::ScatterTilesRequest& request) {
  v1::ScatterTilesRequest world = request;
  world.clear_tiles();
  world.clear_rect();
  world.clear_batch_size();
  world.clear_fields();
  if (world.algorithm_version() == 0) {
    world.set_algorithm_version(sampler::kAlgorithmVersion);
  }
  auto by_digest = [](v1::RasterInput* input) {
    if (input->source_case() != v1::RasterInput::kData) return;
    const v1::RasterData& data = input->data();
    input->set_digest(RasterDigest(data.format(), data.width(), data.height(),
                                   data.pixels()));
  };
  if (world.region().has_mask())
    by_digest(world.mutable_region()->mutable_mask());
  for (v1::Layer& layer : *world.mutable_layers()) {
    if (layer.has_density()) by_digest(layer.mutable_density());
  }
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    world.SerializeToCodedStream(&coded);
  }
  return Sha256Hex(bytes);
}

absl::StatusOr<TilesJob> ToTilesJob(const v1::ScatterTilesRequest& request,
                                    const Limits& limits, RasterCache& rasters,
                                    absl::FunctionRef<bool()> stop,
                                    IndexHoldFn hold_index) {
  // The tiles first: a request for too many is refused before any raster
  // is decoded.
  absl::StatusOr<std::vector<sampler::TileCoord>> tiles =
      ToTiles(request, limits);
  if (!tiles.ok()) return tiles.status();
  absl::Status counted = CheckLayerCount(request, limits);
  if (!counted.ok()) return counted;
  TilesJob job;
  job.tiles = *std::move(tiles);
  if (request.has_region()) {
    absl::StatusOr<sampler::Region> region =
        ToRegion(request.region(), SmallestSpacing(request), limits, rasters,
                 &job.pinned, stop, hold_index);
    if (!region.ok()) return region.status();
    job.dims = region->dims();
    job.world.region = *std::move(region);
  }
  absl::StatusOr<sampler::SamplerOptions> shared =
      ToShared(request, job.dims, limits);
  if (!shared.ok()) return shared.status();
  // Each generator's run of a layer covers a tile and its margin: the
  // server's point limit caps it, and the stream as a whole.
  shared->max_points = limits.max_points;
  job.world.shared = *std::move(shared);
  job.batch_size = job.world.shared.batch_size;
  absl::Status layers =
      ToLayers(request, limits, rasters, &job.world.shared, &job.pinned,
               &job.world.layers, &job.world.overrides);
  if (!layers.ok()) return layers;
  job.world.tile_size = request.tile_size();
  job.world.cache_key = WorldKey(request);
  // And the generators one tile needs, together: with many layers they
  // span many tiles around it.
  job.world.max_planned_points = static_cast<double>(limits.max_points);
  job.point_cap = limits.max_points;
  return job;
}

std::size_t TileParts(std::size_t points, std::size_t batch_size) {
  return points == 0 ? 1 : (points + batch_size - 1) / batch_size;
}

void PackTilePart(const sampler::TilePoints& tile, std::size_t part,
                  std::size_t batch_size, const v1::Fields& fields,
                  v1::TileResponse* out) {
  const std::size_t n = tile.points.size();
  const std::size_t begin = std::min(n, part * batch_size);
  const std::size_t end = std::min(n, begin + batch_size);
  out->mutable_tile()->set_x(tile.tile.x);
  out->mutable_tile()->set_y(tile.tile.y);
  out->set_part(static_cast<std::uint32_t>(part));
  out->set_last_part(part + 1 == TileParts(n, batch_size));
  v1::PointBatch* points = out->mutable_points();
  points->Clear();
  PackBatch(tile.points.Batch(begin, end), end - begin, fields, points);
}

}  // namespace scatter::server
