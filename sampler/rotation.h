#ifndef SCATTER_SAMPLER_ROTATION_H_
#define SCATTER_SAMPLER_ROTATION_H_

// Random rotations for dense packing's evenly stepped directions, and
// classic packing's candidates in a shell, from +, x, sqrt and comparisons
// only (DESIGN.md, Portable determinism): points drawn by rejection from a
// square or cube (normalised, for rotations), and in 2D from a table of
// directions.

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "sampler/directions.h"
#include "sampler/rng.h"
#include "sampler/select.h"

namespace scatter::sampler::internal {

// A uniformly random unit vector (u, v): the rotation by its angle.
inline void RandomUnit2(CounterRng& rng, double* u, double* v) {
  double s;
  do {
    rng.SignedPair(u, v);
    s = *u * *u + *v * *v;
  } while (!(s > 0x1.0p-4 && s <= 1));
  const double norm = std::sqrt(s);
  *u /= norm;
  *v /= norm;
}

// A uniformly random 3D rotation: the matrix of a random unit quaternion.
inline void RandomRotation3(CounterRng& rng, double m[3][3]) {
  double q[4];
  double s;
  do {
    rng.SignedPair(&q[0], &q[1]);
    rng.SignedPair(&q[2], &q[3]);
    s = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
  } while (!(s > 0x1.0p-4 && s <= 1));
  const double norm = std::sqrt(s);
  for (double& e : q) e /= norm;
  const double w = q[0], x = q[1], y = q[2], z = q[3];
  m[0][0] = 1 - 2 * (y * y + z * z);
  m[0][1] = 2 * (x * y - w * z);
  m[0][2] = 2 * (x * z + w * y);
  m[1][0] = 2 * (x * y + w * z);
  m[1][1] = 1 - 2 * (x * x + z * z);
  m[1][2] = 2 * (y * z - w * x);
  m[2][0] = 2 * (x * z - w * y);
  m[2][1] = 2 * (y * z + w * x);
  m[2][2] = 1 - 2 * (x * x + y * y);
}

// The square root, without std::sqrt's test for a negative argument (it
// sets errno), where SSE2 has the instruction.
inline double Sqrt(double x) {
#if defined(__SSE2__)
  return _mm_cvtsd_f64(_mm_sqrt_sd(_mm_setzero_pd(), _mm_set_sd(x)));
#else
  return std::sqrt(x);
#endif
}

// 2 pi / 2^32: a step of the table (2 pi / 2^12) over 2^20.
inline constexpr double kShellTurnPerUnit = 6.283185307179586 * 0x1.0p-32;

// A point uniform in the annulus 1 <= |v| <= 2, from one 64-bit draw and no
// rejection: classic 2D candidates (algorithm_version 6; before, 2D took
// UnitShellPoint's rejection from the square, 2.4 draws a candidate and a
// branch that missed on one candidate in six). The top 12 bits pick one of
// the table's directions (ShellDirections2d), the next 20 an angle t in
// [0, 2 pi / 2^12) to turn it by, and the low 32 the radius: sqrt(1 + 3u)
// for u uniform in [0, 1), so that the squared radius is uniform, as area
// is. The turn is the tangent step (c - s t, s + c t), whose length
// sqrt(1 + t^2) the factor 1 - t^2 / 2 takes back to 1 - 3 t^4 / 8 (at
// most 2.1e-12: never past 2, never short of 1 by more). Its angle is atan(t):
// the angle's density within a step varies by t^2 < 2.4e-6.
inline void UnitShellPoint2d(const ShellDirectionTable& directions,
                             std::uint64_t bits, double* v) {
  const std::array<double, 2>& d =
      directions[static_cast<std::size_t>(bits >> (64 - kShellDirectionBits))];
  const double t =
      static_cast<double>(static_cast<std::int64_t>((bits >> 32) & 0xFFFFF)) *
      kShellTurnPerUnit;
  const double u =
      static_cast<double>(static_cast<std::int64_t>(bits & 0xFFFFFFFFu)) *
      0x1.0p-32;
  const double radius = Sqrt(1 + 3 * u) * (1 - 0.5 * (t * t));
  v[0] = radius * (d[0] - d[1] * t);
  v[1] = radius * (d[1] + d[0] * t);
}

// Classic 3D candidates (2D ones until algorithm_version 5; the samplers'
// 2D runs draw with UnitShellPoint2d since 6).
// A point uniform in the shell 1 <= |v| < 2 (annulus in 2D): the first
// draw of the cube [-2, 2)^D that lands in it, with 32 random bits per
// coordinate (candidates need no finer grain; in 3D a draw takes two values
// of the stream, the fourth coordinate unused). Draws are taken two at a
// time and the first good one selected without a branch, since whether a
// draw lands is a coin flip a branch predictor cannot learn (41% miss in
// 2D); the result is the same as drawing one at a time.
// This is the definition; UnitShellPoint gives the same values faster.
template <int D>
void UnitShellPointReference(CounterRng* rng, double* v) {
  for (;;) {
    double a[4], b[4];
    rng->SignedPair(&a[0], &a[1]);
    if constexpr (D == 3) rng->SignedPair(&a[2], &a[3]);
    rng->SignedPair(&b[0], &b[1]);
    if constexpr (D == 3) rng->SignedPair(&b[2], &b[3]);
    double sa = a[0] * a[0] + a[1] * a[1];
    double sb = b[0] * b[0] + b[1] * b[1];
    if constexpr (D == 3) {
      sa += a[2] * a[2];
      sb += b[2] * b[2];
    }
    // & and |, not && and ||, and selects by mask (select.h): written
    // plainly, GCC branches on each comparison.
    const bool ok_a = (sa >= 0.25) & (sa < 1);
    const bool ok_b = (sb >= 0.25) & (sb < 1);
    for (int i = 0; i < D; ++i) v[i] = 2 * SelectDouble(ok_a, a[i], b[i]);
    if (Opaque(ok_a | ok_b)) return;
  }
}

#if defined(__SSE2__)
// One value of the stream as the pair SignedPair makes of it, in SSE2
// lanes: lane 0 the low 32 bits (SignedPair's second), lane 1 the high.
// Converting int32 to double and scaling by 2^-31 are exact, so the lanes
// hold SignedPair's values.
[[gnu::always_inline]] inline __m128d SignedPairLanes(CounterRng* rng) {
  const __m128i bits = _mm_cvtsi64_si128(static_cast<long long>(rng->Next()));
  return _mm_mul_pd(_mm_cvtepi32_pd(bits), _mm_set1_pd(0x1.0p-31));
}

// x0 * x0 + x1 * x1 of a pair's lanes (two terms: the order of the sum does
// not change it).
[[gnu::always_inline]] inline double SquaredLength(__m128d x) {
  const __m128d sq = _mm_mul_pd(x, x);
  return _mm_cvtsd_f64(_mm_add_sd(sq, _mm_unpackhi_pd(sq, sq)));
}

// `take_x ? x : y` lane by lane.
[[gnu::always_inline]] inline __m128d SelectLanes(bool take_x, __m128d x,
                                                  __m128d y) {
  const __m128d mask =
      _mm_castsi128_pd(_mm_set1_epi64x(-static_cast<long long>(take_x)));
  return _mm_or_pd(_mm_and_pd(mask, x), _mm_andnot_pd(mask, y));
}
#endif

// UnitShellPointReference's values, in SSE2 registers where there are
// some: the generic code moves every coordinate between integer and vector
// registers for the masks (a third of a classic candidate's instructions
// went to the draw). Always inlined: it runs once per classic candidate, and
// a call costs more than its work.
template <int D>
[[gnu::always_inline]] inline void UnitShellPoint(CounterRng* rng, double* v) {
#if defined(__SSE2__)
  for (;;) {
    // Lanes as SignedPair's (second, first): a[1], a[0] in pa, a[3], a[2]
    // in qa (3D), and likewise for b.
    const __m128d pa = SignedPairLanes(rng);
    __m128d qa = _mm_setzero_pd();
    if constexpr (D == 3) qa = SignedPairLanes(rng);
    const __m128d pb = SignedPairLanes(rng);
    __m128d qb = _mm_setzero_pd();
    if constexpr (D == 3) qb = SignedPairLanes(rng);
    double sa = SquaredLength(pa);
    double sb = SquaredLength(pb);
    if constexpr (D == 3) {
      // + a[2]^2, after the first two, as the reference sums.
      const __m128d ha = _mm_unpackhi_pd(qa, qa);
      const __m128d hb = _mm_unpackhi_pd(qb, qb);
      sa += _mm_cvtsd_f64(_mm_mul_sd(ha, ha));
      sb += _mm_cvtsd_f64(_mm_mul_sd(hb, hb));
    }
    const bool ok_a = (sa >= 0.25) & (sa < 1);
    const bool ok_b = (sb >= 0.25) & (sb < 1);
    const __m128d p = SelectLanes(ok_a, pa, pb);
    const __m128d twice = _mm_add_pd(p, p);  // 2 x, exactly.
    v[0] = _mm_cvtsd_f64(_mm_unpackhi_pd(twice, twice));
    v[1] = _mm_cvtsd_f64(twice);
    if constexpr (D == 3) {
      const __m128d q = SelectLanes(ok_a, qa, qb);
      const __m128d hq = _mm_unpackhi_pd(q, q);
      v[2] = _mm_cvtsd_f64(_mm_add_sd(hq, hq));
    }
    if (Opaque(ok_a | ok_b)) return;
  }
#else
  UnitShellPointReference<D>(rng, v);
#endif
}

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_ROTATION_H_
