#include "sampler/quality.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "sampler/box.h"
#include "sampler/region.h"
#include "sampler/rng.h"

namespace scatter::sampler {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct BruteForce {
  double min_ratio = kInf;
  std::uint64_t violations = 0;
};

// The definition, pair by pair: long double squared distance < radius^2.
BruteForce CheckAllPairs(const std::vector<double>& coords, int dims,
                         double radius) {
  BruteForce out;
  const std::size_t n = coords.size() / dims;
  const long double r2 = static_cast<long double>(radius) * radius;
  long double min_d2 = std::numeric_limits<long double>::infinity();
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      long double d2 = 0;
      for (int a = 0; a < dims; ++a) {
        const long double d = static_cast<long double>(coords[i * dims + a]) -
                              coords[j * dims + a];
        d2 += d * d;
      }
      if (d2 < r2) ++out.violations;
      if (d2 < min_d2) min_d2 = d2;
    }
  }
  if (n >= 2) out.min_ratio = static_cast<double>(std::sqrt(min_d2) / radius);
  return out;
}

std::vector<double> RandomPoints(int n, int dims, double lo, double hi,
                                 std::uint64_t seed) {
  CounterRng rng(seed);
  std::vector<double> coords;
  for (int i = 0; i < n * dims; ++i) {
    coords.push_back(lo + (hi - lo) * rng.Uniform01());
  }
  return coords;
}

Box UnitBox(int dims) {
  absl::StatusOr<Box> box = Box::Create(dims, {0, 0, 0}, {1, 1, 1});
  EXPECT_TRUE(box.ok()) << box.status();
  return *box;
}

// Rows of a triangular lattice with nearest-neighbour spacing `spacing`:
// m points per row, m rows, odd rows shifted by half a spacing.
std::vector<double> HexLattice(int m, double spacing) {
  std::vector<double> coords;
  for (int j = 0; j < m; ++j) {
    for (int i = 0; i < m; ++i) {
      coords.push_back((i + (j % 2) * 0.5) * spacing);
      coords.push_back(j * spacing * std::sqrt(3.0) / 2);
    }
  }
  return coords;
}

TEST(CheckMinDistanceTest, TwoPointsExactlyTheRadiusApartAreFine) {
  // 3-4-5: the squared distance 25 is exact in every precision.
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance({0, 0, 3, 4}, 2, 5);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  EXPECT_EQ(report->min_ratio, 1.0);

  report = CheckMinDistance({1, 1, 1, 2, 3, 3}, 3, 3);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  EXPECT_EQ(report->min_ratio, 1.0);
}

TEST(CheckMinDistanceTest, TwoPointsJustInsideTheRadiusAreAViolation) {
  // The radius one ulp above 5: the pair is closer than it by 1e-16.
  const double radius = std::nextafter(5.0, 6.0);
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance({0, 0, 3, 4}, 2, radius);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 1u);
  EXPECT_LT(report->min_ratio, 1.0);

  // The point one ulp short of the radius along an axis.
  report =
      CheckMinDistance({0, 0, 0, 0, 0, std::nextafter(0.25, 0.0)}, 3, 0.25);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 1u);
  EXPECT_LT(report->min_ratio, 1.0);
}

TEST(CheckMinDistanceTest, DuplicatePointsAreAViolationWithRatioZero) {
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance({0.5, 0.5, 0.5, 0.5, 2, 2}, 2, 0.1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 1u);
  EXPECT_EQ(report->min_ratio, 0.0);
}

TEST(CheckMinDistanceTest, FewerThanTwoPointsGiveInfiniteRatio) {
  absl::StatusOr<MinDistanceReport> report = CheckMinDistance({}, 2, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  EXPECT_EQ(report->min_ratio, kInf);

  report = CheckMinDistance({1, 2, 3}, 3, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  EXPECT_EQ(report->min_ratio, kInf);
}

TEST(CheckMinDistanceTest, CountsEveryCloseTripleAsThreePairs) {
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance({0, 0, 0.01, 0, 0, 0.01, 5, 5}, 2, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 3u);
}

TEST(CheckMinDistanceTest, MatchesBruteForceOnRandom2DSets) {
  // 300 points in [-1, 1)^2 with r = 0.05: about 90 close pairs expected,
  // and negative coordinates exercise the hash's cell indexing.
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const std::vector<double> coords = RandomPoints(300, 2, -1, 1, seed);
    for (double radius : {0.001, 0.05, 0.3}) {
      const BruteForce expected = CheckAllPairs(coords, 2, radius);
      absl::StatusOr<MinDistanceReport> report =
          CheckMinDistance(coords, 2, radius);
      ASSERT_TRUE(report.ok()) << report.status();
      EXPECT_EQ(report->violations, expected.violations)
          << "seed " << seed << " radius " << radius;
      EXPECT_DOUBLE_EQ(report->min_ratio, expected.min_ratio)
          << "seed " << seed << " radius " << radius;
    }
  }
}

TEST(CheckMinDistanceTest, MatchesBruteForceOnRandom3DSets) {
  for (std::uint64_t seed = 1; seed <= 5; ++seed) {
    const std::vector<double> coords = RandomPoints(300, 3, -1, 1, seed);
    for (double radius : {0.001, 0.1, 0.5}) {
      const BruteForce expected = CheckAllPairs(coords, 3, radius);
      absl::StatusOr<MinDistanceReport> report =
          CheckMinDistance(coords, 3, radius);
      ASSERT_TRUE(report.ok()) << report.status();
      EXPECT_EQ(report->violations, expected.violations)
          << "seed " << seed << " radius " << radius;
      EXPECT_DOUBLE_EQ(report->min_ratio, expected.min_ratio)
          << "seed " << seed << " radius " << radius;
    }
  }
}

TEST(CheckMinDistanceTest, MinRatioIsTheTrueMinimumEvenFarAboveTheRadius) {
  // The header promises the smallest pairwise distance, not only whether it
  // is below the radius.
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance({0, 0, 3, 0, 0, 7}, 2, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  EXPECT_EQ(report->min_ratio, 3.0);
}

TEST(CheckMinDistanceTest, LatticeJustWiderThanTheRadiusHasNoViolations) {
  const double radius = 0.01;
  const std::vector<double> coords = HexLattice(40, radius * (1 + 1e-9));
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance(coords, 2, radius);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
  EXPECT_GE(report->min_ratio, 1.0);
  EXPECT_LT(report->min_ratio, 1.0 + 1e-8);
}

TEST(CheckMinDistanceTest, LatticeJustNarrowerThanTheRadiusViolatesEveryEdge) {
  // An m x m triangular lattice has (m - 1) (3m - 1) nearest-neighbour pairs;
  // the next nearest are sqrt(3) spacings apart.
  const int m = 40;
  const double radius = 0.01;
  const std::vector<double> coords = HexLattice(m, radius * (1 - 1e-9));
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance(coords, 2, radius);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, std::uint64_t{(m - 1) * (3 * m - 1)});
  EXPECT_LT(report->min_ratio, 1.0);
}

TEST(CheckMinDistanceTest, FarApartPointsDoNotNeedAHugeGrid) {
  // A dense grid over this extent at cell size 1e-3 would have 1e18 cells.
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistance({0, 0, 1e6, 1e6, -1e6, 1e6}, 2, 1e-3);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->violations, 0u);
}

TEST(CheckMinDistanceTest, BadArgumentsAreInvalidArgument) {
  const std::vector<double> coords = {0, 0, 1, 1, 2, 2};
  for (int dims : {0, 1, 4}) {
    EXPECT_EQ(CheckMinDistance(coords, dims, 1).status().code(),
              absl::StatusCode::kInvalidArgument)
        << "dims " << dims;
  }
  // Five values are not a whole number of 2D points.
  EXPECT_EQ(CheckMinDistance({0, 0, 1, 1, 2}, 2, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckMinDistance({0, 0, 1, 1}, 3, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (double radius : {0.0, -1.0, kNaN, kInf, -kInf}) {
    absl::StatusOr<MinDistanceReport> report =
        CheckMinDistance(coords, 2, radius);
    EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument)
        << "radius " << radius;
    EXPECT_TRUE(absl::StrContains(report.status().message(), "radius"))
        << report.status().message();
  }
}

TEST(MeasureCoverageTest, OneBigDiskCoversTheWholeBox) {
  // The farthest corner is sqrt(0.5) ~ 0.71 from the centre.
  absl::StatusOr<CoverageReport> report =
      MeasureCoverage({0.5, 0.5}, UnitBox(2), 0.75, 100000, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->probes, 100000u);
  EXPECT_EQ(report->uncovered, 0u);
  EXPECT_EQ(report->uncovered_fraction(), 0.0);

  report = MeasureCoverage({0.5, 0.5, 0.5}, UnitBox(3), 0.9, 100000, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->uncovered, 0u);
}

TEST(MeasureCoverageTest, NoSamplesLeaveEveryProbeUncovered) {
  absl::StatusOr<CoverageReport> report =
      MeasureCoverage({}, UnitBox(2), 0.1, 1000, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->probes, 1000u);
  EXPECT_EQ(report->uncovered, 1000u);
  EXPECT_EQ(report->uncovered_fraction(), 1.0);
}

TEST(MeasureCoverageTest, ZeroProbesGiveZeroFraction) {
  absl::StatusOr<CoverageReport> report =
      MeasureCoverage({0.5, 0.5}, UnitBox(2), 0.1, 0, 1);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->probes, 0u);
  EXPECT_EQ(report->uncovered, 0u);
  EXPECT_EQ(report->uncovered_fraction(), 0.0);
}

// The tolerances below are about eight standard errors of a fraction
// estimated from 1e5 probes (sqrt(0.25 / 1e5) ~ 0.0016).
constexpr std::uint64_t kProbes = 100000;
constexpr double kFractionTolerance = 0.013;

TEST(MeasureCoverageTest, UncoveredFractionIsTheAreaOutsideTheDisk) {
  const double pi = std::acos(-1.0);
  absl::StatusOr<CoverageReport> report =
      MeasureCoverage({0.5, 0.5}, UnitBox(2), 0.5, kProbes, 3);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NEAR(report->uncovered_fraction(), 1 - pi / 4, kFractionTolerance);

  report = MeasureCoverage({0.5, 0.5, 0.5}, UnitBox(3), 0.5, kProbes, 3);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NEAR(report->uncovered_fraction(), 1 - pi / 6, kFractionTolerance);
}

TEST(MeasureCoverageTest, SamplesOutsideTheBoxStillCover) {
  // A disk of radius 0.5 centred 0.25 left of the box: the circular segment
  // inside has area r^2 acos(d / r) - d sqrt(r^2 - d^2) with d = 0.25.
  const double r = 0.5;
  const double d = 0.25;
  const double inside = r * r * std::acos(d / r) - d * std::sqrt(r * r - d * d);
  absl::StatusOr<CoverageReport> report =
      MeasureCoverage({-0.25, 0.5}, UnitBox(2), r, kProbes, 4);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NEAR(report->uncovered_fraction(), 1 - inside, kFractionTolerance);
}

TEST(MeasureCoverageTest, ProbesAreThrownIntoTheGivenBox) {
  absl::StatusOr<Box> box = Box::Create(2, {10, -20, 0}, {11, -19, 0});
  ASSERT_TRUE(box.ok()) << box.status();
  // Covers the box entirely, and nothing of the unit square.
  absl::StatusOr<CoverageReport> report =
      MeasureCoverage({10.5, -19.5}, *box, 0.75, 10000, 5);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->uncovered, 0u);
  // A sample in the unit square covers none of it.
  report = MeasureCoverage({0.5, 0.5}, *box, 0.75, 10000, 5);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->uncovered, 10000u);
}

TEST(MeasureCoverageTest, MatchesAnIndependentEstimateOnRandomSets) {
  // The same area estimated by our own probes (brute force over samples) and
  // by MeasureCoverage's; both are unbiased, so they agree statistically.
  for (int dims : {2, 3}) {
    const double radius = dims == 2 ? 0.08 : 0.2;
    const std::vector<double> coords = RandomPoints(60, dims, 0, 1, 17);
    CounterRng rng(0x5eed);
    std::uint64_t uncovered = 0;
    for (std::uint64_t p = 0; p < kProbes; ++p) {
      double probe[3];
      for (int a = 0; a < dims; ++a) probe[a] = rng.Uniform01();
      bool covered = false;
      for (std::size_t i = 0; i < coords.size() && !covered; i += dims) {
        double d2 = 0;
        for (int a = 0; a < dims; ++a) {
          const double d = probe[a] - coords[i + a];
          d2 += d * d;
        }
        covered = d2 < radius * radius;
      }
      uncovered += covered ? 0 : 1;
    }
    const double expected = static_cast<double>(uncovered) / kProbes;
    absl::StatusOr<CoverageReport> report =
        MeasureCoverage(coords, UnitBox(dims), radius, kProbes, 6);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->probes, kProbes);
    EXPECT_NEAR(report->uncovered_fraction(), expected, kFractionTolerance)
        << "dims " << dims;
    // Make sure the case is not trivial.
    EXPECT_GT(expected, 0.1);
    EXPECT_LT(expected, 0.9);
  }
}

TEST(MeasureCoverageTest, SameProbeSeedGivesTheSameCount) {
  const std::vector<double> coords = RandomPoints(50, 2, 0, 1, 9);
  absl::StatusOr<CoverageReport> a =
      MeasureCoverage(coords, UnitBox(2), 0.1, 20000, 77);
  absl::StatusOr<CoverageReport> b =
      MeasureCoverage(coords, UnitBox(2), 0.1, 20000, 77);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->uncovered, b->uncovered);
}

TEST(MeasureCoverageTest, BadArgumentsAreInvalidArgument) {
  for (double radius : {0.0, -1.0, kNaN, kInf}) {
    absl::StatusOr<CoverageReport> report =
        MeasureCoverage({0.5, 0.5}, UnitBox(2), radius, 100, 1);
    EXPECT_EQ(report.status().code(), absl::StatusCode::kInvalidArgument)
        << "radius " << radius;
  }
  // Three values are not a whole number of 2D points.
  EXPECT_EQ(
      MeasureCoverage({0.5, 0.5, 0.5}, UnitBox(2), 0.1, 100, 1).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(RelativeRadiusTest, FollowsTheHexagonalFormulaIn2D) {
  const double expected = 0.1 / std::sqrt(2.0 / (std::sqrt(3.0) * 100));
  EXPECT_NEAR(RelativeRadius(100, 1.0, 2, 0.1), expected, 1e-12);
  EXPECT_NEAR(RelativeRadius(100, 1.0, 2, 0.1), 0.9306, 1e-4);
}

TEST(RelativeRadiusTest, FollowsTheFccFormulaIn3D) {
  const double expected = 0.1 / std::cbrt(std::sqrt(2.0) / 1000);
  EXPECT_NEAR(RelativeRadius(1000, 1.0, 3, 0.1), expected, 1e-12);
  EXPECT_NEAR(RelativeRadius(1000, 1.0, 3, 0.1), 0.8909, 1e-4);
}

TEST(RelativeRadiusTest, IdealPackingsHaveRhoOne) {
  // Hexagonal packing: sqrt(3) / 2 r^2 of area per point; FCC: r^3 / sqrt(2)
  // of volume per point.
  const double r = 0.02;
  const std::uint64_t n = 5000;
  EXPECT_NEAR(RelativeRadius(n, n * std::sqrt(3.0) / 2 * r * r, 2, r), 1.0,
              1e-12);
  EXPECT_NEAR(RelativeRadius(n, n * r * r * r / std::sqrt(2.0), 3, r), 1.0,
              1e-12);
}

TEST(RelativeRadiusTest, GrowsAsTheRootOfTheCountPerDimension) {
  const double rho = RelativeRadius(1000, 1.0, 2, 0.01);
  EXPECT_NEAR(RelativeRadius(4000, 1.0, 2, 0.01), 2 * rho, 1e-12);
  EXPECT_NEAR(RelativeRadius(8000, 1.0, 3, 0.01),
              2 * RelativeRadius(1000, 1.0, 3, 0.01), 1e-12);
}

TEST(RelativeRadiusTest, NoPointsGiveZero) {
  EXPECT_EQ(RelativeRadius(0, 1.0, 2, 0.1), 0.0);
  EXPECT_EQ(RelativeRadius(0, 1.0, 3, 0.1), 0.0);
}

// ---------------------------------------------------------------------------
// Variable radius.

TEST(CheckMinDistanceVariableTest, PairsAreJudgedByTheLargerRadius) {
  // 0.5 apart: fine for radii 0.5 and 0.1, a violation for 0.6 and 0.1
  // (either order), fine for 0.1 and 0.1.
  const std::vector<double> coords = {0, 0, 0.5, 0};
  for (const auto& [ra, rb, bad] :
       std::vector<std::tuple<double, double, bool>>{{0.5, 0.1, false},
                                                     {0.6, 0.1, true},
                                                     {0.1, 0.6, true},
                                                     {0.1, 0.1, false}}) {
    absl::StatusOr<MinDistanceReport> report =
        CheckMinDistanceVariable(coords, {ra, rb}, 2);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->violations, bad ? 1u : 0u) << ra << " " << rb;
    EXPECT_EQ(report->min_ratio >= 1, !bad) << report->min_ratio;
  }
}

TEST(CheckMinDistanceVariableTest, MatchesBruteForceWithRadiiFiftyToOne) {
  CounterRng rng(99);
  std::vector<double> coords, radii;
  for (int i = 0; i < 600; ++i) {
    coords.push_back(rng.Uniform01());
    coords.push_back(rng.Uniform01());
    coords.push_back(rng.Uniform01());
    radii.push_back(0.002 + 0.098 * rng.Uniform01());
  }
  std::uint64_t brute = 0;
  for (std::size_t i = 0; i < radii.size(); ++i) {
    for (std::size_t j = i + 1; j < radii.size(); ++j) {
      long double d2 = 0;
      for (int a = 0; a < 3; ++a) {
        const long double d = static_cast<long double>(coords[3 * i + a]) -
                              static_cast<long double>(coords[3 * j + a]);
        d2 += d * d;
      }
      const long double r = std::max(radii[i], radii[j]);
      brute += d2 < r * r;
    }
  }
  absl::StatusOr<MinDistanceReport> report =
      CheckMinDistanceVariable(coords, radii, 3);
  ASSERT_TRUE(report.ok());
  EXPECT_GT(brute, 10u);
  EXPECT_EQ(report->violations, brute);
}

TEST(CheckMinDistanceVariableTest, BadArgumentsAreInvalidArgument) {
  EXPECT_EQ(CheckMinDistanceVariable({0, 0}, {0.1}, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckMinDistanceVariable({0, 0}, {0.1, 0.2}, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckMinDistanceVariable({0, 0}, {-1}, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MeasureCoverageVariableTest,
     AProbeIsCoveredByTheLargerOfItsAndTheSamples) {
  // One sample at the centre with radius 0.1. With r(probe) = 0.1 the disk
  // of 0.1 is covered (pi 0.01 of the unit square); with r(probe) = 0.3 the
  // disk of 0.3 is (pi 0.09).
  absl::StatusOr<Box> box = Box::Create(2, {0, 0, 0}, {1, 1, 1});
  ASSERT_TRUE(box.ok());
  const Region region = Region::FromBox(*box);
  for (double rp : {0.1, 0.3}) {
    absl::StatusOr<CoverageReport> coverage = MeasureCoverageVariable(
        {0.5, 0.5}, {0.1}, region, [&](const double*) { return rp; }, 200000,
        3);
    ASSERT_TRUE(coverage.ok());
    const double covered = 1 - coverage->uncovered_fraction();
    EXPECT_NEAR(covered, 3.14159265 * rp * rp, 0.01) << rp;
  }
  // And the sample's radius when it is the larger: r(probe) = 0.1 beside a
  // sample of 0.3 covers the disk of 0.3 (both cases above took the
  // probe's, so "the probe's alone" passed them).
  absl::StatusOr<CoverageReport> coverage = MeasureCoverageVariable(
      {0.5, 0.5}, {0.3}, region, [](const double*) { return 0.1; }, 200000, 3);
  ASSERT_TRUE(coverage.ok());
  EXPECT_NEAR(1 - coverage->uncovered_fraction(), 3.14159265 * 0.09, 0.01);
}

TEST(MeasureCoverageVariableTest, SkippedProbesAreNotCounted) {
  absl::StatusOr<Box> box = Box::Create(2, {0, 0, 0}, {1, 1, 1});
  ASSERT_TRUE(box.ok());
  absl::StatusOr<CoverageReport> coverage = MeasureCoverageVariable(
      {}, {}, Region::FromBox(*box), [](const double*) { return 0.1; }, 10000,
      3, [](const double* p) { return p[0] < 0.5; });
  ASSERT_TRUE(coverage.ok());
  EXPECT_NEAR(static_cast<double>(coverage->probes), 5000, 300);
  EXPECT_EQ(coverage->uncovered, coverage->probes);
}

}  // namespace
}  // namespace scatter::sampler
