#ifndef SCATTER_SAMPLER_SIMD_OPS_AVX2_H_
#define SCATTER_SAMPLER_SIMD_OPS_AVX2_H_

// Internal: the AVX2 distance kernels. Include only inside
// #pragma GCC target("avx2") (see poisson_impl.h and simd_avx2.cc), and run
// only after the CPU said it has AVX2.

#include <immintrin.h>

#include <cstddef>

#include "sampler/simd_ops.h"

namespace scatter::sampler::internal {

// Per 4-bit lane mask, the 32-bit element order that moves the set lanes
// (64-bit, two elements each) to the front in order, and how many there
// are (Avx2Ops::FilterBox).
struct KeptFirstTable {
  int lanes[16][8];
  int count[16];
};

constexpr KeptFirstTable MakeKeptFirst() {
  KeptFirstTable t{};
  for (int mask = 0; mask < 16; ++mask) {
    int n = 0;
    for (int lane = 0; lane < 4; ++lane) {
      if (((mask >> lane) & 1) == 0) continue;
      t.lanes[mask][2 * n] = 2 * lane;
      t.lanes[mask][2 * n + 1] = 2 * lane + 1;
      ++n;
    }
    t.count[mask] = n;
  }
  return t;
}

inline constexpr KeptFirstTable kKeptFirst = MakeKeptFirst();

struct Avx2Ops {
  // Whether group(j), a lane mask for the 4 points from j on, has a lane
  // set for some j < n, in blocks of 16 points unrolled with one branch
  // each (each lane is its own yes/no; OR-ing them does not depend on
  // order). On false, *rest is where the points past the last whole group
  // start.
  template <class Group>
  [[gnu::always_inline]] static bool AnyGroup(std::size_t n, const Group& group,
                                              std::size_t* rest) {
    std::size_t j = 0;
    for (; j + 16 <= n; j += 16) {
      const __m256d hit =
          _mm256_or_pd(_mm256_or_pd(group(j), group(j + 4)),
                       _mm256_or_pd(group(j + 8), group(j + 12)));
      if (_mm256_movemask_pd(hit) != 0) return true;
    }
    __m256d hit = _mm256_setzero_pd();
    for (; j + 4 <= n; j += 4) hit = _mm256_or_pd(hit, group(j));
    *rest = j;
    return _mm256_movemask_pd(hit) != 0;
  }

  // Lists are short (8 to 50 points), and where the conflict sits is
  // unpredictable, so lanes are OR-ed over 16 points before one branch:
  // fewer mispredictions than leaving at the first hit.
  [[gnu::always_inline]] static bool AnyWithin2d(const double* xs,
                                                 const double* ys,
                                                 std::size_t n, double cx,
                                                 double cy, double t) {
    const __m256d vcx = _mm256_set1_pd(cx);
    const __m256d vcy = _mm256_set1_pd(cy);
    const __m256d vt = _mm256_set1_pd(t);
    // Whether any of the 4 points from j on is within the bound.
    auto group = [&](std::size_t j) {
      const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(xs + j), vcx);
      const __m256d dy = _mm256_sub_pd(_mm256_loadu_pd(ys + j), vcy);
      const __m256d d2 =
          _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy));
      return _mm256_cmp_pd(d2, vt, _CMP_LT_OQ);
    };
    std::size_t j = 0;
    if (AnyGroup(n, group, &j)) return true;
    return ScalarOps::AnyWithin2d(xs + j, ys + j, n - j, cx, cy, t);
  }

  // ScalarOps::AnyWithin2dBlock: each row two cells at a time (x0, y0, x1,
  // y1 in a vector; the horizontal add makes dx * dx + dy * dy per cell,
  // in that order) and an odd last cell alone, every lane OR-ed before one
  // branch.
  [[gnu::always_inline]] static bool AnyWithin2dBlock(
      const double* xy, std::size_t row_stride, std::size_t rows,
      std::size_t cells, double cx, double cy, double t) {
    const __m256d vc = _mm256_setr_pd(cx, cy, cx, cy);
    const __m256d vt = _mm256_set1_pd(t);
    __m256d hit = _mm256_setzero_pd();
    __m128d hit1 = _mm_setzero_pd();
    for (std::size_t i = 0; i < rows; ++i, xy += row_stride) {
      std::size_t j = 0;
      for (; j + 2 <= cells; j += 2) {
        const __m256d d = _mm256_sub_pd(_mm256_loadu_pd(xy + 2 * j), vc);
        const __m256d sq = _mm256_mul_pd(d, d);
        hit = _mm256_or_pd(
            hit, _mm256_cmp_pd(_mm256_hadd_pd(sq, sq), vt, _CMP_LT_OQ));
      }
      if (j < cells) {
        const __m128d d =
            _mm_sub_pd(_mm_loadu_pd(xy + 2 * j), _mm256_castpd256_pd128(vc));
        const __m128d sq = _mm_mul_pd(d, d);
        hit1 = _mm_or_pd(hit1, _mm_cmplt_pd(_mm_hadd_pd(sq, sq),
                                            _mm256_castpd256_pd128(vt)));
      }
    }
    return (_mm256_movemask_pd(hit) | _mm_movemask_pd(hit1)) != 0;
  }

  [[gnu::always_inline]] static bool AnyWithin3d(
      const double* xs, const double* ys, const double* zs, std::size_t n,
      double cx, double cy, double cz, double t) {
    const __m256d vcx = _mm256_set1_pd(cx);
    const __m256d vcy = _mm256_set1_pd(cy);
    const __m256d vcz = _mm256_set1_pd(cz);
    const __m256d vt = _mm256_set1_pd(t);
    auto group = [&](std::size_t j) {
      const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(xs + j), vcx);
      const __m256d dy = _mm256_sub_pd(_mm256_loadu_pd(ys + j), vcy);
      const __m256d dz = _mm256_sub_pd(_mm256_loadu_pd(zs + j), vcz);
      const __m256d d2 = _mm256_add_pd(
          _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
          _mm256_mul_pd(dz, dz));
      return _mm256_cmp_pd(d2, vt, _CMP_LT_OQ);
    };
    std::size_t j = 0;
    if (AnyGroup(n, group, &j)) return true;
    return ScalarOps::AnyWithin3d(xs + j, ys + j, zs + j, n - j, cx, cy, cz, t);
  }

  // ScalarOps::SplitNearFar3d, 4 points at a time: the kept lanes moved to
  // the front (kKeptFirst) and stored whole, so no branch depends on which
  // points are near or far. The inputs must be padded with NaN to a whole
  // group of 4, and the outputs have room for 4 past their counts.
  [[gnu::always_inline]] static void SplitNearFar3d(
      const double* const* in, std::size_t n, const double* p, double near2,
      double far2, double* const* near, std::size_t* n_near, double* const* far,
      std::size_t* n_far) {
    const __m256d vp[3] = {_mm256_set1_pd(p[0]), _mm256_set1_pd(p[1]),
                           _mm256_set1_pd(p[2])};
    const __m256d vnear = _mm256_set1_pd(near2);
    const __m256d vfar = _mm256_set1_pd(far2);
    std::size_t nn = *n_near, nf = *n_far;
    for (std::size_t j = 0; j < n; j += 4) {
      __m256d q[3];
      for (int a = 0; a < 3; ++a) q[a] = _mm256_loadu_pd(in[a] + j);
      const __m256d dx = _mm256_sub_pd(q[0], vp[0]);
      const __m256d dy = _mm256_sub_pd(q[1], vp[1]);
      const __m256d dz = _mm256_sub_pd(q[2], vp[2]);
      const __m256d d2 = _mm256_add_pd(
          _mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)),
          _mm256_mul_pd(dz, dz));
      const __m256d is_near = _mm256_cmp_pd(d2, vnear, _CMP_LT_OQ);
      const __m256d is_far =
          _mm256_andnot_pd(is_near, _mm256_cmp_pd(d2, vfar, _CMP_LT_OQ));
      const auto near_mask = static_cast<unsigned>(_mm256_movemask_pd(is_near));
      const auto far_mask = static_cast<unsigned>(_mm256_movemask_pd(is_far));
      const __m256i near_order = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(kKeptFirst.lanes[near_mask]));
      const __m256i far_order = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(kKeptFirst.lanes[far_mask]));
      for (int a = 0; a < 3; ++a) {
        const __m256 lanes = _mm256_castpd_ps(q[a]);
        _mm256_storeu_pd(
            near[a] + nn,
            _mm256_castps_pd(_mm256_permutevar8x32_ps(lanes, near_order)));
        _mm256_storeu_pd(far[a] + nf, _mm256_castps_pd(_mm256_permutevar8x32_ps(
                                          lanes, far_order)));
      }
      nn += static_cast<std::size_t>(kKeptFirst.count[near_mask]);
      nf += static_cast<std::size_t>(kKeptFirst.count[far_mask]);
    }
    *n_near = nn;
    *n_far = nf;
  }

  // ScalarOps::AnyConflict, 4 points at a time in AnyGroup's blocks of 16
  // with one branch each: where in a list the conflict sits is data the
  // branch predictor cannot learn, and a branch per group of 4 missed about
  // once a candidate. The list must be padded to a whole group of 4 (NaN
  // coordinates, whose distances compare false). max_pd(r2, rc) is
  // r2 > rc ? r2 : rc, the scalar rc2 < r2 ? r2 : rc2 exactly, so every
  // comparison is the scalar one.
  template <int D>
  [[gnu::always_inline]] static bool AnyConflict(const double* const* xs,
                                                 const double* r2,
                                                 std::size_t n, const double* c,
                                                 double rc2) {
    __m256d vc[D];
    for (int a = 0; a < D; ++a) vc[a] = _mm256_set1_pd(c[a]);
    const __m256d vrc = _mm256_set1_pd(rc2);
    auto group = [&](std::size_t j) {
      __m256d d2 = _mm256_setzero_pd();
      for (int a = 0; a < D; ++a) {
        const __m256d d = _mm256_sub_pd(_mm256_loadu_pd(xs[a] + j), vc[a]);
        d2 = a == 0 ? _mm256_mul_pd(d, d)
                    : _mm256_add_pd(d2, _mm256_mul_pd(d, d));
      }
      const __m256d t = _mm256_max_pd(_mm256_loadu_pd(r2 + j), vrc);
      return _mm256_cmp_pd(d2, t, _CMP_LT_OQ);
    };
    std::size_t rest = 0;
    return AnyGroup((n + 3) & ~std::size_t{3}, group, &rest);
  }

  // ScalarOps::FilterBox, 4 points at a time. The lists must be padded with
  // NaN to a whole group of 4 (a NaN distance compares false, so padding is
  // never kept). It writes up to 4 slots past the count it returns (see
  // simd.h). On numbers, max_pd and std::max differ only on equal
  // inputs, which square to the same value, so the distances match the
  // scalar ones bit for bit.
  template <int D>
  static std::ptrdiff_t FilterBox(const double* const* in, std::size_t n,
                                  const double* lo, const double* hi, double t,
                                  double* const* out) {
    const __m256d vt = _mm256_set1_pd(t);
    const __m256d zero = _mm256_setzero_pd();
    std::ptrdiff_t m = 0;
    for (std::size_t j = 0; j < n; j += 4) {
      __m256d q[D];
      __m256d near2 = zero, far2 = zero;
      for (int a = 0; a < D; ++a) {
        const __m256d vlo = _mm256_set1_pd(lo[a]);
        const __m256d vhi = _mm256_set1_pd(hi[a]);
        q[a] = _mm256_loadu_pd(in[a] + j);
        // max_pd returns its second operand when one is NaN: zero first,
        // so that a NaN slot stays NaN.
        const __m256d dn = _mm256_max_pd(
            zero,
            _mm256_max_pd(_mm256_sub_pd(vlo, q[a]), _mm256_sub_pd(q[a], vhi)));
        const __m256d df =
            _mm256_max_pd(_mm256_sub_pd(q[a], vlo), _mm256_sub_pd(vhi, q[a]));
        // 0 + x is x exactly, as in the scalar sums that start from 0.
        near2 = a == 0 ? _mm256_mul_pd(dn, dn)
                       : _mm256_add_pd(near2, _mm256_mul_pd(dn, dn));
        far2 = a == 0 ? _mm256_mul_pd(df, df)
                      : _mm256_add_pd(far2, _mm256_mul_pd(df, df));
      }
      if (_mm256_movemask_pd(_mm256_cmp_pd(far2, vt, _CMP_LT_OQ)) != 0) {
        return -1;
      }
      // The kept lanes moved to the front and stored whole, so no branch
      // depends on how many are kept (the slots past them are overwritten
      // by the next group, or are past the count).
      const unsigned keep = static_cast<unsigned>(
          _mm256_movemask_pd(_mm256_cmp_pd(near2, vt, _CMP_LT_OQ)));
      const __m256i order = _mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(kKeptFirst.lanes[keep]));
      for (int a = 0; a < D; ++a) {
        _mm256_storeu_pd(out[a] + m, _mm256_castps_pd(_mm256_permutevar8x32_ps(
                                         _mm256_castpd_ps(q[a]), order)));
      }
      m += kKeptFirst.count[keep];
    }
    return m;
  }
};

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_SIMD_OPS_AVX2_H_
