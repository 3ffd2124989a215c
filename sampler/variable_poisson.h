#ifndef SCATTER_SAMPLER_VARIABLE_POISSON_H_
#define SCATTER_SAMPLER_VARIABLE_POISSON_H_

// Internal: Poisson-disk sampling with a radius that varies over the world,
// r(x) = r_min + (r_max - r_min) * (1 - density(x)) (DESIGN.md, Variable
// radius). Sampler::Run dispatches here when SamplerOptions::density is set.
//
// Two points a, b conflict when |a - b| < max(r_a, r_b), each radius taken
// at the point's own position; the set is maximal when every place p of the
// region has a point s with |p - s| < max(r(p), r_s).
//
// Neighbour queries stay cheap for any r_max / r_min: points live in a
// multi-level grid. Level l holds the points whose radius is in
// [r_min 2^l, r_min 2^(l+1)) (the top level up to r_max), in cells of side
// just under r_min 2^l / sqrt(D), so a cell holds at most one point; each
// level has an occupancy bitmap and a bitmap of 8^D-cell blocks, so the wide
// window a big point needs over a fine level costs a word per row of
// blocks where no point is near. Gap filling runs coarse to fine over the
// levels' cells, so big-radius areas cost cells of their own size.
//
// Determinism as in the constant engine: candidate i of visit j of point a
// comes from the stream keyed by (seed, layer, purpose) then (a, j) at
// counter block i; candidates are tested and accepted in index order; only
// +, x, / and sqrt make them; r(x) is the raster's bilinear value mapped by
// + and x. Raster bounds (a min/max pyramid) only steer which cells are
// searched, never which points are accepted, except that gap cells are
// handled at the level the bounds pick.

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "sampler/batch_writer.h"
#include "sampler/box.h"
#include "sampler/obstacles.h"
#include "sampler/raster.h"
#include "sampler/region.h"
#include "sampler/sampler.h"

namespace scatter::sampler::internal {

// What a variable-radius run over `box` would take, for Create's limits:
// bytes of its grids and point store, and the expected point count from
// the densest packing, integral of 2 / (sqrt(3) r(x)^2) dA in 2D (sqrt(2) /
// r^3 dV in 3D) with each side grown by r (so thin boxes are counted
// their L / r + 1 points a side), times the packing fraction real sets
// reach. Both are
// doubles so huge requests do not overflow before they are refused. Cost:
// 128 x 128 cells, each at its brightest pixel (Raster::Greatest), so a
// bound however fine the raster. Not in `bytes`: the
// raster's block bounds, built once per raster and kept with it
// (Raster::BlockLevels).
struct VariableEstimate {
  double bytes = 0;
  double points = 0;
};
VariableEstimate EstimateVariablePoisson(const Box& box, const Raster& density,
                                         double radius_min, double radius_max);
// As EstimateVariablePoisson with the radius `r` all over the box instead
// of the raster's: with the least radius a raster has anywhere, a bound
// for a run over a box of these sides wherever it lies. No raster reads.
VariableEstimate EstimateVariablePoissonAt(const Box& box, double r,
                                           double radius_min,
                                           double radius_max);

// Runs the variable-radius sampler. Options arrive validated, with defaults
// resolved and `density` set; the obstacle index was built with footprint
// `options.footprint` and, when that is 0, max_extra = radius_max / 2 (each
// point's footprint is then r(x) / 2).
absl::Status RunVariablePoisson(const Region& region,
                                const ObstacleIndex& obstacles,
                                const SamplerOptions& options, BatchWriter* out,
                                absl::FunctionRef<bool()> stop);

// The two builds of RunVariablePoisson, one per SIMD path
// (variable_poisson.cc, variable_poisson_avx2.cc); RunVariablePoisson picks
// by options.simd. The AVX2 one exists only where SCATTER_HAVE_AVX2_PATH
// (simd_ops.h) is 1, and may run only on a CPU with AVX2.
absl::Status RunVariablePoissonScalar(const Region& region,
                                      const ObstacleIndex& obstacles,
                                      const SamplerOptions& options,
                                      BatchWriter* out,
                                      absl::FunctionRef<bool()> stop);
absl::Status RunVariablePoissonAvx2(const Region& region,
                                    const ObstacleIndex& obstacles,
                                    const SamplerOptions& options,
                                    BatchWriter* out,
                                    absl::FunctionRef<bool()> stop);

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_VARIABLE_POISSON_H_
