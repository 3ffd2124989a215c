#ifndef SCATTER_SAMPLER_REGION_H_
#define SCATTER_SAMPLER_REGION_H_

// Regions to fill: an axis-aligned box (2D/3D), a circle (2D), a sphere
// (3D), or polygons with holes (2D). A Region that exists is valid; it is
// immutable and cheap to copy (polygon data is shared), and Contains() may
// be called from several threads at once. Sampler::Create takes one.

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/box.h"
#include "sampler/raster.h"

namespace scatter::sampler {

// How overlapping rings combine. Even-odd (the default) needs no particular
// ring orientation: a point is inside when a ray from it crosses the rings
// an odd number of times, so holes are just more rings. Nonzero counts
// signed crossings: holes must run opposite to their outer ring, and
// overlapping outer rings of the same orientation merge.
enum class FillRule { kEvenOdd, kNonZero };

// A closed ring of 2D vertices; the last vertex connects back to the first
// (repeating the first vertex at the end is allowed).
using Ring = std::vector<std::array<double, 2>>;

namespace internal {
class PolygonIndex;
}

class Region {
 public:
  // The box itself.
  static Region FromBox(const Box& box);
  // InvalidArgument naming the field and the rule when the centre is not
  // finite or the radius is not in [1e-150, 1e150] (the sampler's radii:
  // distances are compared squared).
  static absl::StatusOr<Region> Circle(double cx, double cy, double radius);
  static absl::StatusOr<Region> Sphere(const Vec& center, double radius);
  // Polygons with holes: any number of rings combined by `rule`.
  // InvalidArgument naming the ring and vertex and the rule when a
  // coordinate is not finite, a ring has fewer than 3 distinct vertices, a
  // ring has zero area, or there are no rings. ResourceExhausted when the
  // rings hold more than max_vertices vertices. Building costs O(vertices)
  // time and memory; Contains() then tests a handful of edges, whatever the
  // vertex count (a uniform grid of edge lists over the bounds), except
  // where many edges are long against the polygon (IndexBytes).
  static absl::StatusOr<Region> Polygons(
      absl::Span<const Ring> rings, FillRule rule = FillRule::kEvenOdd,
      std::size_t max_vertices = std::size_t{1} << 24);
  // The same, polling `stop` now and then while it builds the index (a
  // few seconds for millions of vertices): Cancelled, having kept nothing,
  // when it says stop.
  static absl::StatusOr<Region> Polygons(absl::Span<const Ring> rings,
                                         FillRule rule,
                                         std::size_t max_vertices,
                                         absl::FunctionRef<bool()> stop);

  // This region with a mask: places where `mask` samples below
  // `threshold`, or that lie outside the mask's rectangle, are left out (in
  // 3D the mask maps onto x-y). InvalidArgument unless threshold is in
  // [0, 1] and mask is set.
  absl::StatusOr<Region> Masked(std::shared_ptr<const Raster> mask,
                                double threshold) const;

  // This region within the box `keep` and outside every box of `cut` (all
  // half-open, of the region's dims), as tiled worlds cut their areas.
  // nullopt when nothing of the bounds is left.
  std::optional<Region> Clipped(const Box& keep, std::vector<Box> cut) const;

  int dims() const { return bounds_.dims(); }
  // A box holding the whole region (half-open, like Box).
  const Box& bounds() const { return bounds_; }
  // Whether p (dims() coordinates) lies in the region. Points exactly on a
  // polygon edge or a circle may go either way.
  bool Contains(const double* p) const;

  // Heap bytes of the polygon index (0 for other shapes): the edges, about
  // 8 cells an edge, and each edge in the cells it crosses. Edges long
  // against the polygon cross many cells; past 32 such entries an edge on
  // average the grid coarsens, so this stays under about 250 bytes an edge
  // plus 50 MB (building takes up to twice that for a moment).
  std::size_t IndexBytes() const;

  // Whether the region is its bounding box (then Contains is the box test).
  bool IsBox() const {
    return kind_ == Kind::kBox && mask_ == nullptr && cuts_ == nullptr;
  }

  // How the axis-aligned box [lo, hi] meets the region. kInside and
  // kOutside are certain; kPartial may also be returned for a box that is
  // in fact inside or outside (when telling would cost too much).
  enum class Overlap { kInside, kOutside, kPartial };
  Overlap Classify(const double* lo, const double* hi) const;

  // Whether the mask leaves nothing of the box [lo, hi]: its pixels there
  // (Raster::Bounds, at most max_pixels of them, else false) are all below
  // the threshold, or the box misses the mask's rectangle. False without a
  // mask.
  bool MaskExcludes(const double* lo, const double* hi,
                    std::size_t max_pixels) const;

 private:
  enum class Kind { kBox, kBall, kPolygons };
  Region(Kind kind, const Box& bounds) : kind_(kind), bounds_(bounds) {}
  // The shape alone, without the mask.
  bool ContainsShape(const double* p) const;
  Overlap ClassifyShape(const double* lo, const double* hi) const;
  // Whether the box [lo, hi] misses the mask's rectangle (given a mask),
  // where the mask excludes everything.
  bool OffMask(const double* lo, const double* hi) const;

  Kind kind_;
  Box bounds_;
  Vec center_ = {0, 0, 0};  // kBall.
  double radius2_ = 0;      // kBall: radius squared.
  std::shared_ptr<const internal::PolygonIndex> polygons_;  // kPolygons.
  std::shared_ptr<const Raster> mask_;                      // Optional.
  double mask_threshold_ = 0;
  std::shared_ptr<const std::vector<Box>> cuts_;  // Clipped(): left out.
};

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_REGION_H_
