// The AVX2 build of the variable-radius Poisson sampler: the same source as
// the scalar one (variable_poisson_impl.h), compiled for AVX2 by pragma
// rather than by -march, and only entered after the CPU said it has AVX2.
// As in poisson_avx2.cc, FMA stays off and -ffp-contract=off keeps the
// compiler from fusing multiplies and adds, so both builds give the same
// bits.

#include "sampler/simd_ops.h"
#include "sampler/variable_poisson.h"

#if SCATTER_HAVE_AVX2_PATH

// variable_poisson_impl.h sets the AVX2 target for its own code, after its
// includes.
#define SCATTER_VARIABLE_POISSON_AVX2 1
#include "sampler/variable_poisson_impl.h"

namespace scatter::sampler::internal {

// Baseline code: it only makes and runs the AVX2 class.
absl::Status RunVariablePoissonAvx2(const Region& region,
                                    const ObstacleIndex& obstacles,
                                    const SamplerOptions& options,
                                    BatchWriter* out,
                                    absl::FunctionRef<bool()> stop) {
  if (region.dims() == 2) {
    return VariableRun<2, Avx2Ops>(region, obstacles, options, out, stop).Run();
  }
  return VariableRun<3, Avx2Ops>(region, obstacles, options, out, stop).Run();
}

}  // namespace scatter::sampler::internal

#endif  // SCATTER_HAVE_AVX2_PATH
