#ifndef SCATTER_TESTS_SAMPLER_SHAPES_H_
#define SCATTER_TESTS_SAMPLER_SHAPES_H_

// Rings for region tests and benchmarks. libm's sin/cos are fine here: the
// shapes are inputs, not sampler output.

#include <cmath>
#include <cstdint>

#include "sampler/region.h"
#include "sampler/rng.h"

namespace scatter::test {

inline constexpr double kPi = 3.14159265358979323846;

inline sampler::Ring Square(double x0, double y0, double x1, double y1) {
  return {{x0, y0}, {x1, y0}, {x1, y1}, {x0, y1}};
}

// A regular n-gon of radius r around (cx, cy), counter-clockwise.
inline sampler::Ring Circle(double cx, double cy, double r, int n) {
  sampler::Ring ring;
  for (int k = 0; k < n; ++k) {
    const double t = 2 * kPi * k / n;
    ring.push_back({cx + r * std::cos(t), cy + r * std::sin(t)});
  }
  return ring;
}

// A star-shaped ring around (cx, cy) with n vertices whose radius wobbles
// between r_min and r_max, counter-clockwise unless `clockwise` (holes for
// the nonzero rule).
inline sampler::Ring Star(double cx, double cy, double r_min, double r_max,
                          int n, std::uint64_t seed, bool clockwise = false) {
  sampler::Ring ring;
  sampler::CounterRng rng(seed);
  for (int k = 0; k < n; ++k) {
    const double t = 2 * kPi * k / n * (clockwise ? -1 : 1);
    const double r = r_min + (r_max - r_min) * rng.Uniform01();
    ring.push_back({cx + r * std::cos(t), cy + r * std::sin(t)});
  }
  return ring;
}

}  // namespace scatter::test

#endif  // SCATTER_TESTS_SAMPLER_SHAPES_H_
