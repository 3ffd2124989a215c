// The AVX2 kernel table, for callers outside the sampler's hot loop (and for
// the tests that compare paths). Compiled for AVX2 by pragma, not by -march.

#include "sampler/simd.h"
#include "sampler/simd_ops.h"

#if SCATTER_HAVE_AVX2_PATH

#pragma GCC push_options
#pragma GCC target("avx2")
#include "sampler/simd_ops_avx2.h"

namespace scatter::sampler::internal {

extern const SimdKernels kAvx2Kernels;
const SimdKernels kAvx2Kernels = {
    Avx2Ops::AnyWithin2d,      Avx2Ops::AnyWithin3d,    Avx2Ops::FilterBox<2>,
    Avx2Ops::FilterBox<3>,     Avx2Ops::AnyConflict<2>, Avx2Ops::AnyConflict<3>,
    Avx2Ops::AnyWithin2dBlock, Avx2Ops::SplitNearFar3d};

}  // namespace scatter::sampler::internal

#pragma GCC pop_options

#endif  // SCATTER_HAVE_AVX2_PATH
