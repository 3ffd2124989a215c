#ifndef SCATTER_SAMPLER_SPLINE_H_
#define SCATTER_SAMPLER_SPLINE_H_

// Closed splines as region outlines: flattened into rings (then
// Region::Polygons) so that the ring never strays from the curve by more
// than a stated tolerance.

#include <array>
#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "sampler/region.h"

namespace scatter::sampler {

enum class SplineKind {
  // Uniform Catmull-Rom through every control point; closed, so point k
  // joins point k+1 and the last joins the first. At least 3 points.
  kCatmullRom,
  // Cubic Bezier segments, closed: anchor, control, control, anchor,
  // control, control, ..., the last segment returning to the first anchor.
  // A multiple of 3 points, at least 3.
  kBezier,
};

struct Spline {
  SplineKind kind = SplineKind::kCatmullRom;
  std::vector<std::array<double, 2>> points;  // In the region's units.
};

// The largest coordinate a control point may have: within it the
// flattening's sums and products stay finite.
inline constexpr double kSplineLargestCoordinate = 0x1.0p500;

// The spline as a ring whose every point lies within `tolerance` of the
// curve and vice versa (adaptive de Casteljau subdivision until a piece's
// control points are within tolerance of its chord). InvalidArgument naming
// the field and the rule for a non-finite point or one past
// kSplineLargestCoordinate, too few points, a Bezier count that is not a
// multiple of 3, or a tolerance that is not finite and > 0;
// ResourceExhausted when the ring would need more than max_vertices.
absl::StatusOr<Ring> FlattenSpline(const Spline& spline, double tolerance,
                                   std::size_t max_vertices = std::size_t{1}
                                                              << 20);

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_SPLINE_H_
