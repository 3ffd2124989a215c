#ifndef SCATTER_SAMPLER_DIRECTIONS_H_
#define SCATTER_SAMPLER_DIRECTIONS_H_

// Constant direction tables for dense packing, computed with +, x, / and
// sqrt only. libm's sin and cos differ between libraries and versions; these
// give the same bits everywhere (IEEE arithmetic, no contraction).

#include <array>
#include <vector>

namespace scatter::sampler {

// (cos, sin) of 2*pi*turns, for turns in [0, 1), by argument reduction to
// [0, pi/4] and Taylor series. Accurate to a few ulp; exact reproducibility,
// not the last ulp, is the point.
std::array<double, 2> PortableCosSin(double turns);

// k unit vectors at angles 2*pi*i/k, i = 0..k-1, as (cos, sin) pairs.
std::vector<std::array<double, 2>> CircleDirections(int k);

// k unit vectors spread evenly over the sphere (a spherical Fibonacci
// lattice), as (x, y, z).
std::vector<std::array<double, 3>> SphereDirections(int k);

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_DIRECTIONS_H_
