#include <algorithm>
#include <cmath>

#include "sampler/methods.h"
#include "sampler/simd.h"
#include "sampler/simd_ops.h"
// Last: see the note at the top of poisson_impl.h.
#include "sampler/poisson_impl.h"

namespace scatter::sampler::internal {

double PoissonGridBytes(const Box& box, double radius, Method method) {
  const double cell = CellSide(radius, box.dims());
  double cells = 1;
  for (int a = 0; a < box.dims(); ++a) {
    cells *= std::max(1.0, std::ceil(box.extent(a) / cell));
  }
  // Coordinates, an occupancy bit and the cover marks per cell, and in
  // classic 2D the taken marks (16 bits a cell; PoissonRun::MarkTaken).
  const double taken =
      box.dims() == 2 && method == Method::kPoissonClassic ? 2 : 0;
  return cells * (static_cast<double>(box.dims()) * sizeof(double) + 0.125 +
                  CoverBytesPerCell(box.dims()) + taken);
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
