// The AVX2 path. Only these functions are compiled for AVX2 (by attribute,
// not by -march), and only called after the CPU said it has AVX2. FMA is a
// separate target feature that stays off, and -ffp-contract=off keeps the
// compiler from fusing the multiply and add anyway.

#include "sampler/simd_kernels.h"

#if SCATTER_HAVE_AVX2_PATH

#include <immintrin.h>

namespace scatter::sampler::internal {
namespace {

#define SCATTER_AVX2 __attribute__((target("avx2")))

SCATTER_AVX2 bool AnyWithin2dAvx2(const double* xs, const double* ys,
                                  std::size_t n, double cx, double cy,
                                  double threshold) {
  const __m256d vcx = _mm256_set1_pd(cx);
  const __m256d vcy = _mm256_set1_pd(cy);
  const __m256d vt = _mm256_set1_pd(threshold);
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
  for (; j < n; ++j) {
    const double dx = xs[j] - cx;
    const double dy = ys[j] - cy;
    if (dx * dx + dy * dy < threshold) return true;
  }
  return false;
}

SCATTER_AVX2 bool AnyWithin3dAvx2(const double* xs, const double* ys,
                                  const double* zs, std::size_t n, double cx,
                                  double cy, double cz, double threshold) {
  const __m256d vcx = _mm256_set1_pd(cx);
  const __m256d vcy = _mm256_set1_pd(cy);
  const __m256d vcz = _mm256_set1_pd(cz);
  const __m256d vt = _mm256_set1_pd(threshold);
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
  for (; j < n; ++j) {
    const double dx = xs[j] - cx;
    const double dy = ys[j] - cy;
    const double dz = zs[j] - cz;
    if (dx * dx + dy * dy + dz * dz < threshold) return true;
  }
  return false;
}

#undef SCATTER_AVX2

}  // namespace

const SimdKernels kAvx2Kernels = {AnyWithin2dAvx2, AnyWithin3dAvx2};

}  // namespace scatter::sampler::internal

#endif  // SCATTER_HAVE_AVX2_PATH
