#include "sampler/spline.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace scatter::sampler {
namespace {

using P = std::array<double, 2>;

// Distance from q to the segment a-b, the chord: to the nearer end when q
// lies beyond it. (The distance to the chord's whole line let control
// points past an end count as flat, while the curve overshot that end:
// a Catmull-Rom ring over unevenly spaced points strayed 400 tolerances
// from its curve.)
double DistanceToChord(const P& q, const P& a, const P& b) {
  const double dx = b[0] - a[0];
  const double dy = b[1] - a[1];
  const double len = std::hypot(dx, dy);
  if (len == 0) return std::hypot(q[0] - a[0], q[1] - a[1]);
  const double along = dx * (q[0] - a[0]) + dy * (q[1] - a[1]);
  if (along < 0) return std::hypot(q[0] - a[0], q[1] - a[1]);
  if (along > len * len) return std::hypot(q[0] - b[0], q[1] - b[1]);
  return std::abs(dx * (q[1] - a[1]) - dy * (q[0] - a[0])) / len;
}

P Mid(const P& a, const P& b) { return {(a[0] + b[0]) / 2, (a[1] + b[1]) / 2}; }

// Appends the cubic (b0, b1, b2, b3) without b0, subdividing until its
// control points are within `tolerance` of the chord (the segment b0-b3):
// the convex hull then bounds the curve's distance from the chord. False when
// the ring grows past `limit`.
bool Flatten(const P& b0, const P& b1, const P& b2, const P& b3,
             double tolerance, int depth, std::size_t limit, Ring* out) {
  const bool flat = DistanceToChord(b1, b0, b3) <= tolerance &&
                    DistanceToChord(b2, b0, b3) <= tolerance;
  // 40 halvings shrink any piece below a millionth of a millionth of it.
  if (flat || depth == 40) {
    if (out->size() >= limit) return false;
    out->push_back(b3);
    return true;
  }
  const P m01 = Mid(b0, b1), m12 = Mid(b1, b2), m23 = Mid(b2, b3);
  const P m012 = Mid(m01, m12), m123 = Mid(m12, m23);
  const P m = Mid(m012, m123);
  return Flatten(b0, m01, m012, m, tolerance, depth + 1, limit, out) &&
         Flatten(m, m123, m23, b3, tolerance, depth + 1, limit, out);
}

}  // namespace

absl::StatusOr<Ring> FlattenSpline(const Spline& spline, double tolerance,
                                   std::size_t max_vertices) {
  if (!std::isfinite(tolerance) || !(tolerance > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tolerance must be finite and > 0, got ", tolerance));
  }
  const std::vector<P>& p = spline.points;
  // Within 2^500 the flattening's sums, differences and the products in
  // its flatness test stay finite. Past about 1e154 the products
  // overflowed to inf, nothing was ever flat, and a ring of three points
  // was refused for needing more than max_vertices vertices, as if the
  // tolerance were too fine.
  constexpr double kLargest = kSplineLargestCoordinate;
  for (std::size_t k = 0; k < p.size(); ++k) {
    if (!std::isfinite(p[k][0]) || !std::isfinite(p[k][1])) {
      return absl::InvalidArgumentError(
          absl::StrCat("points[", k, "]: coordinates must be finite, got (",
                       p[k][0], ", ", p[k][1], ")"));
    }
    if (!(std::abs(p[k][0]) <= kLargest && std::abs(p[k][1]) <= kLargest)) {
      return absl::InvalidArgumentError(
          absl::StrCat("points[", k, "]: coordinates must be within +-2^500 (",
                       kLargest, "), got (", p[k][0], ", ", p[k][1], ")"));
    }
  }
  const std::size_t n = p.size();
  if (n < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "points: a closed spline needs at least 3 control points, got ", n));
  }
  if (spline.kind == SplineKind::kBezier && n % 3 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "points: a closed Bezier spline needs a multiple of 3 points "
        "(anchor, control, control per segment), got ",
        n));
  }
  Ring ring;
  auto too_many = [&] {
    return absl::ResourceExhaustedError(
        absl::StrCat("flattening needs more than max_vertices = ", max_vertices,
                     " vertices at tolerance ", tolerance));
  };
  if (spline.kind == SplineKind::kBezier) {
    ring.push_back(p[0]);
    for (std::size_t s = 0; s < n; s += 3) {
      if (!Flatten(p[s], p[s + 1], p[s + 2], p[(s + 3) % n], tolerance, 0,
                   max_vertices, &ring)) {
        return too_many();
      }
    }
  } else {
    // Segment k runs from p[k] to p[k+1]; as a Bezier its inner controls
    // are p[k] + (p[k+1] - p[k-1]) / 6 and p[k+1] - (p[k+2] - p[k]) / 6.
    ring.push_back(p[0]);
    for (std::size_t k = 0; k < n; ++k) {
      const P& a = p[(k + n - 1) % n];
      const P& b = p[k];
      const P& c = p[(k + 1) % n];
      const P& d = p[(k + 2) % n];
      const P c1 = {b[0] + (c[0] - a[0]) / 6, b[1] + (c[1] - a[1]) / 6};
      const P c2 = {c[0] - (d[0] - b[0]) / 6, c[1] - (d[1] - b[1]) / 6};
      if (!Flatten(b, c1, c2, c, tolerance, 0, max_vertices, &ring)) {
        return too_many();
      }
    }
  }
  ring.pop_back();  // The walk ended where it began.
  return ring;
}

}  // namespace scatter::sampler
