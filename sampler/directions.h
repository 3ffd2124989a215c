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

// The number of directions SphereDirections gives as the icosahedron.
inline constexpr int kIcosahedronDirections = 12;

// k unit vectors spread evenly over the sphere, as (x, y, z). For k = 12
// (dense packing's default) the vertices of the icosahedron, the one set of
// 12 that is even everywhere: vertex 0 is +z, then the ring of 5 around it
// (z = 1/sqrt(5)), the ring of 5 around -z, and -z last. Neighbouring
// vertices are 63.4 degrees apart, so at distance s from a centre they are
// 1.05 s apart: all 12 can be taken at once. Against the Fibonacci set of
// 12, whose nearest pairs are closer, a dense 3D run leaves about half the
// uncovered volume to gap filling, and makes 2 % more points (rho 0.827 ->
// 0.833) with 4 % fewer instructions (bench/README.md, "Icosahedra in
// dense 3D"). Any other k: a spherical Fibonacci lattice.
std::vector<std::array<double, 3>> SphereDirections(int k);

// Classic 2D candidates' directions (internal::UnitShellPoint2d): 2^12
// unit vectors at angles 2*pi*i/2^12, as (cos, sin) pairs, computed once.
inline constexpr int kShellDirectionBits = 12;
inline constexpr int kShellDirections = 1 << kShellDirectionBits;
using ShellDirectionTable = std::array<std::array<double, 2>, kShellDirections>;
const ShellDirectionTable& ShellDirections2d();

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_DIRECTIONS_H_
