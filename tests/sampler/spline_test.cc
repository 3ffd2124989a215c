#include "sampler/spline.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "sampler/region.h"

namespace scatter::sampler {
namespace {

using P = std::array<double, 2>;

P Cubic(const P& b0, const P& b1, const P& b2, const P& b3, double t) {
  const double u = 1 - t;
  P out;
  for (int a = 0; a < 2; ++a) {
    out[a] = u * u * u * b0[a] + 3 * u * u * t * b1[a] + 3 * u * t * t * b2[a] +
             t * t * t * b3[a];
  }
  return out;
}

double DistanceToSegment(const P& q, const P& a, const P& b) {
  const double dx = b[0] - a[0], dy = b[1] - a[1];
  const double len2 = dx * dx + dy * dy;
  double t = len2 == 0 ? 0 : ((q[0] - a[0]) * dx + (q[1] - a[1]) * dy) / len2;
  t = std::clamp(t, 0.0, 1.0);
  return std::hypot(q[0] - (a[0] + t * dx), q[1] - (a[1] + t * dy));
}

double DistanceToRing(const P& q, const Ring& ring) {
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < ring.size(); ++k) {
    best = std::min(best,
                    DistanceToSegment(q, ring[k], ring[(k + 1) % ring.size()]));
  }
  return best;
}

// A circle of radius 10 as four Bezier quarters (the usual 0.5523 handles).
Spline BezierCircle() {
  const double k = 0.5522847498 * 10;
  return {SplineKind::kBezier,
          {{10, 0},
           {10, k},
           {k, 10},
           {0, 10},
           {-k, 10},
           {-10, k},
           {-10, 0},
           {-10, -k},
           {-k, -10},
           {0, -10},
           {k, -10},
           {10, -k}}};
}

TEST(SplineTest, BezierRingStaysWithinToleranceOfTheCurve) {
  const Spline spline = BezierCircle();
  for (double tolerance : {0.1, 0.01, 0.001}) {
    absl::StatusOr<Ring> ring = FlattenSpline(spline, tolerance);
    ASSERT_TRUE(ring.ok()) << ring.status();
    const std::vector<P>& p = spline.points;
    for (std::size_t s = 0; s < p.size(); s += 3) {
      for (int i = 0; i <= 200; ++i) {
        const P q =
            Cubic(p[s], p[s + 1], p[s + 2], p[(s + 3) % p.size()], i / 200.0);
        ASSERT_LE(DistanceToRing(q, *ring), tolerance * (1 + 1e-9))
            << "tolerance " << tolerance;
      }
    }
    // Fewer vertices for a looser tolerance, and not absurdly many.
    EXPECT_LT(ring->size(), 4 * std::sqrt(10 / tolerance) * 4);
  }
}

// Every piece of the ring's curve, as Bezier control points: a Bezier
// spline's own, or a Catmull-Rom spline's (uniform, closed) converted.
std::vector<std::array<P, 4>> Pieces(const Spline& spline) {
  const std::vector<P>& p = spline.points;
  const std::size_t n = p.size();
  std::vector<std::array<P, 4>> pieces;
  if (spline.kind == SplineKind::kBezier) {
    for (std::size_t s = 0; s < n; s += 3) {
      pieces.push_back({p[s], p[s + 1], p[s + 2], p[(s + 3) % n]});
    }
    return pieces;
  }
  for (std::size_t k = 0; k < n; ++k) {
    const P& a = p[(k + n - 1) % n];
    const P& b = p[k];
    const P& c = p[(k + 1) % n];
    const P& d = p[(k + 2) % n];
    pieces.push_back({b, P{b[0] + (c[0] - a[0]) / 6, b[1] + (c[1] - a[1]) / 6},
                      P{c[0] - (d[0] - b[0]) / 6, c[1] - (d[1] - b[1]) / 6},
                      c});
  }
  return pieces;
}

// Curves whose control points lie on a chord's line but past its end
// overshoot that end: a flatness test against the whole line passed them
// as flat, and the ring missed the overshoot (by 3.98 here for
// Catmull-Rom, 2.89 for Bezier, at tolerance 0.01).
TEST(SplineTest, OvershootsPastAChordsEndStayWithinTolerance) {
  const Spline splines[] = {
      {SplineKind::kCatmullRom, {{0, 0}, {1, 0}, {2, 0}, {100, 0}, {50, 50}}},
      {SplineKind::kBezier,
       {{0, 0}, {5, 0.001}, {5, -0.001}, {1, 0}, {1, 1}, {0, 1}}},
  };
  const double tolerance = 0.01;
  for (const Spline& spline : splines) {
    absl::StatusOr<Ring> ring = FlattenSpline(spline, tolerance);
    ASSERT_TRUE(ring.ok()) << ring.status();
    for (const std::array<P, 4>& b : Pieces(spline)) {
      for (int i = 0; i <= 2000; ++i) {
        const P q = Cubic(b[0], b[1], b[2], b[3], i / 2000.0);
        ASSERT_LE(DistanceToRing(q, *ring), tolerance * (1 + 1e-9))
            << "at (" << q[0] << ", " << q[1] << ")";
      }
    }
  }
}

TEST(SplineTest, CatmullRomPassesThroughItsControlPoints) {
  const Spline spline = {SplineKind::kCatmullRom,
                         {{0, 0}, {10, 0}, {12, 8}, {5, 12}, {-2, 7}}};
  absl::StatusOr<Ring> ring = FlattenSpline(spline, 0.01);
  ASSERT_TRUE(ring.ok()) << ring.status();
  for (const P& q : spline.points) {
    EXPECT_NE(std::find(ring->begin(), ring->end(), q), ring->end());
  }
  // And it makes a region.
  absl::StatusOr<Region> region = Region::Polygons({*ring});
  ASSERT_TRUE(region.ok()) << region.status();
  const double inside[2] = {5, 5};
  EXPECT_TRUE(region->Contains(inside));
}

TEST(SplineTest, BadSplinesAreInvalidArgument) {
  EXPECT_EQ(FlattenSpline({SplineKind::kCatmullRom, {{0, 0}, {1, 0}}}, 0.1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Ring> bezier = FlattenSpline(
      {SplineKind::kBezier, {{0, 0}, {1, 0}, {1, 1}, {0, 1}}}, 0.1);
  EXPECT_EQ(bezier.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bezier.status().message().find("multiple of 3"), std::string::npos);
  absl::StatusOr<Ring> nan = FlattenSpline(
      {SplineKind::kCatmullRom, {{0, 0}, {1, std::nan("")}, {1, 1}}}, 0.1);
  EXPECT_EQ(nan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(nan.status().message().find("points[1]"), std::string::npos);
  EXPECT_EQ(FlattenSpline(BezierCircle(), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Control points past about 1e154 overflowed the flatness test's products
// to inf, so nothing was flat and the ring was refused as needing more
// than max_vertices vertices (ResourceExhausted, as if the tolerance were
// too fine). Points within 2^500 still flatten.
TEST(SplineTest, ControlPointsPastTwoToThe500AreInvalidArgument) {
  for (SplineKind kind : {SplineKind::kCatmullRom, SplineKind::kBezier}) {
    absl::StatusOr<Ring> huge =
        FlattenSpline({kind, {{0, 0}, {1e155, 0}, {0, 1e155}}}, 1);
    EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument)
        << huge.status();
    EXPECT_NE(huge.status().message().find("points[1]"), std::string::npos)
        << huge.status();
    const double far = 0x1.0p500;
    absl::StatusOr<Ring> largest =
        FlattenSpline({kind, {{-far, -far}, {far, -far}, {0, far}}}, far / 64);
    ASSERT_TRUE(largest.ok()) << largest.status();
    for (const auto& v : *largest) {
      EXPECT_TRUE(std::isfinite(v[0]) && std::isfinite(v[1]));
    }
  }
}

TEST(SplineTest, TooFineAToleranceIsResourceExhausted) {
  EXPECT_EQ(FlattenSpline(BezierCircle(), 1e-9, /*max_vertices=*/1000)
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace scatter::sampler
