#include <algorithm>
#include <cmath>

#include "sampler/methods.h"
#include "sampler/simd.h"
#include "sampler/simd_ops.h"
// Last: see the note at the top of poisson_impl.h.
#include "sampler/poisson_impl.h"

namespace scatter::sampler::internal {

namespace {

// The bytes of a run's taken marks (PoissonRun::Run's taken_), 0 when it
// keeps none; cells_x and cells_y are the grid's cells per axis.
double TakenMarkBytes(const Box& box, const SamplerOptions& options,
                      double cells_x, double cells_y) {
  if (!UsesTakenMarks(box, options)) return 0;
  // Four pieces a cell and axis; rows of whole words with a spare one, a
  // spare row, and a spare word.
  const double row_words = std::floor(4 * cells_x / 64) + 1;
  return 8 * (row_words * (4 * cells_y + 1) + 1);
}

}  // namespace

double PoissonGridBytes(const Box& box, const SamplerOptions& options) {
  const double cell = CellSide(options.radius, box.dims());
  double cells = 1;
  for (int a = 0; a < box.dims(); ++a) {
    cells *= std::max(1.0, std::ceil(box.extent(a) / cell));
  }
  // Coordinates, an occupancy bit and the cover marks per cell, and the
  // taken marks of the runs that keep them (UsesTakenMarks).
  const double taken =
      box.dims() == 2
          ? TakenMarkBytes(box, options,
                           std::max(1.0, std::ceil(box.extent(0) / cell)),
                           std::max(1.0, std::ceil(box.extent(1) / cell)))
          : 0;
  return cells * (static_cast<double>(box.dims()) * sizeof(double) + 0.125 +
                  CoverBytesPerCell(box.dims())) +
         taken;
}

absl::Status RunPoissonScalar(const Region& region,
                              const ObstacleIndex& obstacles,
                              const SamplerOptions& options, BatchWriter* out,
                              absl::FunctionRef<bool()> stop) {
  return RunPoissonWith<ScalarOps>(region, obstacles, options, out, stop);
}

absl::Status RunPoisson(const Region& region, const ObstacleIndex& obstacles,
                        const SamplerOptions& options, BatchWriter* out,
                        absl::FunctionRef<bool()> stop) {
#if SCATTER_HAVE_AVX2_PATH
  if (ResolveSimdLevel(options.simd) == SimdLevel::kAvx2) {
    return RunPoissonAvx2(region, obstacles, options, out, stop);
  }
#endif
  return RunPoissonScalar(region, obstacles, options, out, stop);
}

}  // namespace scatter::sampler::internal
