// The AVX2 build of the Poisson sampler: the same source as the scalar one
// (poisson_impl.h), compiled for AVX2 by pragma rather than by -march, and
// only entered after the CPU said it has AVX2. FMA is a separate target
// feature that stays off, and -ffp-contract=off keeps the compiler from
// fusing multiplies and adds, so both builds give the same bits.

#include "sampler/methods.h"
#include "sampler/simd_ops.h"

#if SCATTER_HAVE_AVX2_PATH

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

// Before the pragma, so its template code stays baseline (see
// poisson_impl.h).
#include "sampler/huge_pages.h"

#pragma GCC push_options
#pragma GCC target("avx2")
#include "sampler/poisson_impl.h"
#include "sampler/simd_ops_avx2.h"

namespace scatter::sampler::internal {

absl::Status RunPoissonAvx2(const Region& region,
                            const ObstacleIndex& obstacles,
                            const SamplerOptions& options, BatchWriter* out,
                            absl::FunctionRef<bool()> stop) {
  if (region.dims() == 2) {
    return PoissonRun<2, Avx2Ops>(region, obstacles, options, out, stop).Run();
  }
  return PoissonRun<3, Avx2Ops>(region, obstacles, options, out, stop).Run();
}

}  // namespace scatter::sampler::internal

#pragma GCC pop_options

#endif  // SCATTER_HAVE_AVX2_PATH
