#ifndef SCATTER_SAMPLER_SIMD_KERNELS_H_
#define SCATTER_SAMPLER_SIMD_KERNELS_H_

// Internal: the per-target kernel tables that simd.cc dispatches between.

#include "sampler/simd.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SCATTER_HAVE_AVX2_PATH 1
#else
#define SCATTER_HAVE_AVX2_PATH 0
#endif

namespace scatter::sampler::internal {

#if SCATTER_HAVE_AVX2_PATH
extern const SimdKernels kAvx2Kernels;
#endif

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_SIMD_KERNELS_H_
