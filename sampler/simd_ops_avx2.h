#ifndef SCATTER_SAMPLER_SIMD_OPS_AVX2_H_
#define SCATTER_SAMPLER_SIMD_OPS_AVX2_H_

// Internal: the AVX2 distance kernels. Include only inside
// #pragma GCC target("avx2") (see poisson_avx2.cc and simd_avx2.cc), and run
// only after the CPU said it has AVX2.

#include <immintrin.h>

#include <cstddef>

#include "sampler/simd_ops.h"

namespace scatter::sampler::internal {

struct Avx2Ops {
  static bool AnyWithin2d(const double* xs, const double* ys, std::size_t n,
                          double cx, double cy, double t) {
    const __m256d vcx = _mm256_set1_pd(cx);
    const __m256d vcy = _mm256_set1_pd(cy);
    const __m256d vt = _mm256_set1_pd(t);
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(xs + j), vcx);
      const __m256d dy = _mm256_sub_pd(_mm256_loadu_pd(ys + j), vcy);
      const __m256d d2 =
          _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
      // Each lane is its own yes/no; OR-ing them does not depend on order.
      if (_mm256_movemask_pd(_mm256_cmp_pd(d2, vt, _CMP_LT_OQ)) != 0) {
        return true;
      }
    }
    return ScalarOps::AnyWithin2d(xs + j, ys + j, n - j, cx, cy, t);
  }

  static bool AnyWithin3d(const double* xs, const double* ys, const double* zs,
                          std::size_t n, double cx, double cy, double cz,
                          double t) {
    const __m256d vcx = _mm256_set1_pd(cx);
    const __m256d vcy = _mm256_set1_pd(cy);
    const __m256d vcz = _mm256_set1_pd(cz);
    const __m256d vt = _mm256_set1_pd(t);
    std::size_t j = 0;
    for (; j + 4 <= n; j += 4) {
      const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(xs + j), vcx);
      const __m256d dy = _mm256_sub_pd(_mm256_loadu_pd(ys + j), vcy);
      const __m256d dz = _mm256_sub_pd(_mm256_loadu_pd(zs + j), vcz);
      const __m256d d2 = _mm256_add_pd(
          _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
          _mm256_mul_pd(dz, dz));
      if (_mm256_movemask_pd(_mm256_cmp_pd(d2, vt, _CMP_LT_OQ)) != 0) {
        return true;
      }
    }
    return ScalarOps::AnyWithin3d(xs + j, ys + j, zs + j, n - j, cx, cy, cz, t);
  }
};

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_SIMD_OPS_AVX2_H_
