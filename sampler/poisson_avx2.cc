// The AVX2 build of the Poisson sampler: the same source as the scalar one
// (poisson_impl.h), compiled for AVX2 by pragma rather than by -march, and
// only entered after the CPU said it has AVX2. FMA is a separate target
// feature that stays off, and -ffp-contract=off keeps the compiler from
// fusing multiplies and adds, so both builds give the same bits.

#include "sampler/methods.h"
#include "sampler/simd_ops.h"

#if SCATTER_HAVE_AVX2_PATH

// poisson_impl.h sets the AVX2 target for its own code, after its
// includes.
#define SCATTER_POISSON_AVX2 1
#include "sampler/poisson_impl.h"

namespace scatter::sampler::internal {

// Baseline code: it only makes and runs the AVX2 class.
absl::Status RunPoissonAvx2(const Region& region,
                            const ObstacleIndex& obstacles,
                            const SamplerOptions& options, BatchWriter* out,
                            absl::FunctionRef<bool()> stop) {
  return RunPoissonWith<Avx2Ops>(region, obstacles, options, out, stop);
}

}  // namespace scatter::sampler::internal

#endif  // SCATTER_HAVE_AVX2_PATH
