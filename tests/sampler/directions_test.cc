#include "sampler/directions.h"

#include <array>
#include <cmath>
#include <cstddef>
#include <vector>

#include "gtest/gtest.h"

namespace scatter::sampler {
namespace {

double Dot(const std::array<double, 3>& a, const std::array<double, 3>& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

TEST(DirectionsTest, TwelveDirectionsAreTheIcosahedron) {
  const std::vector<std::array<double, 3>> d =
      SphereDirections(kIcosahedronDirections);
  ASSERT_EQ(d.size(), 12u);
  EXPECT_EQ(d[0], (std::array<double, 3>{0, 0, 1}));
  EXPECT_EQ(d[11], (std::array<double, 3>{0, 0, -1}));
  // Each vertex has 5 neighbours at cos = 1/sqrt(5) (63.4 degrees), 5 at
  // -1/sqrt(5) and its antipode; no pair is nearer than neighbours.
  const double neighbour = 1 / std::sqrt(5.0);
  double sum[3] = {0, 0, 0};
  for (std::size_t i = 0; i < d.size(); ++i) {
    EXPECT_NEAR(Dot(d[i], d[i]), 1, 1e-15) << i;
    int near = 0, far = 0, opposite = 0;
    for (std::size_t j = 0; j < d.size(); ++j) {
      if (j == i) continue;
      const double c = Dot(d[i], d[j]);
      EXPECT_LT(c, neighbour + 1e-12) << i << " " << j;
      near += std::abs(c - neighbour) < 1e-12;
      far += std::abs(c + neighbour) < 1e-12;
      opposite += std::abs(c + 1) < 1e-12;
    }
    EXPECT_EQ(near, 5) << i;
    EXPECT_EQ(far, 5) << i;
    EXPECT_EQ(opposite, 1) << i;
    for (int a = 0; a < 3; ++a) sum[a] += d[i][static_cast<std::size_t>(a)];
  }
  for (double s : sum) EXPECT_NEAR(s, 0, 1e-14);
  // Vertices 1-5 are the ring around +z, 6-10 the ring around -z.
  for (std::size_t i = 1; i <= 5; ++i) {
    EXPECT_NEAR(Dot(d[0], d[i]), neighbour, 1e-15) << i;
    EXPECT_NEAR(Dot(d[11], d[i + 5]), neighbour, 1e-15) << i + 5;
  }
}

TEST(DirectionsTest, OtherCountsSpreadOverTheSphere) {
  for (int k : {1, 6, 13, 24, 36}) {
    const std::vector<std::array<double, 3>> d = SphereDirections(k);
    ASSERT_EQ(d.size(), static_cast<std::size_t>(k));
    double sum[3] = {0, 0, 0};
    for (const auto& v : d) {
      EXPECT_NEAR(Dot(v, v), 1, 1e-14) << k;
      for (int a = 0; a < 3; ++a) sum[a] += v[static_cast<std::size_t>(a)];
    }
    // A Fibonacci set is balanced in z by construction and nearly so
    // around it: no direction is favoured by more than a few vectors' worth.
    if (k == 1) continue;
    EXPECT_NEAR(sum[2], 0, 1e-12) << k;
    EXPECT_LT(std::hypot(sum[0], sum[1]), 1.0) << k;
  }
}

TEST(DirectionsTest, CircleDirectionsAreEvenlyStepped) {
  const std::vector<std::array<double, 2>> d = CircleDirections(12);
  ASSERT_EQ(d.size(), 12u);
  const double step = std::cos(2 * 3.14159265358979323846 / 12);
  for (std::size_t i = 0; i < d.size(); ++i) {
    const auto& a = d[i];
    const auto& b = d[(i + 1) % d.size()];
    EXPECT_NEAR(a[0] * a[0] + a[1] * a[1], 1, 1e-15) << i;
    EXPECT_NEAR(a[0] * b[0] + a[1] * b[1], step, 1e-14) << i;
  }
  EXPECT_EQ(d[0], (std::array<double, 2>{1, 0}));
}

}  // namespace
}  // namespace scatter::sampler
