// Sampler runs in regions other than a box: every method keeps its points
// inside, Poisson sets stay exact about the distance and maximal within the
// region, and disconnected parts fill too.

#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sampler/quality.h"
#include "sampler/region.h"
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
