#ifndef SCATTER_SAMPLER_QUALITY_H_
#define SCATTER_SAMPLER_QUALITY_H_

// Quality measures of DESIGN.md, computed from a finished point set with
// their own simple spatial hash, independent of the sampler's grid, so tests
// and reports check the sampler rather than repeat it.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/box.h"
#include "sampler/region.h"

namespace scatter::sampler {

struct MinDistanceReport {
  // The smallest pairwise distance divided by the radius (infinity with
  // fewer than two points). >= 1 means the minimum distance holds.
  double min_ratio = 0;
  // Pairs closer than the radius, counted with an exact test: extended
  // precision (long double) squared distance < radius^2.
  std::uint64_t violations = 0;
};

// All pairs closer than `radius` among `coords` (dims values per point).
// Points with a NaN or infinite coordinate are skipped: under the exact
// test they are never closer than the radius to anything. InvalidArgument
// when dims is not 2/3, coords.size() is not a multiple of dims, or radius
// is not finite and > 0.
absl::StatusOr<MinDistanceReport> CheckMinDistance(
    absl::Span<const double> coords, int dims, double radius);

struct CoverageReport {
  std::uint64_t probes = 0;     // Probe points thrown into the box.
  std::uint64_t uncovered = 0;  // Probes with no sample closer than radius.
  double uncovered_fraction() const {
    return probes == 0
               ? 0
               : static_cast<double>(uncovered) / static_cast<double>(probes);
  }
};

// Maximality by probes: `probes` points uniform in `box`, drawn from
// `probe_seed` (use one independent of the sampler's seed); a probe is
// covered when some sample lies at distance < radius. Probe density is
// probes / box.Measure(). Non-finite samples are skipped (they cover
// nothing). InvalidArgument on bad dims/radius as above.
absl::StatusOr<CoverageReport> MeasureCoverage(absl::Span<const double> coords,
                                               const Box& box, double radius,
                                               std::uint64_t probes,
                                               std::uint64_t probe_seed);
// The same over a region: probes are thrown uniformly in its bounds, and
// only those inside it are counted (CoverageReport::probes says how many).
absl::StatusOr<CoverageReport> MeasureCoverage(absl::Span<const double> coords,
                                               const Region& region,
                                               double radius,
                                               std::uint64_t probes,
                                               std::uint64_t probe_seed);

// Variable radius (DESIGN.md): points a and b conflict when closer than
// max(r_a, r_b). `radii` holds one radius per point (finite, > 0). Reports
// the smallest distance / max(r_a, r_b) over pairs closer than
// 2 max(r_a, r_b) (infinity when there is none) and counts conflicting
// pairs with the exact long double test. Neighbour search uses one grid per
// power-of-2 band of radii, so it stays O(N) for radius ratios of 50 and
// more. InvalidArgument on bad dims, a size mismatch or a bad radius.
absl::StatusOr<MinDistanceReport> CheckMinDistanceVariable(
    absl::Span<const double> coords, absl::Span<const double> radii, int dims);

// Maximality with a variable radius: a probe p is covered when some sample
// s lies at distance < max(radius_at(p), r_s). Probes are uniform in the
// region's bounds from `probe_seed`; those outside the region, and those
// for which `skip` (when given) returns true (say, inside an obstacle's
// clearance), are not counted. Probe density is probes / bounds measure.
absl::StatusOr<CoverageReport> MeasureCoverageVariable(
    absl::Span<const double> coords, absl::Span<const double> radii,
    const Region& region, absl::FunctionRef<double(const double*)> radius_at,
    std::uint64_t probes, std::uint64_t probe_seed);
absl::StatusOr<CoverageReport> MeasureCoverageVariable(
    absl::Span<const double> coords, absl::Span<const double> radii,
    const Region& region, absl::FunctionRef<double(const double*)> radius_at,
    std::uint64_t probes, std::uint64_t probe_seed,
    absl::FunctionRef<bool(const double*)> skip);

// Lagae & Dutre's relative radius rho = radius / r_max, with
// r_max = sqrt(2A / (sqrt(3) N)) in 2D (hexagonal packing) and
// r_max = (sqrt(2) V / N)^(1/3) in 3D (FCC). 0 when n == 0. dims must be
// 2 or 3 (a caller bug otherwise: asserted, not reported).
double RelativeRadius(std::uint64_t n, double measure, int dims, double radius);

}  // namespace scatter::sampler

#endif  // SCATTER_SAMPLER_QUALITY_H_
