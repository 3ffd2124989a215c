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

// Every header poisson_impl.h uses, before the pragma: their inline
// functions and templates are emitted as weak symbols wherever they are not
// inlined, and the linker keeps one copy for the whole program. Defined
// under the pragma, that copy could be AVX2 code that the scalar path runs
// on a CPU without AVX2 (RandomRotation3 was, by include order).
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "sampler/batch_writer.h"
#include "sampler/box.h"
#include "sampler/box_distance.h"
#include "sampler/cover_stencil.h"
#include "sampler/directions.h"
#include "sampler/gap_pieces.h"
#include "sampler/huge_pages.h"
#include "sampler/obstacles.h"
#include "sampler/region.h"
#include "sampler/rng.h"
#include "sampler/rotation.h"
#include "sampler/sampler.h"

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
