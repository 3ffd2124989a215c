#include "sampler/variable_poisson.h"

#include <algorithm>
#include <cmath>

#include "sampler/simd.h"
#include "sampler/simd_ops.h"
// Last: see the note at the top of variable_poisson_impl.h.
#include "sampler/variable_poisson_impl.h"

namespace scatter::sampler::internal {

namespace {

// The estimate from the integral of measure / r^D over the box (side over
// r axis by axis).
VariableEstimate EstimateFromIntegral(const Box& box, double integral,
                                      double radius_min, double radius_max) {
  const int dims = box.dims();
  // Densest packings (hexagonal, FCC); real sets reach rho^D of them.
  const double bound =
      dims == 2 ? integral * 2 / std::sqrt(3.0) : integral * std::sqrt(2.0);
  VariableEstimate e;
  e.points = bound * (dims == 2 ? 0.81 : 0.73);
  const int levels = LevelCount(radius_min, radius_max);
  for (int l = 0; l < levels; ++l) {
    const double cell = LevelCell(radius_min, l, dims);
    double cells = 1;
    for (int a = 0; a < dims; ++a) {
      cells *= std::max(1.0, std::ceil(box.extent(a) / cell));
    }
    // A point (D + 1 doubles), an occupancy bit and a coverage byte per
    // cell, though only pages of cells that get a point are touched.
    e.bytes += cells * (8.0 * (dims + 1) + 1.125);
  }
  // Per point: an active-list entry.
  e.bytes += bound * 24;
  return e;
}

}  // namespace

VariableEstimate EstimateVariablePoisson(const Box& box, const Raster& density,
                                         double radius_min, double radius_max) {
  const int dims = box.dims();
  const RadiusField field{&density, radius_min, radius_max};
  // A sum over 128 x 128 cells of the x-y footprint of measure / r^D, side over
  // r axis by axis (as DensestPackingPoints): r^3 and the volume apart
  // leave the normal doubles for small radii (in 3D at r = 1e-100, r^3 was
  // subnormal and the estimate inf; in a box of side 1e-140 the volume
  // was 0, the estimate 0 * inf = NaN, and no limit refused the run).
  // Each cell at the least radius its pixels allow (Raster::Greatest):
  // read at its middle, a raster bright between the middles went unseen
  // (a review helper's made 48 times the points counted).
  // A cell's pixel columns depend on its x only and its rows on its y
  // only: found once per column and row of cells.
  constexpr int kSteps = 128;
  std::uint32_t cols[kSteps][2], rows[kSteps][2];
  for (int k = 0; k < kSteps; ++k) {
    const double x0 = box.min(0) + k * box.extent(0) / kSteps;
    const double y0 = box.min(1) + k * box.extent(1) / kSteps;
    density.PixelsUnder(x0, y0, x0 + box.extent(0) / kSteps,
                        y0 + box.extent(1) / kSteps, &cols[k][0], &rows[k][0],
                        &cols[k][1], &rows[k][1]);
  }
  // 1 / r^D per cell, axis by axis: sides over r (r^D and the measure
  // apart leave the doubles, see above), each side grown by r (r / 2 on
  // either end, as the server's estimate and the tiles' grow theirs): a
  // segment of length L holds L / r + 1 points, and a box 1000 x 0.01 at
  // r = 1, counted 9.35 points, made 906 (a run past max_points cut off
  // midway after Create had let it through). Where the box spans fewer pixels
  // than cells (a tile generator's box over a coarse raster: 32 to 40
  // pixels for 128 cells), neighbouring cells read the same pixels: a
  // cell reuses the one before it in its row, and a row the one before it,
  // when their pixels are the same (a tenth of the reads in a tiled world;
  // the same values, summed in the same order).
  double row[kSteps];
  double sum = 0;
  for (int j = 0; j < kSteps; ++j) {
    const bool same_row =
        j > 0 && rows[j][0] == rows[j - 1][0] && rows[j][1] == rows[j - 1][1];
    for (int i = 0; i < kSteps; ++i) {
      if (!same_row) {
        if (i > 0 && cols[i][0] == cols[i - 1][0] &&
            cols[i][1] == cols[i - 1][1]) {
          row[i] = row[i - 1];
        } else {
          const double r = field.FromDensity(density.GreatestOverPixels(
              cols[i][0], rows[j][0], cols[i][1], rows[j][1]));
          double cells = 1;
          for (int a = 0; a < dims; ++a) cells *= (box.extent(a) + r) / r;
          row[i] = cells;
        }
      }
      sum += row[i];
    }
  }
  return EstimateFromIntegral(box, sum / (kSteps * kSteps), radius_min,
                              radius_max);
}

VariableEstimate EstimateVariablePoissonAt(const Box& box, double r,
                                           double radius_min,
                                           double radius_max) {
  double cells = 1;
  for (int a = 0; a < box.dims(); ++a) cells *= (box.extent(a) + r) / r;
  return EstimateFromIntegral(box, cells, radius_min, radius_max);
}

absl::Status RunVariablePoissonScalar(const Region& region,
                                      const ObstacleIndex& obstacles,
                                      const SamplerOptions& options,
                                      BatchWriter* out,
                                      absl::FunctionRef<bool()> stop) {
  if (region.dims() == 2) {
    return VariableRun<2, ScalarOps>(region, obstacles, options, out, stop)
        .Run();
  }
  return VariableRun<3, ScalarOps>(region, obstacles, options, out, stop).Run();
}

absl::Status RunVariablePoisson(const Region& region,
                                const ObstacleIndex& obstacles,
                                const SamplerOptions& options, BatchWriter* out,
                                absl::FunctionRef<bool()> stop) {
#if SCATTER_HAVE_AVX2_PATH
  if (ResolveSimdLevel(options.simd) == SimdLevel::kAvx2) {
    return RunVariablePoissonAvx2(region, obstacles, options, out, stop);
  }
#endif
  return RunVariablePoissonScalar(region, obstacles, options, out, stop);
}

}  // namespace scatter::sampler::internal
