#include "sampler/gap_pieces.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "gtest/gtest.h"

namespace scatter::sampler::internal {
namespace {

// A box one ulp wide along x: its midpoint rounds to an end, so one half
// is empty, and ChildBox says so; the other half, and any box wider than
// that, is not.
TEST(ChildBoxTest, AnUlpWideBoxHasOneEmptyHalf) {
  const double x = 2.1596464546354133;
  const double b0[2] = {std::nextafter(x, 0.0), 0};
  const double b1[2] = {x, 1};
  double mid[2];
  for (int a = 0; a < 2; ++a) mid[a] = b0[a] + (b1[a] - b0[a]) / 2;
  ASSERT_TRUE(mid[0] == b0[0] || mid[0] == b1[0]);
  double c0[2], c1[2];
  int empty = 0;
  for (unsigned child = 0; child < 4; ++child) {
    if (ChildBox<2>(b0, b1, mid, child, c0, c1)) {
      EXPECT_LT(c0[0], c1[0]) << child;
      EXPECT_LT(c0[1], c1[1]) << child;
    } else {
      ++empty;
      EXPECT_EQ(c0[0], c1[0]) << child;
    }
  }
  EXPECT_EQ(empty, 2);  // The empty x half, with either y half.
  const double wide1[2] = {x + 1e-9, 1};
  for (int a = 0; a < 2; ++a) mid[a] = b0[a] + (wide1[a] - b0[a]) / 2;
  for (unsigned child = 0; child < 4; ++child) {
    EXPECT_TRUE(ChildBox<2>(b0, wide1, mid, child, c0, c1)) << child;
  }
}

// Whether x is strictly inside the disk of squared radius r2 around c.
template <int D>
bool Within(const double* x, const double* c, double r2) {
  double d2 = 0;
  for (int a = 0; a < D; ++a) d2 += (x[a] - c[a]) * (x[a] - c[a]);
  return d2 < r2;
}

// Random boxes and pairs of disks of unequal radii, placed so that about a
// tenth of the pairs cover their box. Whenever TwoDisksCover says yes, a
// grid over the box (edges and corners included) and random places in it
// must all be inside one of the disks.
template <int D>
void NeverClaimsAnUncoveredPlace() {
  std::mt19937_64 rng(12345 + D);
  std::uniform_real_distribution<double> u(0, 1);
  int yes = 0;
  constexpr int kTrials = 20000;
  for (int trial = 0; trial < kTrials; ++trial) {
    double b0[D], b1[D], s[D], t[D];
    for (int a = 0; a < D; ++a) {
      b0[a] = u(rng);
      b1[a] = b0[a] + 0.1 + 0.4 * u(rng);
      s[a] = b0[a] - 0.3 + 1.2 * u(rng);
      t[a] = b0[a] - 0.3 + 1.2 * u(rng);
    }
    const double s2 = 0.05 + 0.4 * u(rng);
    const double t2 = 0.02 + 0.2 * u(rng);
    // The equal-radii form is the general one with t2 = s2.
    ASSERT_EQ(TwoDisksCover<D>(s, t, s2, b0, b1),
              TwoDisksCover<D>(s, s2, t, s2, b0, b1))
        << "trial " << trial;
    if (!TwoDisksCover<D>(s, s2, t, t2, b0, b1)) continue;
    ++yes;
    constexpr int kSteps = 12;
    int index[D] = {};
    for (;;) {
      double x[D];
      for (int a = 0; a < D; ++a) {
        x[a] = b0[a] + (b1[a] - b0[a]) * index[a] / kSteps;
      }
      ASSERT_TRUE(Within<D>(x, s, s2) || Within<D>(x, t, t2))
          << "trial " << trial;
      int a = 0;
      while (a < D && ++index[a] > kSteps) index[a++] = 0;
      if (a == D) break;
    }
    for (int k = 0; k < 200; ++k) {
      double x[D];
      for (int a = 0; a < D; ++a) x[a] = b0[a] + (b1[a] - b0[a]) * u(rng);
      ASSERT_TRUE(Within<D>(x, s, s2) || Within<D>(x, t, t2))
          << "trial " << trial;
    }
  }
  // Not a vacuous pass: a good share of the pairs was found to cover.
  EXPECT_GT(yes, kTrials / 20) << yes;
}

TEST(TwoDisksCoverTest, NeverClaimsAnUncoveredPlace2d) {
  NeverClaimsAnUncoveredPlace<2>();
}

TEST(TwoDisksCoverTest, NeverClaimsAnUncoveredPlace3d) {
  NeverClaimsAnUncoveredPlace<3>();
}

// The unit square between s = (0, 0.5) and t = (1, 0.5), t's squared radius
// 0.36. The radical line is x = (1 + s2 - 0.36) / 2, and the square is
// covered exactly when s's disk reaches where it meets the bottom edge:
// s2 = 0.70 puts it at x = 0.67, 0.6989 from s (covered); s2 = 0.69 at
// x = 0.665, 0.692225 from s (not). The plain bisector (x = 0.5) would say
// no to both: there t is 0.5 away.
TEST(TwoDisksCoverTest, UsesThePowerBisectorForUnequalRadii) {
  const double b0[2] = {0, 0}, b1[2] = {1, 1};
  const double s[2] = {0, 0.5}, t[2] = {1, 0.5};
  EXPECT_TRUE(TwoDisksCover<2>(s, 0.70, t, 0.36, b0, b1));
  EXPECT_TRUE(TwoDisksCover<2>(t, 0.36, s, 0.70, b0, b1));
  EXPECT_FALSE(TwoDisksCover<2>(s, 0.69, t, 0.36, b0, b1));
  // A corner outside both.
  EXPECT_FALSE(TwoDisksCover<2>(s, 0.70, t, 0.24, b0, b1));
}

TEST(TwoDisksCoverTest, EqualRadiiAndOneDiskAlone) {
  const double b0[3] = {0, 0, 0}, b1[3] = {1, 1, 1};
  const double s[3] = {0.5, 0.5, 0.5}, t[3] = {0.5, 0.5, 0.6};
  // One ball holds the cube (corners 0.75 away squared): the other may be
  // anything.
  EXPECT_TRUE(TwoDisksCover<3>(s, 0.76, t, 0.01, b0, b1));
  EXPECT_FALSE(TwoDisksCover<3>(s, 0.74, t, 0.01, b0, b1));
  // Two equal balls at opposite faces' centres.
  const double l[3] = {0, 0.5, 0.5}, r[3] = {1, 0.5, 0.5};
  // The bisector x = 0.5 meets the edges 0.25 + 0.25 + 0.25 from each.
  EXPECT_TRUE(TwoDisksCover<3>(l, 0.76, r, 0.76, b0, b1));
  EXPECT_FALSE(TwoDisksCover<3>(l, 0.74, r, 0.74, b0, b1));
  EXPECT_TRUE(TwoDisksCover<3>(l, r, 0.76, b0, b1));
  EXPECT_FALSE(TwoDisksCover<3>(l, r, 0.74, b0, b1));
}

// The smallest squared distance from (x, y) to the n sites.
double NearestSite2(double x, double y, const double* sx, const double* sy,
                    int n) {
  double d2 = INFINITY;
  for (int i = 0; i < n; ++i) {
    d2 = std::min(d2, (x - sx[i]) * (x - sx[i]) + (y - sy[i]) * (y - sy[i]));
  }
  return d2;
}

// Random boxes with 0 to 8 sites around them, at a radius that leaves about
// half the boxes with a place that far. BoxMayHoldPlace2d and FarthestPlace2d
// against a 101 x 101 grid over the box (edges and corners included) and
// 2 000 random places in it: the farthest place is a place of the box, as
// far as it says, at least as far as any grid or random place, and the two
// agree on whether there is one.
TEST(PeakPlaceTest, FarthestPlaceBeatsEveryGridPlace) {
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> u(0, 1);
  int held = 0, open = 0;
  constexpr int kTrials = 3000;
  for (int trial = 0; trial < kTrials; ++trial) {
    const double b0[2] = {u(rng) * 10 - 5, u(rng) * 10 - 5};
    const double b1[2] = {b0[0] + 0.2 + u(rng), b0[1] + 0.2 + u(rng)};
    const int n = static_cast<int>(rng() % 9);
    double sx[8], sy[8];
    for (int i = 0; i < n; ++i) {
      sx[i] = b0[0] - 0.5 + (b1[0] - b0[0] + 1) * u(rng);
      sy[i] = b0[1] - 0.5 + (b1[1] - b0[1] + 1) * u(rng);
    }
    const double r2 = 0.1 + 0.7 * u(rng);
    const auto count = static_cast<std::size_t>(n);
    const bool may = BoxMayHoldPlace2d(sx, sy, count, b0, b1, r2);
    double best_seen = 0;
    constexpr int kSteps = 100;
    for (int i = 0; i <= kSteps; ++i) {
      for (int j = 0; j <= kSteps; ++j) {
        const double x = b0[0] + (b1[0] - b0[0]) * i / kSteps;
        const double y = b0[1] + (b1[1] - b0[1]) * j / kSteps;
        best_seen = std::max(best_seen, NearestSite2(x, y, sx, sy, n));
      }
    }
    for (int k = 0; k < 2000; ++k) {
      const double x = b0[0] + (b1[0] - b0[0]) * u(rng);
      const double y = b0[1] + (b1[1] - b0[1]) * u(rng);
      best_seen = std::max(best_seen, NearestSite2(x, y, sx, sy, n));
    }
    if (!may) {
      ++held;
      ASSERT_LT(best_seen, r2) << "trial " << trial;
      if (n > 0) {
        double p[2] = {};
        EXPECT_EQ(FarthestPlace2d(sx, sy, count, b0, b1, r2, p), 0)
            << "trial " << trial;
      }
      continue;
    }
    ++open;
    if (n == 0) continue;  // Every place is a place; no farthest one.
    double p[2] = {};
    const double best = FarthestPlace2d(sx, sy, count, b0, b1, r2, p);
    ASSERT_GE(best, r2) << "trial " << trial;
    EXPECT_GE(p[0], b0[0]);
    EXPECT_LE(p[0], b1[0]);
    EXPECT_GE(p[1], b0[1]);
    EXPECT_LE(p[1], b1[1]);
    const double at_p = NearestSite2(p[0], p[1], sx, sy, n);
    EXPECT_NEAR(at_p, best, 1e-12) << "trial " << trial;
    EXPECT_GE(at_p, best_seen * (1 - 1e-12)) << "trial " << trial;
  }
  // Both answers came up often.
  EXPECT_GT(held, kTrials / 5) << held;
  EXPECT_GT(open, kTrials / 5) << open;
}

// The cases a gap fill meets at its edges and far from the origin: boxes of
// zero width or height (a clipped cell's last piece), sites on the box's
// edges and corners, on a line, on a lattice (cocircular fours), up to 25
// of them (a cell's 5 x 5 neighbours), at offsets up to 1e6. Each answer
// against a grid over the box and random places in it, as above.
TEST(PeakPlaceTest, DegenerateBoxesAndSitesAgreeWithAGrid) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 1);
  for (int trial = 0; trial < 1500; ++trial) {
    const double offset = trial % 3 == 0 ? 0 : (trial % 3 == 1 ? 1e3 : 1e6);
    const double b0[2] = {offset + u(rng), -offset + u(rng)};
    double b1[2] = {b0[0] + 0.05 + u(rng), b0[1] + 0.05 + u(rng)};
    if (trial % 5 == 0) b1[0] = b0[0];  // No width.
    if (trial % 7 == 0) b1[1] = b0[1];  // No height.
    const int n = 1 + static_cast<int>(rng() % 25);
    double sx[25], sy[25];
    const int kind = trial % 4;
    for (int i = 0; i < n; ++i) {
      if (kind == 0) {
        // Corners and edges of the box.
        sx[i] = rng() % 2 ? b0[0] : b1[0];
        sy[i] = b0[1] + (b1[1] - b0[1]) * static_cast<double>(rng() % 3) / 2;
      } else if (kind == 1) {
        // On one line through the box.
        const double t = 3 * u(rng) - 1;
        sx[i] = b0[0] + t * (b1[0] - b0[0] + 0.3);
        sy[i] = b0[1] + t * 0.7;
      } else if (kind == 2) {
        // A lattice of spacing 0.4 over the box.
        sx[i] = b0[0] - 0.4 + 0.4 * static_cast<double>(i % 5);
        sy[i] = b0[1] - 0.4 + 0.4 * static_cast<double>(i / 5);
      } else {
        sx[i] = b0[0] - 1 + (b1[0] - b0[0] + 2) * u(rng);
        sy[i] = b0[1] - 1 + (b1[1] - b0[1] + 2) * u(rng);
      }
    }
    const auto count = static_cast<std::size_t>(n);
    double best_seen = 0;
    constexpr int kSteps = 64;
    for (int i = 0; i <= kSteps; ++i) {
      for (int j = 0; j <= kSteps; ++j) {
        const double x = b0[0] + (b1[0] - b0[0]) * i / kSteps;
        const double y = b0[1] + (b1[1] - b0[1]) * j / kSteps;
        best_seen = std::max(best_seen, NearestSite2(x, y, sx, sy, n));
      }
    }
    // Far from the origin the sites' distances round by about 1e-10
    // (coordinates of 1e6, ulp 1.2e-10): compare with that much slack.
    const double slack = offset >= 1e6 ? 1e-9 : 1e-12;
    double p[2] = {};
    const double best = FarthestPlace2d(sx, sy, count, b0, b1, 0, p);
    ASSERT_GE(best, best_seen - slack) << "trial " << trial;
    if (best == 0) continue;  // Every place is a site (a box of no area).
    EXPECT_GE(p[0], b0[0]);
    EXPECT_LE(p[0], b1[0]);
    EXPECT_GE(p[1], b0[1]);
    EXPECT_LE(p[1], b1[1]);
    EXPECT_NEAR(NearestSite2(p[0], p[1], sx, sy, n), best, slack)
        << "trial " << trial;
    // Just above the farthest place's distance there is no place; just
    // below, there is.
    EXPECT_FALSE(
        BoxMayHoldPlace2d(sx, sy, count, b0, b1, best * (1 + 1e-6) + slack))
        << "trial " << trial;
    if (best > slack) {
      EXPECT_TRUE(
          BoxMayHoldPlace2d(sx, sy, count, b0, b1, best * (1 - 1e-6) - slack))
          << "trial " << trial;
    }
  }
}

// Three sites around the unit square's centre, 0.6 from it: the farthest
// place is their circumcentre, the centre, at 0.36. A bound above that
// finds none; with a fourth site on the centre the farthest place moves
// to a corner or an edge.
TEST(PeakPlaceTest, AmongThreeSitesTheFarthestPlaceIsTheirCircumcentre) {
  const double b0[2] = {0, 0}, b1[2] = {1, 1};
  const double sx[4] = {0.5 + 0.6, 0.5 - 0.3, 0.5 - 0.3, 0.5};
  const double sy[4] = {0.5, 0.5 + 0.6 * std::sqrt(0.75),
                        0.5 - 0.6 * std::sqrt(0.75), 0.5};
  double p[2] = {-1, -1};
  EXPECT_NEAR(FarthestPlace2d(sx, sy, 3, b0, b1, 0.3, p), 0.36, 1e-12);
  EXPECT_NEAR(p[0], 0.5, 1e-12);
  EXPECT_NEAR(p[1], 0.5, 1e-12);
  EXPECT_TRUE(BoxMayHoldPlace2d(sx, sy, 3, b0, b1, 0.3599));
  EXPECT_FALSE(BoxMayHoldPlace2d(sx, sy, 3, b0, b1, 0.3601));
  EXPECT_EQ(FarthestPlace2d(sx, sy, 3, b0, b1, 0.3601, p), 0);
  // With the centre taken, the farthest places lie on the square's edge.
  const double best = FarthestPlace2d(sx, sy, 4, b0, b1, 0.01, p);
  EXPECT_GT(best, 0.01);
  EXPECT_TRUE(p[0] == 0 || p[0] == 1 || p[1] == 0 || p[1] == 1)
      << p[0] << ", " << p[1];
  EXPECT_NEAR(NearestSite2(p[0], p[1], sx, sy, 4), best, 1e-12);
}

// Three sites around a hole, at scales from 1e-140 to 1e140: the peak
// search multiplied three lengths, so the circumcentre overflowed past
// 3e102 and underflowed below 1e-107, and the hole was not seen. Scaled by
// powers of two, the answers are the same bits, scaled.
TEST(PeakPlaceTest, TheHoleIsFoundAtEveryScale) {
  // The box holds their circumcentre (1, 0.75), 1.25 from each: the one
  // farthest place.
  const double b0[2] = {0.5, 0.3}, b1[2] = {1.5, 1.2};
  const double sx[3] = {0, 2, 1}, sy[3] = {0, 0, 2};
  double p[2] = {};
  const double best = FarthestPlace2d(sx, sy, 3, b0, b1, 0.5, p);
  ASSERT_NEAR(best, 1.5625, 1e-12);
  ASSERT_NEAR(p[0], 1, 1e-12);
  ASSERT_NEAR(p[1], 0.75, 1e-12);
  for (const double scale :
       {1e-140, 1e-110, 1e-100, 1.0, 1e100, 3e102, 1e110, 1e140,
        std::ldexp(1.0, -480), std::ldexp(1.0, 480)}) {
    SCOPED_TRACE(scale);
    const double c0[2] = {0.5 * scale, 0.3 * scale};
    const double c1[2] = {1.5 * scale, 1.2 * scale};
    const double tx[3] = {0, 2 * scale, 1 * scale};
    const double ty[3] = {0, 0, 2 * scale};
    const double bound = 0.5 * scale * scale;
    EXPECT_TRUE(BoxMayHoldPlace2d(tx, ty, 3, c0, c1, bound));
    double q[2] = {};
    const double got = FarthestPlace2d(tx, ty, 3, c0, c1, bound, q);
    EXPECT_NEAR(got / (scale * scale), best, 1e-12 * best);
    EXPECT_NEAR(q[0] / scale, p[0], 1e-12);
    EXPECT_NEAR(q[1] / scale, p[1], 1e-12);
    // Nothing is that far past the peak.
    EXPECT_FALSE(BoxMayHoldPlace2d(tx, ty, 3, c0, c1, got * (1 + 1e-9)));
    int exponent = 0;
    if (std::frexp(scale, &exponent) == 0.5) {
      // A power of two: exactly the same answer, scaled.
      EXPECT_EQ(got, best * scale * scale);
      EXPECT_EQ(q[0], p[0] * scale);
      EXPECT_EQ(q[1], p[1] * scale);
    }
  }
}

}  // namespace
}  // namespace scatter::sampler::internal
