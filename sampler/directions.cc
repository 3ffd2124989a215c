#include "sampler/directions.h"

#include <cassert>
#include <cmath>

namespace scatter::sampler {
namespace {

constexpr double kPi = 3.14159265358979323846;

// Taylor series on [0, pi/4], where 12 terms are far below an ulp.
std::array<double, 2> CosSinSmall(double a) {
  const double a2 = a * a;
  double c = 1;
  double s = 1;
  double term_c = 1;
  double term_s = 1;
  for (int n = 1; n <= 12; ++n) {
    term_c *= -a2 / static_cast<double>((2 * n - 1) * (2 * n));
    term_s *= -a2 / static_cast<double>((2 * n) * (2 * n + 1));
    c += term_c;
    s += term_s;
  }
  return {c, s * a};
}

}  // namespace

std::array<double, 2> PortableCosSin(double turns) {
  assert(turns >= 0 && turns < 1);
  // Reduce to an octant: turns * 8 = octant + fraction.
  const double t8 = turns * 8;
  int octant = static_cast<int>(t8);
  double f = t8 - octant;  // In [0, 1): position inside the octant.
  if (octant > 7) octant = 7;
  // Within odd octants measure from the far end so the series argument
  // stays in [0, pi/4].
  const bool mirrored = (octant & 1) != 0;
  const double a = (mirrored ? 1 - f : f) * (kPi / 4);
  const std::array<double, 2> cs = CosSinSmall(a);
  // Angle = octant*pi/4 + f*pi/4. Map back with the symmetries of the unit
  // circle: first quadrant is octants 0 (c, s) and 1 (s, c).
  double c = mirrored ? cs[1] : cs[0];
  double s = mirrored ? cs[0] : cs[1];
  switch (octant / 2) {
    case 0:
      return {c, s};
    case 1:
      return {-s, c};
    case 2:
      return {-c, -s};
    default:
      return {s, -c};
  }
}

std::vector<std::array<double, 2>> CircleDirections(int k) {
  std::vector<std::array<double, 2>> dirs;
  dirs.reserve(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    dirs.push_back(
        PortableCosSin(static_cast<double>(i) / static_cast<double>(k)));
  }
  return dirs;
}

const ShellDirectionTable& ShellDirections2d() {
  static const ShellDirectionTable* const table = [] {
    auto* t = new ShellDirectionTable;
    for (int i = 0; i < kShellDirections; ++i) {
      (*t)[static_cast<std::size_t>(i)] = PortableCosSin(
          static_cast<double>(i) / static_cast<double>(kShellDirections));
    }
    return t;
  }();
  return *table;
}

std::vector<std::array<double, 3>> SphereDirections(int k) {
  if (k == kIcosahedronDirections) {
    // The rings' angles are multiples of 36 degrees, whose cosines and
    // sines are square roots: cos 36 = (1 + sqrt 5) / 4, cos 72 =
    // (sqrt 5 - 1) / 4, sin 36 = sqrt(10 - 2 sqrt 5) / 4, sin 72 =
    // sqrt(10 + 2 sqrt 5) / 4. Angle 36 m for m = 0..9, even m on the
    // upper ring and odd m on the lower.
    const double s5 = std::sqrt(5.0);
    const double c36 = (1 + s5) / 4, c72 = (s5 - 1) / 4;
    const double s36 = std::sqrt(10 - 2 * s5) / 4;
    const double s72 = std::sqrt(10 + 2 * s5) / 4;
    const std::array<double, 10> cos_m = {1,  c36,  c72,  -c72, -c36,
                                          -1, -c36, -c72, c72,  c36};
    const std::array<double, 10> sin_m = {0, s36,  s72,  s72,  s36,
                                          0, -s36, -s72, -s72, -s36};
    const double z = 1 / s5;   // Height of the rings.
    const double rho = 2 * z;  // Their radius: z^2 + rho^2 = 1.
    std::vector<std::array<double, 3>> dirs;
    dirs.reserve(12);
    dirs.push_back({0, 0, 1});
    for (int m = 0; m < 10; m += 2) {
      dirs.push_back({rho * cos_m[m], rho * sin_m[m], z});
    }
    for (int m = 1; m < 10; m += 2) {
      dirs.push_back({rho * cos_m[m], rho * sin_m[m], -z});
    }
    dirs.push_back({0, 0, -1});
    return dirs;
  }
  // The golden angle in turns: 2 - phi = (3 - sqrt(5)) / 2.
  const double golden_turns = (3 - std::sqrt(5.0)) / 2;
  std::vector<std::array<double, 3>> dirs;
  dirs.reserve(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) {
    const double z = 1 - (2 * static_cast<double>(i) + 1) / k;
    const double rho = std::sqrt(1 - z * z);
    double turns = static_cast<double>(i) * golden_turns;
    turns -= std::floor(turns);
    const std::array<double, 2> cs = PortableCosSin(turns);
    dirs.push_back({rho * cs[0], rho * cs[1], z});
  }
  return dirs;
}

}  // namespace scatter::sampler
