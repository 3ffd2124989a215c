// Sampler runs in regions other than a box: every method keeps its points
// inside, Poisson sets stay exact about the distance and maximal within the
// region, and disconnected parts fill too.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "sampler/obstacles.h"
#include "sampler/quality.h"
#include "sampler/raster.h"
#include "sampler/region.h"
#include "sampler/rng.h"
#include "sampler/sampler.h"
#include "tests/sampler/point_set.h"
#include "tests/sampler/shapes.h"

namespace scatter::sampler {
namespace {

using test::Circle;
using test::Collect;
using test::Digest;
using test::PointSet;
using test::Square;
using test::Star;

struct RegionCase {
  std::string name;
  Region region;
  double radius;
};

// A disk, a square with a round lake, two islands far apart (the second
// must be found by the gap scan), and a ball in 3D.
std::vector<RegionCase> Cases() {
  return {
      {"circle", *Region::Circle(0.5, 0.5, 0.45), 0.01},
      {"lake",
       *Region::Polygons({Square(0, 0, 1, 1), Circle(0.5, 0.5, 0.3, 64)}),
       0.01},
      {"islands",
       *Region::Polygons(
           {Circle(0.15, 0.15, 0.1, 48), Circle(0.85, 0.8, 0.12, 48)}),
       0.01},
      {"sphere", *Region::Sphere({0.5, 0.5, 0.5}, 0.45), 0.05},
  };
}

PointSet RunIn(const Region& region, const SamplerOptions& options) {
  absl::StatusOr<Sampler> sampler = Sampler::Create(region, options);
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  if (!sampler.ok()) return PointSet();
  const PointSet points = Collect(*sampler);
  EXPECT_TRUE(points.status.ok()) << points.status;
  return points;
}

class SamplerRegionTest
    : public testing::TestWithParam<std::tuple<Method, int>> {
 protected:
  Method method() const { return std::get<0>(GetParam()); }
  RegionCase region_case() const { return Cases()[std::get<1>(GetParam())]; }
  SamplerOptions options() const {
    SamplerOptions o;
    o.method = method();
    o.radius = region_case().radius;
    o.seed = 11;
    return o;
  }
};

TEST_P(SamplerRegionTest, PointsStayInsideApartAndCoverTheRegion) {
  const RegionCase c = region_case();
  const PointSet points = RunIn(c.region, options());
  const int dims = c.region.dims();
  ASSERT_GT(points.size(), 50u) << c.name;
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_TRUE(c.region.Contains(&points.coords[i * dims]))
        << c.name << " point " << i;
  }
  absl::StatusOr<MinDistanceReport> spacing =
      CheckMinDistance(points.coords, dims, c.radius);
  ASSERT_TRUE(spacing.ok());
  EXPECT_EQ(spacing->violations, 0u) << c.name;
  // Probe density: 2e6 over the bounds (2D), 1e6 (3D); only probes inside
  // the region count.
  absl::StatusOr<CoverageReport> coverage = MeasureCoverage(
      points.coords, c.region, c.radius, dims == 2 ? 2000000 : 1000000, 77);
  ASSERT_TRUE(coverage.ok());
  EXPECT_GT(coverage->probes, 100000u);
  EXPECT_LE(coverage->uncovered_fraction(), 1e-5)
      << c.name << ": " << coverage->uncovered << " of " << coverage->probes;
}

TEST_P(SamplerRegionTest, SameSeedSamePoints) {
  const RegionCase c = region_case();
  EXPECT_EQ(Digest(RunIn(c.region, options())),
            Digest(RunIn(c.region, options())));
}

INSTANTIATE_TEST_SUITE_P(
    MethodsAndRegions, SamplerRegionTest,
    testing::Combine(testing::Values(Method::kPoissonDense,
                                     Method::kPoissonClassic),
                     testing::Range(0, 4)),
    [](const testing::TestParamInfo<std::tuple<Method, int>>& param) {
      return std::string(MethodName(std::get<0>(param.param))) + "_" +
             Cases()[std::get<1>(param.param)].name;
    });

TEST(SamplerRegionTest, BothIslandsGetTheirShare) {
  // Areas pi 0.1^2 and pi 0.12^2: the counts follow them (1 : 1.44).
  const Region islands = *Region::Polygons(
      {Circle(0.15, 0.15, 0.1, 48), Circle(0.85, 0.8, 0.12, 48)});
  SamplerOptions options;
  options.radius = 0.01;
  const PointSet points = RunIn(islands, options);
  std::size_t first = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    first += points.coords[2 * i] < 0.5;
  }
  const std::size_t second = points.size() - first;
  ASSERT_GT(first, 0u);
  const double ratio = static_cast<double>(second) / static_cast<double>(first);
  EXPECT_NEAR(ratio, 1.44, 0.15) << first << " and " << second;
}

// An island of 2 000 vertices with a lake of 200, 0.9 across, sampled at
// r = 0.01 around the origin and moved out to 1e9, where steps of the
// doubles are 1.2e-7 (the radius allows coordinates up to 2^43 r, 8.8e10).
// The polygon index's margin for rounding is a few of those steps there
// (it was half an index cell), and the runs must stay exact with it:
// every point inside and apart, the island covered (probe density 1.2e6
// over the bounds), and the count within 2 % of the one at the origin.
TEST(SamplerRegionTest, AFarPolygonIsFilledAsNearTheOrigin) {
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
    SamplerOptions options;
    options.method = method;
    options.radius = 0.01;
    options.seed = 11;
    std::size_t near = 0;
    for (const auto& [x, y] : {std::pair{0.0, 0.0}, std::pair{1e5, 1e5},
                               std::pair{-1e7, 1e7}, std::pair{1e9, -1e9}}) {
      const Region island = *Region::Polygons(
          {Star(x, y, 0.3, 0.45, 2000, 3), Star(x, y, 0.1, 0.15, 200, 4,
                                                /*clockwise=*/true)});
      const PointSet points = RunIn(island, options);
      const std::string where =
          absl::StrCat(MethodName(method), " at (", x, ", ", y, ")");
      ASSERT_GT(points.size(), 1000u) << where;
      if (near == 0) near = points.size();
      EXPECT_NEAR(static_cast<double>(points.size()), static_cast<double>(near),
                  0.02 * static_cast<double>(near))
          << where;
      for (std::size_t i = 0; i < points.size(); ++i) {
        ASSERT_TRUE(island.Contains(&points.coords[2 * i]))
            << where << ": point " << i;
      }
      absl::StatusOr<MinDistanceReport> spacing =
          CheckMinDistance(points.coords, 2, options.radius);
      ASSERT_TRUE(spacing.ok());
      EXPECT_EQ(spacing->violations, 0u) << where;
      absl::StatusOr<CoverageReport> coverage =
          MeasureCoverage(points.coords, island, options.radius, 1000000, 77);
      ASSERT_TRUE(coverage.ok());
      EXPECT_GT(coverage->probes, 300000u) << where;
      EXPECT_LE(coverage->uncovered_fraction(), 1e-5)
          << where << ": " << coverage->uncovered << " of " << coverage->probes;
    }
  }
}

// Regions much smaller than their bounds, over grids of 2 MiB and more:
// the constant-radius runs there are sparse (PoissonRun::MapNear), and
// fill the grid only near the region. The points are the same as when the
// runs filled all of it (the digests below are those of 62420a5, which
// did), and in builds without NDEBUG the rest of the grid is closed, so a
// read the near map misses crashes the test.
struct SparseCase {
  std::string name;
  Region region;
  double radius;
  std::uint64_t dense_digest;
  std::uint64_t classic_digest;
};

// A road across the map, 0.02 wide, at r = 0.002 (8 MB of grid); two
// islands in opposite corners at r = 0.003 (3.5 MB); a ball at r = 0.03
// (3.4 MB).
std::vector<SparseCase> SparseCases() {
  return {
      {"road",
       *Region::Polygons(
           {{{0, 0}, {0.02, 0}, {1, 0.98}, {1, 1}, {0.98, 1}, {0, 0.02}}}),
       0.002, 0xed3b17fcdd671797ULL, 0xa9b037af10caef73ULL},
      {"islands",
       *Region::Polygons(
           {Circle(0.15, 0.15, 0.1, 48), Circle(0.85, 0.8, 0.12, 48)}),
       0.003, 0x53c31da598817e79ULL, 0x541b9fd57bce2d70ULL},
      {"ball", *Region::Sphere({0.5, 0.5, 0.5}, 0.45), 0.03,
       0xa5092d21dda61e8fULL, 0xe10a8e0d0c44a612ULL},
  };
}

TEST(SamplerRegionTest, SparseRegionsGiveTheirPointsInsideApartAndCovered) {
  for (const SparseCase& c : SparseCases()) {
    for (Method method : {Method::kPoissonDense, Method::kPoissonClassic}) {
      SamplerOptions options;
      options.method = method;
      options.radius = c.radius;
      options.seed = 11;
      const std::string where = absl::StrCat(c.name, ", ", MethodName(method));
      const PointSet points = RunIn(c.region, options);
      const int dims = c.region.dims();
      ASSERT_GT(points.size(), 3000u) << where;
      for (std::size_t i = 0; i < points.size(); ++i) {
        ASSERT_TRUE(c.region.Contains(&points.coords[i * dims]))
            << where << ": point " << i;
      }
      absl::StatusOr<MinDistanceReport> spacing =
          CheckMinDistance(points.coords, dims, c.radius);
      ASSERT_TRUE(spacing.ok());
      EXPECT_EQ(spacing->violations, 0u) << where;
      // Probe density: 4e6 over the bounds (2D), 1e6 (3D); those inside
      // the region count.
      absl::StatusOr<CoverageReport> coverage = MeasureCoverage(
          points.coords, c.region, c.radius, dims == 2 ? 4000000 : 1000000, 77);
      ASSERT_TRUE(coverage.ok());
      EXPECT_GT(coverage->probes, 70000u) << where;
      EXPECT_LE(coverage->uncovered_fraction(), 1e-5)
          << where << ": " << coverage->uncovered << " of " << coverage->probes;
      const std::uint64_t want =
          method == Method::kPoissonDense ? c.dense_digest : c.classic_digest;
      EXPECT_EQ(Digest(points), want)
          << where << ": " << points.size() << " points, digest "
          << absl::StrFormat("0x%016xULL", Digest(points));
    }
  }
}

// This process's peak resident bytes (VmHWM), restarted from the current
// resident size first when `restart` (clear_refs); 0 where /proc cannot
// tell.
std::size_t PeakResidentBytes(bool restart) {
  if (restart) {
    std::FILE* clear = std::fopen("/proc/self/clear_refs", "w");
    if (clear == nullptr) return 0;
    const bool written = std::fputs("5", clear) >= 0;
    if (std::fclose(clear) != 0 || !written) return 0;
  }
  std::FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0;
  char line[256];
  std::size_t kib = 0;
  while (std::fgets(line, sizeof(line), status) != nullptr) {
    if (std::sscanf(line, "VmHWM: %zu kB", &kib) == 1) break;
  }
  std::fclose(status);
  return kib * 1024;
}

// A road 0.004 wide across [0, 2]^2 at r = 0.0005: the grid spans the
// bounds, 5 657^2 cells, 512 MB of coordinates and 96 MB of marks, which a
// run that filled it all (62420a5) touched whole: its peak grew by over
// 600 MB. A sparse run fills the grid near the road only, and its peak
// grows by about 115 MB (the taken marks, whose rows of 2.8 kB are each
// touched, are half of that).
TEST(SamplerRegionTest, ARoadAcrossAWideMapTouchesLittleOfItsGrid) {
  const Region road = *Region::Polygons(
      {{{0, 0}, {0.004, 0}, {2, 1.996}, {2, 2}, {1.996, 2}, {0, 0.004}}});
  SamplerOptions options;
  options.radius = 0.0005;
  const std::size_t before = PeakResidentBytes(/*restart=*/true);
  if (before == 0) GTEST_SKIP() << "no VmHWM in /proc/self/status";
  const PointSet points = RunIn(road, options);
  const std::size_t grown = PeakResidentBytes(/*restart=*/false) - before;
  // 2 sqrt(2) x 0.004 at rho 0.89: about 58 000 points.
  EXPECT_GT(points.size(), 50000u);
  EXPECT_LT(grown, std::size_t{256} << 20)
      << points.size() << " points, peak grown by " << grown << " bytes";
  std::printf("%zu points, peak resident bytes grown by %zu\n", points.size(),
              grown);
}

// The memory estimate counts the grid over the region's bounds; a region
// that is not its bounds is told that tiles take it part by part.
TEST(SamplerRegionTest, ARegionOverTheMemoryLimitIsPointedToTiles) {
  const Region road = *Region::Polygons(
      {{{0, 0}, {0.004, 0}, {2, 1.996}, {2, 2}, {1.996, 2}, {0, 0.004}}});
  SamplerOptions options;
  options.radius = 0.0005;
  options.max_memory_bytes = std::uint64_t{64} << 20;
  absl::StatusOr<Sampler> sampler = Sampler::Create(road, options);
  EXPECT_EQ(sampler.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(
      sampler.status().message(),
      "over the limit max_memory_bytes = 67108864 (the grid spans the "
      "region's bounds; a region much smaller than them, as a road or a "
      "river, can be sampled in tiles)"))
      << sampler.status();
  // A box is its bounds: nothing to add.
  sampler = Sampler::Create(Region::FromBox(road.bounds()), options);
  EXPECT_EQ(sampler.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(absl::StrContains(sampler.status().message(), "tiles"))
      << sampler.status();
}

TEST(SamplerRegionTest, UniformAndJitteredStayInside) {
  const Region lake =
      *Region::Polygons({Square(0, 0, 1, 1), Circle(0.5, 0.5, 0.3, 64)});
  SamplerOptions uniform;
  uniform.method = Method::kUniform;
  uniform.count = 5000;
  const PointSet u = RunIn(lake, uniform);
  EXPECT_EQ(u.size(), 5000u);
  SamplerOptions jittered;
  jittered.method = Method::kJitteredGrid;
  jittered.cell_size = 0.01;
  const PointSet j = RunIn(lake, jittered);
  // 10 000 cells, the lake takes pi 0.09 = 28% of them.
  EXPECT_NEAR(static_cast<double>(j.size()), 10000 * (1 - 0.2827), 150);
  for (const PointSet* set : {&u, &j}) {
    for (std::size_t i = 0; i < set->size(); ++i) {
      ASSERT_TRUE(lake.Contains(&set->coords[2 * i]));
    }
  }
}

// The jittered grid leaves out blocks of cells that miss the region, and
// makes the points it made visiting every cell: those of a run over the
// region's bounds that the region holds, in the same order. Over the bounds
// of two islands 10 000 apart (2.5e11 cells of 0.02) it visited them all,
// hours of work; now the stop predicate, asked every 4 096 cells or
// blocks, is asked a few hundred times.
TEST(SamplerRegionTest, AJitteredGridSkipsTheCellsThatMissTheRegion) {
  auto islands = [](double apart) {
    return *Region::Polygons(
        {{{0, 0}, {1, 0}, {0, 1}},
         {{apart, apart}, {apart - 1, apart}, {apart, apart - 1}}});
  };
  SamplerOptions options;
  options.method = Method::kJitteredGrid;
  options.cell_size = 0.02;
  const Region near = islands(20);
  const PointSet sparse = RunIn(near, options);
  const PointSet all = RunIn(Region::FromBox(near.bounds()), options);
  ASSERT_EQ(all.size(), 1000u * 1000u);
  std::vector<double> kept;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (near.Contains(&all.coords[2 * i])) {
      kept.insert(kept.end(), &all.coords[2 * i], &all.coords[2 * i + 2]);
    }
  }
  // Two triangles of area 1/2 in cells of 0.0004: about 2 500 points.
  EXPECT_GT(sparse.size(), 2300u);
  EXPECT_EQ(sparse.coords, kept);

  // (Past the bounds' 2.5e11 cells, as the server allows: it judges the
  // region's own.)
  options.max_points = std::uint64_t{1} << 40;
  absl::StatusOr<Sampler> far = Sampler::Create(islands(10000), options);
  ASSERT_TRUE(far.ok()) << far.status();
  int polls = 0;
  const PointSet far_points = Collect(*far, [&] { return ++polls > 100000; });
  ASSERT_TRUE(far_points.status.ok()) << far_points.status;
  EXPECT_LT(polls, 1000);
  EXPECT_NEAR(static_cast<double>(far_points.size()), 2500, 200);
}

// Uniform points in a region small in its bounds are drawn in the cells
// that meet it: two squares 10 000 apart (2e-8 of the bounds, where every
// point gave up after 2^24 draws, "no place found") get 5 000 points at
// once, spread as the areas are, 4 to 1 (a binomial's sigma here is 0.0057
// of the count).
TEST(SamplerRegionTest, UniformPointsInASmallPartOfTheBoundsComeAtOnce) {
  const Region squares =
      *Region::Polygons({Square(0, 0, 1, 1), Square(9998, 9998, 10000, 10000)});
  SamplerOptions options;
  options.method = Method::kUniform;
  options.count = 5000;
  absl::StatusOr<Sampler> sampler = Sampler::Create(squares, options);
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  int polls = 0;
  const PointSet points = Collect(*sampler, [&] { return ++polls > 1000; });
  ASSERT_TRUE(points.status.ok()) << points.status;
  ASSERT_EQ(points.size(), 5000u);
  std::size_t in_large = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_TRUE(squares.Contains(&points.coords[2 * i])) << "point " << i;
    in_large += points.coords[2 * i] > 5000;
  }
  EXPECT_NEAR(static_cast<double>(in_large) / 5000, 0.8, 0.02);
}

TEST(SamplerRegionTest, ABoxRegionGivesTheBoxRunsPoints) {
  const Box box = *Box::Create(2, {0, 0, 0}, {1, 1, 0});
  SamplerOptions options;
  options.radius = 0.02;
  absl::StatusOr<Sampler> from_box = Sampler::Create(box, options);
  ASSERT_TRUE(from_box.ok());
  EXPECT_EQ(Digest(Collect(*from_box)),
            Digest(RunIn(Region::FromBox(box), options)));
}

}  // namespace
}  // namespace scatter::sampler

namespace scatter::sampler {
namespace {

using test::Collect;
using test::PointSet;

// Obstacles: a few objects of different sizes, some reaching out of the
// box, and a ring of 200 small ones, so that the index keeps them in grids
// of their own (ObstacleIndex's levels: 0.1 and 0.15 are several times the
// cells 204 obstacles ask for).
std::vector<Obstacle> SomeObstacles(int dims) {
  std::vector<Obstacle> o = {{{0.3, 0.3, 0.5}, 0.1},
                             {{0.7, 0.6, 0.5}, 0.05},
                             {{0.5, 1.0, 0.5}, 0.15},
                             {{0.05, 0.9, 0.5}, 0}};
  for (int k = 0; k < 200; ++k) {
    const double t = 2 * test::kPi * k / 200;
    o.push_back(
        {{0.5 + 0.42 * std::cos(t), 0.5 + 0.42 * std::sin(t), 0.5}, 0.004});
  }
  if (dims == 2) {
    for (Obstacle& ob : o) ob.center[2] = 0;
  }
  return o;
}

// The clearance of the nearest obstacle minus the distance to it: > 0 means
// p is inside some obstacle's clearance. Long double, as an exact check.
long double Intrusion(const double* p, int dims,
                      const std::vector<Obstacle>& obstacles,
                      double footprint) {
  long double worst = -1e300L;
  for (const Obstacle& ob : obstacles) {
    long double d2 = 0;
    for (int a = 0; a < dims; ++a) {
      const long double d = static_cast<long double>(p[a]) -
                            static_cast<long double>(ob.center[a]);
      d2 += d * d;
    }
    const long double c = static_cast<long double>(ob.radius) + footprint;
    worst = std::max(worst, c - std::sqrt(d2));
  }
  return worst;
}

class ObstacleTest : public testing::TestWithParam<std::tuple<Method, int>> {};

TEST_P(ObstacleTest, PointsKeepClearAndStillFillTheRest) {
  const Method method = std::get<0>(GetParam());
  const int dims = std::get<1>(GetParam());
  SamplerOptions options;
  options.method = method;
  options.radius = dims == 2 ? 0.01 : 0.05;
  options.cell_size = options.radius;
  options.count = 3000;
  options.obstacles = SomeObstacles(dims);
  options.seed = 5;
  const Box box = *Box::Create(dims, {0, 0, 0}, {1, 1, 1});
  absl::StatusOr<Sampler> sampler = Sampler::Create(box, options);
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  const PointSet points = Collect(*sampler);
  ASSERT_TRUE(points.status.ok()) << points.status;
  ASSERT_GT(points.size(), 100u);
  const double footprint = sampler->options().footprint;
  if (method == Method::kUniform) {
    EXPECT_EQ(footprint, 0);
  } else {
    EXPECT_EQ(footprint, options.radius / 2);  // The default.
  }
  for (std::size_t i = 0; i < points.size(); ++i) {
    ASSERT_LE(
        Intrusion(&points.coords[i * dims], dims, options.obstacles, footprint),
        0)
        << "point " << i;
  }
  if (method == Method::kUniform || method == Method::kJitteredGrid) return;
  // Maximal outside the obstacles: probes clear of every obstacle's
  // clearance must all be covered (1e6 probes in the unit box, those in a
  // clearance skipped).
  CounterRng rng(123);
  std::vector<double> kept;
  std::uint64_t probes = 0, uncovered = 0;
  const double r2 = options.radius * options.radius;
  // A simple bucket grid of the points, independent of the sampler's.
  const int n = static_cast<int>(1 / options.radius);
  std::vector<std::vector<std::size_t>> buckets(
      static_cast<std::size_t>(std::pow(n, dims)));
  auto bucket = [&](const double* p) {
    std::size_t b = 0;
    for (int a = dims - 1; a >= 0; --a) {
      b = b * n + static_cast<std::size_t>(
                      std::clamp(static_cast<int>(p[a] * n), 0, n - 1));
    }
    return b;
  };
  for (std::size_t i = 0; i < points.size(); ++i) {
    buckets[bucket(&points.coords[i * dims])].push_back(i);
  }
  for (int k = 0; k < 1000000; ++k) {
    double p[3] = {rng.Uniform01(), rng.Uniform01(), rng.Uniform01()};
    if (Intrusion(p, dims, options.obstacles, footprint) > -1e-12L) continue;
    ++probes;
    bool covered = false;
    int c[3] = {0, 0, 0};
    for (int a = 0; a < dims; ++a) c[a] = static_cast<int>(p[a] * n);
    for (int dz = dims == 3 ? -1 : 0; dz <= (dims == 3 ? 1 : 0) && !covered;
         ++dz) {
      for (int dy = -1; dy <= 1 && !covered; ++dy) {
        for (int dx = -1; dx <= 1 && !covered; ++dx) {
          const int q[3] = {c[0] + dx, c[1] + dy, c[2] + dz};
          bool in = true;
          for (int a = 0; a < dims; ++a) in &= q[a] >= 0 && q[a] < n;
          if (!in) continue;
          std::size_t b = 0;
          for (int a = dims - 1; a >= 0; --a) b = b * n + q[a];
          for (std::size_t i : buckets[b]) {
            double d2 = 0;
            for (int a = 0; a < dims; ++a) {
              const double d = p[a] - points.coords[i * dims + a];
              d2 += d * d;
            }
            if (d2 < r2) {
              covered = true;
              break;
            }
          }
        }
      }
    }
    uncovered += !covered;
  }
  EXPECT_GT(probes, 500000u);
  EXPECT_LE(static_cast<double>(uncovered) / static_cast<double>(probes), 1e-5)
      << uncovered << " of " << probes;
}

INSTANTIATE_TEST_SUITE_P(
    Methods, ObstacleTest,
    testing::Combine(testing::Values(Method::kPoissonDense,
                                     Method::kPoissonClassic,
                                     Method::kJitteredGrid, Method::kUniform),
                     testing::Values(2, 3)),
    [](const testing::TestParamInfo<std::tuple<Method, int>>& param) {
      return std::string(MethodName(std::get<0>(param.param))) + "_" +
             std::to_string(std::get<1>(param.param)) + "d";
    });

TEST(ObstacleTest, BadObstaclesAreInvalidArgument) {
  const Box box = *Box::Create(2, {0, 0, 0}, {1, 1, 0});
  SamplerOptions options;
  options.radius = 0.1;
  options.obstacles = {{{0.5, 0.5, 0}, 0.1}, {{0.2, 0.2, 0}, -1}};
  absl::StatusOr<Sampler> negative = Sampler::Create(box, options);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(negative.status().message().find("obstacles[1].radius"),
            std::string::npos)
      << negative.status();
  options.obstacles = {{{std::nan(""), 0.2, 0}, 1}};
  EXPECT_EQ(Sampler::Create(box, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.obstacles = {};
  options.footprint = -0.5;
  EXPECT_EQ(Sampler::Create(box, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.footprint = 0;
  for (const bool same_layer : {true, false}) {
    Obstacle scheduled{{0.5, 0.5, 0}, 0.1};
    scheduled.same_layer = same_layer;
    scheduled.wake_generation = same_layer ? -2 : 3;
    options.obstacles = {scheduled};
    absl::StatusOr<Sampler> bad = Sampler::Create(box, options);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(bad.status().message().find("obstacles[0].wake_generation"),
              std::string::npos)
        << bad.status();
  }
}

// An obstacle that cannot reach the region is left out of the index. One
// far away stretched the index's grid over the distance and crowded the
// others into a few cells: a layered run (whose earlier layers' points are
// obstacles) with one obstacle 1e5 away took 5 times as long, 1e9 away
// 100 times, for the same points.
TEST(ObstacleTest, ObstaclesThatCannotReachTheRegionAreLeftOutOfTheIndex) {
  const Box area = *Box::Create(2, {0, 0, 0}, {100, 100, 0});
  const Obstacle near{{5, 5, 0}, 1};
  const Obstacle far{{1e9, 0, 0}, 1};
  // Outside, but its clearance (1 + footprint 1) reaches in.
  const Obstacle reaching{{101.5, 50, 0}, 1};
  const internal::ObstacleIndex only_far({far}, 1, 2, 0, 0, 0, nullptr, &area);
  EXPECT_TRUE(only_far.empty());
  EXPECT_FALSE(internal::ObstacleIndex({far}, 1, 2).empty());
  const internal::ObstacleIndex all({near, far, reaching}, 1, 2);
  const internal::ObstacleIndex kept({near, far, reaching}, 1, 2, 0, 0, 0,
                                     nullptr, &area);
  ASSERT_FALSE(kept.empty());
  CounterRng rng(7);
  int too_close = 0;
  for (int i = 0; i < 100000; ++i) {
    // Near the two obstacles that reach the area half the time.
    const double p[3] = {
        i % 2 == 0 ? 100 * rng.Uniform01() : 97 + 3 * rng.Uniform01(),
        i % 4 == 1 ? 48 + 4 * rng.Uniform01() : 100 * rng.Uniform01(), 0};
    ASSERT_EQ(kept.TooClose(p), all.TooClose(p)) << p[0] << " " << p[1];
    too_close += kept.TooClose(p);
  }
  EXPECT_GT(too_close, 1000);
  // And a run with the far obstacle gives the points it gives without it.
  SamplerOptions options;
  options.radius = 1;
  options.seed = 3;
  options.obstacles = {near};
  const PointSet without = Collect(*Sampler::Create(area, options));
  options.obstacles = {near, far};
  const PointSet with = Collect(*Sampler::Create(area, options));
  ASSERT_TRUE(without.status.ok() && with.status.ok());
  EXPECT_GT(without.size(), 3000u);
  EXPECT_EQ(Digest(with), Digest(without));
}

// Same-layer points on a wake schedule: growth starts from those due first
// and the others wake when it has gone their number of generations. In a
// strip 120 r long with a column of points at each end, the two fronts meet
// in the middle when both wake at once, and farther from the side that
// waits when one does. Where they meet shows in the order points come
// out: there the last ones of the growth (the gap fill adds a few after).
TEST(ObstacleTest, ScheduledSameLayerPointsChooseWhereFrontsMeet) {
  const double length = 120, width = 12;
  const Box box = *Box::Create(2, {0, 0, 0}, {length, width, 0});
  // A uniform density raster makes the variable-radius engine run.
  std::vector<std::uint8_t> one(4);
  const float full = 1;
  std::memcpy(one.data(), &full, 4);
  const auto raster = std::make_shared<const Raster>(*Raster::FromRaw(
      RasterFormat::kF32, 1, 1, one, RasterRect{0, 0, length, width}, 1 << 20));
  for (const bool variable : {false, true}) {
    for (const Method method :
         {Method::kPoissonDense, Method::kPoissonClassic}) {
      SCOPED_TRACE(std::string(MethodName(method)) +
                   (variable ? " variable" : " constant"));
      // Where the fronts meet: the 10 r bin whose points came out last on
      // average.
      auto meeting = [&](std::int32_t right_wake) {
        SamplerOptions o;
        o.method = method;
        o.seed = 8;
        o.radius = 1;
        if (variable) {
          o.density = raster;
          o.radius_min = 1;
          o.radius_max = 1;
        }
        for (int j = 0; j < 11; ++j) {
          for (const double x : {0.5, length - 0.5}) {
            Obstacle ob{{x, 0.5 + 1.05 * j, 0}, 1};
            ob.same_layer = true;
            ob.wake_generation = x < 1 ? 0 : right_wake;
            o.obstacles.push_back(ob);
          }
        }
        absl::StatusOr<Sampler> s = Sampler::Create(box, o);
        EXPECT_TRUE(s.ok()) << s.status();
        const PointSet points = Collect(*s);
        EXPECT_GT(points.size(), 900u);
        absl::StatusOr<MinDistanceReport> md =
            CheckMinDistance(points.coords, 2, 1);
        EXPECT_TRUE(md.ok() && md->violations == 0);
        std::vector<double> order(12, 0), count(12, 0);
        for (std::size_t i = 0; i < points.size(); ++i) {
          const int bin = static_cast<int>(points.coords[2 * i] / 10);
          order[bin] += static_cast<double>(i);
          count[bin] += 1;
        }
        int last = 0;
        for (int b = 0; b < 12; ++b) {
          if (order[b] / count[b] > order[last] / count[last]) last = b;
        }
        return 10 * last + 5;
      };
      const int together = meeting(0);
      EXPECT_GE(together, 40);
      EXPECT_LE(together, 80);
      // Waiting 40 generations moves the meeting 20 fronts' steps (19 r
      // dense, 32 r classic) towards the side that waits.
      const int late_right = meeting(40);
      EXPECT_GE(late_right, together + 10);
    }
  }
}

}  // namespace
}  // namespace scatter::sampler

namespace scatter::sampler {
namespace {

// A 16 x 16 mask over the unit square, bright (1) left of x = 0.5, dark (0)
// right of it; bilinear, it crosses 0.5 at x = 0.5.
std::shared_ptr<const Raster> HalfMask() {
  std::vector<std::uint8_t> bytes(16 * 16);
  for (int j = 0; j < 16; ++j) {
    for (int i = 0; i < 16; ++i) bytes[j * 16 + i] = i < 8 ? 255 : 0;
  }
  return std::make_shared<const Raster>(*Raster::FromRaw(
      RasterFormat::kU8, 16, 16, bytes, {0, 0, 1, 1}, 1 << 20));
}

TEST(MaskTest, PointsStayWhereTheMaskIsBrightAndFillIt) {
  const Box box = *Box::Create(2, {0, 0, 0}, {1, 1, 0});
  const Region masked = *Region::FromBox(box).Masked(HalfMask(), 0.5);
  EXPECT_FALSE(masked.IsBox());
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic,
                        Method::kJitteredGrid, Method::kUniform}) {
    SamplerOptions options;
    options.method = method;
    options.radius = 0.01;
    options.cell_size = 0.01;
    options.count = 2000;
    const PointSet points = Collect(*Sampler::Create(masked, options));
    ASSERT_TRUE(points.status.ok()) << points.status;
    ASSERT_GT(points.size(), 500u) << MethodName(method);
    for (std::size_t i = 0; i < points.size(); ++i) {
      ASSERT_LE(points.coords[2 * i], 0.5) << MethodName(method);
    }
    if (method == Method::kPoissonDense || method == Method::kPoissonClassic) {
      // 1e6 probes over the square; those on the bright half must be
      // covered.
      absl::StatusOr<CoverageReport> coverage =
          MeasureCoverage(points.coords, masked, 0.01, 1000000, 8);
      ASSERT_TRUE(coverage.ok());
      EXPECT_GT(coverage->probes, 450000u);
      EXPECT_LE(coverage->uncovered_fraction(), 1e-5)
          << MethodName(method) << ": " << coverage->uncovered;
    }
  }
}

// A sharp 2 x 2 mask over [0, 100]^2, dark on the left and bright on the
// right: bilinear, it rises from 0 at x = 25 to 1 at x = 75 and crosses
// 0.5 at x = 50. Small boxes away from x = 50 are inside or outside, not
// partial (the pixels alone say 0 to 1 for any box: before, every such
// box was partial, and a gap search went to its deepest level over the
// whole square: 4 422 points took 8 s), and whatever Classify says is
// certain: every probe of an inside box is in the region, none of an
// outside one.
TEST(MaskTest, SmallBoxesAcrossASharpMaskAreClassifiedByTheInterpolation) {
  const std::vector<std::uint8_t> bytes = {0, 255, 0, 255};
  const auto mask = std::make_shared<const Raster>(*Raster::FromRaw(
      RasterFormat::kU8, 2, 2, bytes, {0, 0, 100, 100}, 1 << 20));
  const Region region =
      *Region::FromBox(*Box::Create(2, {0, 0, 0}, {100, 100, 0}))
           .Masked(mask, 0.5);
  auto classify = [&](double x0, double y0, double x1, double y1) {
    const double lo[2] = {x0, y0}, hi[2] = {x1, y1};
    return region.Classify(lo, hi);
  };
  EXPECT_EQ(classify(10, 10, 11, 11), Region::Overlap::kOutside);
  EXPECT_EQ(classify(48, 70, 49.9, 71), Region::Overlap::kOutside);
  EXPECT_EQ(classify(60, 20, 61, 21), Region::Overlap::kInside);
  EXPECT_EQ(classify(50.1, 90, 52, 92), Region::Overlap::kInside);
  EXPECT_EQ(classify(49.5, 40, 50.5, 41), Region::Overlap::kPartial);
  // Boxes up to 2 wide anywhere, 1 000 probes each.
  CounterRng rng(0x5ca77e4);
  int certain = 0;
  for (int k = 0; k < 2000; ++k) {
    const double x0 = rng.Uniform01() * 98, y0 = rng.Uniform01() * 98;
    const double w = rng.Uniform01() * 2, h = rng.Uniform01() * 2;
    const Region::Overlap overlap = classify(x0, y0, x0 + w, y0 + h);
    if (overlap == Region::Overlap::kPartial) continue;
    ++certain;
    for (int i = 0; i < 1000; ++i) {
      const double p[2] = {x0 + rng.Uniform01() * w, y0 + rng.Uniform01() * h};
      ASSERT_EQ(region.Contains(p), overlap == Region::Overlap::kInside)
          << "box (" << x0 << ", " << y0 << ") + (" << w << ", " << h
          << "), probe (" << p[0] << ", " << p[1] << ")";
    }
  }
  // All but the boxes that x = 50 crosses (about 1 %).
  EXPECT_GT(certain, 1800);
}

// A box over more pixels than Raster::Bounds reads (64) is outside where the
// mask is dark throughout it, as the block levels tell; it was partial,
// and the server's point estimate counted every such cell as unmasked.
// Certain as ever: no probe of an outside box is in the region.
TEST(MaskTest, ABoxOverManyDarkPixelsIsOutside) {
  std::vector<std::uint8_t> bytes(1000 * 1000, 0);
  for (int j = 400; j < 600; ++j) {
    std::fill_n(bytes.begin() + j * 1000 + 400, 200, std::uint8_t{255});
  }
  const auto mask = std::make_shared<const Raster>(*Raster::FromRaw(
      RasterFormat::kU8, 1000, 1000, bytes, {0, 0, 1, 1}, 1 << 23));
  const Region region =
      *Region::FromBox(*Box::Create(2, {0, 0, 0}, {1, 1, 0})).Masked(mask, 0.5);
  auto classify = [&](double x0, double y0, double x1, double y1) {
    const double lo[2] = {x0, y0}, hi[2] = {x1, y1};
    return region.Classify(lo, hi);
  };
  // 21 x 21 and 101 x 101 pixels (Greatest reads blocks up to twice as
  // wide, so a box must keep that far from the bright square).
  EXPECT_EQ(classify(0.05, 0.05, 0.07, 0.07), Region::Overlap::kOutside);
  EXPECT_EQ(classify(0.8, 0.1, 0.9, 0.2), Region::Overlap::kOutside);
  EXPECT_EQ(classify(0.35, 0.35, 0.45, 0.45), Region::Overlap::kPartial);
  CounterRng rng(0xda2c);
  int outside = 0;
  for (int k = 0; k < 500; ++k) {
    const double x0 = rng.Uniform01() * 0.9, y0 = rng.Uniform01() * 0.9;
    const double w = 0.02 + rng.Uniform01() * 0.08;
    if (classify(x0, y0, x0 + w, y0 + w) != Region::Overlap::kOutside) {
      continue;
    }
    ++outside;
    for (int i = 0; i < 200; ++i) {
      const double p[2] = {x0 + rng.Uniform01() * w, y0 + rng.Uniform01() * w};
      ASSERT_FALSE(region.Contains(p))
          << "box (" << x0 << ", " << y0 << ") + " << w;
    }
  }
  // Away from the bright square and its blocks: a third or so.
  EXPECT_GT(outside, 100);
}

// Nothing to fill: a region whose mask is dark over all of its bounds, or
// whose bounds lie inside one obstacle's clearance, gives no point and
// ends before any grid is made or scanned: the stop predicate, which a run
// polls while it fills its grid, is never asked. (Before, a 5 000 x 5 000
// box under a dark mask took 4 s to give no point.)
TEST(MaskTest, NothingToFillEndsBeforeAnyGrid) {
  const std::vector<std::uint8_t> dark = {0, 0, 0, 0};
  const auto mask = std::make_shared<const Raster>(*Raster::FromRaw(
      RasterFormat::kU8, 2, 2, dark, {0, 0, 1000, 1000}, 1 << 20));
  const Region box =
      Region::FromBox(*Box::Create(2, {0, 0, 0}, {1000, 1000, 0}));
  const Region masked = *box.Masked(mask, 0.5);
  for (Method method : {Method::kPoissonDense, Method::kPoissonClassic,
                        Method::kJitteredGrid}) {
    for (bool obstacle : {false, true}) {
      SamplerOptions options;
      options.method = method;
      options.radius = 1;
      options.cell_size = 1;
      if (obstacle) options.obstacles.push_back({{500, 500, 0}, 800});
      absl::StatusOr<Sampler> sampler =
          Sampler::Create(obstacle ? box : masked, options);
      ASSERT_TRUE(sampler.ok()) << sampler.status();
      int polls = 0;
      const test::PointSet points = test::Collect(*sampler, [&] {
        ++polls;
        return false;
      });
      EXPECT_TRUE(points.status.ok()) << points.status;
      EXPECT_EQ(points.size(), 0u) << MethodName(method);
      EXPECT_EQ(polls, 0) << MethodName(method)
                          << (obstacle ? ", obstacle" : "");
    }
  }
  // The uniform method promises its count, and still says there is no
  // room for it.
  SamplerOptions uniform;
  uniform.method = Method::kUniform;
  uniform.count = 10;
  absl::StatusOr<Sampler> none = Sampler::Create(masked, uniform);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(test::Collect(*none).status.code(),
            absl::StatusCode::kInvalidArgument);
  // A mask bright somewhere still fills what it leaves.
  const std::vector<std::uint8_t> corner = {0, 0, 0, 255};
  const auto some = std::make_shared<const Raster>(*Raster::FromRaw(
      RasterFormat::kU8, 2, 2, corner, {0, 0, 1000, 1000}, 1 << 20));
  SamplerOptions options;
  options.radius = 10;
  absl::StatusOr<Sampler> sampler =
      Sampler::Create(*box.Masked(some, 0.5), options);
  ASSERT_TRUE(sampler.ok());
  const test::PointSet points = test::Collect(*sampler);
  ASSERT_TRUE(points.status.ok()) << points.status;
  EXPECT_GT(points.size(), 100u);
}

// A 4 x 4 u8 mask of one value over the unit square.
std::shared_ptr<const Raster> FlatMask(std::uint8_t value) {
  const std::vector<std::uint8_t> bytes(4 * 4, value);
  return std::make_shared<const Raster>(
      *Raster::FromRaw(RasterFormat::kU8, 4, 4, bytes, {0, 0, 1, 1}, 1 << 20));
}

// The points of a jittered grid of cell 0.02 over `region`.
PointSet JitteredPoints(const Region& region) {
  SamplerOptions options;
  options.method = Method::kJitteredGrid;
  options.cell_size = 0.02;
  return Collect(*Sampler::Create(region, options));
}

// The rules at the mask's ends, which the mutation review found no test
// held: a place counts when the mask's value there is >= the threshold
// (so threshold 0 keeps a black mask's whole rectangle, and a pixel at
// the threshold, as the float the mask holds, is kept), threshold 1 is
// allowed and keeps only white, and nothing outside the mask's rectangle
// is kept, whatever its edge pixels say.
TEST(MaskTest, ThresholdEndsAndTheRectangleBound) {
  const Box unit = *Box::Create(2, {0, 0, 0}, {1, 1, 0});
  const Region square = Region::FromBox(unit);
  const PointSet all = JitteredPoints(square);
  ASSERT_TRUE(all.status.ok());
  ASSERT_EQ(all.size(), 2500u);
  {
    SCOPED_TRACE("black mask, threshold 0");
    const PointSet kept = JitteredPoints(*square.Masked(FlatMask(0), 0));
    ASSERT_TRUE(kept.status.ok());
    EXPECT_EQ(kept.coords, all.coords);
  }
  {
    SCOPED_TRACE("white mask, threshold 1");
    const absl::StatusOr<Region> white = square.Masked(FlatMask(255), 1);
    ASSERT_TRUE(white.ok()) << white.status();
    const PointSet kept = JitteredPoints(*white);
    ASSERT_TRUE(kept.status.ok());
    EXPECT_EQ(kept.coords, all.coords);
    const PointSet none = JitteredPoints(*square.Masked(FlatMask(254), 1));
    ASSERT_TRUE(none.status.ok());
    EXPECT_EQ(none.size(), 0u);
  }
  {
    SCOPED_TRACE("a pixel at the threshold");
    const double held = static_cast<double>(static_cast<float>(128 / 255.0));
    const PointSet at = JitteredPoints(*square.Masked(FlatMask(128), held));
    ASSERT_TRUE(at.status.ok());
    EXPECT_EQ(at.coords, all.coords);
    const PointSet above = JitteredPoints(
        *square.Masked(FlatMask(128), std::nextafter(held, 1.0)));
    ASSERT_TRUE(above.status.ok());
    EXPECT_EQ(above.size(), 0u);
  }
  {
    SCOPED_TRACE("a white mask over the left half of a 2 x 1 box");
    const Region wide = *Region::FromBox(*Box::Create(2, {0, 0, 0}, {2, 1, 0}))
                             .Masked(FlatMask(255), 0.5);
    const PointSet jittered = JitteredPoints(wide);
    ASSERT_TRUE(jittered.status.ok());
    EXPECT_EQ(jittered.size(), 2500u);
    SamplerOptions options;
    options.radius = 0.02;
    const PointSet dense = Collect(*Sampler::Create(wide, options));
    ASSERT_TRUE(dense.status.ok());
    ASSERT_GT(dense.size(), 1000u);
    for (const PointSet* points : {&jittered, &dense}) {
      for (std::size_t i = 0; i < points->size(); ++i) {
        ASSERT_LE(points->coords[2 * i], 1.0);
      }
    }
  }
}

TEST(MaskTest, BadMaskIsInvalidArgument) {
  const Region box = Region::FromBox(*Box::Create(2, {0, 0, 0}, {1, 1, 0}));
  EXPECT_EQ(box.Masked(HalfMask(), 1.5).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(box.Masked(nullptr, 0.5).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace scatter::sampler
