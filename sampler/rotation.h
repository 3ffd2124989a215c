#ifndef SCATTER_SAMPLER_ROTATION_H_
#define SCATTER_SAMPLER_ROTATION_H_

// Random rotations for dense packing's evenly stepped directions, and
// classic packing's candidates in a shell, from +, x, sqrt and comparisons
// only (DESIGN.md, Portable determinism): points drawn by rejection from a
// square or cube (normalised, for rotations).

#include <cmath>

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

// A point uniform in the shell 1 <= |v| < 2 (annulus in 2D): the first
// draw of the cube [-2, 2)^D that lands in it, with 32 random bits per
// coordinate (candidates need no finer grain; in 3D a draw takes two values
// of the stream, the fourth coordinate unused). Draws are taken two at a
// time and the first good one selected without a branch, since whether a
// draw lands is a coin flip a branch predictor cannot learn (41% miss in
// 2D); the result is the same as drawing one at a time.
// Always inlined: it runs once per classic candidate, and a call costs more
// than its work.
template <int D>
[[gnu::always_inline]] inline void UnitShellPoint(CounterRng* rng, double* v) {
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

}  // namespace scatter::sampler::internal

#endif  // SCATTER_SAMPLER_ROTATION_H_
